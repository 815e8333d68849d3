"""
How a value converts from one field type to another, for a retype (``"type_change"``).

One rule per pair of Blink's 18 user types: the value converts always, converts when it parses (each value that does
not is counted and named), or the pair is refused. :func:`conversion_table` renders the rules as the Markdown table of
``docs/migrating_data.md`` (a test keeps the two the same).

Types whose values Blink publishes no form for (a reference's link, a user, a status, a button, an attachment, an SLA, a
vendor) convert to and from nothing: their values would be guessed.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

from blinkops_provider.models import FieldType

USER_TYPES = tuple(kind.value for kind in FieldType)
"""The field types a user can create, as Blink's tool lists them."""

OPAQUE = frozenset({"reference", "status", "user", "button", "attachment", "sla", "vendor", "vendors"})
"""Types whose values Blink publishes no form for: refused both ways."""
TEXT = frozenset({"text", "long-text"})
RISK_LEVELS = ("Low", "Medium", "High", "Critical")
"""The risk levels (the sandbox's and Blink's UI's)."""

Converter = Callable[[Any, Sequence[Any]], tuple[bool, Any]]


def _as_text(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, bool):
        return True, "true" if value else "false"
    if isinstance(value, list):
        return True, ", ".join(str(_as_text(item, options)[1]) for item in value)
    return True, str(value)


def _as_number(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, bool):
        return True, int(value)
    if isinstance(value, (int, float)):
        return True, value
    try:
        number = float(str(value).strip())
    except ValueError:
        return False, None
    if not math.isfinite(number):
        return False, None
    return True, int(number) if number.is_integer() and "." not in str(value) else number


def _as_checkbox(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    said = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if isinstance(value, bool):
        return True, value
    found = said.get(str(value).strip().lower())
    return (found is not None), found


def _as_risk(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    found = next((level for level in RISK_LEVELS if str(value).strip().lower() == level.lower()), None)
    return (found is not None), found


def _as_option(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, list):
        return (len(value) == 1 and value[0] in options), (value[0] if len(value) == 1 else None)
    shown = value if isinstance(value, str) else str(value)
    return (shown in options), shown


def _as_options(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    items = value if isinstance(value, list) else [value]
    return all(item in options for item in items), list(items)


def _as_list(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    return True, list(value) if isinstance(value, list) else [value]


def _as_date(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    text = str(value).strip()
    try:
        dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
    except ValueError:
        return False, None
    return True, text


_SCALARS = TEXT | {"number", "duration", "risk-level", "checkbox", "single-select", "date"}
_RULES: dict[str, tuple[frozenset[str], str, Converter]] = {
    # target: (the sources it takes, how, the converter)
    "text": (_SCALARS | {"multi-select", "list"}, "as text (a list joined with ', ')", _as_text),
    "long-text": (_SCALARS | {"multi-select", "list"}, "as text (a list joined with ', ')", _as_text),
    "number": (TEXT | {"duration", "checkbox"}, "a number (text that is one; true 1, false 0)", _as_number),
    "duration": (TEXT | {"number"}, "a number (text that is one)", _as_number),
    "checkbox": (TEXT | {"number"}, "true/false, yes/no or 1/0", _as_checkbox),
    "risk-level": (TEXT | {"single-select"}, "one of Low, Medium, High, Critical", _as_risk),
    "single-select": (TEXT | {"risk-level", "number", "multi-select", "list"}, "one of the new options", _as_option),
    "multi-select": (TEXT | {"single-select", "risk-level", "list"}, "each among the new options", _as_options),
    "list": (TEXT | {"single-select", "risk-level", "number", "multi-select"}, "as a list", _as_list),
    "date": (TEXT, "an ISO 8601 date (YYYY-MM-DD, or with a time)", _as_date),
}


def conversion(source: str, target: str) -> tuple[str, Converter | None]:
    """Return how a ``source`` value becomes a ``target`` one, and the converter (None: refused, and why)."""
    if source == target:
        return "the same type: not a retype", None
    for kind in (source, target):
        if kind in OPAQUE:
            return f"refused: Blink publishes no form of a {kind} value", None
        if kind not in USER_TYPES:
            return f"refused: {kind!r} is not a type a user can create", None
    sources, how, convert = _RULES.get(target, (frozenset(), "", _as_text))
    if source not in sources:
        return f"refused: a {source} value has no {target} form", None
    return how, convert


def convert(value: Any, source: str, target: str, options: Sequence[Any] = ()) -> tuple[bool, Any]:
    """Return ``value`` of a ``source`` field as a ``target`` one: ``(True, converted)``, or ``(False, None)``."""
    _, converter = conversion(source, target)
    return converter(value, options) if converter is not None else (False, None)


def conversion_table() -> str:
    """
    Return the rules as a Markdown table.

    A row per source type, a column per target type; ``·`` the same type, ``✗`` refused, else a number into the list of
    ways below it.
    """
    ways: list[str] = []
    rows = []
    for source in USER_TYPES:
        cells = []
        for target in USER_TYPES:
            how, converter = conversion(source, target)
            if source == target:
                cells.append("·")
            elif converter is None:
                cells.append("✗")
            else:
                ways += [] if how in ways else [how]
                cells.append(str(ways.index(how) + 1))
        rows.append(f"| {source} | {' | '.join(cells)} |")
    head = ["| from \\ to | " + " | ".join(USER_TYPES) + " |", "|---" * (len(USER_TYPES) + 1) + "|"]
    return "\n".join([*head, *rows, "", *(f"{n}. {how}" for n, how in enumerate(ways, start=1))])
