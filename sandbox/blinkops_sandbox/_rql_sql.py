r"""
The sandbox's own RQL: the ``q`` parameter parsed as Blink's parser does, and turned into SQL.

Blink's RQL is the open-source Go library a8m/rql. This module follows that library's grammar and
rules, with the connection-type model as its schema. It does not share code with the client's
:class:`~blinkops_provider.rql.RQLQuery`, so the two can check each other in the tests.

What is accepted (as a8m/rql decodes and parses a query):

* ``q`` is a JSON object, or ``null`` (an empty query). A member whose value is ``null`` counts
  as left out. Any other unknown member is refused.
* ``limit``: a JSON integer. ``0`` or left out means the default page size (:data:`DEFAULT_LIMIT`).
  Otherwise it must be 1 to 1000 (``MAX_LIMIT``). ``offset``: a JSON integer, 0 or more.
* ``sort``: an array of strings, ``name``, ``+name`` or ``-name``, each a field of
  :data:`COLUMNS`. ``select``: an array of strings, each a member of a connection type
  (``[]`` selects everything).
* ``filter``: an object. Its keys are fields of :data:`COLUMNS`, ``$or`` or ``$and``.
  ``$or`` and ``$and`` take an array of condition objects. A field takes a value (equals) or an
  object of predicates, which may be empty.
* The value's type must match the field's: booleans take ``true``/``false`` with ``$eq`` and
  ``$neq``; text fields take strings with every predicate, ``$like`` included; integer fields
  take numbers without a fraction, with every predicate but ``$like``. ``null`` is never a
  value: RQL has no null comparison.
* An empty part is no condition: ``{}``, ``{"name": {}}``, ``{"$or": []}``, ``{"$and": []}``.
  a8m/rql writes nothing for them. It then builds broken SQL when such a part stands beside
  another, so the client drops them before sending.

The sandbox's own choices, where Blink publishes nothing:

* The default page size is 100 (a8m/rql's default is 25) and the largest is 1000 (Blink's docs).
* ``$like`` is case-sensitive, ``%`` is any run of characters, ``_`` is one character, and there
  is no escape character. a8m/rql hands the pattern to the database: PostgreSQL is
  case-sensitive, and MySQL with its default collation and SQLite are not. PostgreSQL and MySQL
  take ``\\`` as the escape character, and SQLite takes none.
* ``$or`` and ``$and`` nest at most :data:`MAX_NESTING` deep.
* Integers outside 64 bits, and text that is not valid Unicode, are refused. a8m/rql reads
  numbers as float64, and Go turns lone surrogates into U+FFFD.

Evaluation is SQL's: a comparison with a missing value is false. Sort keys apply in order, and
missing values sort first ascending. Ties keep insertion order, so pages never overlap.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from blinkops_sandbox._blink_api import MAX_LIMIT

DEFAULT_LIMIT = 100
"""The page size when a query gives no ``limit``, or ``0`` (Blink's own default is not published)."""

COLUMNS: dict[str, type] = {
    "id": str,
    "name": str,
    "display_name": str,
    "plugin_name": str,
    "documentation_link": str,
    "icon_uri": str,
    "oauth_supported": bool,
    "tenant_id": str,
    "created_at": int,
    "created_by": str,
    "updated_at": int,
    "updated_by": str,
}
"""The filterable and sortable fields: a connection type's scalar members with their types, as the
API contract's section 2.4 lists them. Written out here on purpose, not derived from the client's
models, so that the conformance suite can catch a wrong type table in the client."""

MAX_NESTING = 64
"""How deep ``$or`` and ``$and`` may nest (a8m/rql sets no limit; Blink publishes none)."""

SELECTABLE = frozenset([*COLUMNS, "attributes", "metadata", "methods"])
"""The members ``select`` may name: every member of section 2.4."""
MEMBERS = ("limit", "offset", "sort", "select", "filter")

_OPERATORS: dict[type, dict[str, str]] = {
    bool: {"$eq": "=", "$neq": "!="},
    int: {"$eq": "=", "$neq": "!=", "$gt": ">", "$lt": "<", "$gte": ">=", "$lte": "<="},
    str: {"$eq": "=", "$neq": "!=", "$gt": ">", "$lt": "<", "$gte": ">=", "$lte": "<=", "$like": "LIKE"},
}
_KIND = {bool: "a boolean", int: "an integer", str: "a string"}
_INT64 = range(-(2**63), 2**63)


class QueryError(ValueError):
    """The query breaks a rule of RQL or names what a connection type does not have."""


@dataclass
class SQLQuery:
    """A parsed query, ready for SQLite: ``SELECT ... WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?``."""

    where: str = "1"
    params: list[Any] = field(default_factory=list)
    order: str = "seq ASC"
    select: list[str] | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def _refuse_constant(name: str) -> Any:
    raise QueryError(f"q is not valid JSON: {name} is not a JSON number")


def parse_query(q: str) -> SQLQuery:
    """
    Parse the ``q`` parameter.

    :raises QueryError: the JSON is invalid, or the query breaks a rule; the message says which
        and what is allowed.
    """
    try:
        raw = json.loads(q, parse_constant=_refuse_constant)
    except RecursionError:
        raise QueryError(f"q nests too deeply; $or and $and may nest {MAX_NESTING} deep") from None
    except ValueError as err:
        if isinstance(err, QueryError):
            raise
        raise QueryError(f"q is not valid JSON: {err}") from None
    if raw is None:
        return SQLQuery()
    if not isinstance(raw, dict):
        raise QueryError(f"q must be a JSON object (or null), not {_json_type(raw)}")
    members = {key: value for key, value in raw.items() if value is not None}
    unknown = [key for key in members if key not in MEMBERS]
    if unknown:
        raise QueryError(f"unknown member(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(MEMBERS)}")
    query = SQLQuery()
    limit = _integer(members.get("limit", 0), "limit")
    if limit:
        if not 1 <= limit <= MAX_LIMIT:
            raise QueryError(f"limit must be 1 to {MAX_LIMIT} (0 or none for {DEFAULT_LIMIT}), got {limit}")
        query.limit = limit
    query.offset = _integer(members.get("offset", 0), "offset")
    if query.offset < 0:
        raise QueryError(f"offset must be 0 or more, got {query.offset}")
    query.order = _order(_strings(members.get("sort", []), "sort"))
    select = _strings(members.get("select", []), "select")
    unknown = [name for name in select if name not in SELECTABLE]
    if unknown:
        raise QueryError(
            f"select: unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(SELECTABLE))}"
        )
    query.select = select or None
    flt = members.get("filter", {})
    if not isinstance(flt, dict):
        raise QueryError(f"filter must be an object of conditions, not {_json_type(flt)}")
    compiled = _conjunction(flt, "filter")
    if compiled is not None:
        query.where, query.params = compiled
    return query


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "null"


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise QueryError(f"{what} must be a JSON integer, not {_json_type(value)} ({value!r})")
    if value not in _INT64:
        raise QueryError(f"{what}: {value} is out of range (64-bit integers only)")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list):
        raise QueryError(f"{what} must be an array of field names, not {_json_type(value)}")
    for item in value:
        if not isinstance(item, str):
            raise QueryError(f"{what}: every item must be a string, got {_json_type(item)} ({item!r})")
    return value


def _order(sort: list[str]) -> str:
    """
    Return the SQL ORDER BY list of an RQL sort, with insertion order breaking ties.

    ``id`` is unique, so nothing after it can break a tie: the list ends there, and SQLite walks
    the ``id`` index instead of sorting every match (what a keyset walk asks for, page after page).
    """
    keys = []
    for item in sort:
        if not item:
            raise QueryError("sort: a sort field cannot be empty")
        name = item[1:] if item[0] in "+-" else item
        if name not in COLUMNS:
            raise QueryError(f"sort: unknown field {name!r}; allowed: {', '.join(COLUMNS)}")
        keys.append(f'"{name}" {"DESC" if item[0] == "-" else "ASC"}')
        if name == "id":
            return ", ".join(keys)
    keys.append("seq ASC")
    return ", ".join(keys)


_Compiled = tuple[str, list[Any]]


def _conjunction(condition: Mapping[str, Any], where: str, depth: int = 0) -> _Compiled | None:
    """Return every key of one condition object, ANDed; None when the object sets no condition."""
    parts: list[_Compiled] = []
    for key, value in condition.items():
        if key in ("$or", "$and"):
            if depth >= MAX_NESTING:
                raise QueryError(f"{where}: $or and $and may nest {MAX_NESTING} deep, no deeper")
            part = _relation(key, value, f"{where}.{key}", depth + 1)
        elif key in COLUMNS:
            part = _field(key, COLUMNS[key], value, where)
        else:
            raise QueryError(f"{where}: unknown key {key!r}; allowed: $or, $and and the fields {', '.join(COLUMNS)}")
        if part is not None:
            parts.append(part)
    return _join(" AND ", parts)


def _relation(operator: str, terms: Any, where: str, depth: int) -> _Compiled | None:
    if not isinstance(terms, list):
        raise QueryError(f"{where} must be an array of condition objects, not {_json_type(terms)}")
    parts = []
    for index, term in enumerate(terms):
        if not isinstance(term, dict):
            raise QueryError(f"{where}[{index}] must be a condition object, not {_json_type(term)}")
        parts.append(_conjunction(term, f"{where}[{index}]", depth))
    if operator == "$or" and None in parts:
        return None  # one term sets no condition, so every item matches it
    return _join(" AND " if operator == "$and" else " OR ", [part for part in parts if part is not None])


def _join(glue: str, parts: list[_Compiled]) -> _Compiled | None:
    if not parts:
        return None
    params = [param for _, part_params in parts for param in part_params]
    return "(" + glue.join(sql for sql, _ in parts) + ")", params


def _field(name: str, kind: type, value: Any, where: str) -> _Compiled | None:
    predicates = value if isinstance(value, dict) else {"$eq": value}
    parts = []
    for operator, operand in predicates.items():
        sql_operator = _OPERATORS[kind].get(operator)
        if sql_operator is None:
            raise QueryError(
                f"{where}: {operator!r} does not apply to {name!r} ({_KIND[kind]} field); "
                f"allowed: {', '.join(_OPERATORS[kind])}"
            )
        parts.append((f'"{name}" {sql_operator} ?', [_operand(name, kind, operand, where)]))
    return _join(" AND ", parts)


def _operand(name: str, kind: type, value: Any, where: str) -> Any:
    """Return the SQL parameter for a filter value, after checking its type against the field's."""
    wrong = QueryError(f"{where}: {name!r} is {_KIND[kind]} field and takes {_KIND[kind]}, not {_json_type(value)}")
    if kind is bool:
        if not isinstance(value, bool):
            raise wrong
        return int(value)
    if kind is str:
        if not isinstance(value, str):
            raise wrong
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise QueryError(f"{where}: the value for {name!r} is not valid Unicode (a lone surrogate)") from None
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise QueryError(f"{where}: {name!r} is an integer field and {value!r} has a fraction")
        value = int(value)
    if value not in _INT64:
        raise QueryError(f"{where}: {value} is out of range for {name!r} (64-bit integers only)")
    return value
