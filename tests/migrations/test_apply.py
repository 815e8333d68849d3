"""Planning and applying a migration (blinkops_provider.migrations._apply): what the inputs may be (#35)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import apply_schema, declared_schema, plan_schema
from tests.fake_blink import field_json, without_table_reads

pytestmark = pytest.mark.usefixtures("blink_without_table_reads")


SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


@pytest.mark.parametrize("form", ["dict", "json", "python", "fingerprint"])
def test_the_hooks_plan_takes_the_same_forms_as_the_operators(hook: Any, tmp_path: Path, form: str) -> None:
    records = f"{tmp_path}/records/"
    plan = plan_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records).to_xcom()
    given = {"dict": plan, "json": json.dumps(plan), "python": repr(plan), "fingerprint": plan["fingerprint"]}[form]
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        assert apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records, plan=given).ok


def test_a_plan_that_is_no_plan_is_refused_briefly_before_any_request(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"plan must be the plan task's XCom") as e:
        apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=f"{tmp_path}/", plan="x" * 5000)
    assert m.call_count == 0 and len(str(e.value)) < 300


@pytest.mark.parametrize("value", ["[]", [], {"fields": []}, "  []  "])
def test_an_empty_declared_schema_is_refused(value: Any) -> None:
    with pytest.raises(BlinkInputError, match="declares no field"):
        declared_schema(value, source="the 'schema' param")


# -- against Blink as Blink's own code shows it (tests/fake_blink.py, #42) ----------------------

from blinkops_provider.exceptions import BlinkNotFoundError  # noqa: E402
from tests.fake_blink import FakeBlink, blink_field  # noqa: E402

HELD = {
    "Incidents": [
        blink_field("Title", "text", required=True, is_unique=True, description="One line"),
        blink_field("Severity", "single-select", required=True, is_unique=False, options=["Low", "High"]),
        blink_field("Stage", "status", options=["Open", "Closed"]),
        blink_field("Assignee", "user"),
    ]
}
OPTIONS_ONLY = [
    {
        "field": "Severity",
        "type": "single-select",
        "display_name": "Severity",
        "attributes": {"options": ["Low", "High", "Critical"]},
    }
]


def test_a_declaration_that_changes_only_options_keeps_what_blink_held(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        result = apply_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/")
    assert result.ok and result.outcomes() == {"Severity": "changed"}
    [(_, _, body)] = blink.puts
    assert body["attributes"] == {"required": True, "is_unique": False, "options": ["Low", "High", "Critical"]}
    assert body["description"] == "" or "description" not in body
    held = blink.field("Incidents", "Severity")["attributes"]
    assert held["required"] is True and held["is_unique"] is False and held["options"][-1] == "Critical"


def test_the_description_blink_holds_is_sent_back(hook: Any, tmp_path: Path) -> None:
    declared = [{"field": "Title", "type": "text", "display_name": "Headline"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    [(_, _, body)] = blink.puts
    assert body == {
        "type": "text",
        "display_name": "Headline",
        "description": "One line",
        "attributes": {"required": True, "is_unique": True},
    }
    assert blink.field("Incidents", "Title")["description"] == "One line"


def test_replace_sends_exactly_the_declaration_and_the_plan_says_what_is_lost(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/", replace=True)
        apply_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/", replace=True)
    [(_, _, body)] = blink.puts
    assert body == {k: v for k, v in OPTIONS_ONLY[0].items() if k != "field"}
    assert blink.field("Incidents", "Severity")["attributes"] == {"options": ["Low", "High", "Critical"]}
    (row,) = plan.fields
    assert row.destructive and "required dropped" in row.risk


def test_a_field_blink_lacks_is_added_and_the_others_changed(hook: Any, tmp_path: Path) -> None:
    declared = [*OPTIONS_ONLY, {"field": "Ghost", "type": "text", "display_name": "Ghost"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    assert [(p.field, p.action) for p in plan.fields] == [("Severity", "change"), ("Ghost", "add")]
    assert [field for _, field, _ in blink.puts] == ["Severity"] and [t for t, _ in blink.posts] == ["Incidents"]
    assert result.outcomes() == {"Severity": "changed", "Ghost": "added"}


def test_a_field_changed_in_blink_between_two_applies_shows_drift(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        apply_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/")
        blink.change_in_ui("Incidents", "Severity", who="alice@blink.test", is_unique=True)
        plan = plan_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/")
    (row,) = plan.fields
    assert row.drift == ("attributes.is_unique",) and row.action == "unchanged"
    assert plan.to_xcom()["fields"][0]["drift"] == ["attributes.is_unique"]
    text = plan.describe()
    assert "Changed in Blink since the last apply" in text
    assert "- Severity: attributes.is_unique (changed in Blink by alice@blink.test, 2026-01-01T00:01:00+00:00)" in text


def test_a_field_changed_in_blink_after_approval_makes_the_plan_stale(hook: Any, tmp_path: Path) -> None:
    from blinkops_provider.exceptions import BlinkStalePlanError

    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        approved = plan_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/").to_xcom()
        blink.change_in_ui("Incidents", "Severity", required=False)
        with pytest.raises(BlinkStalePlanError, match="changed in Blink since the plan"):
            apply_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/", plan=approved)
    assert blink.puts == []


@pytest.mark.parametrize("status", [404, 405])
def test_a_fields_read_blink_does_not_serve_falls_back_to_the_record(hook: Any, tmp_path: Path, status: int) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.fields_status = status
        plan = plan_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/")
        result = apply_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/")
    first = plan.describe().splitlines()[0]
    assert first == f"Blink's live schema could not be read ({status}): planned against the record of the last apply"
    assert plan.unread == str(status) and [p.action for p in plan.fields] == ["add"]
    assert result.ok and [field for _, field, _ in blink.puts] == ["Severity"]


def test_a_table_blink_does_not_have_fails_the_plan_naming_it(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        with pytest.raises(BlinkNotFoundError, match="no table 'Nope' in workspace 'ws-1'"):
            plan_schema(hook, "ws-1", "Nope", OPTIONS_ONLY, record_path=f"{tmp_path}/")


def test_status_and_user_fields_are_planned_and_applied(hook: Any, tmp_path: Path) -> None:
    declared = [
        {"field": "Stage", "type": "status", "display_name": "Stage", "attributes": {"options": ["Open", "Done"]}},
        {"field": "Assignee", "type": "user", "display_name": "Owner"},
    ]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    assert [(p.field, p.action) for p in plan.fields] == [("Stage", "change"), ("Assignee", "change")]
    assert result.outcomes() == {"Stage": "changed", "Assignee": "changed"}
    assert blink.field("Incidents", "Assignee")["display_name"] == "Owner"


def test_a_system_only_type_is_refused_before_any_request(hook: Any, tmp_path: Path) -> None:
    declared = [{"field": "id", "type": "sys-id", "display_name": "ID"}]
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="'sys-id' is one of Blink's own system types") as e:
        apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    assert m.call_count == 0 and "allowed: text, long-text" in str(e.value)


def test_a_blink_system_field_is_refused_by_the_plan(hook: Any, tmp_path: Path) -> None:
    declared = [{"field": "created_by", "type": "text", "display_name": "Creator"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    assert plan.fields[0].action == "refused" and "Blink's own system fields" in plan.fields[0].risk
    assert blink.puts == []


@pytest.mark.parametrize(
    ("attributes", "risk"),
    [
        ({"required": True}, "required turned on"),
        ({"is_unique": True}, "is_unique turned on"),
        ({"required": False}, "required dropped"),
    ],
)
def test_turning_checks_on_or_dropping_required_is_destructive(
    hook: Any, tmp_path: Path, attributes: dict[str, Any], risk: str
) -> None:
    held = {"T": [blink_field("A", "text", required=not attributes.get("required", False))]}
    if "is_unique" in attributes:
        held = {"T": [blink_field("A", "text")]}
    declared = [{"field": "A", "type": "text", "display_name": "A", "attributes": attributes}]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        blink.records_status = 403  # the rows cannot be read: the check is judged blind, and said so
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
    assert row.destructive and risk in row.risk
    if attributes.get("required") is not False:
        assert "not checked: the rows could not be read: 403" in row.risk


@pytest.mark.parametrize(
    ("declared", "why"),
    [
        ({"type": "single-select", "attributes": {"options": []}}, "needs attributes.options"),
        ({"type": "reference"}, "needs attributes.table_reference"),
        ({"type": "single-select", "attributes": {"options": ["a", "a"]}}, "option 'a' is given twice"),
        ({"type": "text", "attributes": {"include_time": True}}, "include_time is for a 'date' field"),
    ],
)
def test_a_declaration_that_contradicts_itself_is_refused_by_the_plan(
    hook: Any, tmp_path: Path, declared: dict[str, Any], why: str
) -> None:
    held = {"T": [blink_field("A", declared["type"])]}
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        entry = {"field": "A", "display_name": "A", **declared}
        result = apply_schema(hook, "ws-1", "T", [entry], record_path=f"{tmp_path}/")
    assert result.outcomes() == {"A": "failed"} and why in str(result.failed["A"])
    assert blink.puts == []


@pytest.mark.parametrize(
    "claim", [{"review": {"policy": "changes", "reviewed": True}}, {"approved_by": "mallory", "reviewed": True}]
)
def test_a_plan_xcom_that_claims_a_review_never_removes_a_field(
    hook: Any, tmp_path: Path, claim: dict[str, Any]
) -> None:
    """#55: what a plan's XCom says of a review counts for nothing: with no approval read from
    Airflow's record, a removal is refused before anything is sent, naming how to go on."""
    removing = [{"field": "Stage", "remove": True}]
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records["Incidents"] = [{"id": "r1", "Stage": "triage"}]  # a value the removal would lose
        plan = {**plan_schema(hook, "ws-1", "Incidents", removing, record_path=records).to_xcom(), **claim}
        with pytest.raises(
            BlinkInputError, match=r"the review the applying task asked.*acknowledge_risks=True"
        ) as refused:
            apply_schema(hook, "ws-1", "Incidents", removing, record_path=records, plan=plan)
        assert "Nothing was sent" in str(refused.value)
        assert m.request_history and all(r.method == "GET" for r in m.request_history)
        approval = {"approved_by": "alice", "approved_at": "2026-11-28T01:02:03+00:00"}
        done = apply_schema(hook, "ws-1", "Incidents", removing, record_path=records, plan=plan, approval=approval)
    assert done.outcomes() == {"Stage": "removed"} and blink.deletes == [("Incidents", "Stage")]
    record = json.loads((tmp_path / "ws-1" / "Incidents.json").read_text())
    assert record["approval"] == approval  # the record names who approved the plan, and when


@pytest.mark.parametrize("approval", [True, "alice", {"approved_by": "alice"}, {"approved_by": "", "approved_at": "x"}])
def test_an_approval_that_is_not_who_and_when_is_refused_before_any_request(
    hook: Any, tmp_path: Path, approval: Any
) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"approval must be None or \{\"approved_by\""):
        apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=f"{tmp_path}/", approval=approval)
    assert m.call_count == 0


def test_acknowledge_risks_removes_and_the_record_says_the_dag_acknowledged(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        removing = [{"field": "Stage", "remove": True}]
        done = apply_schema(hook, "ws-1", "Incidents", removing, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert done.outcomes() == {"Stage": "removed"}
    assert json.loads((tmp_path / "ws-1" / "Incidents.json").read_text())["approval"] == {"acknowledged": True}


@pytest.mark.parametrize(("fields_status", "sent"), [(None, True), (404, True), (405, True), (500, False)])
def test_replace_reads_first_and_goes_on_only_where_blink_does_not_serve_the_read(
    hook: Any, tmp_path: Path, fields_status: int | None, sent: bool
) -> None:
    """#56 item 11, as the docs say: replace=True still reads the table's fields (an add or a
    change?) and sends the declaration as given, not merged; a read Blink does not serve (404,
    405) is gone without; one that fails otherwise fails before anything is sent."""
    from blinkops_provider.exceptions import BlinkApiError

    declared = [{"field": "Title", "type": "text", "display_name": "Title (as given)"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.fields_status = fields_status
        if sent:
            apply_schema(hook, "ws-1", "Incidents", declared, replace=True)
        else:
            with pytest.raises(BlinkApiError):
                apply_schema(hook, "ws-1", "Incidents", declared, replace=True)
        reads = [r for r in m.request_history if r.method == "GET" and r.path.endswith("/fields")]
    assert reads  # the read comes first, whatever its answer
    bodies = [body for _, _, body in blink.puts]
    assert bodies == ([{"type": "text", "display_name": "Title (as given)"}] if sent else [])  # not merged


def test_a_field_left_unchanged_is_recorded_as_blink_showed_it_so_later_drift_shows(hook: Any, tmp_path: Path) -> None:
    """#56 item 2 sends no unchanged field; the record still takes it as Blink's read showed it,
    so a change made in Blink's UI afterwards is drift in the next plan."""
    declared = [*OPTIONS_ONLY, {"field": "Stage", "type": "status", "display_name": "Stage"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
        assert result.outcomes() == {"Severity": "changed", "Stage": "unchanged"}
        assert [field for _, field, _ in blink.puts] == ["Severity"]  # Stage not sent
        recorded = json.loads((tmp_path / "ws-1" / "Incidents.json").read_text())["fields"]
        assert recorded["Stage"]["attributes"] == {"options": ["Open", "Closed"]}
        blink.change_in_ui("Incidents", "Stage", who="bob@blink.test", options=["Open", "Doing", "Closed"])
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    stage = next(row for row in plan.fields if row.field == "Stage")
    assert stage.drift == ("attributes.options",)
    assert "- Stage: attributes.options (changed in Blink by bob@blink.test" in plan.describe()
