"""
The sandbox's table records (rows): kept in SQLite, read with Blink's query object, written whole.

What the sandbox does, from Blink's published spec (TableFindRecord and its siblings) and Blink's
notes, and where it chooses:

* A record is a JSON object: ``id``, ``created_at``/``updated_at`` (epoch milliseconds) and
  ``created_by``/``updated_by``, then one member per user field that holds a value.
* ``GET .../table/{table}?q=...`` answers ``{limit, offset, results, total}``; ``total`` counts
  every row matching the filter. ``limit`` is 1 to 1000 (0 or left out: 100); rows come in the
  order of ``sort`` (``["+id"]``, any field or system column, ``-`` descending), else in the order
  they were created.
* A query or a record the store cannot hold (a number beyond 64 bits, text that is not Unicode,
  nesting deeper than 32 levels, more than 500 conditions) is refused with a 400, before anything
  is stored.
* The filter is an object: a field name takes a value (equals) or an object of ``$eq``, ``$neq``,
  ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$like``; ``$or``/``$and`` take a list of filters. A
  comparison with an empty value is false, as in SQL. (The sandbox's choice: Blink publishes
  ``$gt`` alone.)
* An update replaces the whole record: a field left out of the body is emptied, as Blink's
  "entire record" update blanks it. Members naming no field of the table are refused (400).
* A write is refused (400) when a ``required`` field is empty, when an ``is_unique`` field's value
  is held by another row, or when a select's value is not among its options.
* Removing a field drops its values from every row. ``estimated_records_count`` is not this count:
  it is an estimate, as Blink's is, set when the table is seeded or by the admin API.
"""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, table_id TEXT NOT NULL, doc TEXT NOT NULL,
    created_at INTEGER NOT NULL, created_by TEXT NOT NULL, updated_at INTEGER NOT NULL, updated_by TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_table ON records (table_id, seq);
"""
SYSTEM_COLUMNS = ("id", "created_at", "updated_at", "created_by", "updated_by")
DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
_OPERATORS = {"$eq": "=", "$neq": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<=", "$like": "LIKE"}
_SELECTS = ("single-select", "multi-select")


class RecordError(ValueError):
    """A record request the sandbox refuses: ``status`` and a message."""

    def __init__(self, status: int, message: str, identifier: str = "INVALID_RECORD") -> None:
        super().__init__(message)
        self.status, self.message, self.identifier = status, message, identifier


def empty(value: Any) -> bool:
    """Return whether a value counts as empty: null, ``""`` or an empty list."""
    return value is None or value == "" or value == []


MAX_CONDITIONS = 500
"""The most conditions one filter holds (SQLite's expression depth is 1000; Blink publishes no bound)."""
MAX_DEPTH = 32
"""The most levels a query or a record's value nests."""
INT64 = (-(2**63), 2**63 - 1)


def parse_find(q: str, fields: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any], str, int, int]:
    """
    Return ``q`` of a find: the SQL condition, its parameters, the SQL order, the limit and the offset.

    :param fields: the table's user fields by name (with ``type``).
    :raises RecordError: ``q`` is not a query object Blink takes, or holds what the store cannot compare (a number
        beyond 64 bits, text that is not Unicode, nesting deeper than 32 levels, more than 500 conditions).
    """
    query = _query(q)
    unknown = sorted(set(query) - {"limit", "offset", "filter", "sort", "select"})
    if unknown:
        raise RecordError(400, f"q does not take {unknown}: give limit, offset and filter")
    limit = _whole(query.get("limit"), "limit") or DEFAULT_LIMIT
    if limit > MAX_LIMIT:
        raise RecordError(400, f"limit must be 1 to {MAX_LIMIT}, got {limit}")
    where, params = _condition(query.get("filter") or {}, fields, 0)
    if len(params) > 2 * MAX_CONDITIONS:
        raise RecordError(400, f"a filter holds at most {MAX_CONDITIONS} conditions")
    order, order_params = _order(query.get("sort"), fields)
    return where or "1", [*params, *order_params], order, limit, _whole(query.get("offset"), "offset")


def _query(q: str) -> dict[str, Any]:
    """Return ``q`` parsed, checked storable (see :func:`storable_problem`)."""
    try:
        query = json.loads(q) if q else {}
    except json.JSONDecodeError as err:
        raise RecordError(400, f"q is not JSON: {err.msg}") from None
    except (ValueError, RecursionError):
        raise RecordError(
            400, "q is not JSON a query can hold (a number over 4300 digits, or nested too deep)"
        ) from None
    query = {} if query is None else query
    if not isinstance(query, dict):
        raise RecordError(400, 'q must be a JSON object such as {"limit": 25, "offset": 0, "filter": {...}}')
    problem = storable_problem(query)
    if problem:
        raise RecordError(400, f"q holds {problem}")
    return query


def storable_problem(value: Any, depth: int = 0) -> str:
    """Return what in a JSON value the store cannot hold or compare ("" when nothing)."""
    if depth > MAX_DEPTH:
        return f"values nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int):
        return "" if INT64[0] <= value <= INT64[1] else "a whole number beyond 64 bits"
    if isinstance(value, float):
        return "" if math.isfinite(value) else "a number that is not finite"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text that is not valid Unicode (a lone surrogate)"
        return ""
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    return next((problem for item in items if (problem := storable_problem(item, depth + 1))), "")


def _order(sort: Any, fields: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any]]:
    """Return the SQL order of ``sort`` (``["+name", "-name"]``), rows in the order they were created otherwise."""
    if sort is None:
        return "seq", []
    if not isinstance(sort, list) or not all(isinstance(item, str) and item.lstrip("+-") for item in sort):
        raise RecordError(400, 'sort is a list of field names, each "+name" (ascending) or "-name"')
    parts, params = [], []
    for item in sort:
        column, path = _column(item.lstrip("+-"), fields)
        parts.append(f"{column} {'DESC' if item.startswith('-') else 'ASC'}")
        params += path
    return ", ".join([*parts, "seq"]), params


def _whole(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(400, f"{what} must be a whole number of 0 or more, got {value!r}")
    return value


def _condition(given: Any, fields: Mapping[str, Mapping[str, Any]], depth: int) -> tuple[str, list[Any]]:
    if not isinstance(given, dict) or depth > MAX_DEPTH:
        raise RecordError(400, "a filter is an object of field conditions, $or and $and (nested at most 32 deep)")
    parts: list[str] = []
    params: list[Any] = []
    for key, value in given.items():
        if key in ("$or", "$and"):
            if not isinstance(value, list):
                raise RecordError(400, f"{key} takes a list of filters")
            inner = [_condition(item, fields, depth + 1) for item in value]
            inner = [(sql, p) for sql, p in inner if sql]
            if inner:
                parts.append("(" + f" {key[1:].upper()} ".join(f"({sql})" for sql, _ in inner) + ")")
                params += [p for _, ps in inner for p in ps]
            continue
        column, path = _column(key, fields)
        for operator, operand in value.items() if isinstance(value, dict) else [("$eq", value)]:
            if operator not in _OPERATORS or isinstance(operand, (dict, list)) or operand is None:
                allowed = ", ".join(_OPERATORS)
                raise RecordError(400, f"filter on {key!r}: {operator} {operand!r} is not a condition ({allowed})")
            parts.append(f"{column} {_OPERATORS[operator]} ?")
            params += [*path, operand]
    return " AND ".join(parts), params


def _column(key: str, fields: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[str]]:
    """Return the SQL of a field's value, and its parameters."""
    if key in SYSTEM_COLUMNS:
        return key, []
    if key not in fields:
        raise RecordError(400, f"filter names {key!r}, which is not a field of the table")
    return "json_extract(doc, ?)", [path_of(key)]


def path_of(name: str) -> str:
    """SQLite's JSON path of a member."""
    return "$." + json.dumps(name)


def answer(row: tuple[Any, ...]) -> dict[str, Any]:
    """Return a record as the API answers it, from ``(id, doc, created_at, created_by, updated_at, updated_by)``."""
    record_id, doc, created_at, created_by, updated_at, updated_by = row
    return {
        "id": record_id,
        "created_at": created_at,
        "updated_at": updated_at,
        "created_by": created_by,
        "updated_by": updated_by,
        **json.loads(doc),
    }


def checked_values(body: Any, fields: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """
    Return a record body's user-field values (system members ignored, empty values dropped).

    :raises RecordError: the body is not an object, names no field of the table, or breaks a
        required field or a select's options.
    """
    if not isinstance(body, dict):
        raise RecordError(400, "a record is a JSON object of field names and values")
    problem = storable_problem(body)
    if problem:
        raise RecordError(400, f"the record holds {problem}: nothing was stored")
    unknown = sorted(k for k in body if k not in fields and k not in SYSTEM_COLUMNS)
    if unknown:
        raise RecordError(400, f"the record names {unknown}, which are not fields of the table")
    values = {k: v for k, v in body.items() if k in fields and not empty(v)}
    for name, field in fields.items():
        attributes = field.get("attributes") or {}
        if attributes.get("required") and name not in values:
            raise RecordError(400, f"field {name!r} is required: give it a value", "REQUIRED_FIELD")
        if name in values and field.get("type") in _SELECTS:
            _check_options(name, values[name], attributes.get("options") or [])
    return values


def _check_options(name: str, value: Any, options: list[Any]) -> None:
    chosen = value if isinstance(value, list) else [value]
    wrong = [v for v in chosen if v not in options]
    if wrong:
        raise RecordError(400, f"field {name!r}: {wrong} not among its options {options}", "INVALID_OPTION")


def check_unique(
    db: sqlite3.Connection, table_id: str, fields: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any], own: str
) -> None:
    """
    Check the unique fields' values.

    :raises RecordError: another row of the table holds a unique field's value.
    """
    for name, field in fields.items():
        if (field.get("attributes") or {}).get("is_unique") and name in values:
            path = path_of(name)
            held = db.execute(
                "SELECT 1 FROM records WHERE table_id = ? AND id != ? AND json_extract(doc, ?) = json_extract(?, '$')",
                (table_id, own, path, json.dumps(values[name])),
            ).fetchone()
            if held is not None:
                raise RecordError(400, f"field {name!r} is unique and another row holds {values[name]!r}", "NOT_UNIQUE")


def repeated(db: sqlite3.Connection, table_id: str, name: str) -> int:
    """Return how many rows hold a value of ``name`` that another row holds too."""
    path = path_of(name)
    return int(
        db.execute(
            "SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM records WHERE table_id = ? AND "
            "json_extract(doc, ?) IS NOT NULL GROUP BY json_extract(doc, ?) HAVING count(*) > 1)",
            (table_id, path, path),
        ).fetchone()[0]
    )


def insert(
    db: sqlite3.Connection, table_id: str, values: Mapping[str, Any], when: int, user: str, new_id: Callable[[], str]
) -> str:
    """Return a new row; its id."""
    record_id = new_id()
    db.execute(
        "INSERT INTO records (id, table_id, doc, created_at, created_by, updated_at, updated_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (record_id, table_id, json.dumps(values), when, user, when, user),
    )
    return record_id


def new_record_id() -> str:
    return f"rec-{uuid.uuid4().hex[:16]}"


def drop_values(db: sqlite3.Connection, table_id: str, name: str) -> None:
    """Remove a removed field's values from every row."""
    db.execute("UPDATE records SET doc = json_remove(doc, ?) WHERE table_id = ?", (path_of(name), table_id))
