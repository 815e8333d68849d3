"""
Airflow's human-in-the-loop record, written and waited on: the one place this provider uses Airflow's private HITL API.

Airflow (3.1 and later) publishes the human-in-the-loop operators, not the functions they use to write a review request
and to wait for its answer. The table review (``_review.ReviewedApply``) asks from inside its own apply, so it uses them
here alone:

- :func:`ask_review` writes the request (``airflow.sdk.execution_time.hitl.upsert_hitl_detail``);
- :func:`await_answer` parks the task until a person answers: Airflow 3.3's ``TaskAwaitingInput``, or on 3.1 and 3.2
  a deferral to the standard provider's ``HITLTrigger``;
- the answer comes back as the payload Airflow resumes the task with, whose members :data:`ANSWER_KEYS` names
  (``_answer.approval_from_record`` reads it).

``tests/unit/operators/test_hitl.py`` runs on every supported Airflow line and fails when Airflow moves or reshapes
any of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, NoReturn

ANSWER_KEYS = ("chosen_options", "responded_by_user", "responded_at")
"""What this provider reads of Airflow's record of a person's answer, as Airflow resumes the task that asked."""


def review_step_available() -> bool:
    """Return whether this Airflow has the review step (the human-in-the-loop ``ApprovalOperator``, 3.1+)."""
    try:
        from airflow.providers.standard.operators.hitl import ApprovalOperator  # noqa: F401
    except Exception:  # ImportError, or the provider's "needs Airflow 3.1+"
        return False
    return True


def ask_review(
    *, ti_id: Any, subject: str, body: str, options: Sequence[str], assigned_users: Sequence[Mapping[str, Any]]
) -> None:
    """Write the review request of the task instance ``ti_id``: what a person reads, and who may answer."""
    from airflow.sdk.execution_time import hitl

    hitl.upsert_hitl_detail(
        ti_id=ti_id,
        options=list(options),
        subject=subject,
        body=body,
        defaults=None,
        multiple=False,
        params={},
        assigned_users=[{"id": str(user.get("id")), "name": str(user.get("name"))} for user in assigned_users],
    )


def await_answer(
    task: Any,
    *,
    ti_id: Any,
    options: Sequence[str],
    timeout: timedelta | None,
    method_name: str,
    kwargs: dict[str, Any],
) -> NoReturn:
    """
    Park the task until a person answers its review.

    Airflow then resumes it at ``task.<method_name>(context, event, **kwargs)``, ``event`` its record of the answer.

    :raises TaskAwaitingInput: on Airflow 3.3 and later (no trigger).
    :raises TaskDeferred: on 3.1 and 3.2, deferred to the answer's trigger.
    """
    try:
        from airflow.sdk.exceptions import TaskAwaitingInput
    except ImportError:  # Airflow 3.1 and 3.2: the triggerer waits for the answer
        from airflow.providers.standard.triggers.hitl import HITLTrigger
        from airflow.sdk.timezone import utcnow

        until = utcnow() + timeout if timeout else None
        trigger = HITLTrigger(
            ti_id=ti_id, options=list(options), params={}, defaults=None, multiple=False, timeout_datetime=until
        )
        task.defer(trigger=trigger, method_name=method_name, kwargs=kwargs)
        raise AssertionError("BaseOperator.defer raises TaskDeferred") from None
    raise TaskAwaitingInput(method_name=method_name, kwargs=kwargs, timeout=timeout)


def ask_and_wait(
    task: Any,
    context: Any,
    *,
    subject: str,
    body: str,
    assigned_users: Sequence[Mapping[str, Any]],
    notifiers: Sequence[Any],
    timeout: timedelta | None,
    shown: str,
) -> NoReturn:
    """
    Ask a person to Approve or Reject (:func:`ask_review`), tell the ``notifiers``, and wait (:func:`await_answer`).

    Airflow then resumes the task at ``task.execute_complete(context, event, shown=shown)``: ``shown`` is what the
    person was shown (a plan's fingerprint), which the task checks the answer against.
    """
    from blinkops_provider.utils.states import Decision

    ti_id = context["task_instance"].id
    options = [Decision.APPROVE, Decision.REJECT]
    ask_review(ti_id=ti_id, subject=subject, body=body, options=options, assigned_users=assigned_users)
    for notifier in notifiers:
        notifier(context)
    await_answer(
        task, ti_id=ti_id, options=options, timeout=timeout, method_name="execute_complete", kwargs={"shown": shown}
    )


def approval_or_fail(event: Any, assigned_users: Sequence[Mapping[str, Any]], what: str, unsent: str) -> dict[str, str]:
    """
    Return who approved ``what`` and when, from Airflow's record of the answer the task was resumed with.

    :param unsent: what the task says it did not do (``nothing was applied``).
    :raises AirflowFailException: the review was not answered (a timeout), a Reject, no person's answer, or an answer
        from someone not among ``assigned_users``: no retry helps.
    """
    from airflow.providers.common.compat.sdk import AirflowFailException

    from blinkops_provider.exceptions import BlinkInputError
    from blinkops_provider.operators._answer import approval_from_record
    from blinkops_provider.utils.text import one_line

    if isinstance(event, Mapping) and "error" in event:
        why = one_line(str(event.get("error")))
        raise AirflowFailException(f"the review of {what} was not answered ({why}): {unsent}")
    try:  # the answer as Airflow recorded it and handed it to this task on resuming it
        return approval_from_record(event, assigned_users, what)
    except BlinkInputError as err:  # a Reject, no answer, or someone not assigned
        raise AirflowFailException(str(err)) from None
