"""One review for the plans of many tables (a fleet): what a person reads before approving them.

:func:`fleet_review` takes the plans' XComs (:meth:`SchemaPlan.to_xcom
<blinkops_provider.migrations.plan.SchemaPlan.to_xcom>`, one per table, for example the mapped
plan tasks' ``plan.output``) and writes one text: a summary first, the tables with refused or
destructive changes before the others, the tables with nothing to change in one line, then each
changed table's rows, within a size bound.

:func:`review_needed` says whether a person must approve, by a review policy (``always``,
``changes``, the default, or ``risky``); :func:`let_through` marks each table's plan with the
policy that let it through, which the apply logs and reports. :func:`fleet_summary` says, once the
applies are over, which tables were applied, unchanged, failed or stale, and how many rate-limit
(429) answers they met.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations.plan import BASELINE, RECORD_BASELINE

__all__ = [
    "MAX_REVIEW_CHARS",
    "REVIEW_ALWAYS",
    "REVIEW_CHANGES",
    "REVIEW_POLICIES",
    "REVIEW_RISKY",
    "check_review_policy",
    "fleet_review",
    "fleet_summary",
    "let_through",
    "review_needed",
]

MAX_REVIEW_CHARS = 20_000
"""The most characters of a fleet's review; the plans past it are in their tasks' XCom."""


def _rank(plan: Mapping[str, Any]) -> tuple[int, str]:
    counts = plan.get("counts") or {}
    risk = 0 if counts.get("refused") else 1 if counts.get("destructive") else 2
    return risk, f"{plan.get('ws_id')}/{plan.get('table')}"


def _line(plan: Mapping[str, Any]) -> str:
    c = plan.get("counts") or {}
    flags = [word for word in ("refused", "destructive") if c.get(word)]
    mark = f" [{', '.join(flags).upper()}]" if flags else ""
    return (
        f"- {plan.get('ws_id')}/{plan.get('table')}{mark}: {c.get('add', 0)} to add, {c.get('change', 0)} to change "
        f"({c.get('destructive', 0)} destructive), {c.get('refused', 0)} refused, {c.get('unchanged', 0)} unchanged "
        f"(plan {plan.get('fingerprint')})"
    )


def fleet_review(plans: Sequence[Mapping[str, Any]], *, max_chars: int = MAX_REVIEW_CHARS) -> str:
    """The text of one review of many tables' plans (Markdown, which reads as plain text too).

    :param plans: the plans' XComs, one per table.
    :param max_chars: the size bound: each changed table's rows are added while they fit; the
        rest are named, with where their plans are.
    """
    changed = sorted((p for p in plans if p.get("has_changes")), key=_rank)
    unchanged = sorted(f"{p.get('ws_id')}/{p.get('table')}" for p in plans if not p.get("has_changes"))
    risky = sum(1 for p in changed if _rank(p)[0] < 2)
    lines = [
        f"Fleet review: {len(plans)} tables, {len(changed)} to change ({risky} with refused or destructive "
        f"changes, listed first), {len(unchanged)} unchanged.",
        "",
        *(_line(plan) for plan in changed),
    ]
    if unchanged:
        lines += ["", f"Nothing to change in: {', '.join(unchanged)}"]
    said = [text for text in (BASELINE, RECORD_BASELINE) if any(p.get("baseline") == text for p in changed)]
    lines += [line for text in said for line in ("", text)]  # once for the fleet, not once a table
    text, left = "\n".join(lines), list[str]()
    for plan in changed:
        rows = f"\n\n### {plan.get('ws_id')}/{plan.get('table')}\n\n{_rows(plan)}"
        if left or len(text) + len(rows) > max_chars:
            left.append(f"{plan.get('ws_id')}/{plan.get('table')}")
        else:
            text += rows
    if left:
        text += (
            f"\n\n{len(left)} more table(s) not shown here, to keep the review within {max_chars:,} characters: "
            f"{', '.join(left)}. Their full plans are in the XCom of their plan tasks."
        )
    return text


def _rows(plan: Mapping[str, Any]) -> str:
    """A plan's text without the baseline paragraph, which the fleet's review says once."""
    baselines = (BASELINE, RECORD_BASELINE)
    return "\n\n".join(part for part in str(plan.get("text", "")).split("\n\n") if part.strip() not in baselines)


REVIEW_ALWAYS, REVIEW_CHANGES, REVIEW_RISKY = "always", "changes", "risky"
REVIEW_POLICIES = {
    REVIEW_ALWAYS: "a person approves every run",
    REVIEW_CHANGES: "a person approves when any table has something to add, change or refuse",
    REVIEW_RISKY: "a person approves only when a change is refused or destructive",
}
"""When a person must approve a fleet's plans (Atlas's lint-based approval is ``risky``)."""


def check_review_policy(policy: Any) -> str:
    """``policy`` when it is one of :data:`REVIEW_POLICIES`.

    :raises BlinkInputError: anything else, naming what is allowed.
    """
    if isinstance(policy, str) and policy in REVIEW_POLICIES:
        return policy
    allowed = "; ".join(f"{name!r} ({meaning})" for name, meaning in REVIEW_POLICIES.items())
    raise BlinkInputError(f"review policy must be one of: {allowed}. Got {policy!r}")


def review_needed(plans: Sequence[Mapping[str, Any]], policy: str = REVIEW_CHANGES) -> bool:
    """Whether a person must approve these plans under ``policy`` (see :data:`REVIEW_POLICIES`)."""
    policy = check_review_policy(policy)
    if policy == REVIEW_ALWAYS:
        return True
    if policy == REVIEW_CHANGES:
        return any(plan.get("has_changes") for plan in plans)
    return any(_rank(plan)[0] < 2 for plan in plans if plan.get("has_changes"))


def let_through(plan: Mapping[str, Any], *, policy: str, reviewed: bool) -> dict[str, Any]:
    """``plan`` (a plan's XCom) recording what let it through: ``{"review": {"policy", "reviewed"}}``,
    ``reviewed`` being whether a person approved it (False: the policy asked no one). The apply
    logs it and reports it in its XCom; the plan's identity and rows are unchanged by it."""
    if not isinstance(reviewed, bool):
        raise BlinkInputError(f"reviewed must be True or False, got {reviewed!r}")
    return {**plan, "review": {"policy": check_review_policy(policy), "reviewed": reviewed}}


APPLIED, UNCHANGED, FAILED, STALE = "applied", "unchanged", "failed", "stale"
OUTCOMES = (APPLIED, UNCHANGED, FAILED, STALE)


def _outcome(result: Mapping[str, Any] | None) -> str:
    if not result:
        return FAILED  # the apply failed before it knew anything of the table, or never ran
    outcome = result.get("outcome")
    return outcome if outcome in OUTCOMES else FAILED


def fleet_summary(tables: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What became of each table of a fleet once its applies are over.

    :param tables: the tables, each with ``ws_id`` and ``table``, in the applies' map order.
    :param results: each apply's XCom (the :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`
        summary, pushed also when it fails), None where there is none: in the same order.
    :returns: ``{"applied", "unchanged", "failed", "stale": ["ws/table", ...], "rate_limited": n,
        "errors": {"ws/table": message}, "text": ...}``, ``rate_limited`` being the 429 answers the
        applies met (each one waited out, or retried by the task).
    """
    if len(tables) != len(results):
        raise BlinkInputError(f"{len(tables)} tables but {len(results)} apply results: give one result per table")
    summary: dict[str, Any] = {outcome: [] for outcome in OUTCOMES}
    errors: dict[str, str] = {}
    waits = 0
    for table, result in zip(tables, results, strict=True):
        name = f"{table.get('ws_id')}/{table.get('table')}"
        outcome = _outcome(result)
        summary[outcome].append(name)
        waits += int((result or {}).get("rate_limited") or 0)
        if outcome in (FAILED, STALE):
            errors[name] = str((result or {}).get("error") or _fields_failed(result) or "no result: see its task's log")
    lines = [
        f"Fleet of {len(tables)} tables: {len(summary[APPLIED])} applied, {len(summary[UNCHANGED])} unchanged, "
        f"{len(summary[FAILED])} failed, {len(summary[STALE])} stale; {waits} rate-limit (429) wait(s)."
    ]
    for outcome in OUTCOMES:
        if summary[outcome]:
            lines.append(f"{outcome.capitalize()}: {', '.join(summary[outcome])}")
    lines += [f"- {name}: {message}" for name, message in errors.items()]
    return {**summary, "rate_limited": waits, "errors": errors, "text": "\n".join(lines)}


def _fields_failed(result: Mapping[str, Any] | None) -> str:
    failed = [entry.get("field") for entry in (result or {}).get("failed") or [] if isinstance(entry, Mapping)]
    unknown = list((result or {}).get("unknown") or [])
    parts = [f"fields failed: {', '.join(map(str, failed))}"] if failed else []
    return "; ".join(parts + ([f"fields unknown: {', '.join(map(str, unknown))}"] if unknown else []))
