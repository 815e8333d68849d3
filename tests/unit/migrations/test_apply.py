"""Planning and applying a migration (blinkops_provider.migrations._apply): what the inputs may be (#35).

The plan of a schema migration: plan_schema, apply_schema, record_path, only_changed, plan_only (#18).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkStalePlanError,
)
from blinkops_provider.migrations import SchemaRecord, apply_schema, declared_schema, plan_schema, plan_text, plan_xcom
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from tests.conftest import FakeTI, keys
from tests.fake_blink import field_json, without_table_reads

pytestmark = pytest.mark.usefixtures("blink_without_table_reads")


SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


@pytest.mark.parametrize("form", ["dict", "json", "python", "fingerprint"])
def test_the_hooks_plan_takes_the_same_forms_as_the_operators(hook: Any, tmp_path: Path, form: str) -> None:
    records = f"{tmp_path}/records/"
    plan = plan_xcom(plan_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records))
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
    assert plan_xcom(plan)["fields"][0]["drift"] == ["attributes.is_unique"]
    text = plan_text(plan)
    assert "Changed in Blink since the last apply" in text
    assert (
        "- Severity: attributes.is_unique (last changed in Blink by alice@blink.test at 2026-01-01T00:01:00+00:00)"
        in text
    )


def test_a_field_changed_in_blink_after_approval_makes_the_plan_stale(hook: Any, tmp_path: Path) -> None:
    from blinkops_provider.exceptions import BlinkStalePlanError

    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        approved = plan_xcom(plan_schema(hook, "ws-1", "Incidents", OPTIONS_ONLY, record_path=f"{tmp_path}/"))
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
    first = plan_text(plan).splitlines()[0]
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
        with pytest.raises(BlinkInputError, match="refuses 1 of 1 entries, so nothing is applied") as caught:
            apply_schema(hook, "ws-1", "T", [entry], record_path=f"{tmp_path}/")
    assert why in str(caught.value)
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
        plan = {**plan_xcom(plan_schema(hook, "ws-1", "Incidents", removing, record_path=records)), **claim}
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
    assert "- Stage: attributes.options (last changed in Blink by bob@blink.test" in plan_text(plan)


BASE = "https://blink.test/api/v1"
TABLE_URL = f"{BASE}/workspace/ws-1/table/Incidents/fields"
NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)

RECORD_BASELINE = "The baseline is the last apply this provider recorded, not Blink's current state"
"""What a plan made against the record alone says of its baseline, as a reviewer reads it."""

DECLARED = [
    {"field": "Title", "type": "text", "display_name": "Title"},
    {
        "field": "Severity",
        "type": "single-select",
        "display_name": "Severity",
        "attributes": {"options": ["Low", "High"], "default_value": "Low"},
    },
    {"field": "Due", "type": "date", "display_name": "Due by"},
]


def changed_schema() -> list[dict[str, Any]]:
    """DECLARED with Severity's display name and options changed."""
    schema = json.loads(json.dumps(DECLARED))
    schema[1]["display_name"] = "How bad"
    schema[1]["attributes"]["options"] = ["Low", "High", "Critical"]
    return schema


def writes(m: Any) -> list[Any]:
    """The requests that change something in Blink (a plan reads the table's fields)."""
    return [call for call in m.request_history if call.method != "GET"]


def apply(hook: Any, schema: Any, record: Path, **kwargs: Any) -> Any:
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        result = apply_schema(hook, "ws-1", "Incidents", schema, record_path=str(record), **kwargs)
    return result, sorted(unquote(call.url).rsplit("/", 1)[-1] for call in m.request_history if call.method == "PUT")


# -- the plan ---------------------------------------------------------------------------------


def test_with_no_record_every_field_is_planned_as_add_and_nothing_is_sent(hook: Any, record: Path) -> None:
    with rm.Mocker() as m:  # only the table reads are answered: any other request would fail the test
        without_table_reads(m)
        plan = plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
        assert {call.method for call in m.request_history} == {"GET"}
    assert [(p.field, p.action) for p in plan.fields] == [("Title", "add"), ("Severity", "add"), ("Due", "add")]
    assert plan.recorded_at is None
    assert not record.exists()  # planning writes nothing either


def test_after_an_apply_the_plan_is_unchanged_then_names_the_members_that_differ(hook: Any, record: Path) -> None:
    result, sent = apply(hook, DECLARED, record)
    assert result.outcomes() == {"Title": "added", "Severity": "added", "Due": "added"}
    assert sent == ["Due", "Severity", "Title"]
    plan = plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
    assert [p.action for p in plan.fields] == ["unchanged"] * 3

    plan = plan_schema(hook, "ws-1", "Incidents", changed_schema(), record_path=str(record))
    assert [(p.field, p.action, p.members) for p in plan.fields] == [
        ("Title", "unchanged", ()),
        ("Severity", "change", ("display_name", "attributes.options")),
        ("Due", "unchanged", ()),
    ]
    assert plan.counts == {
        "add": 0,
        "change": 1,
        "unchanged": 2,
        "refused": 0,
        "remove": 0,
        "retype": 0,
        "gone": 0,
        "destructive": 0,
    }


def test_the_plan_says_its_baseline_is_the_last_recorded_apply(hook: Any, record: Path) -> None:
    apply(hook, DECLARED, record)
    plan = plan_schema(hook, "ws-1", "Incidents", changed_schema()[:2], record_path=str(record))
    text = plan_text(plan)
    assert text.splitlines()[0].startswith("Blink's live schema could not be read (404)")
    assert RECORD_BASELINE in text
    assert (
        "| Severity | change | display_name: 'Severity' → 'How bad'; attributes.options: [\"Low\", \"High\"] → "
        '["Low", "High", "Critical"] |' in text
    )
    assert "Recorded but no longer declared (left as they are): 'Due'" in text
    xcom = plan_xcom(plan)
    assert json.loads(json.dumps(xcom)) == xcom  # JSON-ready
    assert xcom["undeclared"] == ["Due"] and xcom["recorded_at"] == plan.recorded_at is not None


def test_the_second_apply_reports_unchanged_and_a_change_reports_changed(hook: Any, record: Path) -> None:
    apply(hook, DECLARED, record)
    result, sent = apply(hook, DECLARED, record)
    assert result.outcomes() == {"Title": "unchanged", "Severity": "unchanged", "Due": "unchanged"}
    assert sent == ["Due", "Severity", "Title"]  # by default every field is sent: a PUT corrects drift
    result, _ = apply(hook, changed_schema(), record)
    assert result.outcomes() == {"Title": "unchanged", "Severity": "changed", "Due": "unchanged"}


def test_only_changed_sends_only_add_and_change(hook: Any, record: Path) -> None:
    apply(hook, DECLARED[:2], record)  # Due never applied
    result, sent = apply(hook, changed_schema(), record, only_changed=True)
    assert sent == ["Due", "Severity"]
    assert result.outcomes() == {"Title": "unchanged", "Severity": "changed", "Due": "added"}
    assert result.ok and result.skipped == ["Title"]
    result, sent = apply(hook, changed_schema(), record, only_changed=True)
    assert sent == [] and result.ok
    assert set(result.outcomes().values()) == {"unchanged"}


def test_only_changed_without_a_record_plans_against_blink_alone(blink_conn: None) -> None:
    """#48: record_path is optional: without it there is no drift baseline and no lock, nothing else differs."""
    from tests.fake_blink import FakeBlink, blink_field

    held = {"Incidents": [blink_field("Title", "text"), blink_field("Due", "date", "Due by")]}
    op = UpdateTableFieldsOperator(task_id="a", ws_id="ws-1", table="Incidents", fields=DECLARED, only_changed=True)
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        outcomes = op.execute({"ti": FakeTI()})["outcomes"]
    assert outcomes == {"Title": "unchanged", "Severity": "added", "Due": "unchanged"}
    assert blink.puts == [] and [body["display_name"] for _, body in blink.posts] == ["Severity"]


def test_the_record_is_updated_only_for_fields_blink_confirmed(hook: Any, record: Path) -> None:
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        without_table_reads(m)
        m.put(f"{TABLE_URL}/Severity", status_code=400, json={"message": "options are invalid"})
        result = apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
    assert result.outcomes() == {"Title": "added", "Severity": "failed", "Due": "added"}
    stored = json.loads(record.read_text())
    assert set(stored["fields"]) == {"Title", "Due"}
    assert stored["fields"]["Due"] == {"type": "date", "display_name": "Due by"}  # the body sent
    plan = plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
    assert [p.action for p in plan.fields] == ["unchanged", "add", "unchanged"]


def test_a_failed_change_keeps_the_previous_record_of_that_field(hook: Any, record: Path) -> None:
    apply(hook, DECLARED, record)
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        without_table_reads(m)
        m.put(f"{TABLE_URL}/Severity", status_code=400, json={"message": "no"})
        apply_schema(hook, "ws-1", "Incidents", changed_schema(), record_path=str(record))
    plan = plan_schema(hook, "ws-1", "Incidents", changed_schema(), record_path=str(record))
    assert plan.fields[1].action == "change"  # still to do


def test_a_record_of_another_table_or_not_a_record_is_refused_before_any_request(hook: Any, record: Path) -> None:
    record.parent.mkdir(parents=True)
    SchemaRecord(record, blink=f"{BASE}", ws_id="ws-1", table="Users").write({}, now=NOW)
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=r"is for table 'Users'.*give each table its own record_path"):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
        record.write_text('{"fields": ')
        with pytest.raises(BlinkInputError, match="is not valid JSON"):
            plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
        record.write_text('{"something": "else"}')
        with pytest.raises(BlinkInputError, match="not a schema record written by this provider"):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
        with pytest.raises(BlinkConfigurationError, match="is a directory"):
            plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record.parent))
    assert m.call_count == 0


def test_a_record_that_cannot_be_written_fails_the_task_for_a_retry(hook: Any, record: Path) -> None:
    def block_the_record(request: Any, context: Any) -> dict[str, Any]:
        if not record.exists():  # the record's place becomes a folder while the batch runs
            record.mkdir()
        return field_json(request, context)

    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=block_the_record)
        with pytest.raises(BlinkApiError, match=r"could not be updated.*A retry applies the schema again") as caught:
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record), max_concurrency=1)
    assert not isinstance(caught.value, BlinkClientError)  # Airflow's retries apply


def test_a_record_path_under_a_file_is_refused_before_any_request(hook: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with rm.Mocker() as m, pytest.raises(BlinkConfigurationError, match="a folder on its way is a file"):
        apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(tmp_path / "file" / "Incidents.json"))
    assert m.call_count == 0


@pytest.mark.parametrize("where", ["under a file", "under /proc", "a folder"])
def test_an_unwritable_record_path_is_one_configuration_error_that_no_retry_repeats(
    hook: Any, tmp_path: Path, where: str
) -> None:
    """#44 item 7: wherever the record cannot be kept, the error is a BlinkConfigurationError, an
    AirflowFailException (the task fails without a retry), before anything is sent."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    record_path = {
        "under a file": tmp_path / "file" / "records/",
        "under /proc": Path("/proc/blink-records/"),
        "a folder": tmp_path / "folder",
    }[where]
    with rm.Mocker() as m:
        without_table_reads(m)
        with pytest.raises(BlinkConfigurationError, match=r"cannot be|is a directory") as caught:
            apply_schema(
                hook, "ws-1", "Incidents", DECLARED, record_path=f"{record_path}{'/' if where != 'a folder' else ''}"
            )
    assert isinstance(caught.value, AirflowFailException)
    assert not [r for r in m.request_history if r.method == "PUT"]


# -- the operator -----------------------------------------------------------------------------


def test_plan_only_returns_the_plan_and_sends_nothing(blink_conn: None, record: Path) -> None:
    op = UpdateTableFieldsOperator(
        task_id="plan", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), plan_only=True
    )
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [], "total": 0})
        without_table_reads(m)
        plan = op.execute({"ti": FakeTI()})
    assert {request.method for request in m.request_history} == {"GET"}  # the key's check and the reads
    assert [f["action"] for f in plan["fields"]] == ["add", "add", "add"]
    assert plan["counts"] == {
        "add": 3,
        "change": 0,
        "unchanged": 0,
        "refused": 0,
        "remove": 0,
        "retype": 0,
        "gone": 0,
        "destructive": 0,
    }
    assert plan["baseline"].startswith(RECORD_BASELINE) and RECORD_BASELINE in plan["text"]


def test_the_operator_reports_outcomes_added_then_unchanged(blink_conn: None, record: Path, provider_log: Any) -> None:
    def run() -> dict[str, Any]:
        op = UpdateTableFieldsOperator(
            task_id="apply", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record)
        )
        with rm.Mocker() as m:
            without_table_reads(m)
            m.put(rm.ANY, json=field_json)
            result: dict[str, Any] = op.execute({"ti": FakeTI()})
        return result

    assert run()["outcomes"] == {"Title": "added", "Severity": "added", "Due": "added"}
    assert run()["outcomes"] == {"Title": "unchanged", "Severity": "unchanged", "Due": "unchanged"}
    lines = provider_log()
    assert any("3 of 3 fields applied (3 unchanged)" in line for line in lines)
    assert any(
        re.search(r"Plan [0-9a-f]{16} for ws-1/Incidents: 0 to add, 0 to change \(0 destructive\), 3 unchanged", line)
        for line in lines
    )


def test_plan_only_and_only_changed_are_flags() -> None:
    for flag in ("plan_only", "only_changed"):
        with pytest.raises(BlinkInputError, match=f"{flag} must be True or False"):
            UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=[], **{flag: "yes"})
    with pytest.raises(BlinkInputError, match="plan_only must be True or False"):
        UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=[], record_path="r", plan_only="yes")


# -- the plan's identity: the approved plan is the applied plan (#24) ---------------------------


def test_a_plan_has_a_stable_fingerprint_in_its_xcom_and_text(hook: Any, record: Path) -> None:
    first = plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
    again = plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
    assert re.fullmatch(r"[0-9a-f]{16}", first.fingerprint) and first.fingerprint == again.fingerprint
    assert plan_xcom(first)["fingerprint"] == first.fingerprint and first.fingerprint in plan_text(first)
    other = plan_schema(hook, "ws-2", "Incidents", DECLARED, record_path=str(record.with_name("o.json")))
    assert other.fingerprint != first.fingerprint  # another target


@pytest.mark.parametrize("given", ["xcom", "fingerprint"])
def test_the_apply_of_the_approved_plan_sends_it(hook: Any, record: Path, given: str) -> None:
    approved = plan_xcom(plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record)))
    result, sent = apply(hook, DECLARED, record, plan=approved if given == "xcom" else approved["fingerprint"])
    assert result.ok and sent == ["Due", "Severity", "Title"]


def stale_cases(hook: Any, record: str) -> list[tuple[str, dict[str, Any], list[dict[str, Any]], str]]:
    """(what changed, the approved plan, the schema the apply is given, the expected reason)."""
    approved = plan_xcom(plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=record))
    return [
        ("schema", approved, changed_schema(), "the declared schema changed since the plan"),
        ("record", approved, DECLARED, "the record at .* changed since the plan"),
    ]


def assert_stale_refused(hook: Any, record: str) -> None:
    (_, approved, changed, reason), record_case = stale_cases(hook, record)
    with rm.Mocker() as m:
        without_table_reads(m)
        with pytest.raises(BlinkStalePlanError, match=f"{reason}.*Nothing was sent: plan again"):
            apply_schema(hook, "ws-1", "Incidents", changed, record_path=record, plan=approved)
        assert not writes(m)
    # Another run applies (the record changes) while the approved plan waits in review.
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=record)
    with rm.Mocker() as m:
        without_table_reads(m)
        with pytest.raises(
            BlinkStalePlanError, match=r"changed since the plan \(last apply then: none; now: 20"
        ) as caught:
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=record, plan=record_case[1])
        assert not writes(m)
    assert "planned differently now (each changed since the plan): 'Title', 'Severity', 'Due'" in str(caught.value)
    with rm.Mocker() as m:
        without_table_reads(m)
        with pytest.raises(  # #50 item 7: both plans named, the one approved and the one now
            BlinkStalePlanError,
            match=r"the plan this apply was given, 0123456789abcdef, is not .* \(plan [0-9a-f]{16}\)",
        ):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=record, plan="0123456789abcdef")
    assert not writes(m)


def test_a_stale_plan_is_refused_with_nothing_sent(hook: Any, record: Path) -> None:
    assert_stale_refused(hook, str(record))


def test_a_wrong_plan_value_is_refused_before_any_request(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=DECLARED, record_path="r", plan="oops")
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="plan must be the plan task's XCom"):
        op.execute({"ti": FakeTI()})
    assert m.call_count == 0


def test_the_operator_accepts_the_plan_as_a_template_renders_it(blink_conn: None, record: Path) -> None:
    """``plan="{{ ti.xcom_pull(task_ids='plan') }}"`` renders the dict as Python text."""
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [], "total": 0})
        without_table_reads(m)
        xcom = UpdateTableFieldsOperator(
            task_id="plan", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), plan_only=True
        ).execute({"ti": FakeTI()})
        m.put(rm.ANY, json=field_json)
        for rendered in (str(xcom), json.dumps(xcom)):
            op = UpdateTableFieldsOperator(
                task_id="apply",
                ws_id="ws-1",
                table="Incidents",
                fields=DECLARED,
                record_path=str(record),
                plan=rendered,
            )
            assert op.execute({"ti": FakeTI()})["updated"] == ["Title", "Severity", "Due"]
            record.unlink()  # the same plan again: its baseline was no record


# -- one apply per table at a time -----------------------------------------------------------------


def two_concurrent_applies(make_hook: Any, record: str) -> None:
    """The first apply holds the table while its update is in flight; a second apply meanwhile is
    refused and sends nothing; the first finishes."""
    import threading

    first_inside, release = threading.Event(), threading.Event()

    def slow_put(request: Any, context: Any) -> dict[str, Any]:
        first_inside.set()
        release.wait(20)
        return field_json(request, context)

    outcome: dict[str, Any] = {}

    def first() -> None:
        outcome["first"] = apply_schema(
            make_hook(), "ws-1", "Incidents", DECLARED, record_path=record, max_concurrency=1
        )

    with rm.Mocker(real_http=True) as m:  # real HTTP for a local S3 API
        without_table_reads(m)
        m.put(re.compile("blink.test"), json=slow_put)
        thread = threading.Thread(target=first)
        thread.start()
        assert first_inside.wait(20)
        with pytest.raises(BlinkLockedError):
            apply_schema(make_hook(), "ws-1", "Incidents", DECLARED, record_path=record)
        release.set()
        thread.join(20)
    assert outcome["first"].ok
    assert len([call for call in writes(m) if "blink.test" in call.url]) == 3  # the second sent nothing


def test_two_concurrent_applies_one_applies_the_other_refuses(make_hook: Any, record: Path) -> None:
    two_concurrent_applies(make_hook, str(record))


# -- risk rules ----------------------------------------------------------------------------------


def test_a_type_change_is_planned_refused_and_never_sent(hook: Any, record: Path) -> None:
    apply(hook, DECLARED, record)
    retyped = json.loads(json.dumps(DECLARED))
    retyped[0]["type"] = "long-text"
    plan = plan_schema(hook, "ws-1", "Incidents", retyped, record_path=str(record))
    assert plan.action("Title") == "refused" and plan.counts["refused"] == 1
    assert "from 'text' to 'long-text'; Blink refuses type changes" in plan.risk("Title")
    assert plan_text(plan).index("**Refused**") < plan_text(plan).index("| field | action | details |")
    with pytest.raises(BlinkInputError, match="refuses 1 of 3 entries, so nothing is applied") as caught:
        apply(hook, retyped, record)
    assert "'Title': the type would change from 'text' to 'long-text'; Blink refuses type changes" in str(caught.value)


def test_a_declaration_with_one_refused_entry_sends_nothing_to_its_table_and_says_every_refusal(
    hook: Any, tmp_path: Path
) -> None:
    held = {"T": [blink_field("A", "text"), blink_field("B", "text"), blink_field("C", "text")]}
    declared = [
        {"field": "A", "type": "text", "display_name": "A, renamed"},
        {"field": "B", "type": "single-select", "display_name": "B", "attributes": {"options": []}},
        {"field": "C", "type": "number", "display_name": "C"},
        {"field": "New", "type": "text", "display_name": "New"},
    ]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        with pytest.raises(BlinkInputError) as caught:
            apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        assert [r.method for r in m.request_history if r.method != "GET"] == []
    said = str(caught.value)
    assert "refuses 2 of 4 entries, so nothing is applied to this table" in said
    assert "'B': the declaration contradicts itself" in said and "'C': the type would change" in said
    assert blink.puts == [] and blink.posts == [] and not (tmp_path / "ws-1" / "T.json").exists()


@pytest.mark.parametrize(
    ("change", "risk"),
    [
        ({"options": ["Low"], "default_value": "Low"}, "options removed: 'High'"),
        ({"options": ["Low", "High", "Critical"], "default_value": "Low"}, ""),
    ],
)
def test_removing_select_options_is_destructive_and_listed_first(
    hook: Any, record: Path, change: dict[str, Any], risk: str
) -> None:
    apply(hook, DECLARED, record)
    changed = json.loads(json.dumps(DECLARED))
    changed[1]["attributes"] = change
    plan = plan_schema(hook, "ws-1", "Incidents", changed, record_path=str(record))
    assert plan.action("Severity") == "change" and plan.risk("Severity").startswith(risk)
    assert plan.counts["destructive"] == (1 if risk else 0)
    assert ("**Destructive**" in plan_text(plan)) is bool(risk)


def test_a_new_table_reference_is_destructive(hook: Any, record: Path) -> None:
    users = {"table_name": "Users", "display_name_field": "Name"}
    linked = [
        {"field": "Owner", "type": "reference", "display_name": "Owner", "attributes": {"table_reference": users}}
    ]
    apply(hook, linked, record)
    linked[0]["attributes"]["table_reference"] = {**users, "table_name": "People"}
    plan = plan_schema(hook, "ws-1", "Incidents", linked, record_path=str(record))
    assert 'the reference moves from {"table_name": "Users"' in plan.risk("Owner")
    assert plan.counts["destructive"] == 1


# -- what a reviewer sees ------------------------------------------------------------------------


def test_plan_rows_show_the_values_cut_to_a_bounded_length(hook: Any, record: Path) -> None:
    apply(hook, DECLARED, record)
    changed = json.loads(json.dumps(DECLARED))
    changed[1]["attributes"]["default_value"] = "High"
    changed[2]["display_name"] = "x" * 500
    changed.append({"field": "Notes", "type": "long-text", "display_name": "Notes"})
    text = plan_text(plan_schema(hook, "ws-1", "Incidents", changed, record_path=str(record)))
    assert "| Severity | change | attributes.default_value: 'Low' → 'High' |" in text
    assert "| Notes | add | adds Notes (long-text), shown as 'Notes' |" in text
    due = next(line for line in text.splitlines() if line.startswith("| Due |"))
    assert "display_name: 'Due by' → 'xxx" in due and "…" in due and len(due) < 200


@pytest.mark.parametrize("name", ["a\rb", "a\u2028b", "a\x85b", "a\x0bb", "a\\|b", "a|b", "a\nb", "a\u2029b"])
def test_plan_cells_survive_every_line_break_and_backslash(hook: Any, record: Path, name: str) -> None:
    text = plan_text(
        plan_schema(
            hook, "ws-1", "Incidents", [{"field": name, "type": "text", "display_name": name}], record_path=str(record)
        )
    )
    (row,) = [line for line in text.splitlines() if line.startswith("| a")]
    assert len(re.split(r"(?<!\\)\|", row)) == 5  # four cells' borders: field, action, details
    assert row.count("| add |") == 1


def test_a_refused_key_fails_the_plan_step_with_the_connection_hint(blink_conn: None, record: Path) -> None:
    from blinkops_provider.exceptions import BlinkAuthError

    op = UpdateTableFieldsOperator(
        task_id="plan", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), plan_only=True
    )
    with rm.Mocker() as m:
        m.get(rm.ANY, status_code=401, json={"message": "bad key"})
        with pytest.raises(
            BlinkAuthError, match=r"401: bad key; Blink refused the API key of the connection 'blink_default'"
        ):
            op.execute({"ti": FakeTI()})
    assert not record.exists()


def test_a_batch_stopped_by_a_refused_key_names_the_cause_and_what_was_in_flight(
    blink_conn: None, provider_log: Any
) -> None:
    from blinkops_provider.exceptions import BlinkAuthError

    fields = [{"field": f"f{i}", "type": "text", "display_name": f"F{i}"} for i in range(40)]
    op = UpdateTableFieldsOperator(
        task_id="apply", ws_id="ws-1", table="Incidents", fields=fields, max_concurrency=4, replace=True
    )
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, status_code=401, json={"message": "bad key"})
        with pytest.raises(
            BlinkAuthError, match=r"^401: Blink refused the API key \(401\).*40 of 40 field\(s\) not applied"
        ):
            op.execute({"ti": FakeTI()})
    assert sum(call.method == "PUT" for call in m.request_history) <= 4  # no new update after the first refusal
    assert any(re.search(r"no further field is sent \(\d already in flight", line) for line in provider_log())


# -- edge cases ------------------------------------------------------------------------------------


def test_a_name_that_cannot_be_sent_fails_the_whole_batch_before_any_request(hook: Any, record: Path) -> None:
    bad = [*DECLARED, {"field": "a\udcffb", "type": "text", "display_name": "X"}]
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"none was sent:\n.*lone surrogate"):
        apply_schema(hook, "ws-1", "Incidents", bad, record_path=str(record))
    assert m.call_count == 0 and not record.exists()


def test_a_record_of_a_newer_format_says_so(hook: Any, record: Path) -> None:
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"format": "blinkops-schema-record/2", "fields": {}}))
    with pytest.raises(BlinkInputError, match=r"newer format \('blinkops-schema-record/2'\).*upgrade"):
        plan_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))


def test_an_unwritable_record_names_its_location(hook: Any, record: Path) -> None:
    def block(request: Any, context: Any) -> dict[str, Any]:
        if not record.exists():
            record.mkdir()
        return field_json(request, context)

    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=block)
        with pytest.raises(
            BlinkApiError, match=f"the schema record at '{re.escape(str(record))}' could not be updated"
        ):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record), max_concurrency=1)


# -- on object storage (s3:// through moto) ----------------------------------------------------


def test_schema_records_in_an_s3_folder_stay_in_it_one_key_per_table(bucket: tuple[Any, str]) -> None:
    """record_path as a folder on object storage: names with '/', '..', spaces and non-ASCII each
    get a key of their own under the folder, and each reads back as its own table's record."""
    import datetime as dt

    from blinkops_provider.migrations import SchemaRecord, record_location

    client, name = bucket
    folder = f"s3://aws_default@{name}/records/"
    tables = [("a", "b/c"), ("a/b", "c"), ("ws", ".."), ("ws", "Inc idents Über")]
    for ws_id, table in tables:
        record = SchemaRecord(record_location(folder, ws_id, table), blink="h", ws_id=ws_id, table=table)
        record.write({table: {"type": "text"}}, now=dt.datetime(2026, 11, 24, tzinfo=dt.UTC))
    stored = keys(client, name)
    assert len(stored) == len(tables) and all(key.startswith("records/") for key in stored)
    for ws_id, table in tables:
        record = SchemaRecord(record_location(folder, ws_id, table), blink="h", ws_id=ws_id, table=table)
        assert record.read()[0] == {table: {"type": "text"}}


def test_on_s3_a_stale_plan_is_refused_with_nothing_sent(hook: Any, s3_record: str) -> None:
    assert_stale_refused(hook, s3_record)


def test_on_s3_two_concurrent_applies_one_applies_the_other_refuses(make_hook: Any, s3_record: str) -> None:
    two_concurrent_applies(make_hook, s3_record)


# -- what a fleet's summary reads of each apply (#34) -----------------------------------------------


def test_the_apply_reports_its_outcome_and_that_the_dag_acknowledged_the_loss(
    blink_conn: None, record: Path, provider_log: Any
) -> None:
    def operator(**kwargs: Any) -> UpdateTableFieldsOperator:
        return UpdateTableFieldsOperator(
            task_id="t", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), **kwargs
        )

    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [], "total": 0})
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        plan = operator(plan_only=True).execute({"ti": FakeTI()})
        claimed = {**plan, "review": {"policy": "changes", "reviewed": True}}  # a claim: counts for nothing
        first = operator(plan=claimed, acknowledge_risks=True).execute({"ti": FakeTI()})
        again = operator().execute({"ti": FakeTI()})
    assert (first["outcome"], first["acknowledged"], first["rate_limited"]) == ("applied", True, 0)
    assert "review" not in first and "approved_by" not in first
    assert again["outcome"] == "unchanged" and "acknowledged" not in again and "approved_by" not in again
    assert not any("approved by" in line for line in provider_log())


def test_a_stale_apply_pushes_its_outcome_with_why_and_sends_nothing(blink_conn: None, record: Path) -> None:
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [], "total": 0})
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        plan = UpdateTableFieldsOperator(
            task_id="plan", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), plan_only=True
        ).execute({"ti": FakeTI()})
        UpdateTableFieldsOperator(  # another apply moves the record on
            task_id="other", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record)
        ).execute({"ti": FakeTI()})
        sent = len(writes(m))
        ti = FakeTI()
        with pytest.raises(BlinkStalePlanError):
            UpdateTableFieldsOperator(
                task_id="apply", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record), plan=plan
            ).execute({"ti": ti})
        assert len(writes(m)) == sent
    pushed = ti.pushed["return_value"]
    assert pushed["outcome"] == "stale" and pushed["updated"] == [] and pushed["table"] == "Incidents"
    assert re.match(
        r"BlinkStalePlanError: the plan this apply was given, [0-9a-f]{16}, is not what would be applied now",
        pushed["error"],
    )


def test_a_rate_limited_apply_counts_its_429_answers_and_fails(make_hook: Any, sleeps: Any, record: Path) -> None:
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, status_code=429, headers={"Retry-After": "30"}, json={"message": "slow"})
        op = UpdateTableFieldsOperator(
            task_id="apply", ws_id="ws-1", table="Incidents", fields=DECLARED, record_path=str(record)
        )
        op.hook = make_hook(retry_limit=1)  # one attempt a field (Airflow's retry honours the 30 s); waits recorded
        ti = FakeTI()
        with pytest.raises(BlinkApiError):
            op.execute({"ti": ti})
    pushed = ti.pushed["return_value"]
    assert (pushed["outcome"], pushed["rate_limited"]) == ("failed", 3)
    assert pushed["error"].startswith("BlinkTransientError: ") and "3 of 3 field(s) not applied" in pushed["error"]
    assert set(sleeps) <= {30.0}  # only Blink's pause, recorded, never slept
