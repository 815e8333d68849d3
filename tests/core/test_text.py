"""One sanitiser for every text a person reads (blinkops_provider._text, #49 item 4, #50 item 1):
a name or a value with a line break of any kind, a NUL or an ANSI escape cannot give a plan, the
fleet's review, an apply's report, a fleet's summary or the catalogue's diff a line, a heading or an
escape sequence of its own. Each text is tested with the forged name in the table, the workspace id
and a field."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from blinkops_provider._text import escaped, one_line
from blinkops_provider.catalogue import diff_catalogues
from blinkops_provider.exceptions import BlinkBadRequestError
from blinkops_provider.migrations import fleet_review, fleet_summary
from blinkops_provider.migrations._plan import make_plan
from blinkops_provider.migrations._steps import ApplyResult
from blinkops_provider.models import FieldUpdate, TableField
from blinkops_provider.operators.tables import ApplyReport

BREAKS = {"CR": "\r", "LF": "\n", "U+2028": "\u2028", "NUL": "\x00", "ANSI": "\x1b[31m"}
RAW = ("\r", "\n", "\u2028", "\u2029", "\x00", "\x1b", "\x85")


def forged(kind: str) -> str:
    return f"Tickets{BREAKS[kind]}### FORGED [APPROVED]"


def clean(text: str, *, lines_allowed: bool = True) -> None:
    """No raw control character but the text's own line breaks, and no line the forged name began."""
    others = [ch for ch in RAW if ch in text and not (lines_allowed and ch == "\n")]
    assert others == [], repr(text)
    assert not [line for line in text.split("\n") if line.lstrip("-| ").startswith("### FORGED")], text


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def a_logger() -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(f"test-text-{id(object())}")
    log.propagate = False
    handler = Lines()
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    return log, handler


def plan_of(where: str, name: str) -> Any:
    ws_id, table, field = (
        name if where == part else plain for part, plain in zip(("ws", "table", "field"), ("ws", "T", "F"), strict=True)
    )
    held = TableField(name=field, type="single-select", display_name="Old", attributes={"options": [name, "b"]})
    declared = [
        (
            field,
            FieldUpdate.model_validate(
                {"type": "single-select", "display_name": name, "attributes": {"options": ["b"]}}
            ),
        )
    ]
    return make_plan(
        target=("blink", ws_id, table),
        record=f"/records/{name}.json",
        declared=declared,
        recorded={},
        recorded_at=None,
        live=[held, TableField(name=f"{field}2", type="text", display_name="x", attributes={})],
        removals=[f"{field}2"],
    )


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_plan_and_its_log_lines(where: str, kind: str) -> None:
    plan = plan_of(where, forged(kind))
    clean(plan.describe())
    assert "### FORGED" in plan.describe()  # the name is shown, escaped
    log, handler = a_logger()
    plan.log_to(log)
    assert any("### FORGED" in line for line in handler.lines)
    for line in handler.lines:
        clean(line, lines_allowed=False)


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_fleets_review_and_summary(where: str, kind: str) -> None:
    plan = plan_of(where, forged(kind)).to_xcom()
    review = fleet_review([plan])
    clean(review)
    summary = fleet_summary([{"ws_id": plan["ws_id"], "table": plan["table"]}], [{"error": forged(kind)}])
    clean(summary["text"])
    assert "### FORGED" in review and "### FORGED" in summary["text"]


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_an_applys_report_and_its_final_error(where: str, kind: str) -> None:
    from blinkops_provider.operators.tables import not_applied

    name = forged(kind)
    ws_id, table, field = (
        name if where == part else plain for part, plain in zip(("ws", "table", "field"), ("ws", "T", "F"), strict=True)
    )
    stored = TableField(name="ok", type="text", display_name="ok")
    result = ApplyResult([stored], {field: BlinkBadRequestError(f"refused {name}")}, [], [field, "ok"], {"ok": stored})
    log, handler = a_logger()
    ApplyReport(ws_id, table, log).summary(result)
    assert len(handler.lines) >= 2
    for line in handler.lines:
        clean(line, lines_allowed=False)
    assert any("### FORGED" in line for line in handler.lines)
    clean(str(not_applied(result)), lines_allowed=False)


@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_catalogues_diff(kind: str) -> None:
    before = [{"id": "a", "name": "one"}, {"id": "b", "name": "two"}]
    after = [{"id": "a", "name": forged(kind)}, {"id": forged(kind), "name": forged(kind)}]
    lines = diff_catalogues(before, after).lines()
    for line in lines:
        clean(line, lines_allowed=False)
    assert any("### FORGED" in line for line in lines)


def test_one_line_escapes_every_control_character_and_the_cell_markers() -> None:
    assert one_line("a|b\\c\nd\x1b[0m\u2028") == "a\\|b\\\\c\\u000ad\\u001b[0m\\u2028"
    assert escaped("a|b\\c\x00") == "a|b\\c\\u0000"
    assert all(one_line(chr(code)) != chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)])
