"""
The sandbox's state in SQLite: workspaces, tables, fields and the connection-type catalogue.

Timestamps (``created_at``, ``updated_at``) are integer milliseconds since the Unix epoch.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from blinkops_sandbox import _records as record_rows
from blinkops_sandbox import _seed as seed_data
from blinkops_sandbox._blink_models import MARKERS, SYSTEM_FIELDS, FieldUpdate, field_problems, type_change
from blinkops_sandbox._rql_sql import SQLQuery

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tables (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL REFERENCES workspaces(id), name TEXT NOT NULL,
    display_name TEXT, description TEXT NOT NULL DEFAULT '', settings TEXT NOT NULL DEFAULT '{}',
    records INTEGER NOT NULL DEFAULT 0, UNIQUE (workspace_id, name));
CREATE TABLE IF NOT EXISTS fields (
    id TEXT PRIMARY KEY, table_id TEXT NOT NULL REFERENCES tables(id), workspace_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL, name TEXT NOT NULL, display_name TEXT, description TEXT, type TEXT NOT NULL,
    attributes TEXT NOT NULL, indexes TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL, updated_by TEXT NOT NULL, UNIQUE (table_id, name));
CREATE TABLE IF NOT EXISTS connection_types (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT, display_name TEXT, plugin_name TEXT,
    documentation_link TEXT, icon_uri TEXT, oauth_supported INTEGER, tenant_id TEXT,
    created_at INTEGER, created_by TEXT, updated_at INTEGER, updated_by TEXT, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS connection_types_name ON connection_types (name);
CREATE TABLE IF NOT EXISTS playbooks (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL, name TEXT NOT NULL,
    active INTEGER NOT NULL, playbook TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL, updated_by TEXT NOT NULL);
"""
_TABLE_COLUMNS_ADDED = {
    "display_name": "TEXT",
    "description": "TEXT NOT NULL DEFAULT ''",
    "settings": "TEXT NOT NULL DEFAULT '{}'",
    "records": "INTEGER NOT NULL DEFAULT 0",
}
_DEFAULT_SETTINGS = {"icon": "table", "color": "#4f7cff"}
"""The settings a new table gets (Blink keeps a table's look in them; a table edit sends them back)."""


def derived_name(display_name: str, taken: Iterable[str]) -> str:
    """
    Return the name the sandbox gives a new table or field, from its display name.

    Lower case, each run of characters other than letters and digits one ``_``, trimmed, then ``_2``, ``_3``... while it
    is taken (``"Root cause"`` -> ``root_cause``). This is the sandbox's own rule: Blink derives names by a rule it does
    not publish, and a client must not rely on either.
    """
    base = re.sub(r"[^0-9a-z]+", "_", display_name.casefold()).strip("_") or "field"
    used = set(taken)
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


_CT_COLUMNS = (
    "id",
    "name",
    "display_name",
    "plugin_name",
    "documentation_link",
    "icon_uri",
    "oauth_supported",
    "tenant_id",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
)
_FIELD_COLUMNS = (
    "id",
    "name",
    "display_name",
    "description",
    "type",
    "attributes",
    "indexes",
    "table_id",
    "workspace_id",
    "tenant_id",
    "created_at",
    "created_by",
    "updated_at",
    "updated_by",
)


class StoreError(Exception):
    """A request the store refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, details: str | None = None, identifier: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details
        self.identifier = identifier


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SandboxStore:
    """
    Thread-safe access to the sandbox's SQLite database.

    :param path: a file to persist to, or ``":memory:"`` (the default).
    :param clock: returns the current time in epoch milliseconds (tests inject one).
    """

    def __init__(self, path: str = ":memory:", clock: Callable[[], int] = _now_ms) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA case_sensitive_like = ON")
        self._db.execute("PRAGMA journal_mode = WAL" if path != ":memory:" else "PRAGMA journal_mode = MEMORY")
        self._db.executescript(_SCHEMA + record_rows.SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(tables)")}
        for column, declared in _TABLE_COLUMNS_ADDED.items():  # a state file from before these columns
            if column not in columns:
                self._db.execute(f"ALTER TABLE tables ADD COLUMN {column} {declared}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- seeding ------------------------------------------------------------------------

    def is_empty(self) -> bool:
        with self._lock:
            return bool(self._db.execute("SELECT NOT EXISTS (SELECT 1 FROM workspaces)").fetchone()[0])

    def reset(self, connection_types: int = 200, seed: int = 0) -> None:
        """Wipe everything and load the seed data: the demo workspace and ``connection_types`` types."""
        with self._lock, self._transaction():
            for table in ("records", "fields", "tables", "workspaces", "connection_types", "playbooks"):
                self._db.execute(f"DELETE FROM {table}")
            self._add_workspace(seed_data.DEMO_WORKSPACE, seed_data.DEMO_TABLES)
            self._put_workflows(seed_data.DEMO_WORKSPACE, seed_data.DEMO_WORKFLOWS, seed_data.SEED_USER)
            self._insert_connection_types(seed_data.connection_type_rows(connection_types, seed))

    def add_table(self, ws_id: str, table: str, fields: list[dict[str, Any]]) -> None:
        """
        Create a table (and its workspace when new) with its fields.

        The fields are given as ``{"name", "type", "display_name", "attributes"}``, as the seed data does.
        """
        with self._lock, self._transaction():
            exists = "SELECT 1 FROM tables WHERE workspace_id = ? AND name = ?"
            if self._db.execute(exists, (ws_id, table)).fetchone() is not None:
                raise StoreError(
                    409, f"table {table!r} already exists in workspace {ws_id!r}", identifier="TABLE_EXISTS"
                )
            self._add_workspace(ws_id, {table: fields})

    def _add_workspace(self, ws_id: str, tables: dict[str, list[dict[str, Any]]]) -> None:
        self._db.execute("INSERT OR IGNORE INTO workspaces VALUES (?, ?)", (ws_id, seed_data.TENANT_ID))
        for table_name, fields in tables.items():
            records = seed_data.DEMO_RECORDS.get(table_name, 0) if ws_id == seed_data.DEMO_WORKSPACE else 0
            table_id = self._insert_table(ws_id, table_name, table_name, "", records)
            for field in fields:
                self._insert_field(table_id, ws_id, field, seed_data.SEED_TIME_MS, seed_data.SEED_USER)
            rows = seed_data.DEMO_ROWS.get(table_name, []) if ws_id == seed_data.DEMO_WORKSPACE else []
            for number, values in enumerate(rows):
                made = seed_data.SEED_TIME_MS + number * 60_000
                seeded = f"rec-{uuid.uuid5(uuid.NAMESPACE_URL, f'{table_id}/{number}').hex[:16]}"
                record_rows.insert(
                    self._db, table_id, values, made, seed_data.SEED_USER, functools.partial(str, seeded)
                )

    def _insert_table(self, ws_id: str, name: str, display_name: str, description: str, records: int) -> str:
        """Return a table with Blink's five system fields; its id."""
        table_id = f"tbl-{uuid.uuid5(uuid.NAMESPACE_URL, f'{ws_id}/{name}').hex[:12]}"
        self._db.execute(
            "INSERT INTO tables (id, workspace_id, name, display_name, description, settings, records) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (table_id, ws_id, name, display_name, description, json.dumps(_DEFAULT_SETTINGS), records),
        )
        for name_, shown, kind in SYSTEM_FIELDS:
            system = {"name": name_, "display_name": shown, "type": kind, "attributes": dict.fromkeys(MARKERS, True)}
            self._insert_field(table_id, ws_id, system, seed_data.SEED_TIME_MS, seed_data.SEED_USER)
        return table_id

    def _insert_field(self, table_id: str, ws_id: str, field: dict[str, Any], when: int, user: str) -> None:
        key = f"{table_id}/{field['name']}"
        self._db.execute(
            f"INSERT INTO fields ({', '.join(_FIELD_COLUMNS)}) VALUES ({', '.join('?' * 14)})",
            (
                f"fld-{uuid.uuid5(uuid.NAMESPACE_URL, key).hex[:12]}",
                field["name"],
                field["display_name"],
                field.get("description") or "",
                field["type"],
                json.dumps(field["attributes"]),
                json.dumps({}),
                table_id,
                ws_id,
                seed_data.TENANT_ID,
                when,
                user,
                when,
                user,
            ),
        )

    def _insert_connection_types(self, docs: Iterable[tuple[dict[str, Any], str]]) -> None:
        """Insert or replace (scalar members, JSON text) pairs."""
        rows = ((*(scalars.get(column) for column in _CT_COLUMNS), text) for scalars, text in docs)
        self._db.executemany(
            f"INSERT INTO connection_types ({', '.join(_CT_COLUMNS)}, doc) VALUES ({', '.join('?' * 13)}) "
            "ON CONFLICT (id) DO UPDATE SET "
            + ", ".join(f"{column} = excluded.{column}" for column in (*_CT_COLUMNS[1:], "doc")),
            rows,
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- connection types -------------------------------------------------------------------

    def upsert_connection_types(self, docs: Iterable[dict[str, Any]]) -> int:
        """Add or replace connection types by ``id``; returns how many were written."""
        docs = list(docs)
        if any(not isinstance(doc.get("id"), str) or not doc["id"] for doc in docs):
            raise StoreError(400, "every connection type needs a non-empty string id")
        with self._lock, self._transaction():
            self._insert_connection_types((doc, json.dumps(doc, separators=(",", ":"))) for doc in docs)
        return len(docs)

    def delete_connection_types(self, ids: Iterable[str]) -> int:
        """Remove connection types by id; returns how many existed."""
        with self._lock, self._transaction():
            return sum(self._db.execute("DELETE FROM connection_types WHERE id = ?", (i,)).rowcount for i in ids)

    def list_connection_types(self, query: SQLQuery) -> bytes:
        """Return the JSON page ``{limit, offset, total, results}`` for a parsed query."""
        where, params, order, limit, offset = query.where, query.params, query.order, query.limit, query.offset
        with self._lock:
            total = self._db.execute(f"SELECT count(*) FROM connection_types WHERE {where}", params).fetchone()[0]
            docs = [
                row[0]
                for row in self._db.execute(
                    f"SELECT doc FROM connection_types WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
                    (*params, limit, offset),
                )
            ]
        if query.select:
            keep = query.select
            docs = [
                json.dumps({k: v for k, v in json.loads(doc).items() if k in keep}, separators=(",", ":"))
                for doc in docs
            ]
        head = json.dumps({"limit": limit, "offset": offset, "total": total})[:-1]
        return f'{head}, "results": [{",".join(docs)}]}}'.encode()

    def connection_type_ids(self) -> list[str]:
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT id FROM connection_types ORDER BY seq")]

    def all_connection_types(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(row[0]) for row in self._db.execute("SELECT doc FROM connection_types ORDER BY seq")]

    # -- tables and fields ------------------------------------------------------------------

    # -- workflows (Blink's playbooks) ---------------------------------------------------------

    def put_workflows(self, ws_id: str, workflows: list[dict[str, Any]], user: str) -> int:
        """
        Add or change workflows, all or none: ``{"id"?, "name", "active"?, "playbook"}`` each, the definition as text.

        One with the id (or, without one, the name) of a workflow of the workspace changes it; its ``updated_*`` say
        who and when, as a table's fields do.

        :raises StoreError: a workflow without a name or a definition (400), or no such workspace (404).
        """
        with self._lock, self._transaction():
            if self._db.execute("SELECT 1 FROM workspaces WHERE id = ?", (ws_id,)).fetchone() is None:
                raise StoreError(404, f"workspace {ws_id!r} not found", identifier="NOT_FOUND")
            return self._put_workflows(ws_id, workflows, user)

    def _put_workflows(self, ws_id: str, workflows: list[dict[str, Any]], user: str) -> int:
        when = self.clock() if user != seed_data.SEED_USER else seed_data.SEED_TIME_MS
        for n, given in enumerate(workflows):
            name, definition = given.get("name"), given.get("playbook")
            if not isinstance(name, str) or not name or not isinstance(definition, str):
                raise StoreError(400, f"workflow {n}: give a 'name' and a 'playbook' (its definition as text)")
            found = self._db.execute(
                "SELECT id FROM playbooks WHERE workspace_id = ? AND (id = ? OR (? IS NULL AND name = ?))",
                (ws_id, given.get("id"), given.get("id"), name),
            ).fetchone()
            active = bool(given.get("active", True))
            if found is not None:
                self._db.execute(
                    "UPDATE playbooks SET name = ?, active = ?, playbook = ?, updated_at = ?, updated_by = ? "
                    "WHERE id = ?",
                    (name, active, definition, when, user, found[0]),
                )
                continue
            wf_id = str(given.get("id") or f"pb-{uuid.uuid5(uuid.NAMESPACE_URL, f'{ws_id}/{name}').hex[:12]}")
            self._db.execute(
                "INSERT INTO playbooks (id, workspace_id, name, active, playbook, created_at, created_by, "
                "updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (wf_id, ws_id, name, active, definition, when, user, when, user),
            )
        return len(workflows)

    def find_workflows(self, ws_id: str, limit: int, offset: int) -> dict[str, Any]:
        """Return one page of a workspace's workflows, as PlaybookFindByFilter answers it."""
        with self._lock:
            total = self._db.execute("SELECT count(*) FROM playbooks WHERE workspace_id = ?", (ws_id,)).fetchone()[0]
            rows = self._db.execute(
                "SELECT id, name, active, playbook, created_at, created_by, updated_at, updated_by FROM playbooks "
                "WHERE workspace_id = ? ORDER BY seq LIMIT ? OFFSET ?",
                (ws_id, limit, offset),
            ).fetchall()
        return {"limit": limit, "offset": offset, "total": total, "results": [self._workflow(ws_id, r) for r in rows]}

    def get_workflow(self, ws_id: str, wf_id: str) -> dict[str, Any]:
        """Return one workflow. :raises StoreError: none of that id in the workspace (404)."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, name, active, playbook, created_at, created_by, updated_at, updated_by FROM playbooks "
                "WHERE workspace_id = ? AND id = ?",
                (ws_id, wf_id),
            ).fetchone()
        if row is None:
            raise StoreError(404, f"workflow {wf_id!r} not found in workspace {ws_id!r}", identifier="NOT_FOUND")
        return self._workflow(ws_id, row)

    @staticmethod
    def _workflow(ws_id: str, row: Any) -> dict[str, Any]:
        wf_id, name, active, definition, created_at, created_by, updated_at, updated_by = row
        return {
            "id": wf_id,
            "name": name,
            "active": bool(active),
            "type": "playbook",
            "version": 1,
            "tags": [],
            "is_request": False,
            "workspace_id": ws_id,
            "created_at": created_at,
            "created_by": created_by,
            "updated_at": updated_at,
            "updated_by": updated_by,
            "playbook": definition,
        }

    def _table_id(self, ws_id: str, table: str) -> str:
        if self._db.execute("SELECT 1 FROM workspaces WHERE id = ?", (ws_id,)).fetchone() is None:
            raise StoreError(404, f"workspace {ws_id!r} not found", identifier="WORKSPACE_NOT_FOUND")
        table_row = self._db.execute(
            "SELECT id FROM tables WHERE workspace_id = ? AND name = ?", (ws_id, table)
        ).fetchone()
        if table_row is None:
            raise StoreError(404, f"table {table!r} not found in workspace {ws_id!r}", identifier="TABLE_NOT_FOUND")
        return str(table_row[0])

    def _field_row(self, ws_id: str, table: str, field: str) -> tuple[Any, ...]:
        row = self._db.execute(
            f"SELECT {', '.join(_FIELD_COLUMNS)} FROM fields WHERE table_id = ? AND name = ?",
            (self._table_id(ws_id, table), field),
        ).fetchone()
        if row is None:
            raise StoreError(404, f"field {field!r} not found in table {table!r}", identifier="FIELD_NOT_FOUND")
        return tuple(row)

    @staticmethod
    def _field_dict(row: Any) -> dict[str, Any]:
        field = dict(zip(_FIELD_COLUMNS, row, strict=True))
        field["attributes"] = json.loads(field["attributes"])
        field["indexes"] = json.loads(field["indexes"])
        return field

    def get_field(self, ws_id: str, table: str, field: str) -> dict[str, Any]:
        """Return a field as the API returns it. :raises StoreError: 404 for an unknown workspace, table or field."""
        with self._lock:
            return self._field_dict(self._field_row(ws_id, table, field))

    def fields(self, ws_id: str, table: str) -> list[dict[str, Any]]:
        """Return every field of a table, in creation order (Blink's system fields first); none for an unknown table."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join('f.' + c for c in _FIELD_COLUMNS)} FROM fields f JOIN tables t "
                "ON f.table_id = t.id WHERE t.workspace_id = ? AND t.name = ? ORDER BY f.rowid",
                (ws_id, table),
            ).fetchall()
        return [self._field_dict(row) for row in rows]

    def table_fields(self, ws_id: str, table: str) -> list[dict[str, Any]]:
        """Return ``GET .../fields``: :meth:`fields`. :raises StoreError: 404 for an unknown workspace or table."""
        with self._lock:
            self._table_id(ws_id, table)
            return self.fields(ws_id, table)

    def tables(self, ws_id: str) -> list[dict[str, Any]]:
        """Return ``GET .../tables``: the workspace's tables. :raises StoreError: 404 for an unknown workspace."""
        with self._lock:
            if self._db.execute("SELECT 1 FROM workspaces WHERE id = ?", (ws_id,)).fetchone() is None:
                raise StoreError(404, f"workspace {ws_id!r} not found", identifier="WORKSPACE_NOT_FOUND")
            rows = self._db.execute(
                "SELECT id, name, display_name, description, records, settings FROM tables "
                "WHERE workspace_id = ? ORDER BY rowid",
                (ws_id,),
            ).fetchall()
        return [self._table_dict(row) for row in rows]

    @staticmethod
    def _table_dict(row: Any) -> dict[str, Any]:
        return {
            "id": row[0],
            "name": row[1],
            "display_name": row[2] if row[2] is not None else row[1],
            "description": row[3] or "",
            "estimated_records_count": row[4],
            "settings": json.loads(row[5] or "{}"),
        }

    def _table_entry(self, ws_id: str, table: str) -> dict[str, Any]:
        row = self._db.execute(
            "SELECT id, name, display_name, description, records, settings FROM tables WHERE id = ?",
            (self._table_id(ws_id, table),),
        ).fetchone()
        return self._table_dict(row)

    def create_table(
        self, ws_id: str, display_name: str, description: str, fields: list[FieldUpdate], user: str
    ) -> dict[str, Any]:
        """
        Serve ``POST .../table``.

        A table with Blink's system fields and ``fields``, its name and its fields' names derived from their display
        names (:func:`derived_name`).

        :raises StoreError: 404 for an unknown workspace; 400 for a field Blink would refuse.
        """
        with self._lock, self._transaction():
            if self._db.execute("SELECT 1 FROM workspaces WHERE id = ?", (ws_id,)).fetchone() is None:
                raise StoreError(404, f"workspace {ws_id!r} not found", identifier="WORKSPACE_NOT_FOUND")
            taken = [row[0] for row in self._db.execute("SELECT name FROM tables WHERE workspace_id = ?", (ws_id,))]
            name = derived_name(display_name, taken)
            table_id = self._insert_table(ws_id, name, display_name, description, 0)
            for position, body in enumerate(fields):
                self._add_field(ws_id, name, table_id, body, user, where=f"fields[{position}]")
            return self._table_entry(ws_id, name)

    def update_table(
        self, ws_id: str, table: str, display_name: str, description: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        """
        Serve ``PUT .../table/{table}``: the table's display name, description and settings, as given.

        :raises StoreError: 404 for an unknown workspace or table.
        """
        with self._lock, self._transaction():
            table_id = self._table_id(ws_id, table)
            self._db.execute(
                "UPDATE tables SET display_name = ?, description = ?, settings = ? WHERE id = ?",
                (display_name, description, json.dumps(settings), table_id),
            )
            return self._table_entry(ws_id, table)

    def set_records(self, ws_id: str, table: str, count: int) -> dict[str, Any]:
        """Set the table's ``estimated_records_count`` (the sandbox keeps no rows: the admin API sets it)."""
        with self._lock, self._transaction():
            self._db.execute("UPDATE tables SET records = ? WHERE id = ?", (count, self._table_id(ws_id, table)))
            return self._table_entry(ws_id, table)

    def add_field(self, ws_id: str, table: str, body: FieldUpdate, user: str) -> dict[str, Any]:
        """
        Serve ``POST .../fields``: a new field, its name derived from its display name.

        :raises StoreError: 404 for an unknown workspace or table; 400 for what Blink refuses (no
            type or display name, a select without options, a second reference to one table).
        """
        with self._lock, self._transaction():
            table_id = self._table_id(ws_id, table)
            name = self._add_field(ws_id, table, table_id, body, user, where="the body")
            return self._field_dict(self._field_row(ws_id, table, name))

    def _add_field(self, ws_id: str, table: str, table_id: str, body: FieldUpdate, user: str, *, where: str) -> str:
        if body.type is None or not (body.display_name or "").strip():
            raise StoreError(
                400, "the new field is invalid", f"{where}: type and display_name are required", "INVALID_FIELD"
            )
        problems = field_problems(body)
        if problems:
            raise StoreError(400, "the new field is invalid", f"{where}: {'; '.join(problems)}", "INVALID_FIELD")
        attributes = body.attributes.model_dump(exclude_none=True) if body.attributes else {}
        for marker in MARKERS:
            attributes.pop(marker, None)
        taken = [row[0] for row in self._db.execute("SELECT name FROM fields WHERE table_id = ?", (table_id,))]
        name = derived_name(str(body.display_name), taken)
        new = {
            "name": name,
            "display_name": body.display_name,
            "description": body.description or "",
            "type": body.type.value,
            "attributes": attributes,
        }
        self._one_reference_per_target({"type": new["type"], "table_id": table_id, "id": ""}, attributes)
        self._insert_field(table_id, ws_id, new, self.clock(), user)
        return name

    def delete_field(self, ws_id: str, table: str, field: str) -> None:
        """
        ``DELETE .../fields/{field}``: the field and its values, gone.

        :raises StoreError: 404 for an unknown workspace, table or field; 400 for a system or protected field.
        """
        with self._lock, self._transaction():
            current = self._field_dict(self._field_row(ws_id, table, field))
            marked = [marker for marker in MARKERS if current["attributes"].get(marker)]
            if marked:
                raise StoreError(
                    400,
                    f"field {field!r} is a {' and '.join(marked)} field and cannot be removed",
                    None,
                    "SYSTEM_FIELD",
                )
            self._db.execute("DELETE FROM fields WHERE id = ?", (current["id"],))
            record_rows.drop_values(self._db, current["table_id"], field)

    def update_field(self, ws_id: str, table: str, field: str, update: FieldUpdate, user: str) -> dict[str, Any]:
        """
        Apply a field update as Blink does: it replaces the whole field and may not change its type.

        Members the update leaves out are reset: ``type`` to ``text`` (and so refused unless the
        field is a text field), ``display_name`` to the field's name, ``description`` to empty,
        ``attributes`` to ``{}`` (``required`` and ``is_unique`` false). Blink's system fields are
        not changed, and a table links to another table through one ``reference`` field at most.

        :raises StoreError: 404 for an unknown workspace, table or field; 400 for what Blink refuses.
        """
        with self._lock, self._transaction():
            current = self._field_dict(self._field_row(ws_id, table, field))
            if any(current["attributes"].get(marker) for marker in MARKERS):
                raise StoreError(400, f"field {field!r} is a system field and cannot be updated", None, "SYSTEM_FIELD")
            changed = type_change(update, field, current["type"])
            if changed:
                raise StoreError(400, "changing the type is not allowed", changed, identifier="FIELD_TYPE_CHANGE")
            problems = field_problems(update)
            if problems:
                raise StoreError(400, "the field update is invalid", "; ".join(problems), "INVALID_FIELD")
            attributes = update.attributes.model_dump(exclude_none=True) if update.attributes else {}
            for marker in MARKERS:
                attributes.pop(marker, None)
            self._one_reference_per_target(current, attributes)
            if attributes.get("is_unique") and record_rows.repeated(self._db, current["table_id"], field):
                raise StoreError(
                    400,
                    f"field {field!r} cannot be unique: rows hold the same value",
                    f"{record_rows.repeated(self._db, current['table_id'], field)} rows hold a value another row holds",
                    "NOT_UNIQUE",
                )
            self._db.execute(
                "UPDATE fields SET display_name = ?, description = ?, attributes = ?, updated_at = ?, updated_by = ? "
                "WHERE id = ?",
                (
                    update.display_name or current["name"],
                    update.description or "",
                    json.dumps(attributes),
                    self.clock(),
                    user,
                    current["id"],
                ),
            )
            return self._field_dict(self._field_row(ws_id, table, field))

    def _one_reference_per_target(self, current: dict[str, Any], attributes: dict[str, Any]) -> None:
        target = (attributes.get("table_reference") or {}).get("table_name")
        if current["type"] != "reference" or not target:
            return
        rows = self._db.execute(
            "SELECT name, attributes FROM fields WHERE table_id = ? AND type = 'reference' AND id != ?",
            (current["table_id"], current["id"]),
        ).fetchall()
        for name, text in rows:
            if (json.loads(text).get("table_reference") or {}).get("table_name") == target:
                raise StoreError(
                    400,
                    f"the table already references table {target!r} through field {name!r}",
                    "a table has at most one reference field per target table",
                    "DUPLICATE_REFERENCE",
                )

    # -- records ----------------------------------------------------------------------------

    def _user_fields(self, table_id: str) -> dict[str, dict[str, Any]]:
        rows = self._db.execute(
            f"SELECT {', '.join(_FIELD_COLUMNS)} FROM fields WHERE table_id = ? ORDER BY rowid", (table_id,)
        ).fetchall()
        fields = [self._field_dict(row) for row in rows]
        return {f["name"]: f for f in fields if not any(f["attributes"].get(m) for m in MARKERS)}

    def find_records(self, ws_id: str, table: str, q: str) -> dict[str, Any]:
        """
        Return ``GET .../table/{table}?q=``: ``{limit, offset, results, total}`` of the rows matching the filter.

        :raises StoreError: 404 for an unknown workspace or table; 400 for a query Blink refuses.
        """
        with self._lock:
            table_id = self._table_id(ws_id, table)
            try:
                where, params, order, limit, offset = record_rows.parse_find(q, self._user_fields(table_id))
            except record_rows.RecordError as err:
                raise StoreError(err.status, "invalid records query", err.message, "INVALID_QUERY") from None
            condition = f"table_id = ? AND ({where})"
            count = len(params) - order.count("?")
            try:
                total = self._db.execute(
                    f"SELECT count(*) FROM records WHERE {condition}", (table_id, *params[:count])
                ).fetchone()
                rows = self._db.execute(
                    f"SELECT {_RECORD_COLUMNS} FROM records WHERE {condition} ORDER BY {order} LIMIT ? OFFSET ?",
                    (table_id, *params, limit, offset),
                ).fetchall()
            except (sqlite3.OperationalError, OverflowError) as err:  # (what the checks above did not foresee)
                raise StoreError(400, "invalid records query", str(err), "INVALID_QUERY") from None
        return {"limit": limit, "offset": offset, "results": [record_rows.answer(r) for r in rows], "total": total[0]}

    def get_record(self, ws_id: str, table: str, record_id: str) -> dict[str, Any]:
        """Return ``GET .../table/{table}/{id}``. :raises StoreError: 404 for an unknown table or record."""
        with self._lock:
            return record_rows.answer(self._record_row(self._table_id(ws_id, table), record_id))

    def _record_row(self, table_id: str, record_id: str) -> tuple[Any, ...]:
        row = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM records WHERE table_id = ? AND id = ?", (table_id, record_id)
        ).fetchone()
        if row is None:
            raise StoreError(404, "Can not find record", f"no record {record_id!r}", "RECORD_NOT_FOUND")
        return tuple(row)

    def create_records(self, ws_id: str, table: str, bodies: list[Any], user: str) -> list[dict[str, Any]]:
        """
        Serve ``POST .../table/{table}`` (one body), or the admin's load of many, in one transaction.

        :raises StoreError: 404 for an unknown table; 400 for a record Blink would refuse (none written).
        """
        with self._lock, self._transaction():
            table_id = self._table_id(ws_id, table)
            fields = self._user_fields(table_id)
            made = []
            for position, body in enumerate(bodies):
                values = self._checked(table_id, fields, body, "", position if len(bodies) > 1 else None)
                made.append(
                    record_rows.insert(self._db, table_id, values, self.clock(), user, record_rows.new_record_id)
                )
            return [record_rows.answer(self._record_row(table_id, record_id)) for record_id in made]

    def _checked(
        self, table_id: str, fields: dict[str, dict[str, Any]], body: Any, own: str, position: int | None
    ) -> dict[str, Any]:
        try:
            values = record_rows.checked_values(body, fields)
            record_rows.check_unique(self._db, table_id, fields, values, own)
        except record_rows.RecordError as err:
            where = f"record {position}: " if position is not None else ""
            raise StoreError(err.status, "the record is invalid", where + err.message, err.identifier) from None
        return values

    def update_record(self, ws_id: str, table: str, record_id: str, body: Any, user: str) -> dict[str, Any]:
        """
        Serve ``PUT .../table/{table}/{id}``: the whole record replaced; a field left out is emptied.

        :raises StoreError: 404 for an unknown table or record; 400 for a record Blink would refuse.
        """
        with self._lock, self._transaction():
            table_id = self._table_id(ws_id, table)
            self._record_row(table_id, record_id)
            values = self._checked(table_id, self._user_fields(table_id), body, record_id, None)
            self._db.execute(
                "UPDATE records SET doc = ?, updated_at = ?, updated_by = ? WHERE table_id = ? AND id = ?",
                (json.dumps(values), self.clock(), user, table_id, record_id),
            )
            return record_rows.answer(self._record_row(table_id, record_id))

    def delete_record(self, ws_id: str, table: str, record_id: str) -> None:
        """``DELETE .../table/{table}/{id}``. :raises StoreError: 404 for an unknown table or record."""
        with self._lock, self._transaction():
            table_id = self._table_id(ws_id, table)
            self._record_row(table_id, record_id)
            self._db.execute("DELETE FROM records WHERE table_id = ? AND id = ?", (table_id, record_id))


_RECORD_COLUMNS = "id, doc, created_at, created_by, updated_at, updated_by"
