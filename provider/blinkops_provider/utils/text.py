"""
How text a person reads shows a name or a value: on one line, escaped.

Nothing in a name or a value shown can start another line, a heading, or a terminal escape sequence.

One place for the plan, the fleet's review, the reports, the catalogue's diff and the errors that show a wrong value.
"""

from __future__ import annotations

import json
from typing import Any

SHOWN = 60
"""The most characters of one value a plan row, a diff line or an error shows (then ``…``)."""

CONTROLS = {c: f"\\u{c:04x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}
"""Every control character (C0, DEL, C1: line breaks, NUL, ESC of ANSI sequences), and the line
and paragraph separators, to their ``\\uXXXX`` escapes."""


def escaped(value: Any) -> str:
    """Return ``value`` as text with every control character written as its escape."""
    return str(value).translate(CONTROLS)


def one_line(text: Any) -> str:
    """
    Return a name as a log line or a Markdown table cell shows it.

    A backslash and ``|`` escaped, and every control character (line breaks of every kind, NUL, ANSI escapes) written as
    its escape.
    """
    return str(text).replace("\\", "\\\\").replace("|", "\\|").translate(CONTROLS)


def show(value: Any, limit: int = SHOWN) -> str:
    """
    Return a value as a person reads it in a plan, a diff or an error.

    A string in quotes, anything else as JSON (so ``1`` and ``"1"`` read differently), every control character escaped
    (JSON keeps U+2028 as it is), cut to ``limit`` characters with an ellipsis.
    """
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = escaped(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


SHOWN_PROBLEMS = 20
"""The most problems an error names one by one (the rest are counted), as the removal gate does."""


def first_problems(problems: list[str], sep: str = "; ", limit: int = SHOWN_PROBLEMS) -> str:
    """
    Return ``problems`` joined by ``sep``, the first ``limit`` named and the rest counted.

    So that an error about 10,000 entries stays a few lines long.
    """
    more = len(problems) - limit
    return sep.join(problems[:limit]) + (f"{sep}and {more} more problem(s) like them" if more > 0 else "")


def counted(count: int, noun: str) -> str:
    """Return ``count`` with ``noun`` as a person says it: "1 table", "0 tables", "2 tables"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
