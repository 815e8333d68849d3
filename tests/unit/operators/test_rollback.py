"""RollbackTableOperator (blinkops_provider.operators.rollback, #74): the rollback of an apply from Airflow, with the
migration's review: the plan shown in Required Actions, a person's Approve read from Airflow's record of the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm
from airflow.providers.common.compat.sdk import AirflowFailException

from blinkops_provider.migrations import apply_schema
from blinkops_provider.operators.rollback import RollbackTableOperator
from tests.fake_blink import FakeBlink, blink_field
from tests.unit.test_task_groups import AskedFor, Ti, needs_review, record, waiting

HELD = {"T": [blink_field("Name", "text"), blink_field("Risk", "single-select", options=["Low", "High"])]}
ROWS = [{"id": "r1", "Name": "a", "Risk": "High"}, {"id": "r2", "Name": "b", "Risk": "Low"}]
REMOVE_RISK = [{"field": "Name", "type": "text", "display_name": "Name"}, {"field": "Risk", "remove": True}]


def applied(m: Any, hook: Any, records: str) -> FakeBlink:
    """The fake Blink after an apply that removed 'Risk' (its values saved first)."""
    fake = FakeBlink(HELD).mount(m)
    fake.records["T"] = [dict(row) for row in ROWS]
    apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=records, acknowledge_risks=True)
    assert "Risk" not in fake.tables["T"] and not any("Risk" in row for row in fake.records["T"])
    return fake


def operator(records: str, **given: Any) -> RollbackTableOperator:
    return RollbackTableOperator(task_id="rollback", ws_id="ws-1", table="T", record_path=records, **given)


def restored(fake: FakeBlink) -> list[Any]:
    (name,) = [n for n, f in fake.tables["T"].items() if f["display_name"] == "Risk"]
    return [row.get(name) for row in fake.records["T"]]


@needs_review
def test_the_rollback_asks_showing_its_plan_and_an_approve_in_airflows_record_rolls_back(
    blink_conn: None, hook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked_for = AskedFor(monkeypatch)
    records, ti = f"{tmp_path}/", Ti()
    op = operator(records, assigned_users=[{"id": "7", "name": "alice"}])
    with rm.Mocker() as m:
        fake = applied(m, hook, records)
        writes = len([c for c in m.request_history if c.method != "GET"])
        with pytest.raises(waiting()) as waits:
            op.execute({"ti": ti, "task_instance": ti})
        assert len([c for c in m.request_history if c.method != "GET"]) == writes  # asking sends nothing
        shown = waits.value.kwargs["shown"]
        (request,) = asked_for.requests
        assert (
            request["subject"].startswith("Roll back apply ")
            and f"**Rollback `{shown}`** for ws-1/T" in request["body"]
        )
        assert "Risk: re-create" in request["body"] and ti.pushed["plan"]["fingerprint"] == shown
        done = op.execute_complete({"ti": ti, "task_instance": ti}, record("Approve"), shown=shown)
    assert restored(fake) == ["High", "Low"] and done["restored"] == {"Risk": 2}
    header = json.loads(Path(done["backup"]).read_text().splitlines()[0])
    assert header["approval"] == {"approved_by": "alice", "approved_at": "2026-11-28T01:02:03+00:00"}


@needs_review
def test_a_reject_fails_the_task_with_nothing_sent(blink_conn: None, hook: Any, tmp_path: Path) -> None:
    records, ti = f"{tmp_path}/", Ti()
    with rm.Mocker() as m:
        fake = applied(m, hook, records)
        writes = len([c for c in m.request_history if c.method != "GET"])
        with pytest.raises(AirflowFailException, match="rejected"):
            operator(records).execute_complete({"ti": ti, "task_instance": ti}, record("Reject"), shown="0" * 16)
        assert len([c for c in m.request_history if c.method != "GET"]) == writes
    assert "Risk" not in {f["display_name"] for f in fake.tables["T"].values()}


def test_with_no_review_the_rollback_runs_at_once(blink_conn: None, hook: Any, tmp_path: Path) -> None:
    records, ti = f"{tmp_path}/", Ti()
    with rm.Mocker() as m:
        fake = applied(m, hook, records)
        done = operator(records, review_policy="never").execute({"ti": ti, "task_instance": ti})
    assert restored(fake) == ["High", "Low"] and done["apply"] == ti.pushed["plan"]["apply"]
