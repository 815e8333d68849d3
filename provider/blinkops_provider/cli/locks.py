"""
``blink-schema locks`` and ``unlock``: the tables' locks held under a records location, and one released by its id.

``RECORDS`` is the ``record_path`` the applies use: a folder ending in ``/`` or a record file, a local path or an
object-storage URI (``s3://aws_conn_id@bucket/blink/records/``; run it where Airflow's connections are, so the URI's
connection can be read). An apply refused by a lock prints the exact ``unlock`` command for that lock.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from blinkops_provider.cli.exit_status import EXIT_FAILED, EXIT_OK
from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError
from blinkops_provider.migrations import LockInfo, force_unlock, held_locks
from blinkops_provider.utils.names import segment


def locks(args: argparse.Namespace) -> int:
    """Run ``locks``: each lock held under the records location, one line each."""
    return _exit_status_of(args, _print_locks)


def unlock(args: argparse.Namespace) -> int:
    """Run ``unlock``: release one lock by its id."""
    return _exit_status_of(args, _release)


def _exit_status_of(args: argparse.Namespace, command: Callable[[argparse.Namespace], None]) -> int:
    """Return ``command``'s exit status: a mistake, or a store that cannot be used, said in one line on stderr."""
    try:
        command(args)
    except (BlinkInputError, BlinkConfigurationError) as err:
        print(f"blink-schema: {err}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:  # an unknown scheme, a store that cannot be reached (botocore's own errors too)
        why = " ".join(str(err).split())[:300] or type(err).__name__
        print(f"blink-schema: {args.records} cannot be used ({type(err).__name__}: {why})", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _print_locks(args: argparse.Namespace) -> None:
    if not str(args.records).strip():
        raise BlinkInputError("give the record_path of the applies: a folder ending in '/', or a record")
    if "://" not in args.records and not Path(args.records).exists():
        raise BlinkInputError(f"{args.records} does not exist: give the record_path the applies use")
    held = held_locks(args.records)
    for info in held:
        print(f"{info.id}  {_table_arg(info)}  held by {info.holder.describe()} since {info.since}  ({info.where})")
    if not held:
        print(f"No lock is held under {args.records}")


def _release(args: argparse.Namespace) -> None:
    ws_id, table = _ws_and_table(args.table)
    released = force_unlock(args.records, ws_id, table, args.lock_id)
    print(f"Released the {released.describe()}")


def _table_arg(info: LockInfo) -> str:
    """Return a lock's table as ``unlock`` takes it: ``WS_ID/TABLE``, each a segment."""
    if "?" in (info.ws_id, info.table):
        return "?/?"
    return f"{segment(info.ws_id)}/{segment(info.table)}"


def _ws_and_table(text: str) -> tuple[str, str]:
    """Return the workspace and the table of a ``WS_ID/TABLE`` argument."""
    ws_id, slash, table = text.partition("/")
    if not slash or not ws_id or not table:
        raise BlinkInputError(f"give the table as WS_ID/TABLE (as 'blink-schema locks' prints it), got {text!r}")
    return unquote(ws_id), unquote(table)
