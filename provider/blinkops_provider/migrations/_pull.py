"""
A live Blink table as a declaration (``blink-schema pull``, :func:`pull_schema`), to bring it under code.

Its declaration is read from Blink, such that a plan of it against the same Blink is all ``unchanged``; and, when
asked, its record, as if that declaration had just been applied (the drift baseline).

Blink has no schema export: the declaration is made from ``GET /workspace/{ws_id}/tables`` (the table's display name
and description) and ``GET .../table/{table}/fields`` (each field, in Blink's order). Blink's system and protected
fields are left out. Of a field's attributes, only those a declaration may set are written, with Blink's values; any
other Blink holds is named in ``unsettable``, and every apply keeps it as Blink holds it (the merge sends it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from blinkops_provider.exceptions import BlinkNotFoundError, BlinkReadUnavailableError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._apply import schema_record, table_lock
from blinkops_provider.migrations._lock import record_location
from blinkops_provider.migrations._matching import field_body, kept_by_blink
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
    Return one table pulled (:func:`pull_schema`), with what the declaration leaves out and the fields as read.

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
    tables = _workspace_tables(hook, ws_id) if listed is None else listed
    if tables is None:
        return None
    named = [entry for entry in tables if entry.name == table]
    shown = [entry for entry in tables if entry.display_name == table]
    if named or len(shown) == 1:
        return (named or shown)[0]
    raise BlinkNotFoundError(f"no table {table!r} in workspace {ws_id!r}; {_tables_said(tables)}")


def _workspace_tables(hook: BlinkHook, ws_id: str) -> list[BlinkTable] | None:
    """Return the workspace's tables; None when this Blink does not serve the read (405)."""
    try:
        return hook.list_tables(ws_id)
    except BlinkReadUnavailableError as err:
        if err.status != 405:
            raise
        hook.log.warning("Blink's tables read is not served (405): the declaration has no display name or description")
        return None


def _tables_said(tables: Sequence[BlinkTable]) -> str:
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
    lock = table_lock(
        hook, location, records=record_path, ws_id=pulled.ws_id, table=pulled.table, holder=None, wait=0.0
    )
    record = schema_record(hook, pulled.ws_id, pulled.table, location)
    with lock:
        record.write({str(held.name): field_body(held) for held in pulled.fields}, now=hook.clock.now())
    return record.location
