"""
A review's answer as Airflow records it, read by the operators (the migrations read no Airflow).

Who chose what and when, a Reject, and who let a plan through.

The evidence of a person's Approve is Airflow's record of the answer (the human-in-the-loop
detail: chosen options, responded by, responded at), as Airflow hands it to the task that asked
when it resumes that task: the apply of a :class:`~blinkops_provider.task_groups.BlinkTableMigration`
asks the person itself (:func:`approval_from_record`). A task can read no other task's record
(Airflow 3.3's execution API serves the detail only to the task instance it belongs to, and a
worker's supervisor does not serve the Task SDK's read of it at all). An XCom is a copy that a
user allowed to edit XComs may overwrite, so the answer a review task pushed
(``review_task_id``) is read only to stop on a Reject (:func:`approval_from_review`); it never
lets a removal through.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.utils.states import REJECTED_IN_REVIEW, Decision
from blinkops_provider.utils.text import one_line


def _when(value: Any) -> str:
    """Return an answer's time as ISO 8601 text (Airflow hands it back as a datetime or as text)."""
    return value.isoformat() if isinstance(value, dt.datetime) else str(value)


def responder(answer: Mapping[str, Any]) -> tuple[str, str]:
    """Return who answered a review and when, as Airflow recorded it: ``(name, ISO time)``."""
    user = answer.get("responded_by_user")
    who = user.get("name") or user.get("id") if isinstance(user, Mapping) else user
    return one_line(str(who or "an unknown user")), one_line(_when(answer.get("responded_at")))


def chosen(answer: Any) -> list[str]:
    """Return the options a review's answer chose (none for anything that is not an answer)."""
    options = answer.get("chosen_options") if isinstance(answer, Mapping) else None
    return [str(option) for option in options] if isinstance(options, list) else []


def rejection(answer: Mapping[str, Any], what: str) -> str:
    """Return the message of a rejected review: who rejected ``what`` and when, and that nothing was applied."""
    who, when = responder(answer)
    return (
        f"{REJECTED_IN_REVIEW}: {who} rejected {what} at {when}. Change the declared schema and trigger the DAG "
        "again for a new plan"
    )


def _review_task(task: Any, review_task_id: str) -> Any:
    """
    Return the approval task ``review_task_id`` of ``task``'s DAG, upstream of ``task``.

    :raises BlinkInputError: no such task, not upstream, or not an approval task.
    """
    approval: Any = None
    try:
        from airflow.providers.standard.operators.hitl import ApprovalOperator

        approval = ApprovalOperator
    except Exception:  # ImportError, or the provider's "needs Airflow 3.1+"
        pass
    dag = getattr(task, "dag", None)
    review = dag.task_dict.get(review_task_id) if dag is not None else None
    how = (
        "name the task id of an ApprovalOperator upstream of this task in the same DAG (Airflow 3.1+), or set "
        "review_task_id=None and acknowledge_risks=True to apply removals without a review"
    )
    if review is None:
        raise BlinkInputError(f"review_task_id {review_task_id!r} names no task of this DAG: {how}")
    if approval is None or not isinstance(review, approval):
        raise BlinkInputError(f"review_task_id {review_task_id!r} is a {type(review).__name__}, not an approval: {how}")
    if review_task_id not in task.get_flat_relative_ids(upstream=True):
        raise BlinkInputError(f"review_task_id {review_task_id!r} is not upstream of {task.task_id!r}: {how}")
    return review


def approval_from_review(task: Any, ti: Any, review_task_id: str | None) -> None:
    """
    Stop when the approval task ``review_task_id`` rejected this run's plan.

    Its answer is read from its XCom, a copy anyone allowed to edit XComs may overwrite: it may stop an apply, never let
    a removal through (:func:`approval_from_record` reads a person's Approve where Airflow records it, in the task that
    asked).

    :param task: the apply's task (the review must be an ``ApprovalOperator`` upstream of it).
    :param review_task_id: as the operator checked it when it was built (a task id, or None).
    :param ti: the apply's task instance, which reads the review's XCom.
    :raises BlinkInputError: ``review_task_id`` names no approval task upstream, or its answer
        rejected the plan: nothing may be sent.
    """
    if review_task_id is None:
        return
    _review_task(task, review_task_id)
    answer = ti.xcom_pull(task_ids=review_task_id, map_indexes=-1)
    if Decision.REJECT in chosen(answer):
        raise BlinkInputError(rejection(answer, "this plan"))


def _who_answered(record: Any) -> dict[str, str] | None:
    """Return the person a recorded answer names (``{"id", "name"}``); None when no person answered."""
    user = record.get("responded_by_user") if isinstance(record, Mapping) else None
    if not isinstance(user, Mapping):
        return None
    return {"id": str(user.get("id") or ""), "name": str(user.get("name") or "")}


def _check_assigned(who: Mapping[str, str], assigned: Sequence[Mapping[str, Any]] | None, what: str) -> None:
    """
    Check that ``who`` may answer the review.

    :raises BlinkInputError: the review names ``assigned`` users and ``who`` is not one of them.
    """
    allowed = {
        str(entry.get("id")): str(entry.get("name") or "") for entry in assigned or () if isinstance(entry, Mapping)
    }
    if not allowed or who["id"] in allowed:
        return
    named = ", ".join(f"{one_line(name or id_)} (id {one_line(id_)})" for id_, name in sorted(allowed.items()))
    raise BlinkInputError(
        f"the review of {what} was answered by {one_line(who['name'] or who['id'])!r} (id {one_line(who['id'])}), "
        f"who is not among its assigned_users ({named}): their answer counts for nothing, and nothing was "
        "applied. Trigger the DAG again for a new review"
    )


def approval_from_record(
    record: Mapping[str, Any], assigned: Sequence[Mapping[str, Any]] | None, what: str
) -> dict[str, str]:
    """
    Return who approved, and when (``{"approved_by", "approved_at"}``).

    Read from Airflow's record of the answer to the review this task asked, as Airflow hands it to that task when it
    resumes it (the human-in-the-loop detail's ``chosen_options``, ``responded_by_user``, ``responded_at``: Airflow
    builds it from the record when a person answers; no XCom, and nothing a user allowed to edit XComs can write,
    reaches it).

    :param record: that answer.
    :param assigned: the review's ``assigned_users`` (``{"id", "name"}``): when given, only their
        answer counts.
    :param what: the plan, as the messages name it.
    :raises BlinkInputError: no person's answer recorded, a Reject, or an answer from someone the
        review was not assigned to: nothing may be sent.
    """
    options, who = chosen(record), _who_answered(record)
    if who is None or not options:
        raise BlinkInputError(f"Airflow records no person's answer to the review of {what}: nothing was applied")
    answer = {"responded_by_user": who, "responded_at": record.get("responded_at")}
    if Decision.REJECT in options:
        raise BlinkInputError(rejection(answer, what))
    _check_assigned(who, assigned, what)
    if Decision.APPROVE not in options:
        raise BlinkInputError(f"the review of {what} chose {options!r}, not {Decision.APPROVE!r}: nothing was applied")
    name, when = responder(answer)
    return {"approved_by": name, "approved_at": when}
