"""A review's decision as Airflow records it (blinkops_provider.migrations._review, #44 item 1):
the real ``ApprovalOperator`` answers Reject by skipping the apply and returning nothing, so the
decision is read from the skip it records; Approve from its return value."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from blinkops_provider.migrations import fail_if_rejected, review_decision
from blinkops_provider.migrations._review import APPROVED, NOT_ASKED, REJECTED, REJECTED_IN_REVIEW

AIRFLOW = tuple(int(part) for part in importlib.metadata.version("apache-airflow").split(".")[:2])
HAS_APPROVAL = AIRFLOW >= (3, 1) and importlib.util.find_spec("airflow.providers.standard") is not None


class XComs:
    """A task instance's XCom, as a teardown below the review pulls it (and as the review pushes it)."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], Any] = {}
        self.task_id = "review"
        self.map_index = -1

    def xcom_push(self, key: str, value: Any) -> None:
        self.values[(self.task_id, key)] = value

    def xcom_pull(self, task_ids: str, key: str = "return_value", **_: Any) -> Any:
        return self.values.get((task_ids, key))


def approval(option: str) -> tuple[Any, XComs, dict[str, Any]]:
    """Airflow's own ApprovalOperator (upstream of an apply), an empty XCom, and the event of a
    person choosing ``option``."""
    from airflow.providers.common.compat.sdk import DAG
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    with DAG("reviewed", schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)):
        review = ApprovalOperator(task_id="review", subject="Apply?")
        review >> EmptyOperator(task_id="apply")
    event = {
        "chosen_options": [option],
        "params_input": {},
        "responded_at": dt.datetime.now(dt.UTC),
        "responded_by_user": {"id": "1", "name": "admin"},
    }
    return review, XComs(), event


@pytest.mark.skipif(not HAS_APPROVAL, reason="the human-in-the-loop approval needs Airflow 3.1 or later")
def test_a_reject_in_the_ui_is_read_from_the_skip_airflow_records() -> None:
    from airflow.providers.common.compat.sdk import DownstreamTasksSkipped

    review, ti, event = approval("Reject")
    with pytest.raises(DownstreamTasksSkipped):  # the apply is skipped, and the review returns nothing
        review.execute_complete({"ti": ti, "task": review}, event)
    assert ti.xcom_pull(task_ids="review") is None  # what made the rejected run green before
    assert review_decision(ti) == REJECTED
    with pytest.raises(AirflowFailException, match=rf"^{REJECTED_IN_REVIEW} \(plan 1a2b of ws/T was rejected\)"):
        fail_if_rejected(ti, "plan 1a2b of ws/T")


@pytest.mark.skipif(not HAS_APPROVAL, reason="the human-in-the-loop approval needs Airflow 3.1 or later")
def test_an_approval_is_read_from_the_reviews_return_value() -> None:
    review, ti, event = approval("Approve")
    ti.xcom_push("return_value", dict(review.execute_complete({"ti": ti, "task": review}, event)))
    assert review_decision(ti) == APPROVED
    assert fail_if_rejected(ti, "plan 1a2b of ws/T") == APPROVED


def test_a_review_that_was_not_asked_left_nothing() -> None:
    assert review_decision(XComs()) == NOT_ASKED
    assert fail_if_rejected(XComs(), "plan 1a2b of ws/T") == NOT_ASKED


def test_a_skip_that_skipped_nothing_is_not_a_rejection() -> None:
    ti = XComs()
    ti.xcom_push("skipmixin_key", {"skipped": []})
    assert review_decision(ti) == NOT_ASKED
