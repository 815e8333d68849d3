"""
The review step of a migration (Airflow 3.1+), asked only when the review policy says so.

- :class:`ReviewedApply`: the apply that asks a person itself and, on an Approve, applies. The
  evidence of the Approve is Airflow's record of the answer to the review this very task asked
  (the human-in-the-loop detail, which Airflow hands to the task when the person's answer resumes
  it), never an XCom: a task may not read another task's record, and an XCom is a copy that a
  user allowed to edit XComs may overwrite. :class:`~blinkops_provider.task_groups.BlinkTableMigration`'s ``apply``.
- :class:`PlanReview`: Airflow's ``ApprovalOperator`` showing the plans of a fleet, one review for
  every table, failing itself on a Reject (nothing is applied). Each table's apply
  (a :class:`ReviewedApply`) then asks again only for removals that are not acknowledged, reading
  its own record of that answer.

Imported only where Airflow has the human-in-the-loop operators (3.1 and later):
:mod:`blinkops_provider.task_groups` builds them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException
from airflow.providers.standard.operators.hitl import ApprovalOperator

from blinkops_provider.migrations import (
    apply,
    check_review_policy,
    fleet_review,
    plan,
    plan_markdown,
    plan_xcom,
    review_needed,
)
from blinkops_provider.operators._answer import chosen, rejection
from blinkops_provider.operators._hitl import approval_or_fail, ask_and_wait
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from blinkops_provider.utils.inputs import rendered_flag
from blinkops_provider.utils.states import REMOVING, Decision
from blinkops_provider.utils.text import one_line

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

ENDING = "Approve applies exactly {what}; Reject applies nothing and fails the run."


def _table_of_plan(plan: Mapping[str, Any]) -> str:
    return one_line(f"{plan.get('ws_id')}/{plan.get('table')}")


def _plan_body(plan: Mapping[str, Any], acknowledged: bool) -> str:
    """
    Return one table's review.

    The plan as ``blink-schema plan --format markdown`` prints it (the fingerprint first, then the plan's text), and
    what Approve and Reject do.
    """
    return f"{plan_markdown(plan, acknowledged)}\n\n{ENDING.format(what='this plan')}"


def _iso(when: Any) -> str:
    return when.isoformat() if hasattr(when, "isoformat") else str(when)


class PlanReview(ApprovalOperator):  # type: ignore[misc]
    """
    Ask a person to approve the plans of the task ``plan_task_id`` (one table's, or a mapped task's, one per table).

    When ``review_policy`` says so; else skip (the apply then runs, and sends no removal without ``acknowledge_risks``).

    The body is the plans as Markdown, the fingerprint first. On a Reject the task fails, naming
    who rejected which plan and when, and pushes the answer as its XCom; nothing downstream runs.
    """

    template_fields: Sequence[str] = (*ApprovalOperator.template_fields, "acknowledge_risks", "review_policy")

    def __init__(
        self,
        *,
        plan_task_id: str,
        review_policy: str,
        acknowledge_risks: bool | str = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("subject", "Apply the plan?")
        super().__init__(fail_on_reject=True, **kwargs)
        self.plan_task_id = plan_task_id
        self.review_policy = review_policy  # (templated: checked when the review runs)
        self.acknowledge_risks = acknowledge_risks

    def _plans(self, context: Context) -> list[Mapping[str, Any]]:
        pulled = context["ti"].xcom_pull(task_ids=self.plan_task_id)
        plans = [pulled] if isinstance(pulled, Mapping) else list(pulled or ())
        return [plan for plan in plans if isinstance(plan, Mapping)]

    def _what(self, plans: Sequence[Mapping[str, Any]]) -> str:
        if len(plans) == 1:
            return f"plan {one_line(str(plans[0].get('fingerprint')))} of {_table_of_plan(plans[0])}"
        return f"the plans of {len(plans)} tables"

    def execute(self, context: Context) -> Any:
        plans = self._plans(context)
        acknowledged = rendered_flag(self.acknowledge_risks, "acknowledge_risks")
        policy = check_review_policy(self.review_policy)
        if not review_needed(plans, policy, acknowledged=acknowledged):
            why = (
                f"No review: review policy {self.review_policy!r} asks no one for {self._what(plans)}; the applies run "
                "(a removal is sent only with a person's approval in its apply, or acknowledge_risks)"
            )
            self.log.info("%s", why)  # (in the task's main log lines, not only in the skip's)
            raise AirflowSkipException(why)
        if len(plans) == 1:
            self.subject = f"Apply {self._what(plans)}?"
            self.body = _plan_body(plans[0], acknowledged)
        else:
            self.subject = f"Apply the plans of {len(plans)} tables?"
            self.body = f"{fleet_review(plans)}\n\n{ENDING.format(what='these plans')}"
        return super().execute(context)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        if "error" not in event and Decision.REJECT in chosen(event):
            answer = {
                "chosen_options": chosen(event),
                "params_input": event.get("params_input") or {},
                "responded_at": _iso(event.get("responded_at")),
                "responded_by_user": event.get("responded_by_user"),
            }
            context["ti"].xcom_push(key="return_value", value=answer)  # the answer, for the summary and the UI
            raise AirflowFailException(rejection(event, self._what(self._plans(context))))
        return super().execute_complete(context=context, event=event)


class ReviewedApply(UpdateTableFieldsOperator):
    """
    An apply that asks a person when ``review_policy`` says so, and applies on an Approve.

    It plans against Blink; when a person must approve (the policy, judged from that plan's rows;
    with ``removals_only``, only when the plan removes fields that ``acknowledge_risks`` does not
    acknowledge), it asks in Airflow's Required Actions, showing that plan, and waits. A person's
    answer resumes it with Airflow's record of that answer (the human-in-the-loop detail of this
    task; never an XCom), and it then applies exactly the plan shown, under the
    table's lock, or fails: a Reject names who rejected which plan and when, an answer from someone
    not among ``assigned_users`` counts for nothing, and a plan that changed meanwhile is stale.
    The apply's XCom and the record name who approved and when.

    :param review_policy: ``always``, ``changes``, ``destructive`` or ``never`` (templated).
    :param assigned_users: who may answer (Airflow's ``HITLUser`` entries ``{"id", "name"}``).
    :param notifiers: who is told that a review waits (Airflow notifiers).
    :param response_timeout: how long the review waits (a ``timedelta``); then the task fails.
    :param removals_only: ask only for removals not acknowledged (a fleet's apply, after the
        fleet's one review).

    The other parameters are
    :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`'s.
    """

    template_fields: Sequence[str] = (*UpdateTableFieldsOperator.template_fields, "review_policy")

    def __init__(
        self,
        *,
        review_policy: str = "changes",
        assigned_users: Any = None,
        notifiers: Any = None,
        response_timeout: timedelta | None = None,
        removals_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.review_policy = review_policy  # (templated: checked when the task runs)
        self.assigned_users = [assigned_users] if isinstance(assigned_users, Mapping) else list(assigned_users or ())
        self.notifiers = list(notifiers) if isinstance(notifiers, (list, tuple)) else [notifiers] if notifiers else []
        self.response_timeout = response_timeout
        self.removals_only = removals_only

    def execute(self, context: Context) -> Any:
        policy = check_review_policy(self.review_policy)
        request = self._request(context)
        self.keep_table_page(context, self.ws_id, self.table)
        shown = plan_xcom(plan(self.hook, request))  # what Blink holds now: the plan a person is shown
        if not self._asks(shown, policy, request.acknowledge_risks):
            self.log.info("No review: review policy %r asks no one for %s", policy, _what(shown))
            with self._reported(context, request) as outcome:
                outcome.result = apply(self.hook, request)
            return outcome.summary
        self.log.info("Asking for a review of %s in Required Actions (review policy %r)", _what(shown), policy)
        self._ask(context, shown, request.acknowledge_risks)
        return None  # (not reached: the task waits for the answer)

    def _asks(self, plan: Mapping[str, Any], policy: str, acknowledged: bool) -> bool:
        if self.removals_only:
            rows = [row for row in plan.get("fields") or () if isinstance(row, Mapping)]
            removes = any(row.get("action") in REMOVING or row.get("breaks_workflows") is True for row in rows)
            return removes and not acknowledged and policy != "never"  # (its own gate re-reads both from Blink)
        return review_needed([plan], policy, acknowledged=acknowledged)

    def _ask(self, context: Context, plan: Mapping[str, Any], acknowledged: bool) -> None:
        """
        Write the review request for this task and wait for the answer, remembering the plan shown (``_hitl``).

        Airflow 3.3 parks the task awaiting input; 3.1 and 3.2 defer to the answer's trigger.
        """
        what = "the removals of " if self.removals_only else ""
        ask_and_wait(
            self,
            context,
            subject=f"Apply {what}{_what(plan)}?",
            body=_plan_body(plan, acknowledged),
            assigned_users=self.assigned_users,
            notifiers=self.notifiers,
            timeout=self.response_timeout,
            shown=str(plan.get("fingerprint")),
        )

    def execute_complete(self, context: Context, event: dict[str, Any], shown: str = "") -> Any:
        """
        Apply the plan shown on a person's Approve, or fail: the answer has arrived.

        Airflow resumed this task with its record of the answer (built from the human-in-the-loop detail when the person
        answered, kept with the task instance; no XCom).
        """
        what = f"plan {one_line(shown)} of {one_line(f'{self.ws_id}/{self.table}')}"
        self.keep_table_page(context, self.ws_id, self.table)  # (a resumed task's XComs may be new)
        approval = approval_or_fail(event, self.assigned_users, what, "nothing was applied")
        request = dataclasses.replace(self._request(context), approved=shown, approval=approval)
        with self._reported(context, request) as outcome:
            outcome.result = apply(self.hook, request)
        return outcome.summary


def _what(plan: Mapping[str, Any]) -> str:
    return f"plan {one_line(str(plan.get('fingerprint')))} of {_table_of_plan(plan)}"
