"""The plan of a schema migration: plan_table_fields, record_path, only_changed, plan_only (#18)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError, BlinkClientError, BlinkInputError
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from blinkops_provider.schema import BASELINE, SchemaRecord, differing_members

BASE = "https://blink.test/api/v1"
TABLE_URL = f"{BASE}/workspace/ws-1/table/Incidents/fields"
NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)

SCHEMA = [
    {"field": "Title", "type": "text", "display_name": "Title"},
    {"field": "Severity", "type": "single-select", "display_name": "Severity",
     "attributes": {"options": ["Low", "High"], "default_value": "Low"}},
    {"field": "Due", "type": "date", "display_name": "Due by"},
]  # fmt: skip


def field_json(request: Any, context: Any) -> dict[str, Any]:
    name = request.path.rsplit("/", 1)[-1]
    body = request.json()
    return {"id": f"fld-{name}", "name": name, **body}


class FakeTI:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "records" / "Incidents.json"


def changed_schema() -> list[dict[str, Any]]:
    """SCHEMA with Severity's display name and options changed."""
    schema = json.loads(json.dumps(SCHEMA))
    schema[1]["display_name"] = "How bad"
    schema[1]["attributes"]["options"] = ["Low", "High", "Critical"]
    return schema


def apply(hook: Any, schema: Any, record: Path, **kwargs: Any) -> Any:
    with rm.Mocker() as m:
        m.put(rm.ANY, json=field_json)
        result = hook.update_table_fields("ws-1", "Incidents", schema, record_path=str(record), **kwargs)
    return result, sorted(unquote(call.url).rsplit("/", 1)[-1] for call in m.request_history)


# -- the plan ---------------------------------------------------------------------------------


def test_with_no_record_every_field_is_planned_as_add_and_nothing_is_sent(hook: Any, record: Path) -> None:
    with rm.Mocker() as m:  # no address registered: any request would fail the test
        plan = hook.plan_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
        assert m.call_count == 0
    assert [(p.field, p.action) for p in plan.fields] == [("Title", "add"), ("Severity", "add"), ("Due", "add")]
    assert plan.recorded_at is None
    assert not record.exists()  # planning writes nothing either


def test_after_an_apply_the_plan_is_unchanged_then_names_the_members_that_differ(hook: Any, record: Path) -> None:
    result, sent = apply(hook, SCHEMA, record)
    assert result.outcomes() == {"Title": "added", "Severity": "added", "Due": "added"}
    assert sent == ["Due", "Severity", "Title"]
    plan = hook.plan_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
    assert [p.action for p in plan.fields] == ["unchanged"] * 3

    plan = hook.plan_table_fields("ws-1", "Incidents", changed_schema(), record_path=str(record))
    assert [(p.field, p.action, p.members) for p in plan.fields] == [
        ("Title", "unchanged", ()),
        ("Severity", "change", ("display_name", "attributes.options")),
        ("Due", "unchanged", ()),
    ]
    assert plan.counts == {"add": 0, "change": 1, "unchanged": 2, "refused": 0, "destructive": 0}


def test_the_plan_says_its_baseline_is_the_last_recorded_apply(hook: Any, record: Path) -> None:
    apply(hook, SCHEMA, record)
    plan = hook.plan_table_fields("ws-1", "Incidents", changed_schema()[:2], record_path=str(record))
    text = plan.describe()
    assert BASELINE in text
    assert "not Blink's current state" in BASELINE
    assert (
        "| Severity | change | display_name: 'Severity' → 'How bad'; attributes.options: [\"Low\", \"High\"] → "
        '["Low", "High", "Critical"] |' in text
    )
    assert "Recorded but no longer declared (left as they are): 'Due'" in text
    xcom = plan.to_xcom()
    assert json.loads(json.dumps(xcom)) == xcom  # JSON-ready
    assert xcom["undeclared"] == ["Due"] and xcom["recorded_at"] == plan.recorded_at is not None


def test_the_second_apply_reports_unchanged_and_a_change_reports_changed(hook: Any, record: Path) -> None:
    apply(hook, SCHEMA, record)
    result, sent = apply(hook, SCHEMA, record)
    assert result.outcomes() == {"Title": "unchanged", "Severity": "unchanged", "Due": "unchanged"}
    assert sent == ["Due", "Severity", "Title"]  # by default every field is sent: a PUT corrects drift
    result, _ = apply(hook, changed_schema(), record)
    assert result.outcomes() == {"Title": "unchanged", "Severity": "changed", "Due": "unchanged"}


def test_only_changed_sends_only_add_and_change(hook: Any, record: Path) -> None:
    apply(hook, SCHEMA[:2], record)  # Due never applied
    result, sent = apply(hook, changed_schema(), record, only_changed=True)
    assert sent == ["Due", "Severity"]
    assert result.outcomes() == {"Title": "unchanged", "Severity": "changed", "Due": "added"}
    assert result.ok and result.skipped == ["Title"]
    result, sent = apply(hook, changed_schema(), record, only_changed=True)
    assert sent == [] and result.ok
    assert set(result.outcomes().values()) == {"unchanged"}


def test_only_changed_without_a_record_is_refused_before_any_request(hook: Any) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="only_changed needs a record_path"):
        hook.update_table_fields("ws-1", "Incidents", SCHEMA, only_changed=True)
    assert m.call_count == 0


def test_the_record_is_updated_only_for_fields_blink_confirmed(hook: Any, record: Path) -> None:
    with rm.Mocker() as m:
        m.put(rm.ANY, json=field_json)
        m.put(f"{TABLE_URL}/Severity", status_code=400, json={"message": "options are invalid"})
        result = hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
    assert result.outcomes() == {"Title": "added", "Severity": "failed", "Due": "added"}
    stored = json.loads(record.read_text())
    assert set(stored["fields"]) == {"Title", "Due"}
    assert stored["fields"]["Due"] == {"type": "date", "display_name": "Due by"}  # the body sent
    plan = hook.plan_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
    assert [p.action for p in plan.fields] == ["unchanged", "add", "unchanged"]


def test_a_failed_change_keeps_the_previous_record_of_that_field(hook: Any, record: Path) -> None:
    apply(hook, SCHEMA, record)
    with rm.Mocker() as m:
        m.put(rm.ANY, json=field_json)
        m.put(f"{TABLE_URL}/Severity", status_code=400, json={"message": "no"})
        hook.update_table_fields("ws-1", "Incidents", changed_schema(), record_path=str(record))
    plan = hook.plan_table_fields("ws-1", "Incidents", changed_schema(), record_path=str(record))
    assert plan.fields[1].action == "change"  # still to do


def test_a_record_of_another_table_or_not_a_record_is_refused_before_any_request(hook: Any, record: Path) -> None:
    record.parent.mkdir(parents=True)
    SchemaRecord(record, blink=f"{BASE}", ws_id="ws-1", table="Users").write({}, now=NOW)
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=r"is for table 'Users'.*give each table its own record_path"):
            hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
        record.write_text('{"fields": ')
        with pytest.raises(BlinkInputError, match="is not valid JSON"):
            hook.plan_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
        record.write_text('{"something": "else"}')
        with pytest.raises(BlinkInputError, match="not a schema record written by this provider"):
            hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record))
        with pytest.raises(BlinkInputError, match="is a directory"):
            hook.plan_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record.parent))
    assert m.call_count == 0


def test_a_record_that_cannot_be_written_fails_the_task_for_a_retry(hook: Any, record: Path) -> None:
    def block_the_record(request: Any, context: Any) -> dict[str, Any]:
        if not record.exists():  # the record's place becomes a folder while the batch runs
            record.mkdir()
        return field_json(request, context)

    with rm.Mocker() as m:
        m.put(rm.ANY, json=block_the_record)
        with pytest.raises(BlinkApiError, match=r"could not be updated.*A retry applies the schema again") as caught:
            hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(record), max_concurrency=1)
    assert not isinstance(caught.value, BlinkClientError)  # Airflow's retries apply


def test_a_record_path_under_a_file_is_refused_before_any_request(hook: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="a folder on its way is a file"):
        hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=str(tmp_path / "file" / "Incidents.json"))
    assert m.call_count == 0


def test_members_compare_absent_attributes_as_unset() -> None:
    assert differing_members({"type": "text", "display_name": "A"}, {"type": "text", "display_name": "A",
                                                                     "attributes": {}}) == []  # fmt: skip
    assert differing_members(
        {"type": "text", "display_name": "A", "attributes": {"default_value": "x"}},
        {"type": "text", "display_name": "B"},
    ) == ["display_name", "attributes.default_value"]


# -- the operator -----------------------------------------------------------------------------


def test_plan_only_returns_the_plan_and_sends_nothing(blink_conn: None, record: Path) -> None:
    op = UpdateTableFieldsOperator(
        task_id="plan", ws_id="ws-1", table="Incidents", fields=SCHEMA, record_path=str(record), plan_only=True
    )
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [], "total": 0})
        plan = op.execute({"ti": FakeTI()})
    assert [request.method for request in m.request_history] == ["GET"]  # the key's check, nothing else
    assert [f["action"] for f in plan["fields"]] == ["add", "add", "add"]
    assert plan["counts"] == {"add": 3, "change": 0, "unchanged": 0, "refused": 0, "destructive": 0}
    assert plan["baseline"] == BASELINE and BASELINE in plan["text"]


def test_the_operator_reports_outcomes_added_then_unchanged(blink_conn: None, record: Path, provider_log: Any) -> None:
    def run() -> dict[str, Any]:
        op = UpdateTableFieldsOperator(
            task_id="apply", ws_id="ws-1", table="Incidents", fields=SCHEMA, record_path=str(record)
        )
        with rm.Mocker() as m:
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


def test_plan_only_and_only_changed_need_a_record_path() -> None:
    for flag in ("plan_only", "only_changed"):
        with pytest.raises(BlinkInputError, match=f"{flag}=True needs record_path"):
            UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=[], **{flag: True})
    with pytest.raises(BlinkInputError, match="plan_only must be True or False"):
        UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=[], record_path="r", plan_only="yes")
