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

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.task_groups import BlinkSchemaFleet, BlinkTableMigration, review_step_available
from tests.conftest import FakeTI

REVIEW = review_step_available()  # Airflow 3.1+
SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


def dag() -> DAG:
    return DAG("groups", schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))


def test_a_table_migration_is_plan_review_apply_announce_with_stable_ids() -> None:
    with dag() as d:
        group = BlinkTableMigration("migrate", ws_id="ws", table="T", schema=SCHEMA)
        after = EmptyOperator(task_id="after")
        group >> after
    expected = ["migrate.plan", *(["migrate.review"] if REVIEW else []), "migrate.apply", "migrate.announce"]
    assert [t.task_id for t in d.tasks if t.task_id.startswith("migrate.")] == expected
    assert (group.plan.task_id, group.apply.task_id) == ("migrate.plan", "migrate.apply")
    assert group.apply.review_task_id == ("migrate.review" if REVIEW else None)
    assert group.plan.plan_only is True and group.apply.plan_only is False
    assert "migrate.apply" in after.upstream_task_ids or "migrate.announce" in after.upstream_task_ids
    if REVIEW:
        assert group.apply.trigger_rule == "none_failed_min_one_success"  # runs when the review was not asked
        assert group.review.fail_on_reject is True and "migrate.review" in group.apply.upstream_task_ids
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
    assert "m.review" not in d.task_ids and group.apply.review_task_id is None


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
    assert fleet.apply.partial_kwargs["review_task_id"] == ("fleet.review" if REVIEW else None)


def test_a_templated_policy_is_checked_when_the_review_runs() -> None:
    with dag():
        group = BlinkTableMigration("m", ws_id="ws", table="T", schema=SCHEMA, review_policy="{{ params.p }}")
    if REVIEW:
        group.review.review_policy = "risky"  # as rendered
        with pytest.raises(BlinkInputError, match="review_policy must be one of"):
            group.review.execute({"ti": FakeTI({"*": plan(ADD)})})


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"max_concurrency": 0}, "max_concurrency must be an integer from 1 to 32, got 0"),
        ({"max_concurrency": 33}, "max_concurrency must be an integer from 1 to 32, got 33"),
        ({"lock_wait": -1}, "lock_wait must be a number of seconds from 0 to 3600, got -1"),
        ({"lock_wait": 3601}, "lock_wait must be a number of seconds from 0 to 3600, got 3601"),
    ],
)
def test_a_fleets_ranges_are_refused_when_the_dag_is_parsed(kwargs: dict[str, Any], why: str) -> None:
    """#63 item 9: not in each mapped apply, after the plans and a person's review."""
    with dag(), pytest.raises(BlinkInputError, match=why):
        BlinkSchemaFleet("fleet", tables=[{"ws_id": "ws", "table": "T", "fields": SCHEMA}], **kwargs)


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
    with dag():
        group = BlinkTableMigration("m", ws_id="ws", table="T", schema=SCHEMA, review_policy=policy,
                                    acknowledge_risks=acknowledge)  # fmt: skip
    return group.review


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
def test_the_review_asks_only_when_the_policy_says_so(
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
def test_a_reject_fails_the_review_naming_who_rejected_which_plan_and_when() -> None:
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


@needs_review
def test_an_approve_returns_airflows_answer() -> None:
    step = review("changes")
    event = {"chosen_options": ["Approve"], "params_input": {}, "responded_at": dt.datetime.now(dt.UTC),
             "responded_by_user": {"id": "9", "name": "carol"}}  # fmt: skip
    assert step.execute_complete({"ti": FakeTI({"*": plan(ADD)}), "task": step}, event)["chosen_options"] == ["Approve"]
