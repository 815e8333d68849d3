"""``blink-schema``: schema migrations from a shell, for the people who run them.

::

    blink-schema pull WS_ID TABLE [-o FILE]       a live table's declaration (JSON), which plans all unchanged
    blink-schema pull WS_ID --all -o FOLDER       every table of the workspace, as FOLDER/<ws_id>/<table>.json
    blink-schema locks RECORDS                    the locks held under a records location
    blink-schema unlock RECORDS WS_ID/TABLE ID    release one lock, by its id, left by an apply that is gone
    blink-schema plan WS_ID TABLE DECLARATION     what applying it would do (reads only; --folder for a fleet)
    blink-schema validate PATH...                 the declarations checked offline (blinkops_provider._validate)

``pull`` reads Blink through the Airflow connection ``--conn-id`` (``blink_default``), or through
``BLINK_BASE_URL`` and ``BLINK_API_KEY`` when both are set; ``--record-path`` also writes each
table's record, as if the declaration had just been applied (the drift baseline).

``RECORDS`` is the ``record_path`` the applies use: a folder ending in ``/`` or a record file, a
local path or an object-storage URI (``s3://aws_conn_id@bucket/blink/records/``; run it where
Airflow's connections are, so the URI's connection can be read). An apply refused by a lock
prints the exact ``unlock`` command for that lock.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from blinkops_provider._names import segment
from blinkops_provider.exceptions import BlinkApiError, BlinkConfigurationError, BlinkInputError, BlinkLockedError
from blinkops_provider.migrations._apply import plan_schema
from blinkops_provider.migrations._lock import LockInfo, force_unlock, held_locks
from blinkops_provider.migrations._pull import pull_table, pull_workspace, record_pulled
from blinkops_provider.migrations._record import record_location


def _table_arg(info: LockInfo) -> str:
    if "?" in (info.ws_id, info.table):
        return "?/?"
    return f"{segment(info.ws_id)}/{segment(info.table)}"


def _table(text: str) -> tuple[str, str]:
    ws_id, slash, table = text.partition("/")
    if not slash or not ws_id or not table:
        raise BlinkInputError(f"give the table as WS_ID/TABLE (as 'blink-schema locks' prints it), got {text!r}")
    return unquote(ws_id), unquote(table)


def pull(args: argparse.Namespace) -> int:
    """``pull``: the declaration of one table, or of every table of a workspace; each mistake one
    line on stderr and exit 2, the API key never shown."""
    key = os.environ.get("BLINK_API_KEY") or ""
    logging.getLogger("airflow.hooks.base").setLevel(logging.WARNING)  # Airflow 2's "Retrieving connection"
    try:
        targets = _pull_targets(args)
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the declaration alone, whatever logs
            hook = _hook(args.conn_id)
            pulled = pull_workspace(hook, args.ws_id) if args.all else [pull_table(hook, args.ws_id, args.table)]
        outputs = _outputs(args, targets, pulled)
        for one, output in zip(pulled, outputs, strict=True):
            _write(one, output)
            if args.record_path:
                where = record_pulled(hook, one, args.record_path)
                print(f"blink-schema: the record of {one.ws_id}/{one.table} written to {where}", file=sys.stderr)
        return 0
    except (BlinkApiError, BlinkInputError, BlinkConfigurationError, BlinkLockedError) as err:
        given = " (BLINK_BASE_URL and BLINK_API_KEY are that connection here)" if _from_env() else ""
        print(f"blink-schema: {_hidden(str(err), key)}{given}", file=sys.stderr)
    except Exception as err:  # Airflow's own (no metadata database), a library's: one line, never a traceback
        why = " ".join(str(err).split())[:300] or "no detail"
        print(f"blink-schema: pull failed ({type(err).__name__}: {_hidden(why, key)})", file=sys.stderr)
    return 2


def _hidden(text: str, key: str) -> str:
    """``text`` without the API key (the provider's errors never carry it; a library's might)."""
    return text.replace(key, "***") if len(key) >= 4 else text


def _pull_targets(args: argparse.Namespace) -> str | None:
    """The output (a file, a folder, or None for stdout), once the arguments are known to agree."""
    if args.all == bool(args.table):
        raise BlinkInputError("give a TABLE, or --all for every table of the workspace (not both)")
    if args.all and not args.output:
        raise BlinkInputError("--all writes one file per table: give -o FOLDER")
    if not args.ws_id.strip():
        raise BlinkInputError("give the workspace id (WS_ID), e.g. ws-demo")
    return str(args.output) if args.output else None


def _hook(conn_id: str, clock: Any = None) -> Any:
    """The hook: the Airflow connection ``conn_id``, or ``BLINK_BASE_URL``/``BLINK_API_KEY`` when both
    are set. It logs nothing: a mistake is one line, said by the command (retries are not shown).

    :param clock: the request path's clock (the tests' records its waits)."""
    from blinkops_provider.hooks.blink import BlinkHook

    class QuietHook(BlinkHook):
        @property
        def log(self) -> Any:
            return _QUIET

        @classmethod
        def get_connection(cls, conn_id: str) -> Any:
            """``BLINK_BASE_URL`` and ``BLINK_API_KEY`` when both are set (nothing is written to the
            environment), else Airflow's connection."""
            if not _from_env():
                return _airflow_connection(conn_id, super().get_connection)
            from airflow.providers.common.compat.sdk import Connection

            url, key = os.environ["BLINK_BASE_URL"], os.environ["BLINK_API_KEY"]
            return Connection(conn_id=conn_id, conn_type="blink", host=url, password=key)

    return QuietHook(conn_id, clock=clock)


def _airflow_connection(conn_id: str, lookup: Any) -> Any:
    """The Airflow connection ``conn_id``, as ``airflow connections get`` finds it: through the hook's
    look-up, then, outside a task, in the metadata database (Airflow 3.3's look-up outside a task
    reads the environment and secrets backends only).

    :raises BlinkConfigurationError: no connection of that id, naming ``--conn-id`` and the
        ``BLINK_BASE_URL``/``BLINK_API_KEY`` way."""
    from airflow.providers.common.compat.sdk import AirflowNotFoundException

    try:
        return lookup(conn_id)
    except AirflowNotFoundException:
        pass
    try:
        from airflow.models.connection import Connection as StoredConnection  # the metadata DB's, as Airflow's CLI

        return StoredConnection.get_connection_from_secrets(conn_id)
    except Exception:  # not there either, or no metadata database: said below
        raise BlinkConfigurationError(
            f"the Airflow connection {conn_id!r} does not exist (looked up in the environment, the secrets backends "
            "and Airflow's metadata database); give --conn-id the id of a blink connection, or set BLINK_BASE_URL "
            "and BLINK_API_KEY"
        ) from None


_QUIET = logging.getLogger("blinkops_provider.migrations.blink_schema")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def _from_env() -> bool:
    """Whether the connection is given by ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` (both set)."""
    return bool(os.environ.get("BLINK_BASE_URL") and os.environ.get("BLINK_API_KEY"))


def _outputs(args: argparse.Namespace, target: str | None, pulled: list[Any]) -> list[Path | None]:
    """Where each table's declaration goes; files that exist are refused (all checked before any is written)."""
    if target is None:
        return [None]
    if args.all:
        paths = [Path(record_location(f"{target.rstrip('/')}/", one.ws_id, one.table)) for one in pulled]
    else:
        paths = [Path(target)]
    taken = [str(path) for path in paths if path.exists()]
    if taken and not args.force:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise BlinkInputError(f"{shown} exist(s): nothing was written; give --force to replace")
    return list(paths)


def _write(pulled: Any, output: Path | None) -> None:
    """One declaration, to ``output`` or stdout; what it leaves out said on stderr."""
    text = json.dumps(pulled.declaration, indent=2, ensure_ascii=False) + "\n"
    for name, attributes in pulled.unsettable.items():
        print(
            f"blink-schema: field {name!r} of {pulled.ws_id}/{pulled.table} holds attribute(s) "
            f"{', '.join(map(repr, attributes))}, which a declaration may not set: left out; every apply keeps them",
            file=sys.stderr,
        )
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    fields = len(pulled.declaration["fields"])
    print(f"blink-schema: {pulled.ws_id}/{pulled.table} ({fields} fields) written to {output}", file=sys.stderr)


def plan(args: argparse.Namespace) -> int:
    """``plan``: what applying each declaration would do, printed; it reads Blink and the record,
    and writes nothing to either. Exit 0 (with ``--detailed-exitcode``: 0 nothing would change, 2
    something would), or 1 on a mistake, said in one line on stderr, the API key never shown."""
    key = os.environ.get("BLINK_API_KEY") or ""
    logging.getLogger("airflow.hooks.base").setLevel(logging.WARNING)
    try:
        targets = _plan_targets(args)
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the plan alone, whatever logs
            hook = _hook(args.conn_id)
            plans = [
                plan_schema(hook, ws_id, table, _declared(path), record_path=args.record_path)
                for ws_id, table, path in targets
            ]
        _print_plans([one.to_xcom() for one in plans], args)
    except Exception as err:  # one line, never a traceback, never the key
        print(f"blink-schema: {_mistake(err, key)}", file=sys.stderr)
        return 1
    return 2 if args.detailed_exitcode and any(one.has_changes for one in plans) else 0


def _mistake(err: Exception, key: str) -> str:
    """What went wrong, in one line: the provider's error as it says it (with how the connection
    was given), or Airflow's or a library's, named."""
    if isinstance(err, (BlinkApiError, BlinkInputError, BlinkConfigurationError, BlinkLockedError, OSError)):
        given = " (BLINK_BASE_URL and BLINK_API_KEY are that connection here)" if _from_env() else ""
        return f"{_hidden(' '.join(str(err).split()), key)}{given}"
    why = " ".join(str(err).split())[:300] or "no detail"
    return f"plan failed ({type(err).__name__}: {_hidden(why, key)})"


def _plan_targets(args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """``(ws_id, table, declaration file)`` of each table to plan: the three arguments, or each
    ``<ws_id>/<table>.json`` of ``--folder``."""
    given = [args.ws_id, args.table, args.declaration]
    if args.folder:
        if any(given):
            raise BlinkInputError("give WS_ID TABLE DECLARATION, or --folder FOLDER (not both)")
        found = sorted(Path(args.folder).glob("*/*.json"))
        if not found:
            raise BlinkInputError(f"{args.folder} holds no <ws_id>/<table>.json declaration (the fleet's layout)")
        return [(path.parent.name, path.stem, path) for path in found]
    if not all(given):
        raise BlinkInputError("give WS_ID TABLE DECLARATION (the workspace, Blink's name of the table, the file)")
    return [(args.ws_id, args.table, Path(args.declaration))]


def _declared(path: Path) -> Any:
    """A declaration file's content, read as JSON by the plan (which names the file in its errors)."""
    from blinkops_provider._declaration import read_declaration

    return read_declaration(path.read_bytes(), source=f"declaration file {str(path)!r}")


def _print_plans(plans: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The plans in ``--format``, on stdout; with ``--out``, their JSON in that file too."""
    from blinkops_provider.migrations._fleet import fleet_review
    from blinkops_provider.migrations._review import plan_markdown

    shown: Any = plans[0] if len(plans) == 1 else plans
    if args.out:
        Path(args.out).write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.format == "json":
        sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
    elif args.format == "markdown":
        sys.stdout.write((plan_markdown(plans[0]) if len(plans) == 1 else fleet_review(plans)) + "\n")
    else:
        sys.stdout.write("\n\n".join(str(one["text"]) for one in plans) + "\n")


def run(args: argparse.Namespace) -> int:
    """One command, its arguments parsed by ``blink-schema``'s entry point
    (:mod:`blinkops_provider._schema_cli`, which imports no Airflow): its exit status (2: a
    mistake, said in one line on stderr)."""
    logging.getLogger("airflow.models.crypto").setLevel(logging.ERROR)  # "empty cryptography key": nothing is stored
    if args.command == "pull":
        return pull(args)
    if args.command == "plan":
        return plan(args)
    try:
        return _locks(args) if args.command == "locks" else _unlock(args)
    except (BlinkInputError, BlinkConfigurationError) as err:
        print(f"blink-schema: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # an unknown scheme, a store that cannot be reached (botocore's own errors too)
        why = " ".join(str(err).split())[:300] or type(err).__name__
        print(f"blink-schema: {args.records} cannot be used ({type(err).__name__}: {why})", file=sys.stderr)
        return 2


def _locks(args: argparse.Namespace) -> int:
    """``locks``: each lock held under the records location, one line each."""
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


def _unlock(args: argparse.Namespace) -> int:
    """``unlock``: release one lock by its id."""
    ws_id, table = _table(args.table)
    released = force_unlock(args.records, ws_id, table, args.lock_id)
    print(f"Released the {released.describe()}")
    return 0
