"""The review step of a migration (Airflow 3.1+): Airflow's ``ApprovalOperator``, asked only when
the review policy says so, showing the plans, and failing itself on a Reject.

Imported only where Airflow has the human-in-the-loop operators (3.1 and later):
:mod:`blinkops_provider.task_groups` builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException
from airflow.providers.standard.operators.hitl import ApprovalOperator

from blinkops_provider._inputs import rendered_flag
from blinkops_provider._states import Decision
from blinkops_provider._text import one_line
from blinkops_provider.migrations import fleet_review
from blinkops_provider.migrations._seam import check_review_policy, chosen, rejection, review_needed

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

ENDING = "Approve applies exactly {what}; Reject applies nothing and fails the run."


def _name(plan: Mapping[str, Any]) -> str:
    return one_line(f"{plan.get('ws_id')}/{plan.get('table')}")


def _plan_body(plan: Mapping[str, Any], acknowledged: bool) -> str:
    """One table's review: the fingerprint first, then the plan's text (its refused and destructive
    rows first, removals first with their row counts, then the table of every field)."""
    removes = any(row.get("action") == "remove" for row in plan.get("fields") or () if isinstance(row, Mapping))
    said = (
        ["", "The DAG already acknowledged the removals below (acknowledge_risks=True)."]
        if acknowledged and removes
        else []
    )
    return "\n".join(
        [
            f"**Plan `{one_line(str(plan.get('fingerprint')))}`** for {_name(plan)}",
            *said,
            "",
            str(plan.get("text", "")),
            "",
            ENDING.format(what="this plan"),
        ]
    )


def _iso(when: Any) -> str:
    return when.isoformat() if hasattr(when, "isoformat") else str(when)


class PlanReview(ApprovalOperator):  # type: ignore[misc]
    """Ask a person to approve the plans of the task ``plan_task_id`` (one table's, or a mapped
    task's, one per table), when ``review_policy`` says so; else skip (the apply then runs, and
    sends no removal without ``acknowledge_risks``).

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
            return f"plan {one_line(str(plans[0].get('fingerprint')))} of {_name(plans[0])}"
        return f"the plans of {len(plans)} tables"

    def execute(self, context: Context) -> Any:
        plans = self._plans(context)
        acknowledged = rendered_flag(self.acknowledge_risks, "acknowledge_risks")
        policy = check_review_policy(self.review_policy)
        if not review_needed(plans, policy, acknowledged=acknowledged):
            raise AirflowSkipException(
                f"No review: review policy {self.review_policy!r} asks no one for {self._what(plans)}; the apply runs "
                "(a removal is sent only with acknowledge_risks)"
            )
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
