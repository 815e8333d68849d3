"""
``blink-schema``: schema migrations from a shell, for the people who run them.

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

Bring an existing Blink table under code (``blink-schema pull``): its declaration, read from
Blink, such that a plan of it against the same Blink is all ``unchanged``; and, when asked, its
record, as if that declaration had just been applied (the drift baseline).

Blink has no schema export: the declaration is made from ``GET /workspace/{ws_id}/tables`` (the
table's display name and description) and ``GET .../table/{table}/fields`` (each field, in
Blink's order). Blink's system and protected fields are left out. Of a field's attributes, only
those a declaration may set are written, with Blink's values; any other Blink holds is named in
``unsettable``, and every apply keeps it as Blink holds it (the merge sends it back).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pydantic import ValidationError

from blinkops_provider._inputs import segment
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
)
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._apply import _lock, _record, plan_schema
from blinkops_provider.migrations._lock import LockInfo, force_unlock, held_locks, record_location
from blinkops_provider.migrations._matching import field_body, kept_by_blink
from blinkops_provider.migrations._text import fleet_review, plan_markdown, plan_xcom
from blinkops_provider.models import SYSTEM_FIELD_TYPES, BlinkTable, FieldAttributes, TableField

SHOWN_TABLES = 20
"""The most table names an error for a missing table lists."""


@dataclass(frozen=True)
class Pulled:
    """
    One table as Blink holds it, as a declaration.

    :ivar ws_id: the workspace.
    :ivar table: Blink's name of the table (what its paths take).
    :ivar declaration: ``{"display_name", "description", "fields": [...]}``, the format
        :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` takes.
    :ivar unsettable: field name -> the attributes Blink holds that a declaration may not set
        (left out of the declaration; every apply keeps them).
    :ivar fields: the table's user fields as Blink holds them (what a record of them keeps).
    """

    ws_id: str
    table: str
    declaration: dict[str, Any]
    unsettable: dict[str, list[str]] = field(default_factory=dict)
    fields: list[TableField] = field(default_factory=list)


def pull_schema(hook: BlinkHook, ws_id: str, table: str) -> dict[str, Any]:
    """
    Return the declaration of an existing table as Blink holds it.

    ``{"display_name", "description", "fields": [{"field", "type", "display_name", "description", "attributes"}]}``, the
    format :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` and the task groups take, so that a
    plan of it against the same Blink is all ``unchanged``.

    Blink's system and protected fields are left out, and the fields are in Blink's order. A
    field's attributes are those a declaration may set, with Blink's values; an attribute Blink
    holds that a declaration may not set is left out (and logged, naming it): every apply keeps
    it as Blink holds it. Two reads, no write.

    :param table: Blink's name of the table (as its paths take it), or its display name when no
        table has that name and one table shows it.
    :raises BlinkNotFoundError: the workspace has no such table (the error lists the tables it has).
    """
    pulled = pull_table(hook, ws_id, table)
    for name, attributes in pulled.unsettable.items():
        hook.log.warning(
            "Field %r holds attribute(s) %s, which a declaration may not set: left out; every apply keeps them",
            name,
            ", ".join(map(repr, attributes)),
        )
    return pulled.declaration


def pull_table(hook: BlinkHook, ws_id: str, table: str, *, listed: Sequence[BlinkTable] | None = None) -> Pulled:
    """
    :func:`pull_schema`, with what the declaration leaves out and the fields as read.

    :param listed: the workspace's tables, when already read (one read for a whole workspace).
    """
    entry = _find_table(hook, ws_id, table, listed)
    name = entry.name if entry is not None else table
    fields = [held for held in hook.get_table_fields(ws_id, name) if _user_field(held)]
    entries, unsettable = [], {}
    for held in fields:
        declared, left_out = _declaration_of(held)
        entries.append(declared)
        if left_out:
            unsettable[str(held.name)] = left_out
    head = {} if entry is None else {"display_name": entry.display_name or name, "description": entry.description or ""}
    return Pulled(ws_id, name, {**head, "fields": entries}, unsettable, fields)


def pull_workspace(hook: BlinkHook, ws_id: str) -> list[Pulled]:
    """Return every table of the workspace, pulled, in Blink's order (one tables read, one fields read each)."""
    listed = hook.list_tables(ws_id)
    return [pull_table(hook, ws_id, entry.name, listed=listed) for entry in listed]


def _find_table(hook: BlinkHook, ws_id: str, table: str, listed: Sequence[BlinkTable] | None) -> BlinkTable | None:
    """
    Return the workspace's table named ``table`` (or, failing that, the one table shown so).

    None when this Blink does not serve the tables read (then the fields read finds the table).
    """
    tables = _tables(hook, ws_id) if listed is None else listed
    if tables is None:
        return None
    named = [entry for entry in tables if entry.name == table]
    shown = [entry for entry in tables if entry.display_name == table]
    if named or len(shown) == 1:
        return (named or shown)[0]
    raise BlinkNotFoundError(f"no table {table!r} in workspace {ws_id!r}; {_listed(tables)}")


def _tables(hook: BlinkHook, ws_id: str) -> list[BlinkTable] | None:
    """Return the workspace's tables; None when this Blink does not serve the read (405)."""
    try:
        return hook.list_tables(ws_id)
    except BlinkReadUnavailableError as err:
        if err.status != 405:
            raise
        hook.log.warning("Blink's tables read is not served (405): the declaration has no display name or description")
        return None


def _listed(tables: Sequence[BlinkTable]) -> str:
    if not tables:
        return "it has no table"
    names = ", ".join(repr(entry.name) for entry in tables[:SHOWN_TABLES])
    more = f" and {len(tables) - SHOWN_TABLES} more" if len(tables) > SHOWN_TABLES else ""
    return f"its tables: {names}{more}"


def _user_field(held: TableField) -> bool:
    """Return whether a field is the table's own (not one of Blink's system or protected fields)."""
    return held.name is not None and not kept_by_blink(held) and held.type not in SYSTEM_FIELD_TYPES


def _declaration_of(held: TableField) -> tuple[dict[str, Any], list[str]]:
    """Return a field's declaration entry, and the attributes it holds that a declaration may not set."""
    body = field_body(held)
    settable, left_out = {}, []
    for name, value in body.get("attributes", {}).items():
        if _settable(name, value):
            settable[name] = value
        else:
            left_out.append(name)
    entry = {
        "field": held.name,
        "type": held.type,
        "display_name": held.display_name if held.display_name is not None else held.name,
        "description": held.description or "",
        "attributes": settable,
    }
    return entry, left_out


def _settable(name: str, value: Any) -> bool:
    """Return whether a declaration may set attribute ``name`` to ``value``, and sends it as it is."""
    if name not in FieldAttributes.model_fields:
        return False
    try:
        given = FieldAttributes.model_validate({name: value})
    except ValidationError:
        return False
    return bool(given.model_dump(mode="json", exclude_none=True).get(name) == value)


def record_pulled(hook: BlinkHook, pulled: Pulled, record_path: str) -> str:
    """
    Write the record of a pulled table.

    As if its declaration had just been applied (the drift baseline of the next plan), under the table's lock; where it
    was written.
    """
    location = record_location(record_path, pulled.ws_id, pulled.table)
    lock = _lock(hook, location, records=record_path, ws_id=pulled.ws_id, table=pulled.table, holder=None, wait=0.0)
    record = _record(hook, pulled.ws_id, pulled.table, location)
    with lock:
        record.write({str(held.name): field_body(held) for held in pulled.fields}, now=hook.clock.now())
    return record.location


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
    """
    Return ``pull``.

    The declaration of one table, or of every table of a workspace; each mistake one line on stderr and exit 2, the API
    key never shown.
    """
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
        print(f"blink-schema: {_hidden(_said_of_connection(str(err), args.conn_id), key)}", file=sys.stderr)
    except Exception as err:  # Airflow's own (no metadata database), a library's: one line, never a traceback
        why = " ".join(str(err).split())[:300] or "no detail"
        print(f"blink-schema: pull failed ({type(err).__name__}: {_hidden(why, key)})", file=sys.stderr)
    return 2


def _hidden(text: str, key: str) -> str:
    """Return ``text`` without the API key (the provider's errors never carry it; a library's might)."""
    return text.replace(key, "***") if len(key) >= 4 else text


def _pull_targets(args: argparse.Namespace) -> str | None:
    """Return the output (a file, a folder, or None for stdout), once the arguments are known to agree."""
    if args.all == bool(args.table):
        raise BlinkInputError("give a TABLE, or --all for every table of the workspace (not both)")
    if args.all and not args.output:
        raise BlinkInputError("--all writes one file per table: give -o FOLDER")
    if not args.ws_id.strip():
        raise BlinkInputError("give the workspace id (WS_ID), e.g. ws-demo")
    return str(args.output) if args.output else None


def _hook(conn_id: str, clock: Any = None) -> Any:
    """
    Return the hook: the Airflow connection ``conn_id``, or ``BLINK_BASE_URL``/``BLINK_API_KEY`` when both are set.

    It logs nothing: a mistake is one line, said by the command (retries are not shown).

    :param clock: the request path's clock (the tests' records its waits).
    """
    from blinkops_provider.hooks.blink import BlinkHook

    class QuietHook(BlinkHook):
        @property
        def log(self) -> Any:
            return _QUIET

        @classmethod
        def get_connection(cls, conn_id: str) -> Any:
            """
            Return ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` when both are set (nothing is written to the environment).

            Else Airflow's connection.
            """
            if not _from_env():
                return _airflow_connection(conn_id, super().get_connection)
            from airflow.providers.common.compat.sdk import Connection

            url, key = os.environ["BLINK_BASE_URL"], os.environ["BLINK_API_KEY"]
            return Connection(conn_id=conn_id, conn_type="blink", host=url, password=key)

    return QuietHook(conn_id, clock=clock)


def _airflow_connection(conn_id: str, lookup: Any) -> Any:
    """
    Return the Airflow connection ``conn_id``, as ``airflow connections get`` finds it.

    Through the hook's look-up, then, outside a task, in the metadata database (Airflow 3.3's look-up outside a task
    reads the environment and secrets backends only).

    :raises BlinkConfigurationError: no connection of that id, naming ``--conn-id`` and the
        ``BLINK_BASE_URL``/``BLINK_API_KEY`` way.
    """
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


_ENV_WORDS = (
    ("its API key (password)", "BLINK_API_KEY"),
    ("its Base URL (host)", "BLINK_BASE_URL"),
    ("put it in the password field (labelled 'API key' in the UI)", "set BLINK_API_KEY"),
)
"""How an error's advice on a connection's members reads when BLINK_BASE_URL and BLINK_API_KEY give it."""


def _said_of_connection(message: str, conn_id: str) -> str:
    """
    Return an error's message, its words on the connection in the terms the user gave it.

    Only an error about the connection speaks of one: with ``BLINK_BASE_URL``/``BLINK_API_KEY`` set, of those
    variables (never of Airflow's connection, its password or its extras); an error about anything else is left alone.
    """
    named = f"the connection {conn_id!r}"
    if not _from_env() or named not in message:
        return message
    message = message.replace(named, "the connection that BLINK_BASE_URL and BLINK_API_KEY give")
    message = re.sub(r" and its header name \(extra header_name, now ('[^']*')\)", r" (sent in the header \1)", message)
    for words, env in _ENV_WORDS:
        message = message.replace(words, env)
    return message


def _from_env() -> bool:
    """Return whether the connection is given by ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` (both set)."""
    return bool(os.environ.get("BLINK_BASE_URL") and os.environ.get("BLINK_API_KEY"))


def _outputs(args: argparse.Namespace, target: str | None, pulled: list[Any]) -> list[Path | None]:
    """Return where each table's declaration goes; files that exist are refused (all checked before any is written)."""
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
    """
    Return ``plan``.

    What applying each declaration would do, printed; it reads Blink and the record, and writes nothing to either. Exit
    0 (with ``--detailed-exitcode``: 0 nothing would change, 2 something would), or 1 on a mistake, said in one line on
    stderr, the API key never shown.
    """
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
        _print_plans([plan_xcom(one) for one in plans], args)
    except Exception as err:  # one line, never a traceback, never the key
        print(f"blink-schema: {_mistake(err, key, args.conn_id)}", file=sys.stderr)
        return 1
    return 2 if args.detailed_exitcode and any(one.has_changes for one in plans) else 0


def _mistake(err: Exception, key: str, conn_id: str = "blink_default") -> str:
    """
    Return what went wrong, in one line.

    The provider's error as it says it (with how the connection was given), or Airflow's or a library's, named.
    """
    if isinstance(err, (BlinkApiError, BlinkInputError, BlinkConfigurationError, BlinkLockedError, OSError)):
        return _hidden(_said_of_connection(" ".join(str(err).split()), conn_id), key)
    why = " ".join(str(err).split())[:300] or "no detail"
    return f"plan failed ({type(err).__name__}: {_hidden(why, key)})"


def _plan_targets(args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """
    Return ``(ws_id, table, declaration file)`` of each table to plan.

    The three arguments, or each ``<ws_id>/<table>.json`` of ``--folder``.
    """
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
    """Return a declaration file's content, read as JSON by the plan (which names the file in its errors)."""
    from blinkops_provider.models import read_declaration

    return read_declaration(path.read_bytes(), source=f"declaration file {str(path)!r}")


def _print_plans(plans: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Print the plans in ``--format`` on stdout; with ``--out``, write their JSON in that file too."""
    shown: Any = plans[0] if len(plans) == 1 else plans
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.format == "json":
        sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
    elif args.format == "markdown":
        sys.stdout.write((plan_markdown(plans[0]) if len(plans) == 1 else fleet_review(plans)) + "\n")
    else:
        sys.stdout.write("\n\n".join(str(one["text"]) for one in plans) + "\n")


def run(args: argparse.Namespace) -> int:
    """
    Run one command, its arguments parsed by ``blink-schema``'s entry point; return its exit status.

    The entry point is :mod:`blinkops_provider._schema_cli`, which imports no Airflow. The exit
    status 2 is a mistake, said in one line on stderr.
    """
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
    """Return ``locks``: each lock held under the records location, one line each."""
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
    """Release one lock by its id (``unlock``)."""
    ws_id, table = _table(args.table)
    released = force_unlock(args.records, ws_id, table, args.lock_id)
    print(f"Released the {released.describe()}")
    return 0
