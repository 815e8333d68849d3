"""#64 items 3-4: a plan that touches data counts the rows exactly, says an estimate as one, and
refuses before any write a change that would leave rows outside their schema; against the tests'
own fake Blink (its own naming rule) and the sandbox.

#64 item 6: the conversion rules of a retype, one per pair of Blink's 18 user types, and the
docs' table of them.

Private imports, the exception: the 18 x 18 conversion table, a value's conversion and the row counts' bookkeeping
are checked cell by cell; through ``plan()`` each cell would need a table of its own in a Blink.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_schema, plan_text, plan_xcom, review_needed
from blinkops_provider.migrations._conversions import OPAQUE, USER_TYPES, conversion, conversion_table, convert
from blinkops_provider.migrations._risks import SHOWN_REPEATS
from blinkops_provider.migrations._rows import FieldRows, Need, count_row
from blinkops_sandbox import DEMO_ROWS, BlinkSandbox
from tests.fake_blink import FakeBlink, blink_field

DOCS = Path(__file__).resolve().parents[3] / "docs" / "migrating_data.md"


def test_the_docs_table_is_the_rules() -> None:
    page = DOCS.read_text()
    shown = re.search(r"<!-- conversion-table:.*?-->\n(.*?)\n<!-- /conversion-table -->", page, re.S)
    assert shown is not None and shown.group(1).strip() == conversion_table().strip()


def test_every_pair_of_the_18_types_has_a_rule() -> None:
    assert len(USER_TYPES) == 18
    for source in USER_TYPES:
        for target in USER_TYPES:
            how, converter = conversion(source, target)
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


HELD = {
    "T": [
        blink_field("Name", "text"),
        blink_field("Code", "text"),
        blink_field("Stage", "single-select", options=["new", "open", "done"]),
        blink_field("Tags", "multi-select", options=["a", "b", "c"]),
    ]
}


def entry(name: str, kind: str = "text", **attributes: Any) -> dict[str, Any]:
    return {"field": name, "type": kind, "display_name": name, "attributes": attributes}


def rows(blink: FakeBlink, *values: dict[str, Any]) -> None:
    blink.records["T"] = [{"id": f"r{n}", **value} for n, value in enumerate(values)]


def writes(blink: FakeBlink) -> list[Any]:
    return [*blink.puts, *blink.posts, *blink.deletes, *blink.record_puts]


def test_count_row_counts_values_repeats_and_options() -> None:
    records = [{"A": "x", "B": ["a"]}, {"A": "x", "B": ["a", "b"]}, {"A": "", "B": []}, {"A": None}, {"A": "y"}]
    needs = [Need("A", filled=True, unique=True), Need("B", options=("a", "c"), multi=True)]
    tallies = {"A": FieldRows(), "B": FieldRows()}
    for record in records:
        count_row(tallies, needs, record)
    assert tallies["A"].filled == 3 and tallies["A"].repeats() == [("x", 2)]
    assert tallies["B"].filled == 2 and dict(tallies["B"].options) == {"a": 2}


def test_a_removal_counts_the_rows_that_hold_a_value(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.rows["T"] = 500  # Blink's estimate, not used
        rows(blink, *([{"Code": "c"}] * 3), {"Code": ""}, {"Name": "x"})
        plan = plan_schema(hook, "ws-1", "T", [{"field": "Code", "remove": True}], record_path=f"{tmp_path}/")
    (row,) = plan.fields
    assert row.risk == "deletes values in 3 of 5 rows, permanently" and row.destructive
    assert row.to_xcom()["counts"] == {"rows": 5, "with_value": 3}


def test_a_removal_of_a_field_empty_everywhere_loses_nothing_and_asks_no_one(hook: Any, tmp_path: Path) -> None:
    removing = [{"field": "Code", "remove": True}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Name": "a"}, {"Name": "b", "Code": ""})
        plan = plan_schema(hook, "ws-1", "T", removing, record_path=f"{tmp_path}/")
        assert not plan.fields[0].destructive
        assert "holds no value in any of the 2 rows (counted): nothing is lost" in plan_text(plan)
        assert not review_needed([plan_xcom(plan)], "destructive")
        done = apply_schema(hook, "ws-1", "T", removing, record_path=f"{tmp_path}/")  # no approval needed
    assert done.outcomes() == {"Code": "removed"}


def test_a_row_that_gains_a_value_since_the_plan_makes_it_stale(hook: Any, tmp_path: Path) -> None:
    removing = [{"field": "Code", "remove": True}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Name": "a"})
        plan = plan_xcom(plan_schema(hook, "ws-1", "T", removing, record_path=f"{tmp_path}/"))
        blink.records["T"][0]["Code"] = "written since"
        with pytest.raises(Exception, match="the table's rows changed since the plan"):
            apply_schema(hook, "ws-1", "T", removing, record_path=f"{tmp_path}/", plan=plan, acknowledge_risks=True)
        assert blink.deletes == []


def test_required_turned_on_over_empty_rows_is_refused_before_any_write(hook: Any, tmp_path: Path) -> None:
    declared = [entry("Name", required=True), entry("Code", is_unique=True)]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Name": "a", "Code": "1"}, {"Code": "2"}, {"Name": "", "Code": "3"})
        with pytest.raises(BlinkInputError, match="refuses 1 of 2 entries, so nothing is applied") as caught:
            apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
        assert blink.puts == [] and blink.record_puts == []  # Code alone would pass: the plan is one unit
    said = str(caught.value)
    assert "required turned on, but 2 of 3 rows have no value (counted)" in said and '"backfill": VALUE' in said


def test_is_unique_turned_on_over_repeats_is_refused_naming_them(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, *({"Code": f"v{n % 25}"} for n in range(60)), {"Code": "solo"})
        plan = plan_schema(hook, "ws-1", "T", [entry("Code", is_unique=True)], record_path=f"{tmp_path}/")
    (row,) = plan.fields
    assert row.action == "refused"
    assert "25 value(s) repeat in 60 of 61 rows (counted): 'v0' ×3" in row.risk  # noqa: RUF001
    assert f"and {25 - SHOWN_REPEATS} more" in row.risk
    assert len(row.counts["repeated"]) == SHOWN_REPEATS  # type: ignore[index]


def test_a_dropped_option_counts_its_rows_from_blinks_total(hook: Any, tmp_path: Path) -> None:
    declared = [entry("Stage", "single-select", options=["open", "done"])]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Stage": "new"}, {"Stage": "new"}, {"Stage": "open"}, {})
        plan = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
        assert blink.finds == 2  # the table's rows and the option's: one request each, from Blink's total
    (row,) = plan.fields
    assert row.destructive and "options removed: 'new' (in 2 of 4 rows): those values are orphaned" in row.risk
    assert row.counts == {"rows": 4, "options": {"new": 2}}


def test_a_dropped_option_no_row_uses_is_not_destructive(hook: Any, tmp_path: Path) -> None:
    declared = [entry("Tags", "multi-select", options=["a", "b"])]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Tags": ["a", "b"]}, {"Tags": ["a"]})
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
    assert row.action == "change" and not row.destructive and row.counts == {"rows": 2, "options": {"c": 0}}


def test_a_new_required_field_on_a_table_with_rows_needs_a_backfill(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        rows(blink, {"Name": "a"}, {"Name": "b"})
        with pytest.raises(BlinkInputError, match="a new required field on a table with 2 rows"):
            apply_schema(hook, "ws-1", "T", [entry("Owner", required=True)], record_path=f"{tmp_path}/")
        assert blink.posts == []


@pytest.mark.parametrize("status", [403, 404, 405])
def test_rows_that_cannot_be_read_give_the_estimate_said_as_one(hook: Any, tmp_path: Path, status: int) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.rows["T"] = 128
        blink.records_status = status
        plan = plan_schema(hook, "ws-1", "T", [{"field": "Code", "remove": True}], record_path=f"{tmp_path}/")
    (row,) = plan.fields
    assert row.risk.startswith(f"deletes its values in about 128 rows (the rows could not be read: {status}")
    assert "an estimate" in row.risk and row.destructive
    assert row.counts == {"estimate": 128, "unread": row.counts["unread"]}  # type: ignore[index]


def test_the_sandbox_plan_counts_the_seeded_rows(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    seeded = DEMO_ROWS["Incidents"]
    hosts = sum(bool(row.get("Affected hosts")) for row in seeded)
    plan = plan_schema(BlinkHook(), "ws-demo", "Incidents", [{"field": "Affected hosts", "remove": True}])
    assert f"deletes values in {hosts} of {len(seeded)} rows, permanently" in plan_text(plan)
    titles = plan_schema(BlinkHook(), "ws-demo", "Incidents", [entry("Title", required=True, is_unique=True)])
    assert titles.fields[0].action == "refused" and "'Malware on laptop' ×" in titles.fields[0].risk  # noqa: RUF001
    with pytest.raises(BlinkInputError):
        apply_schema(BlinkHook(), "ws-demo", "Incidents", [{"field": "Affected hosts", "remove": True}])
    assert not [e for e in blink_sandbox.requests if e["method"] in ("PUT", "POST", "DELETE")]


def test_the_migrating_data_pages_examples_print_what_they_say(blink_sandbox: BlinkSandbox, capsys: Any) -> None:
    """The docs page "Migrating data": each Python example runs against the sandbox and prints
    what its closing comment says."""
    import re

    page = (Path(__file__).resolve().parents[3] / "docs" / "migrating_data.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, "migrating_data.md", "exec"), {})
        said = re.findall(r"print\(.*\)\s+# (.*)", block)[0].removesuffix(", ...")
        assert capsys.readouterr().out.strip().splitlines()[-1].startswith(said)  # (the log goes before it)
