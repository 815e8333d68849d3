"""RQL evaluated by the sandbox: a validated :class:`~blinkops_provider.rql.RQLQuery` turned into SQL.

Semantics (those of SQL, as in the a8m/rql library Blink's RQL follows):

* ``{"f": v}`` and ``$eq`` mean equals; ``null`` matches a missing value, ``$neq null`` a present one.
* A comparison with a missing value is false (``$neq "x"`` does not match a missing ``f``).
* ``$like`` is SQL LIKE, case-sensitive, ``%`` any run of characters, ``_`` one character.
* Fields of one object, and predicates of one field, are ANDed; ``$or`` takes any of its conditions.
* ``sort`` keys apply in order; missing values sort first ascending, last descending; ties keep
  insertion order, so pages never overlap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from blinkops_provider.models import ConnectionType

# Filterable and sortable fields: the scalar members of a connection type, with their kinds.
COLUMNS: dict[str, type] = {
    "id": str, "name": str, "display_name": str, "plugin_name": str, "documentation_link": str,
    "icon_uri": str, "oauth_supported": bool, "tenant_id": str, "created_at": int,
    "created_by": str, "updated_at": int, "updated_by": str,
}  # fmt: skip
SELECTABLE = frozenset(ConnectionType.model_fields)
_SQL_OPERATORS = {"$eq": "=", "$neq": "!=", "$gt": ">", "$lt": "<", "$gte": ">=", "$lte": "<="}


class QueryError(ValueError):
    """The query names a field or compares a value the sandbox cannot evaluate."""


def _column(field: str, what: str) -> type:
    if field not in COLUMNS:
        raise QueryError(f"{what}: unknown field {field!r}; allowed: {', '.join(COLUMNS)}")
    return COLUMNS[field]


def _check_value(field: str, kind: type, operator: str, value: Any) -> Any:
    if value is None:
        if operator not in ("$eq", "$neq"):
            raise QueryError(f"filter on {field!r}: {operator} cannot compare with null")
        return None
    if kind is bool:
        if not isinstance(value, bool) or operator not in ("$eq", "$neq"):
            raise QueryError(f"filter on {field!r}: a boolean field takes true or false with $eq or $neq")
        return int(value)
    if kind is int and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise QueryError(f"filter on {field!r}: a number field takes a number, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise QueryError(f"filter on {field!r}: {value} is out of range (64-bit integers only)")
    if isinstance(value, float) and not math.isfinite(value):
        raise QueryError(f"filter on {field!r}: {value!r} is not a number")
    if kind is str and not isinstance(value, str):
        raise QueryError(f"filter on {field!r}: a text field takes a string, got {value!r}")
    if operator == "$like" and kind is not str:
        raise QueryError(f"filter on {field!r}: $like applies to text fields only")
    return value


def _predicate(field: str, operator: str, value: Any, params: list[Any]) -> str:
    value = _check_value(field, _column(field, "filter"), operator, value)
    if value is None:
        return f'"{field}" IS NULL' if operator == "$eq" else f'"{field}" IS NOT NULL'
    params.append(value)
    if operator == "$like":
        return f'"{field}" LIKE ?'
    return f'"{field}" {_SQL_OPERATORS[operator]} ?'


def compile_filter(condition: Mapping[str, Any], params: list[Any]) -> str:
    """The SQL WHERE expression of a (validated) RQL filter, appending its parameters."""
    parts: list[str] = []
    for key, value in condition.items():
        if key == "$or":
            parts.append("(" + " OR ".join(compile_filter(item, params) for item in value) + ")")
        elif isinstance(value, Mapping):
            parts.extend(_predicate(key, operator, operand, params) for operator, operand in value.items())
        else:
            parts.append(_predicate(key, "$eq", value, params))
    return "(" + " AND ".join(parts) + ")"


def compile_sort(sort: list[str] | None) -> str:
    """The SQL ORDER BY list of an RQL sort, with insertion order breaking ties.

    ``id`` is unique, so nothing after it can break a tie: the list ends there, and SQLite walks
    the ``id`` index instead of sorting every match (what a keyset walk asks for, page after page).
    """
    keys = []
    for item in sort or ():
        field = item.lstrip("+-")
        _column(field, "sort")
        keys.append(f'"{field}" {"DESC" if item.startswith("-") else "ASC"}')
        if field == "id":
            return ", ".join(keys)
    keys.append("seq ASC")
    return ", ".join(keys)


def check_select(select: list[str] | None) -> None:
    """Refuse a projection onto fields a connection type does not have."""
    unknown = [name for name in select or () if name not in SELECTABLE]
    if unknown:
        raise QueryError(
            f"select: unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(SELECTABLE))}"
        )
