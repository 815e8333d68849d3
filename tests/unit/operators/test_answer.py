"""A review's answer as the operators read it (blinkops_provider.operators._answer, #55, #63): a
Reject an approval task pushed stops the apply; its XCom never lets a removal through."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.operators._answer import approval_from_review
from blinkops_provider.utils.states import REJECTED_IN_REVIEW
from tests.conftest import FakeTI

AIRFLOW = tuple(int(part) for part in importlib.metadata.version("apache-airflow").split(".")[:2])
HAS_APPROVAL = AIRFLOW >= (3, 1) and importlib.util.find_spec("airflow.providers.standard") is not None
needs_approval = pytest.mark.skipif(not HAS_APPROVAL, reason="the human-in-the-loop approval needs Airflow 3.1+")


# -- the answer, from Airflow's record ---------------------------------------------------------------


def answer(option: str) -> dict[str, Any]:
    when = dt.datetime(2026, 11, 28, 1, 2, 3, tzinfo=dt.UTC)
    return {"chosen_options": [option], "params_input": {}, "responded_at": when, "responded_by_user": {"id": "7", "name": "alice"}}  # fmt: skip


def dag_with_review() -> dict[str, Any]:
    """A DAG: Airflow's own ApprovalOperator `review` upstream of `apply`, and a task `fake` that
    is no approval, also upstream; `late`, another approval, is downstream of the apply."""
    from airflow.providers.common.compat.sdk import DAG
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    with DAG("reviewed", schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)) as dag:
        review = ApprovalOperator(task_id="review", subject="Apply?")
        fake, apply = EmptyOperator(task_id="fake"), EmptyOperator(task_id="apply")
        [review, fake] >> apply >> ApprovalOperator(task_id="late", subject="Too late?")
    return dag.task_dict


@needs_approval
def test_an_approve_in_a_review_tasks_xcom_approves_nothing() -> None:
    """#63 item 1: the XCom is a copy that a user allowed to edit XComs may write; it never lets a
    removal through (only the asking task's own record of the answer does)."""
    tasks = dag_with_review()
    ti = FakeTI({"review": answer("Approve")})
    assert approval_from_review(tasks["apply"], ti, "review") is None
    assert ti.pulled == [("review", -1)]  # read, for a Reject only


@needs_approval
def test_a_review_that_was_not_asked_approves_nothing() -> None:
    assert approval_from_review(dag_with_review()["apply"], FakeTI({}), "review") is None


@needs_approval
def test_a_reject_refuses_the_apply_naming_who_and_when() -> None:
    with pytest.raises(BlinkInputError, match=rf"^{REJECTED_IN_REVIEW}: alice rejected this plan at 2026-11-28T01:02"):
        approval_from_review(dag_with_review()["apply"], FakeTI({"review": answer("Reject")}), "review")


@needs_approval
@pytest.mark.parametrize(
    ("review_task_id", "why"),
    [
        ("fake", "is a EmptyOperator, not an approval"),
        ("late", "is not upstream of 'apply'"),
        ("nope", "names no task"),
    ],
)
def test_an_answer_that_is_not_an_approval_tasks_own_never_counts(review_task_id: str, why: str) -> None:
    """A task that merely returns ``{"chosen_options": ["Approve"]}`` is no review: refused, naming
    review_task_id and acknowledge_risks."""
    ti = FakeTI({review_task_id: answer("Approve")})
    with pytest.raises(BlinkInputError, match=rf"review_task_id {review_task_id!r} {why}.*acknowledge_risks=True"):
        approval_from_review(dag_with_review()["apply"], ti, review_task_id)
    assert ti.pulled == []  # refused before its XCom is read


def test_no_review_task_is_no_approval() -> None:
    assert approval_from_review(object(), FakeTI({}), None) is None
