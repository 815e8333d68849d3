"""
The gate: whether a plan may be applied, and who let it through, asked by every apply before it sends anything.

- when a person is asked (the review policies, :func:`review_needed`, read from the plans' rows);
- whether the plan is the approved one (:func:`check_approved`: staleness, and an XCom edited after the review);
- what a plan may lose (:func:`pass_gate`: a plan with a refused entry applies nothing, and a removal passes only with a
  person's Approve or ``acknowledge_risks``), and who let it through, for the log and the record.

What a person answered is read by the operators, where Airflow keeps it, and handed in (``approval``); nothing here
reads Airflow. Which fields no one may remove is Blink's rule (``_matching.removal_refused``), asked by the planner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from blinkops_provider.exceptions import BlinkInputError, BlinkStalePlanError
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan, changes, risky
from blinkops_provider.migrations._text import plan_text
from blinkops_provider.utils.states import Action
from blinkops_provider.utils.text import one_line

ALWAYS, CHANGES, DESTRUCTIVE, NEVER = "always", "changes", "destructive", "never"
REVIEW_POLICIES = {
    ALWAYS: "a person approves every run",
    CHANGES: "a person approves when a plan adds, changes, removes or refuses anything",
    DESTRUCTIVE: "a person approves only when a change is refused or destructive, or a field is removed "
    "and the DAG did not acknowledge it (acknowledge_risks)",
    NEVER: "no one is asked; a removal still needs acknowledge_risks",
}
"""When a person must approve (Atlas's lint-based approval is ``destructive``)."""


def check_review_policy(policy: Any) -> str:
    """
    Return ``policy`` when it is a review policy: ``always``, ``changes``, ``destructive`` or ``never``.

    :raises BlinkInputError: anything else, naming what is allowed.
    """
    if isinstance(policy, str) and policy in REVIEW_POLICIES:
        return policy
    allowed = "; ".join(f"{name!r} ({meaning})" for name, meaning in REVIEW_POLICIES.items())
    raise BlinkInputError(f"review_policy must be one of: {allowed}. Got {policy!r}")


def review_needed(plans: Sequence[Mapping[str, Any]], policy: str = CHANGES, *, acknowledged: bool = False) -> bool:
    """
    Return whether a person must approve these plans under ``policy``.

    ``policy`` is ``always``, ``changes``, ``destructive`` or ``never``, judged from the plans'
    rows (an edited ``counts`` or ``has_changes`` changes nothing). ``acknowledged``: the DAG
    acknowledged removals (``acknowledge_risks``), which spares a review only under ``destructive``.
    """
    policy = check_review_policy(policy)
    if policy in (ALWAYS, NEVER):
        return policy == ALWAYS
    if policy == CHANGES:
        return any(changes(plan) for plan in plans)
    return any(risky(plan, acknowledged=acknowledged) for plan in plans)


def let_through_record(approval: Mapping[str, str] | None, acknowledged: bool) -> dict[str, Any]:
    """
    Return what an apply's XCom and record say let its plan through.

    ``{"approved_by", "approved_at"}`` (a person's Approve), ``{"acknowledged": True}`` (the DAG's
    ``acknowledge_risks``), or nothing.
    """
    return dict(approval) if approval else {"acknowledged": True} if acknowledged else {}


SHOWN_REMOVALS = 20
"""The most removals the gate's error names one by one."""


def check_approval(approval: Any) -> None:
    """
    Check an approval.

    :raises BlinkInputError: ``approval`` is neither None nor ``{"approved_by", "approved_at"}`` texts.
    """
    if approval is None:
        return
    if not isinstance(approval, Mapping) or not all(
        isinstance(approval.get(key), str) and approval.get(key) for key in ("approved_by", "approved_at")
    ):
        raise BlinkInputError(
            f'approval must be None or {{"approved_by": <who>, "approved_at": <ISO time>}} as Airflow recorded the '
            f"review's answer, got {approval!r}"
        )


def pass_gate(
    log: Any,
    planned: SchemaPlan,
    approved: Mapping[str, Any] | str | None,
    approval: Mapping[str, str] | None,
    acknowledge_risks: bool,
) -> dict[str, Any]:
    """
    Return whether ``planned`` may be applied, asked once by every apply before it sends anything.

    It must be the approved plan when one is given (its staleness,
    :func:`check_approved`), and its removals approved in review or
    acknowledged. Logs who let it through.

    :returns: who let it through, for the record (:func:`let_through_record`).
    :raises BlinkStalePlanError: the approved plan is not what would be applied now.
    :raises BlinkInputError: a removal neither approved nor acknowledged.
    """
    planned.check_whole()
    if approved is not None:
        check_approved(planned, approved)
    _check_loss(log, planned, approval, acknowledge_risks)
    return let_through_record(approval, acknowledge_risks)


def _check_loss(log: Any, planned: SchemaPlan, approval: Mapping[str, str] | None, acknowledge_risks: bool) -> None:
    """
    Say who let the plan through.

    Refuse a plan that removes fields unless a person approved it in review (``approval``, read from Airflow's record of
    the answer by the task that asked: the operators' ``approval_from_record``) or the apply was given
    ``acknowledge_risks=True``. Nothing in the plan's XCom counts as an approval.

    A removal of a field the plan counted empty in every row loses nothing and needs neither.

    :raises BlinkInputError: naming the removals and both ways to go on; nothing was sent.
    """
    removals = [row for row in planned.removals if row.destructive]
    breaking = [row for row in planned.fields if row.breaks_workflows and row.action != Action.REFUSED]
    _say_who(log, planned, approval, acknowledge_risks)
    if not (removals or breaking) or acknowledge_risks or approval:
        return
    if not removals:
        raise BlinkInputError(
            f"plan {planned.fingerprint} of {one_line(planned.ws_id)}/{one_line(planned.table)} breaks Blink "
            f"workflows: {_breaks_said(breaking)}. Nothing was sent: a change that breaks an active workflow (or whose "
            "workflows could not be checked) is applied only once a person approved the plan in the review the "
            "applying task asked, or when the apply is given acknowledge_risks=True; workflow_usage='refuse' refuses "
            "it outright"
        )
    listed = "; ".join(f"{one_line(row.field)!r} ({row.risk})" for row in removals[:SHOWN_REMOVALS])
    more = f" and {len(removals) - SHOWN_REMOVALS} more" if len(removals) > SHOWN_REMOVALS else ""
    raise BlinkInputError(
        f"plan {planned.fingerprint} of {one_line(planned.ws_id)}/{one_line(planned.table)} removes "
        f"{len(removals)} field(s) with their values: {listed}{more}. Nothing was sent: a removal is applied only "
        "once a person approved the plan in the review the applying task asked, read from Airflow's record of the "
        "answer (BlinkTableMigration's apply asks it; an XCom that claims a review, a plan's or a review task's, "
        "counts for nothing), or when the apply is given acknowledge_risks=True"
    )


def _breaks_said(rows: Sequence[FieldPlan]) -> str:
    """Return each row that breaks workflows, with the active ones it breaks (or why they were not checked)."""
    said = []
    for row in rows[:SHOWN_REMOVALS]:
        names = ", ".join(f"{one_line(use.workflow)!r} ({one_line(use.id)})" for use in row.workflows if use.breaks)
        said.append(f"{one_line(row.field)!r} ({row.action}): {names or row.workflows_unread}")
    more = f" and {len(rows) - SHOWN_REMOVALS} more" if len(rows) > SHOWN_REMOVALS else ""
    return "; ".join(said) + more


def _say_who(log: Any, planned: SchemaPlan, approval: Mapping[str, str] | None, acknowledged: bool) -> None:
    """Log who approved the plan, and who let its removals through."""
    plan, removals = planned.fingerprint, len(planned.removals)
    retypes = sum(getattr(row, "action", None) == Action.RETYPE for row in planned.removals)
    said = [f"removes {removals - retypes} field(s) with their values"] if removals - retypes else []
    said += [f"retypes {retypes} (the values copied first)"] if retypes else []
    if approval:  # (one line: who approved, and what that lets through)
        losing = f"; it {' and '.join(said)}" if said else ""
        level = log.warning if said else log.info
        level(
            "Plan %s approved by %s at %s in review%s", plan, approval["approved_by"], approval["approved_at"], losing
        )
    elif removals and acknowledged:
        log.warning("Plan %s %s: acknowledged by the DAG (acknowledge_risks=True)", plan, " and ".join(said))


def _refuse_edited(plan: SchemaPlan, approved: Mapping[str, Any]) -> None:
    """
    Refuse a plan XCom with this fingerprint whose rows or text say anything else: it was edited.

    A reviewer may have approved a false description, so nothing is applied.
    """
    edited = _edited(approved, plan)
    if edited:
        raise BlinkStalePlanError(
            f"the plan this apply was given, {plan.fingerprint}, shows {' and '.join(edited)} other than it would "
            "apply: "
            "its XCom was edited after it was made. Nothing was sent: plan again and review the new plan"
        )


def check_approved(plan: SchemaPlan, approved: Mapping[str, Any] | str) -> None:
    """
    Refuse to apply anything but the approved plan: ``plan`` (made now) must be ``approved``.

    :param approved: the approved plan's XCom (``_text.plan_xcom``), or its fingerprint.
    :raises BlinkStalePlanError: this plan is not the approved one, saying what changed since:
        the record (when, and which fields are planned differently now), or the schema.
    """
    if isinstance(approved, str):
        if approved.strip() == plan.fingerprint:
            return
        given, why = approved.strip(), ["its fingerprint is not this plan's"]
    else:
        if approved.get("fingerprint") == plan.fingerprint:
            _refuse_edited(plan, approved)
            return
        given, why = str(approved.get("fingerprint")), _stale_reasons(plan, approved)
    raise BlinkStalePlanError(
        f"the plan this apply was given, {one_line(given)}, is not what would be applied now (plan "
        f"{plan.fingerprint}): {'; '.join(why)}. Nothing was sent: plan again and review the new plan"
    )


def _stale_reasons(plan: SchemaPlan, approved: Mapping[str, Any]) -> list[str]:
    """Return what changed between the approved plan's XCom and this plan."""
    checks = (
        (approved.get("ws_id"), approved.get("table")) == (plan.ws_id, plan.table),
        approved.get("record_digest") == plan.record_digest,
        approved.get("schema_digest") == plan.schema_digest,
        approved.get("live_digest", "") == plan.live_digest,
        approved.get("rows_digest", "") == plan.rows_digest,
    )
    reasons = (
        f"it was made for {approved.get('ws_id')}/{approved.get('table')}",
        f"the record at {plan.record} changed since the plan (last apply then: "
        f"{approved.get('recorded_at') or 'none'}; now: {plan.recorded_at or 'none'})",
        "the declared schema changed since the plan",
        "the declared fields changed in Blink since the plan (or Blink's read answers differently)",
        "the table's rows changed since the plan (what it counted is not what they hold now)",
    )
    why = [reason for same, reason in zip(checks, reasons, strict=True) if not same]
    moved = _fields_planned_differently(plan, approved)
    listed = ", ".join(map(repr, moved[:20])) + (f" and {len(moved) - 20} more" if len(moved) > 20 else "")
    return why + ([f"the fields planned differently now (each changed since the plan): {listed}"] if moved else [])


def _fields_planned_differently(plan: SchemaPlan, approved: Mapping[str, Any]) -> list[str]:
    """Return the fields whose rows differ between the approved plan's XCom and this plan."""
    then = {entry.get("field"): entry for entry in approved.get("fields") or [] if isinstance(entry, Mapping)}
    now: dict[Any, Any] = {row.field: row.to_xcom() for row in plan.fields}
    return [str(name) for name in dict.fromkeys([*then, *now]) if then.get(name) != now.get(name)]


def _edited(approved: Mapping[str, Any], plan: SchemaPlan) -> list[str]:
    """Return what of an approved plan's XCom differs from ``plan`` although its fingerprint is the same."""
    edited = [] if approved.get("fields") == [row.to_xcom() for row in plan.fields] else ["rows"]
    table = plan.table_plan.to_xcom()
    edited += [] if approved.get("table_plan", table) == table else ["a table change"]
    return edited + ([] if approved.get("text", plan_text(plan)) == plan_text(plan) else ["a text"])
