"""``blink-schema``: the locks of schema migrations, for the people who run them.

::

    blink-schema locks RECORDS                    the locks held under a records location
    blink-schema unlock RECORDS WS_ID/TABLE ID    release one lock, by its id, left by an apply that is gone

``RECORDS`` is the ``record_path`` the applies use: a folder ending in ``/`` or a record file, a
local path or an object-storage URI (``s3://aws_conn_id@bucket/blink/records/``; run it where
Airflow's connections are, so the URI's connection can be read). An apply refused by a lock
prints the exact ``unlock`` command for that lock.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from blinkops_provider._names import segment
from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError
from blinkops_provider.migrations._lock import LockInfo, force_unlock, held_locks


def _table_arg(info: LockInfo) -> str:
    if "?" in (info.ws_id, info.table):
        return "?/?"
    return f"{segment(info.ws_id)}/{segment(info.table)}"


def _table(text: str) -> tuple[str, str]:
    ws_id, slash, table = text.partition("/")
    if not slash or not ws_id or not table:
        raise BlinkInputError(f"give the table as WS_ID/TABLE (as 'blink-schema locks' prints it), got {text!r}")
    return unquote(ws_id), unquote(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="blink-schema", description="The locks of Blink schema migrations.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("locks", help="list the locks held under a records location")
    listing.add_argument("records", help="the record_path of the applies (a folder ending in '/', or a record)")
    unlock = commands.add_parser("unlock", help="release one lock by its id (its apply is gone)")
    unlock.add_argument("records", help="the record_path of the applies (a folder ending in '/', or a record)")
    unlock.add_argument("table", help="WS_ID/TABLE, as the refusal or 'blink-schema locks' prints it")
    unlock.add_argument("lock_id", help="the lock's id, as the refusal or 'blink-schema locks' prints it")
    args = parser.parse_args(argv)
    try:
        if args.command == "locks":
            if not str(args.records).strip():
                raise BlinkInputError("give the record_path of the applies: a folder ending in '/', or a record")
            if "://" not in args.records and not Path(args.records).exists():
                raise BlinkInputError(f"{args.records} does not exist: give the record_path the applies use")
            locks = held_locks(args.records)
            for info in locks:
                holder = info.holder.describe()
                print(f"{info.id}  {_table_arg(info)}  held by {holder} since {info.since}  ({info.where})")
            if not locks:
                print(f"No lock is held under {args.records}")
            return 0
        ws_id, table = _table(args.table)
        released = force_unlock(args.records, ws_id, table, args.lock_id)
        print(f"Released the {released.describe()}")
        return 0
    except (BlinkInputError, BlinkConfigurationError) as err:
        print(f"blink-schema: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # an unknown scheme, a store that cannot be reached (botocore's own errors too)
        why = " ".join(str(err).split())[:300] or type(err).__name__
        print(f"blink-schema: {args.records} cannot be used ({type(err).__name__}: {why})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
