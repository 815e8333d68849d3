"""The gate: who may let a plan through, and what it may remove, in one place. The review
policies (when a person is asked), what a person answered (read where Airflow keeps it), which
fields no one may remove (:func:`removal_refused`, which the plan asks for each tombstone), and
whether a plan may be applied (:func:`admit`: the approved plan is the one that would be applied,
and a removal is approved or acknowledged). Every apply asks :func:`admit` before it sends anything.

The evidence of a person's Approve is Airflow's record of the answer (the human-in-the-loop
detail: chosen options, responded by, responded at), as Airflow hands it to the task that asked
when it resumes that task: the apply of a :class:`~blinkops_provider.task_groups.BlinkTableMigration`
asks the person itself (:func:`approval_from_record`). A task can read no other task's record
(Airflow 3.3's execution API serves the detail only to the task instance it belongs to, and a
worker's supervisor does not serve the Task SDK's read of it at all). An XCom is a copy that a
user allowed to edit XComs may overwrite, so the answer a review task pushed
(``review_task_id``) is read only to stop on a Reject (:func:`approval_from_review`); it never
lets a removal through. A removal is sent only
with a person's Approve read from Airflow's record, or with ``acknowledge_risks``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from blinkops_provider._states import REMOVING, Action, Decision
from blinkops_provider._text import one_line
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import READ_ONLY_ATTRIBUTES, TableField


class Planned(Protocol):
    """What the gate reads of a plan (:class:`~blinkops_provider.migrations.SchemaPlan`; the plan
    module asks this one what may be removed, so this one does not import it)."""

    @property
    def ws_id(self) -> str: ...

    @property
    def table(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

    @property
    def removals(self) -> Sequence[Any]: ...

    def check_approved(self, approved: Mapping[str, Any] | str) -> None: ...


REJECTED_IN_REVIEW = "rejected in review: nothing was applied"
"""What a rejected run's failure and a rejected fleet's summary say."""

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
    """``policy`` when it is one of :data:`REVIEW_POLICIES`.

    :raises BlinkInputError: anything else, naming what is allowed.
    """
    if isinstance(policy, str) and policy in REVIEW_POLICIES:
        return policy
    allowed = "; ".join(f"{name!r} ({meaning})" for name, meaning in REVIEW_POLICIES.items())
    raise BlinkInputError(f"review_policy must be one of: {allowed}. Got {policy!r}")


def rows_of(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A plan XCom's field rows (anything malformed left out)."""
    rows = plan.get("fields")
    return [row for row in rows if isinstance(row, Mapping)] if isinstance(rows, list) else []


def risky(plan: Mapping[str, Any], *, acknowledged: bool = False) -> bool:
    """Whether a plan refuses or destroys anything, by its rows (not its stored counts); a removal
    the DAG acknowledged, or of a field the plan counted empty in every row, does not count."""
    return any(
        row.get("action") == Action.REFUSED
        or (row.get("action") in REMOVING and row.get("destructive") is not False and not acknowledged)
        or (row.get("destructive") is True and row.get("action") not in REMOVING)
        for row in rows_of(plan)
    )


def changes(plan: Mapping[str, Any]) -> bool:
    """Whether a plan adds, changes, removes or refuses anything, or creates or changes the table,
    by its rows (not its stored flag)."""
    table = plan.get("table_plan")
    touched = isinstance(table, Mapping) and table.get("action") not in (None, Action.UNCHANGED)
    return touched or any(row.get("action") != Action.UNCHANGED for row in rows_of(plan))


def review_needed(plans: Sequence[Mapping[str, Any]], policy: str = CHANGES, *, acknowledged: bool = False) -> bool:
    """Whether a person must approve these plans under ``policy`` (see :data:`REVIEW_POLICIES`),
    judged from their rows (an edited ``counts`` or ``has_changes`` changes nothing).
    ``acknowledged``: the DAG acknowledged removals (``acknowledge_risks``), which spares a review
    only under ``destructive``."""
    policy = check_review_policy(policy)
    if policy in (ALWAYS, NEVER):
        return policy == ALWAYS
    if policy == CHANGES:
        return any(changes(plan) for plan in plans)
    return any(risky(plan, acknowledged=acknowledged) for plan in plans)


def _when(value: Any) -> str:
    """An answer's time as ISO 8601 text (Airflow hands it back as a datetime or as text)."""
    return value.isoformat() if isinstance(value, dt.datetime) else str(value)


def responder(answer: Mapping[str, Any]) -> tuple[str, str]:
    """Who answered a review and when, as Airflow recorded it: ``(name, ISO time)``."""
    user = answer.get("responded_by_user")
    who = user.get("name") or user.get("id") if isinstance(user, Mapping) else user
    return one_line(str(who or "an unknown user")), one_line(_when(answer.get("responded_at")))


def chosen(answer: Any) -> list[str]:
    """The options a review's answer chose (none for anything that is not an answer)."""
    options = answer.get("chosen_options") if isinstance(answer, Mapping) else None
    return [str(option) for option in options] if isinstance(options, list) else []


def rejection(answer: Mapping[str, Any], what: str) -> str:
    """The message of a rejected review: who rejected ``what`` and when, and that nothing was applied."""
    who, when = responder(answer)
    return (
        f"{REJECTED_IN_REVIEW}: {who} rejected {what} at {when}. Change the declared schema and trigger the DAG "
        "again for a new plan"
    )


def _review_task(task: Any, review_task_id: str) -> Any:
    """The approval task ``review_task_id`` of ``task``'s DAG, upstream of ``task``.

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
    """Stop when the approval task ``review_task_id`` rejected this run's plan. Its answer is read
    from its XCom, a copy anyone allowed to edit XComs may overwrite: it may stop an apply, never
    let a removal through (:func:`approval_from_record` reads a person's Approve where Airflow
    records it, in the task that asked).

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
    """The person a recorded answer names (``{"id", "name"}``); None when no person answered."""
    user = record.get("responded_by_user") if isinstance(record, Mapping) else None
    if not isinstance(user, Mapping):
        return None
    return {"id": str(user.get("id") or ""), "name": str(user.get("name") or "")}


def _check_assigned(who: Mapping[str, str], assigned: Sequence[Mapping[str, Any]] | None, what: str) -> None:
    """:raises BlinkInputError: the review names ``assigned`` users and ``who`` is not one of them."""
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
    """Who approved, and when (``{"approved_by", "approved_at"}``), read from Airflow's record of
    the answer to the review this task asked, as Airflow hands it to that task when it resumes it
    (the human-in-the-loop detail's ``chosen_options``, ``responded_by_user``, ``responded_at``:
    Airflow builds it from the record when a person answers; no XCom, and nothing a user allowed
    to edit XComs can write, reaches it).

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


def who_let_through(approval: Mapping[str, str] | None, acknowledged: bool) -> dict[str, Any]:
    """What an apply's XCom and record say let its plan through: ``{"approved_by", "approved_at"}``
    (a person's Approve), ``{"acknowledged": True}`` (the DAG's ``acknowledge_risks``), or nothing."""
    return dict(approval) if approval else {"acknowledged": True} if acknowledged else {}


SHOWN_REMOVALS = 20
"""The most removals the gate's error names one by one."""


def check_approval(approval: Any) -> None:
    """:raises BlinkInputError: ``approval`` is neither None nor ``{"approved_by", "approved_at"}`` texts."""
    if approval is None:
        return
    if not isinstance(approval, Mapping) or not all(
        isinstance(approval.get(key), str) and approval.get(key) for key in ("approved_by", "approved_at")
    ):
        raise BlinkInputError(
            f'approval must be None or {{"approved_by": <who>, "approved_at": <ISO time>}} as Airflow recorded the '
            f"review's answer, got {approval!r}"
        )


def removal_refused(name: str, held: TableField) -> str:
    """Why no one may remove Blink's field ``held`` (declared as ``name``), whoever approves: it is
    one of Blink's system or protected fields. "" when a removal of it may be let through (by a
    person's Approve, or ``acknowledge_risks``: :func:`admit`)."""
    markers = held.attributes or {}
    if any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES):
        return f"{name!r} is one of Blink's system or protected fields, which Blink does not let anyone remove"
    return ""


def admit(
    log: Any,
    planned: Planned,
    approved: Mapping[str, Any] | str | None,
    approval: Mapping[str, str] | None,
    acknowledge_risks: bool,
) -> dict[str, Any]:
    """Whether ``planned`` may be applied, asked once by every apply before it sends anything:
    it must be the approved plan when one is given (its staleness,
    :meth:`~blinkops_provider.migrations.SchemaPlan.check_approved`), and its removals approved in
    review or acknowledged. Logs who let it through.

    :returns: who let it through, for the record (:func:`who_let_through`).
    :raises BlinkStalePlanError: the approved plan is not what would be applied now.
    :raises BlinkInputError: a removal neither approved nor acknowledged.
    """
    if approved is not None:
        planned.check_approved(approved)
    _check_loss(log, planned, approval, acknowledge_risks)
    return who_let_through(approval, acknowledge_risks)


def _check_loss(log: Any, planned: Planned, approval: Mapping[str, str] | None, acknowledge_risks: bool) -> None:
    """Say who let the plan through; refuse a plan that removes fields unless a person approved
    it in review (``approval``, read from Airflow's record of the answer by the task that asked:
    :func:`approval_from_record`) or the apply was given
    ``acknowledge_risks=True``. Nothing in the plan's XCom counts as an approval.

    A removal of a field the plan counted empty in every row loses nothing and needs neither.

    :raises BlinkInputError: naming the removals and both ways to go on; nothing was sent.
    """
    removals = [row for row in planned.removals if row.destructive]
    _say_who(log, planned, approval, acknowledge_risks)
    if not removals or acknowledge_risks or approval:
        return
    listed = "; ".join(f"{one_line(row.field)!r} ({row.risk})" for row in removals[:SHOWN_REMOVALS])
    more = f" and {len(removals) - SHOWN_REMOVALS} more" if len(removals) > SHOWN_REMOVALS else ""
    raise BlinkInputError(
        f"plan {planned.fingerprint} of {one_line(planned.ws_id)}/{one_line(planned.table)} removes "
        f"{len(removals)} field(s) with their values: {listed}{more}. Nothing was sent: a removal is applied only "
        "once a person approved the plan in the review the applying task asked, read from Airflow's record of the "
        "answer (BlinkTableMigration's apply asks it; an XCom that claims a review, a plan's or a review task's, "
        "counts for nothing), or when the apply is given acknowledge_risks=True"
    )


def _say_who(log: Any, planned: Planned, approval: Mapping[str, str] | None, acknowledged: bool) -> None:
    """Log who approved the plan, and who let its removals through."""
    plan, removals = planned.fingerprint, len(planned.removals)
    retypes = sum(getattr(row, "action", None) == Action.RETYPE for row in planned.removals)
    if approval:
        log.info("Plan %s approved by %s at %s in review", plan, approval["approved_by"], approval["approved_at"])
    if removals and (approval or acknowledged):
        how = "acknowledged by the DAG (acknowledge_risks=True)"
        how = f"approved by {approval['approved_by']}" if approval else how
        also = f" and retypes {retypes} (the values copied first)" if retypes else ""
        log.warning("Plan %s removes %d field(s) with their values%s: %s", plan, removals - retypes, also, how)


def plan_markdown(plan: Mapping[str, Any], acknowledged: bool = False) -> str:
    """One table's plan (its XCom) as Markdown, as the review shows it and ``blink-schema plan
    --format markdown`` prints it for a pull request: the fingerprint and the table first, then
    the plan's text (its summary line, refused and destructive rows first, removals first with
    their row counts, then the table of every field, the unchanged ones folded into one row)."""
    removes = any(row.get("action") in REMOVING for row in rows_of(plan))
    said = ["", "The DAG already acknowledged the removals below (acknowledge_risks=True)."]
    name = one_line(f"{plan.get('ws_id')}/{plan.get('table')}")
    return "\n".join(
        [
            f"**Plan `{one_line(str(plan.get('fingerprint')))}`** for {name}",
            *(said if acknowledged and removes else []),
            "",
            str(plan.get("text", "")),
        ]
    )
