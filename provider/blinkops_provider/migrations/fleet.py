"""One review for the plans of many tables (a fleet): what a person reads before approving them.

:func:`fleet_review` takes the plans' XComs (:meth:`SchemaPlan.to_xcom
<blinkops_provider.migrations.plan.SchemaPlan.to_xcom>`, one per table, for example the mapped
plan tasks' ``plan.output``) and writes one text: a summary first, the tables with refused or
destructive changes before the others, the tables with nothing to change in one line, then each
changed table's rows, within a size bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_REVIEW_CHARS", "fleet_review"]

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
    text, left = "\n".join(lines), list[str]()
    for plan in changed:
        rows = f"\n\n### {plan.get('ws_id')}/{plan.get('table')}\n\n{plan.get('text', '')}"
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
