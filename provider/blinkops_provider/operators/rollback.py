"""
The rollback of a table's apply, from Airflow, with the same review as the migration (see :doc:`/undo`).

:class:`RollbackTableOperator` plans the rollback from live state
(:func:`~blinkops_provider.migrations.plan_rollback`), asks a person to approve it in Airflow's Required Actions (on
Airflow 3.1 and later, unless ``review_policy="never"``), and on an Approve carries out exactly the plan shown
(:func:`~blinkops_provider.migrations.rollback`), the approver read from Airflow's record of the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from blinkops_provider.migrations import RollbackPlan, RollbackRequest, check_review_policy, plan_rollback, rollback
from blinkops_provider.operators._base import BaseBlinkOperator
from blinkops_provider.operators._hitl import review_step_available
from blinkops_provider.utils.inputs import rendered_flag
from blinkops_provider.utils.text import one_line

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["RollbackTableOperator"]

ENDING = "Approve rolls back exactly this plan; Reject sends nothing and fails the run."


def review_asked(planned: RollbackPlan, policy: str, acknowledged: bool) -> bool:
    """
    Return whether a person approves this rollback under ``policy``.

    ``always`` and ``changes``: whenever it would send anything; ``destructive``: when it removes fields holding
    values and ``acknowledge_risks`` is off; ``never``: no one (a destructive rollback then needs
    ``acknowledge_risks``).
    """
    if not planned.has_changes or policy == "never":
        return False
    if policy == "destructive":
        return planned.destructive and not acknowledged
    return True


class RollbackTableOperator(BaseBlinkOperator):
    """
    Roll back one apply of a Blink table: plan from live state, ask a person, then put its backup back.

    The plan (its text in the log; its XCom ``plan``) re-creates the fields the apply removed and writes their saved
    values back, puts changed fields back (a person's later edit kept and counted), and removes the fields the apply
    added after saving their values. On Airflow 3.1 and later, unless ``review_policy`` says no one is asked, the task
    asks in Required Actions, showing the plan, and waits; a person's Approve (Airflow's record of the answer, never an
    XCom) lets exactly that plan through, a Reject fails the task with nothing sent, and a table changed meanwhile makes
    the plan stale. On Airflow 2.11 there is no review step: a rollback that removes fields holding values needs
    ``acknowledge_risks``.

    :param ws_id: the workspace (templated).
    :param table: Blink's name of the table (templated).
    :param record_path: the applies' ``record_path``: the backups are beside the table's record (templated).
    :param apply: the plan id of the apply to undo (templated; None or "": the newest apply's backup).
    :param review_policy: ``always`` (default), ``changes``, ``destructive`` or ``never`` (templated).
    :param acknowledge_risks: let a destructive rollback through without a person (templated).
    :param overwrite_drift: put saved values back over a person's later edits.
    :param assigned_users: who may answer (Airflow's ``HITLUser`` entries ``{"id", "name"}``).
    :param notifiers: who is told that a review waits (Airflow notifiers).
    :param response_timeout: how long the review waits (a ``timedelta``); then the task fails.
    :param max_concurrency: rows written at once, 1 to 32.
    :param lock_wait: seconds to wait for another apply of the table to finish.
    :returns: (XCom) what was done: ``{"fingerprint", "apply", "backup", "names", "restored", "counts"}``; the plan
        shown is the XCom ``plan``.
    """

    template_fields: Sequence[str] = (
        "ws_id",
        "table",
        "record_path",
        "apply",
        "review_policy",
        "acknowledge_risks",
    )

    def __init__(
        self,
        *,
        ws_id: str,
        table: str,
        record_path: str,
        apply: str | None = None,
        review_policy: str = "always",
        acknowledge_risks: bool | str = False,
        overwrite_drift: bool = False,
        assigned_users: Any = None,
        notifiers: Any = None,
        response_timeout: timedelta | None = None,
        max_concurrency: int = 16,
        lock_wait: float = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.ws_id, self.table, self.record_path, self.apply = ws_id, table, record_path, apply
        self.review_policy = review_policy
        self.acknowledge_risks = acknowledge_risks
        self.overwrite_drift = rendered_flag(overwrite_drift, "overwrite_drift")
        self.assigned_users = [assigned_users] if isinstance(assigned_users, Mapping) else list(assigned_users or ())
        self.notifiers = list(notifiers) if isinstance(notifiers, (list, tuple)) else [notifiers] if notifiers else []
        self.response_timeout = response_timeout
        self.max_concurrency, self.lock_wait = max_concurrency, lock_wait

    def _request(self) -> RollbackRequest:
        return RollbackRequest(
            self.ws_id,
            self.table,
            self.record_path,
            apply=self.apply or None,
            acknowledge_risks=rendered_flag(self.acknowledge_risks, "acknowledge_risks"),
            overwrite_drift=self.overwrite_drift,
            max_concurrency=self.max_concurrency,
            lock_wait=self.lock_wait,
        )

    def execute(self, context: Context) -> Any:
        policy = check_review_policy(self.review_policy)
        request = self._request()
        self.keep_table_page(context, self.ws_id, self.table)
        planned = plan_rollback(self.hook, request)
        shown = planned.to_xcom()
        context["ti"].xcom_push(key="plan", value=shown)
        if not (review_step_available() and review_asked(planned, policy, request.acknowledge_risks)):
            return rollback(self.hook, request).to_xcom()  # (it logs its plan, made again under the table's lock)
        self.log.info("Asking for a review in Required Actions (review policy %r) of:\n%s", policy, planned.text())
        self._ask(context, shown)
        return None  # (not reached: the task waits for the answer)

    def _ask(self, context: Context, shown: Mapping[str, Any]) -> None:
        """Ask a person in Required Actions, showing the plan, and wait for the answer (``_hitl``)."""
        from blinkops_provider.operators._hitl import ask_and_wait

        table = one_line(f"{self.ws_id}/{self.table}")
        ask_and_wait(
            self,
            context,
            subject=f"Roll back apply {shown['apply']} of {table}?",
            body=f"**Rollback `{shown['fingerprint']}`** for {table}\n\n{shown['text']}\n\n{ENDING}",
            assigned_users=self.assigned_users,
            notifiers=self.notifiers,
            timeout=self.response_timeout,
            shown=str(shown["fingerprint"]),
        )

    def execute_complete(self, context: Context, event: dict[str, Any], shown: str = "") -> Any:
        """Roll back the plan shown on a person's Approve, or fail: Airflow resumed the task with its record of it."""
        from blinkops_provider.operators._hitl import approval_or_fail

        what = f"rollback {one_line(shown)} of {one_line(f'{self.ws_id}/{self.table}')}"
        approval = approval_or_fail(event, self.assigned_users, what, "nothing was sent")
        request = dataclasses.replace(self._request(), approved=shown, approval=approval)
        return rollback(self.hook, request).to_xcom()
