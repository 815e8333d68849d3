"""#64 item 6: the conversion rules of a retype, one per pair of Blink's 18 user types, and the
docs' table of them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.migrations._rows import OPAQUE, USER_TYPES, convert, rule, table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "migrating_data.md"


def test_the_docs_table_is_the_rules() -> None:
    page = DOCS.read_text()
    shown = re.search(r"<!-- conversion-table:.*?-->\n(.*?)\n<!-- /conversion-table -->", page, re.S)
    assert shown is not None and shown.group(1).strip() == table().strip()


def test_every_pair_of_the_18_types_has_a_rule() -> None:
    assert len(USER_TYPES) == 18
    for source in USER_TYPES:
        for target in USER_TYPES:
            how, converter = rule(source, target)
            assert how
            if source == target or source in OPAQUE or target in OPAQUE:
                assert converter is None


@pytest.mark.parametrize(
    ("value", "source", "target", "options", "expected"),
    [
        ("12", "text", "number", (), (True, 12)),
        ("4.5", "long-text", "number", (), (True, 4.5)),
        ("high", "text", "number", (), (False, None)),
        ("nan", "text", "number", (), (False, None)),
        (True, "checkbox", "number", (), (True, 1)),
        (3, "number", "text", (), (True, "3")),
        (["a", "b"], "multi-select", "text", (), (True, "a, b")),
        (False, "checkbox", "long-text", (), (True, "false")),
        ("Yes", "text", "checkbox", (), (True, True)),
        ("maybe", "text", "checkbox", (), (False, None)),
        ("medium", "text", "risk-level", (), (True, "Medium")),
        ("Low", "single-select", "multi-select", ("Low", "High"), (True, ["Low"])),
        (["Low", "Mid"], "list", "multi-select", ("Low", "High"), (False, ["Low", "Mid"])),
        (["High"], "multi-select", "single-select", ("Low", "High"), (True, "High")),
        (3, "number", "single-select", ("1", "3"), (True, "3")),
        ("x", "text", "list", (), (True, ["x"])),
        ("2026-01-31", "text", "date", (), (True, "2026-01-31")),
        ("31/01/2026", "text", "date", (), (False, None)),
        ("u-1", "user", "text", (), (False, None)),
        ("x", "text", "reference", (), (False, None)),
    ],
)
def test_values_convert_as_the_table_says(
    value: Any, source: str, target: str, options: tuple[Any, ...], expected: tuple[bool, Any]
) -> None:
    assert convert(value, source, target, options) == expected
