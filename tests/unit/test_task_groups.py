"""The reviewed migration in one line (blinkops_provider.task_groups and its review step,
blinkops_provider.operators._review, #55): what each group builds on this Airflow, the review's
choice to ask or not, its body, and a Reject that fails the review itself."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import DAG, AirflowFailException, AirflowSkipException

try:
    from airflow.providers.standard.operators.empty import EmptyOperator
except ImportError:  # Airflow 2.11
    from airflow.operators.empty import EmptyOperator  # type: ignore[no-redef]

import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.task_groups import BlinkSchemaFleet, BlinkTableMigration, review_step_available
from tests.conftest import FakeTI
from tests.fake_blink import FakeBlink, blink_field

REVIEW = review_step_available()  # Airflow 3.1+
SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


def dag() -> DAG:
    return DAG("groups", schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))


def test_a_table_migration_is_plan_apply_announce_with_stable_ids_and_the_apply_asks() -> None:
    with dag() as d:
        group = BlinkTableMigration("migrate", ws_id="ws", table="T", schema=SCHEMA)
        after = EmptyOperator(task_id="after")
        group >> after
    expected = ["migrate.plan", "migrate.apply", "migrate.announce"]
    assert [t.task_id for t in d.tasks if t.task_id.startswith("migrate.")] == expected
    assert (group.plan.task_id, group.apply.task_id) == ("migrate.plan", "migrate.apply")
    assert group.apply.review_task_id is None  # no other task's answer is read
    assert group.review is (group.apply if REVIEW else None)  # the task that asks is the one that applies
    assert group.plan.plan_only is True and group.apply.plan_only is False
    assert "migrate.apply" in after.upstream_task_ids or "migrate.announce" in after.upstream_task_ids
    assert group.apply.trigger_rule == "all_success" and group.apply.upstream_task_ids == {"migrate.plan"}
    assert group.announce.is_teardown and group.announce.task_id == "migrate.announce"  # a task (#63 item 8)
    assert group.announce.upstream_task_ids == {"migrate.apply"}


def test_a_schema_file_is_read_by_a_task_of_its_own_relative_to_the_dag_file(tmp_path: Any) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "t.json").write_text('{"fields": [{"field": "A", "type": "text", "display_name": "A"}]}')
    with dag() as d:
        d.fileloc = str(tmp_path / "my_dag.py")
        BlinkTableMigration("m", ws_id="ws", table="T", schema="schemas/t.json")
    read = d.task_dict["m.schema"]
    assert d.task_ids[0] == "m.schema" and d.task_dict["m.plan"].upstream_task_ids == {"m.schema"}
    assert list(read.op_args) == ["schemas/t.json", str(tmp_path)]  # templated, resolved when it runs
    assert read.python_callable(*read.op_args) == [{"field": "A", "type": "text", "display_name": "A"}]
    with pytest.raises(BlinkInputError, match=r"schema file '.*missing\.json' cannot be read"):
        read.python_callable("missing.json", str(tmp_path))


def test_policy_never_builds_no_review() -> None:
    with dag() as d:
        group = BlinkTableMigration("m", ws_id="ws", table="T", schema=SCHEMA, review_policy="never")
    assert "m.review" not in d.task_ids and group.review is None
    assert type(group.apply).__name__ == "UpdateTableFieldsOperator"  # asks no one


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"review_policy": "risky"}, "review_policy must be one of: 'always'"),
        ({"schema": 42}, "schema must be a list of entries, an object with 'fields', a path"),
        ({"response_timeout": 60}, "response_timeout must be a datetime.timedelta"),
        ({"acknowledge_risks": 1}, "acknowledge_risks must be True, False or a template"),
    ],
)
def test_wrong_arguments_are_refused_when_the_dag_is_parsed(kwargs: dict[str, Any], why: str) -> None:
    with dag(), pytest.raises(BlinkInputError, match=why):
        BlinkTableMigration("m", **{"ws_id": "ws", "table": "T", "schema": SCHEMA, **kwargs})


def test_a_fleet_plans_each_table_asks_once_and_applies_each() -> None:
    with dag() as d:
        fleet = BlinkSchemaFleet("fleet", tables=[{"ws_id": "ws", "table": "T", "fields": SCHEMA}], pool="p")
    expected = ["fleet.tables", "fleet.plan", *(["fleet.review"] if REVIEW else []), "fleet.to_apply"]
    assert [t.task_id for t in d.tasks][: 4 if REVIEW else 3] == expected
    assert fleet.apply.partial_kwargs["pool"] == "p" and fleet.summary.operator.trigger_rule == "all_done"
    assert "review_task_id" not in fleet.apply.partial_kwargs  # no other task's answer is read
    assert fleet.apply.partial_kwargs.get("removals_only") is (True if REVIEW else None)


def test_a_templated_policy_is_checked_when_the_review_runs(blink_conn: None) -> None:
    with dag():
        group = BlinkTableMigration("m", ws_id="ws", table="T", schema=SCHEMA, review_policy="{{ params.p }}")
    if REVIEW:
        group.review.review_policy = "risky"  # as rendered
        with pytest.raises(BlinkInputError, match="review_policy must be one of"), rm.Mocker() as m:
            group.review.execute({"ti": FakeTI()})
        assert m.call_count == 0


def test_a_fleet_needs_tables_or_a_folder() -> None:
    with dag(), pytest.raises(BlinkInputError, match="either tables"):
        BlinkSchemaFleet("fleet")


# -- the review step (Airflow 3.1+) -----------------------------------------------------------------

needs_review = pytest.mark.skipif(not REVIEW, reason="the review step needs Airflow 3.1 or later")


def plan(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"fingerprint": "0123456789abcdef", "ws_id": "ws", "table": "T", "fields": list(rows), "text": "Plan text"}


REMOVE = {"field": "Old", "action": "remove", "destructive": True}
ADD = {"field": "New", "action": "add"}


def review(policy: str, acknowledge: Any = False) -> Any:
    """A fleet's one review of every plan (PlanReview)."""
    with dag():
        fleet = BlinkSchemaFleet("f", tables=[{"ws_id": "ws", "table": "T", "fields": SCHEMA}], review_policy=policy,
                                 acknowledge_risks=acknowledge)  # fmt: skip
    return fleet.review


@needs_review
@pytest.mark.parametrize(
    ("policy", "acknowledge", "rows", "asked"),
    [
        ("destructive", "True", [REMOVE], False),  # the removal was the only reason, and it is acknowledged
        ("destructive", "False", [REMOVE], True),
        ("changes", "True", [REMOVE], True),
        ("changes", False, [], False),
        ("always", False, [], True),
        ("destructive", False, [ADD], False),
    ],
)
def test_the_fleets_review_asks_only_when_the_policy_says_so(
    policy: str, acknowledge: Any, rows: Any, asked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.standard.operators.hitl import HITLOperator

    step = review(policy, acknowledge)
    context = {"ti": FakeTI({"*": plan(*rows)}), "task_instance": None}
    if asked:  # it goes on to ask a person: Airflow's own execute, which writes the request (not run here)
        monkeypatch.setattr(HITLOperator, "execute", lambda self, context: "asked")
        assert step.execute(context) == "asked"
        assert step.subject == "Apply plan 0123456789abcdef of ws/T?"
        assert step.body.startswith("**Plan `0123456789abcdef`** for ws/T")
        acknowledged = "already acknowledged the removals" in step.body
        assert acknowledged is (str(acknowledge) == "True" and bool(rows) and rows[0] is REMOVE)
    else:
        with pytest.raises(AirflowSkipException, match=f"review policy {policy!r} asks no one"):
            step.execute(context)


@needs_review
def test_a_reject_fails_the_fleets_review_naming_who_rejected_which_plan_and_when() -> None:
    step = review("changes")
    ti = FakeTI({"*": plan(ADD)})
    event = {
        "chosen_options": ["Reject"],
        "params_input": {},
        "responded_at": dt.datetime(2026, 11, 28, 1, 2, 3, tzinfo=dt.UTC),
        "responded_by_user": {"id": "9", "name": "carol"},
    }
    with pytest.raises(AirflowFailException) as failed:
        step.execute_complete({"ti": ti, "task": step}, event)
    assert str(failed.value).startswith(
        "rejected in review: nothing was applied: carol rejected plan 0123456789abcdef of ws/T at 2026-11-28T01:02:03"
    )
    assert ti.pushed["return_value"]["chosen_options"] == ["Reject"]  # the answer, for the fleet's summary
    assert ti.pushed["return_value"]["responded_by_user"]["name"] == "carol"


# -- the apply that asks (ReviewedApply, #63 item 1) --------------------------------------------------

HELD = {"T": [blink_field("fld_title", "text", "Title"), blink_field("fld_old", "text", "Old notes")]}
GONE = {"field": "fld_old", "remove": True}


def asking_apply(policy: str = "changes", acknowledge: Any = False, **kwargs: Any) -> Any:
    with dag():
        group = BlinkTableMigration("m", ws_id="ws-1", table="T", schema=[*SCHEMA, GONE], review_policy=policy,
                                    acknowledge_risks=acknowledge, **kwargs)  # fmt: skip
    group.apply.plan = None  # (the plan task's XCom, rendered: here, no plan to hold the apply to)
    return group.apply


def waiting() -> tuple[type[BaseException], ...]:
    """How a task waits for a person: Airflow 3.3 parks it awaiting input; 3.1 and 3.2 defer it."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    try:
        from airflow.sdk.exceptions import TaskAwaitingInput
    except ImportError:
        return (TaskDeferred,)
    return (TaskDeferred, TaskAwaitingInput)


class AskedFor:
    """What the apply wrote as its review request (Airflow's own upsert_hitl_detail, recorded)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from airflow.sdk.execution_time import hitl

        self.requests: list[dict[str, Any]] = []
        monkeypatch.setattr(hitl, "upsert_hitl_detail", lambda **request: self.requests.append(request))


class Ti(FakeTI):
    id = "0199aaaa-0000-7000-8000-000000000001"


@needs_review
@pytest.mark.parametrize(("policy", "acknowledge", "asked"), [("changes", False, True), ("destructive", True, False)])
def test_the_apply_asks_showing_the_plan_it_made_or_applies_when_no_one_is_asked(
    blink_conn: None, monkeypatch: pytest.MonkeyPatch, policy: str, acknowledge: bool, asked: bool
) -> None:
    asked_for = AskedFor(monkeypatch)
    apply = asking_apply(policy, acknowledge, assigned_users=[{"id": "7", "name": "alice"}])
    ti = Ti()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        if not asked:
            assert apply.execute({"ti": ti, "task_instance": ti})["outcomes"]["fld_old"] == "removed"
            assert asked_for.requests == [] and blink.deletes == [("T", "fld_old")]
            return
        with pytest.raises(waiting()) as waits:
            apply.execute({"ti": ti, "task_instance": ti})
    [request] = asked_for.requests
    fingerprint = waits.value.kwargs["shown"]
    assert request["ti_id"] == ti.id and request["assigned_users"] == [{"id": "7", "name": "alice"}]
    assert request["subject"] == f"Apply plan {fingerprint} of ws-1/T?" and request["options"] == ["Approve", "Reject"]
    assert f"**Plan `{fingerprint}`** for ws-1/T" in request["body"] and "fld_old" in request["body"]
    assert blink.deletes == [] and [r.method for r in m.request_history if r.method != "GET"] == []


def record(option: str | None, user: tuple[str, str] = ("7", "alice")) -> dict[str, Any]:
    """Airflow's record of an answer as it resumes the task that asked (``HITLDetail``'s resume
    payload): ``responded_by_user`` None when no person answered (a timeout)."""
    return {
        "chosen_options": [option] if option else [],
        "params_input": {},
        "responded_at": dt.datetime(2026, 11, 28, 1, 2, 3, tzinfo=dt.UTC),
        "responded_by_user": {"id": user[0], "name": user[1]} if option else None,
        "timedout": option is None,
    }


@needs_review
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (record("Reject"), "rejected in review: nothing was applied: alice rejected plan"),
        (record(None), "Airflow records no person's answer to the review of plan"),
        (
            record("Approve", ("8", "mallory")),
            r"answered by 'mallory' \(id 8\), who is not among its assigned_users \(alice \(id 7\)\)",
        ),
    ],
)
def test_only_an_assigned_persons_approve_in_airflows_record_applies(
    blink_conn: None, answer: dict[str, Any], said: str
) -> None:
    apply = asking_apply(assigned_users=[{"id": "7", "name": "alice"}])
    ti = Ti()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        with pytest.raises(AirflowFailException, match=said):
            apply.execute_complete({"ti": ti, "task_instance": ti}, answer, shown="0123456789abcdef")
    assert blink.deletes == [] and m.call_count == 0 and "return_value" not in ti.pushed


@needs_review
def test_an_assigned_users_approve_in_airflows_record_applies_the_plan_shown_naming_them(
    blink_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    AskedFor(monkeypatch)
    apply = asking_apply(assigned_users=[{"id": "7", "name": "alice"}])
    ti = Ti()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        with pytest.raises(waiting()) as waits:
            apply.execute({"ti": ti, "task_instance": ti})
        shown = waits.value.kwargs["shown"]
        result = apply.execute_complete({"ti": ti, "task_instance": ti}, record("Approve"), shown=shown)
    assert result["outcomes"]["fld_old"] == "removed" and blink.deletes == [("T", "fld_old")]
    assert (result["approved_by"], result["approved_at"]) == ("alice", "2026-11-28T01:02:03+00:00")


@needs_review
def test_a_plan_that_changed_after_it_was_shown_is_stale_and_nothing_is_sent(
    blink_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blinkops_provider.exceptions import BlinkStalePlanError

    apply = asking_apply()
    ti = Ti()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        with pytest.raises(BlinkStalePlanError):
            apply.execute_complete({"ti": ti, "task_instance": ti}, record("Approve"), shown="0123456789abcdef")
    assert blink.deletes == [] and blink.puts == []
