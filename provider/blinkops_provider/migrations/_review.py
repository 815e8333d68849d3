"""What a person decided in a plan's review (Airflow 3.1's ``ApprovalOperator``), read where
Airflow keeps it, and the failure that makes a rejected run red.

Airflow records the two answers differently. **Approve**: the review task returns the response
(its XCom ``return_value``, ``{"chosen_options": ["Approve"], ...}``) and the apply runs.
**Reject**: the task skips everything downstream of it but the teardowns, and returns nothing; what
it leaves is the skip it records (its XCom ``skipmixin_key``, ``{"skipped": [task ids]}``). A
review that was **not asked** (the short-circuit before it found nothing to review) leaves
neither. So a teardown below the review (it runs after a Reject too) reads both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException

APPROVED, REJECTED, NOT_ASKED = "approved", "rejected", "not asked"

SKIP_KEY = "skipmixin_key"
"""The XCom key under which Airflow's ``SkipMixin`` records the tasks a task skipped."""

REJECTED_IN_REVIEW = "rejected in review: nothing was applied"
"""What a rejected run's failure and a rejected fleet's summary begin with."""


def review_decision(ti: Any, task_id: str = "review") -> str:
    """:data:`APPROVED`, :data:`REJECTED` or :data:`NOT_ASKED`: what the review task ``task_id``
    of this run decided (``ti``: the task instance of a task downstream of it)."""
    response = ti.xcom_pull(task_ids=task_id)
    chosen = response.get("chosen_options") if isinstance(response, Mapping) else None
    if isinstance(chosen, list) and chosen:
        return REJECTED if "Reject" in chosen else APPROVED
    skipped = ti.xcom_pull(task_ids=task_id, key=SKIP_KEY)
    return REJECTED if isinstance(skipped, Mapping) and skipped.get("skipped") else NOT_ASKED


def fail_if_rejected(ti: Any, what: str, *, task_id: str = "review") -> str:
    """The review's decision; when it rejected, an ``AirflowFailException`` (the task fails at
    once, and a teardown with ``on_failure_fail_dagrun`` makes the run red) whose message begins
    with :data:`REJECTED_IN_REVIEW` and names ``what`` was rejected.

    :raises AirflowFailException: the review rejected the plan.
    """
    decision = review_decision(ti, task_id)
    if decision == REJECTED:
        raise AirflowFailException(
            f"{REJECTED_IN_REVIEW} ({what} was rejected). Change the declared schema and trigger the DAG again "
            "for a new plan"
        )
    return decision
