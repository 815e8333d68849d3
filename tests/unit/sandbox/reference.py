"""A brute-force RQL evaluation in plain Python, to check the sandbox's SQL against.

It takes queries that are valid already, and reads them as a8m/rql does: parts that set no
condition (``{}``, ``{"f": {}}``, ``{"$or": []}``, ``{"$and": []}``) match everything, and a
comparison with a missing value is false, as in SQL.
"""

from __future__ import annotations

import re
from typing import Any

_COMPARE = {
    "$eq": lambda a, b: a == b,
    "$neq": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$lt": lambda a, b: a < b,
    "$gte": lambda a, b: a >= b,
    "$lte": lambda a, b: a <= b,
}


def _like(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.S)


def _predicate(value: Any, operator: str, operand: Any) -> bool:
    if value is None:
        return False
    if operator == "$like":
        return _like(operand).fullmatch(value) is not None
    return bool(_COMPARE[operator](value, operand))


def matches(doc: dict[str, Any], condition: dict[str, Any]) -> bool:
    for key, value in condition.items():
        if key == "$or":
            if value and not any(matches(doc, item) for item in value):
                return False
        elif key == "$and":
            if not all(matches(doc, item) for item in value):
                return False
        elif isinstance(value, dict):
            if not all(_predicate(doc.get(key), op, operand) for op, operand in value.items()):
                return False
        elif not _predicate(doc.get(key), "$eq", value):
            return False
    return True


def evaluate(
    docs: list[dict[str, Any]],
    filter_: dict[str, Any] | None = None,
    sort: list[str] | None = None,
    select: list[str] | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """The result of an RQL query over ``docs`` (in insertion order), as the API should answer it."""
    rows = [doc for doc in docs if not filter_ or matches(doc, filter_)]
    for item in reversed(sort or []):
        field, descending = item.lstrip("+-"), item.startswith("-")
        rows.sort(key=lambda d: (d.get(field) is not None, d.get(field)), reverse=descending)
    rows = rows[offset : None if limit is None else offset + limit]
    if select:
        rows = [{k: v for k, v in row.items() if k in select} for row in rows]
    return rows
