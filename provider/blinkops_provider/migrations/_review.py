"""The gate: who may let a plan through, and what it may remove, in one place. The review
policies (when a person is asked), which fields no one may remove (:func:`removal_refused`,
which the plan asks for each tombstone), and whether a plan may be applied (:func:`admit`: the
approved plan is the one that would be applied, and a removal is approved or acknowledged). Every
apply asks :func:`admit` before it sends anything.

What a person answered is read by the operators, where Airflow keeps it, and handed in
(``approval``); nothing here reads Airflow. A removal is sent only with a person's Approve read
from Airflow's record, or with ``acknowledge_risks``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from blinkops_provider._states import REMOVING, Action
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
    the operators' ``approval_from_record``) or the apply was given
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
