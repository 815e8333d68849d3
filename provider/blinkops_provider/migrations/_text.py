"""
A plan as people read it: its text, its log lines, its Markdown and its XCom; a fleet's review and summary.

- one table's plan (:class:`~blinkops_provider.migrations.SchemaPlan`): :func:`plan_text` (the summary line, refused,
  destructive and drifted rows first, the baseline, a Markdown table of the fields), :func:`log_plan` (the same, one
  log line each, without the table), :func:`plan_xcom` (the JSON-ready form every task pushes, with the text) and
  :func:`plan_markdown` (the review's and a pull request's text, from the XCom);
- many tables' plans: :func:`fleet_review` (one review, the tables with refused or destructive changes first, within
  a size bound) and :func:`fleet_summary` (what became of each table once the applies are over).

This module reads plans; the plan's types (``_plan_types``) and the planner (``_plan``) never import it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations._plan_types import (
    BASELINE,
    RECORD_BASELINE,
    RECORD_FALLBACK,
    FieldPlan,
    SchemaPlan,
    TablePlan,
    changes,
    risky,
    rows_of,
)
from blinkops_provider.models import FieldUpdate
from blinkops_provider.utils.states import FIELD_ACTIONS, REJECTED_IN_REVIEW, REMOVING, Action, TableOutcome
from blinkops_provider.utils.text import counted, one_line, show


def plan_markdown(plan: Mapping[str, Any], acknowledged: bool = False) -> str:
    """
    Return one table's plan (its XCom) as Markdown.

    As the review shows it and ``blink-schema plan --format markdown`` prints it for a pull request: the fingerprint and
    the table first, then the plan's text (its summary line, refused and destructive rows first, removals first with
    their row counts, then the table of every field, the unchanged ones folded into one row).
    """
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


MAX_REVIEW_CHARS = 20_000
"""The most characters of a fleet's review; the plans past it are in their tasks' XCom."""


MIN_REVIEW_CHARS = 1_000
"""The smallest size bound a review takes: room for its summary and the count of what it leaves out."""


def _table_of_plan(plan: Mapping[str, Any]) -> str:
    """Return ``ws/table`` on one line, whatever the names hold (no line break can forge a review line)."""
    return one_line(f"{plan.get('ws_id')}/{plan.get('table')}")


def _rank(plan: Mapping[str, Any]) -> tuple[int, str]:
    rows = rows_of(plan)
    risk = 0 if any(row.get("action") == Action.REFUSED for row in rows) else 1 if risky(plan) else 2
    return risk, _table_of_plan(plan)


def _line(plan: Mapping[str, Any]) -> str:
    rows = rows_of(plan)
    count: dict[str, int] = {action: sum(row.get("action") == action for row in rows) for action in FIELD_ACTIONS}
    destructive = sum(
        row.get("destructive") is True or (row.get("action") == Action.REMOVE and row.get("destructive") is not False)
        for row in rows
    )
    flags = [word for word, n in (("refused", count[Action.REFUSED]), ("destructive", destructive)) if n]
    mark = f" [{', '.join(flags).upper()}]" if flags else ""
    fingerprint = one_line(str(plan.get("fingerprint")))
    said = counts_said(count, destructive) + _workflows_counted(rows)
    return f"- {_table_of_plan(plan)}{mark}: {said} (plan {fingerprint})"


def _workflows_counted(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return how many active workflows a table's plan breaks, and whether they went unchecked, for a fleet's line."""
    uses = [use for row in rows if isinstance(row.get("workflows"), list) for use in row["workflows"]]
    broken = {
        str(use.get("id"))
        for use in uses
        if isinstance(use, Mapping) and use.get("active") is True and not use.get("unread")
    }
    said = f", breaks {len(broken)} active workflow(s)" if broken else ""
    return said + (", workflows not checked" if any(row.get("workflows_unread") for row in rows) else "")


def counts_said(count: Mapping[str, int], destructive: int) -> str:
    """
    Return a plan's counts as every summary says them (the plan's first line, a fleet's line).

    ``2 to add, 8 to change, 1 to remove, 1 to retype (2 destructive), 12 unchanged, 0 refused``: ``destructive``
    counts every row the Destructive section lists; the tombstones of fields Blink no longer has are ``already gone``.
    """
    removing = f", {count[Action.REMOVE]} to remove" if count.get(Action.REMOVE) else ""
    removing += f", {count[Action.RETYPE]} to retype" if count.get(Action.RETYPE) else ""
    gone = f", {count['gone']} already gone" if count.get("gone") else ""
    return (
        f"{count[Action.ADD]} to add, {count[Action.CHANGE]} to change{removing} ({destructive} destructive), "
        f"{count[Action.UNCHANGED]} unchanged{gone}, {count[Action.REFUSED]} refused"
    )


def _fit(items: Sequence[str], room: int, sep: str) -> tuple[list[str], int]:
    """Return the first of ``items`` whose joined length fits in ``room``, and how many are left out."""
    kept: list[str] = []
    used = 0
    for item in items:
        used += len(item) + (len(sep) if kept else 0)
        if used > room:
            break
        kept.append(item)
    return kept, len(items) - len(kept)


def fleet_review(plans: Sequence[Mapping[str, Any]], *, max_chars: int = MAX_REVIEW_CHARS) -> str:
    """
    Return the text of one review of many tables' plans (Markdown, which reads as plain text too).

    At most ``max_chars`` long whatever the number of tables.

    What a table needs is read from its rows, never from its stored counts; every name is written
    on one line. The tables with refused or destructive changes come first; each changed table is
    named, or counted with where its plan is (its plan task's XCom) when the bound leaves no room.

    :param plans: the plans' XComs, one per table.
    :param max_chars: the size bound (default 20,000; at least ``MIN_REVIEW_CHARS``, 1,000).
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_REVIEW_CHARS:
        raise BlinkInputError(f"max_chars must be an integer of {MIN_REVIEW_CHARS} or more, got {max_chars!r}")
    changed = sorted((p for p in plans if changes(p)), key=_rank)
    unchanged = sorted(_table_of_plan(p) for p in plans if not changes(p))
    risky_ones = sum(1 for p in changed if _rank(p)[0] < 2)
    lines = [
        f"Fleet review: {counted(len(plans), 'table')}: {counted(len(changed), 'table')} to change ({risky_ones} with "
        f"refused or destructive changes, listed first), {counted(len(unchanged), 'table')} unchanged.",
        "",
        *_changed_lines(changed, max_chars * 2 // 5),
        *_unchanged_lines(unchanged, max_chars // 10),
        *_baseline_lines(changed),
    ]
    text = "\n".join(lines)
    return text + _table_rows(changed, max_chars - len(text))


def _baseline_lines(changed: Sequence[Mapping[str, Any]]) -> list[str]:
    """Return each baseline paragraph the changed plans use, once for the fleet rather than once a table."""
    said = [text for text in (BASELINE, RECORD_BASELINE) if any(p.get("baseline") == text for p in changed)]
    return [line for text in said for line in ("", text)]


def _changed_lines(changed: Sequence[Mapping[str, Any]], room: int) -> list[str]:
    """Return one line per table to change while they fit in ``room``, then how many more."""
    listed, left = _fit([_line(plan) for plan in changed], room, "\n")
    more = [f"- and {left} more table(s) to change: their plans are in their plan tasks' XCom"] if left else []
    return [*listed, *more]


def _unchanged_lines(unchanged: Sequence[str], room: int) -> list[str]:
    """Return the tables with nothing to change, named while they fit in ``room``, then counted."""
    if not unchanged:
        return []
    names, more = _fit(list(unchanged), room, ", ")
    return ["", f"Nothing to change in: {', '.join(names)}" + (f" and {more} more" if more else "")]


def _table_rows(changed: Sequence[Mapping[str, Any]], room: int) -> str:
    """
    Return each changed table's rows while they fit in ``room``, then what was left out.

    Named while that fits, else counted (a table's rows give way to the note that names the rest).
    """
    blocks = [f"\n\n### {_table_of_plan(plan)}\n\n{_text_rows(plan)}" for plan in changed]
    shown = 0
    while shown < len(blocks) and sum(map(len, blocks[: shown + 1])) <= room:
        shown += 1
    while True:
        text = "".join(blocks[:shown]) + _left_out([_table_of_plan(plan) for plan in changed[shown:]], room)
        if len(text) <= room or shown == 0:
            return text[:room]
        shown -= 1


def _left_out(names: Sequence[str], room: int) -> str:
    if not names:
        return ""
    note = (
        "\n\n{} more table(s) not shown here, to keep the review within the bound: {}. Their full plans are in "
        "the XCom of their plan tasks."
    )
    kept, more = _fit(names, max(room - len(note) - 40, 0), ", ")
    return note.format(
        len(names), ", ".join(kept) + (f" and {more} more" if more else "") if kept else f"{more} tables"
    )


def _text_rows(plan: Mapping[str, Any]) -> str:
    """Return a plan's text without the baseline paragraph, which the fleet's review says once."""
    baselines = (BASELINE, RECORD_BASELINE)
    return "\n\n".join(part for part in str(plan.get("text", "")).split("\n\n") if part.strip() not in baselines)


TABLE_OUTCOMES = tuple(TableOutcome)
"""A table's outcomes, in the order the fleet's summary lists them."""

WHY_CHARS = 300
"""The most characters of a failed table's cause the summary shows (its apply's log has it whole)."""


def _table_outcome(result: Mapping[str, Any] | None) -> str:
    if not result:
        return TableOutcome.FAILED  # the apply failed before it knew anything of the table, or never ran
    outcome = result.get("outcome")
    return outcome if isinstance(outcome, str) and outcome in TABLE_OUTCOMES else TableOutcome.FAILED


def _waits(result: Mapping[str, Any] | None) -> int:
    """Return the 429 answers an apply met, as it reports them (anything but a count is none)."""
    waits = (result or {}).get("rate_limited")
    return waits if isinstance(waits, int) and not isinstance(waits, bool) and waits > 0 else 0


def fleet_summary(
    tables: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any] | None],
    *,
    rejected: bool = False,
    plans: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """
    Return what became of each table of a fleet once its applies are over.

    Applied, unchanged, failed (with its cause in one line), stale, or rejected (``rejected``: the review rejected the
    plans, so no apply ran and every table is ``rejected``).

    :param tables: the tables, each with ``ws_id`` and ``table``, in the applies' map order.
    :param results: each apply's XCom (the :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`
        summary, pushed also when it fails), None where there is none: in the same order.
    :param plans: the tables' plans (their XComs, any order): with ``rejected``, a table whose plan
        had nothing to change is ``unchanged``, not ``rejected``.
    :returns: ``{"applied", "unchanged", "failed", "stale", "rejected": ["ws/table", ...], "rate_limited": n,
        "errors": {"ws/table": message}, "text": ...}``, ``rate_limited`` being the 429 answers the
        applies met (each one waited out, or retried by the task).
    """
    if len(tables) != len(results):
        raise BlinkInputError(f"{len(tables)} tables but {len(results)} apply results: give one result per table")
    summary: dict[str, Any] = {outcome.value: [] for outcome in TABLE_OUTCOMES}  # plain text keys: XCom-ready
    errors: dict[str, str] = {}
    waits = 0
    kept = _unchanged_plans(plans)
    for table, given in zip(tables, results, strict=True):
        result = given if isinstance(given, Mapping) else None  # anything else: no result
        name = _table_of_plan(table) if isinstance(table, Mapping) else one_line(str(table))
        outcome = _rejected(name in kept) if rejected else _table_outcome(result)
        summary[outcome].append(name)
        waits += _waits(result)
        if outcome in (TableOutcome.FAILED, TableOutcome.STALE):
            errors[name] = _why_failed(result)
    return {
        **summary,
        "rate_limited": waits,
        "errors": errors,
        "text": _summary_text(len(tables), summary, errors, waits),
    }


def _unchanged_plans(plans: Sequence[Mapping[str, Any]] | None) -> set[str]:
    """Return the tables whose plan changes nothing."""
    return {_table_of_plan(plan) for plan in plans or () if isinstance(plan, Mapping) and not changes(plan)}


def _rejected(unchanged: bool) -> TableOutcome:
    """Return a table's outcome when the review rejected the plans: unchanged when its plan changed nothing."""
    return TableOutcome.UNCHANGED if unchanged else TableOutcome.REJECTED


def _why_failed(result: Mapping[str, Any] | None) -> str:
    """Return why an apply failed, in one line."""
    why = one_line(str((result or {}).get("error") or _fields_failed(result) or "no result: see its task's log"))
    return why if len(why) <= WHY_CHARS else why[: WHY_CHARS - 1] + "…"


def _summary_text(count: int, summary: Mapping[str, list[str]], errors: Mapping[str, str], waits: int) -> str:
    applied, kept, failed, stale, rejected = (summary[outcome] for outcome in TABLE_OUTCOMES)
    if rejected:
        unchanged = f"\nUnchanged (nothing to apply): {', '.join(kept)}" if kept else ""
        return f"Fleet of {counted(count, 'table')}: {REJECTED_IN_REVIEW}.\nRejected: {', '.join(rejected)}{unchanged}"
    lines = [
        f"Fleet of {counted(count, 'table')}: {len(applied)} applied, {len(kept)} unchanged, {len(failed)} failed, "
        f"{len(stale)} stale; {waits} rate-limit (429) wait(s)."
    ]
    for outcome in TABLE_OUTCOMES:
        if summary[outcome]:
            lines.append(f"{outcome.capitalize()}: {', '.join(summary[outcome])}")
    lines += [f"- {name}: {message}" for name, message in errors.items()]
    return "\n".join(lines)


def _fields_failed(result: Mapping[str, Any] | None) -> str:
    given = (result or {}).get("failed")
    failed = [entry.get("field") for entry in given if isinstance(entry, Mapping)] if isinstance(given, list) else []
    unknown = (result or {}).get("unknown")
    unknown = list(unknown) if isinstance(unknown, list) else []
    parts = [f"fields failed: {', '.join(map(str, failed))}"] if failed else []
    return "; ".join(parts + ([f"fields unknown: {', '.join(map(str, unknown))}"] if unknown else []))


def plan_xcom(plan: SchemaPlan) -> dict[str, Any]:
    """
    Return the plan's XCom: a JSON-ready dict.

    The identity, the fields with their actions and values, the counts, the baseline and the text (what the review,
    ``blink-schema plan`` and the gate's staleness check read).
    """
    return {
        "fingerprint": plan.fingerprint,
        "schema_digest": plan.schema_digest,
        "record_digest": plan.record_digest,
        "live_digest": plan.live_digest,
        "rows_digest": plan.rows_digest,
        "unread": plan.unread,
        "ws_id": plan.ws_id,
        "table": plan.table,
        "record": plan.record,
        "recorded_at": plan.recorded_at,
        "baseline": plan.baseline,
        "fields": [row.to_xcom() for row in plan.fields],
        "counts": plan.counts,
        "has_changes": plan.has_changes,
        "undeclared": list(plan.undeclared),
        "table_plan": plan.table_plan.to_xcom(),
        "text": plan_text(plan),
    }


def plan_text(plan: SchemaPlan) -> str:
    """
    Return the plan as text for the log and for a reviewer.

    A summary line, refused and destructive changes first, the baseline, and a table of the fields with their values
    (Markdown, which reads as plain text too).
    """
    lines = [] if not plan.unread else [f"Blink's live schema could not be read ({plan.unread}): {RECORD_FALLBACK}"]
    if plan.table_plan.action == Action.CREATE:
        lines.append(_creation(plan))
    lines += [_summary_line(plan), *_flagged(plan.fields), *_workflows_broken(plan.fields), *_saved_first(plan)]
    lines += [
        *_table_lines(plan.table_plan),
        "",
        plan.baseline,
        "",
        "| field | action | details |",
        "|---|---|---|",
        *_field_rows(plan.fields),
    ]
    return "\n".join(lines + _left_alone(plan))


WORKFLOWS_HEADING = (
    "**Workflows it breaks** (the Blink workflows whose steps use what a change takes away: each fails at its next "
    "run, unless it is changed first; an inactive one when it is turned on):"
)


def workflow_lines(fields: Sequence[FieldPlan]) -> list[str]:
    """
    Return one line per workflow a change breaks (#75), the changes in the plan's order.

    The workflow's name, id and whether it is active, and each step with how it uses the field; the ones that could not
    be read, and the changes whose workflows were not checked.
    """
    lines = []
    for row in fields:
        where = f"{_cell(row.field)} ({row.action})"
        if row.workflows_unread:
            lines.append(f"{where}: {row.workflows_unread}")
        for use in row.workflows:
            state = "active" if use.active else "inactive"
            who = f"{_cell(use.workflow)!r} ({_cell(use.id)}, {state})"
            if use.unread:
                lines.append(f"{where}: could not be read: {who}: {_cell(use.unread)}")
            else:
                steps = ", ".join(f"{_cell(step)} ({how})" for step, how in use.steps)
                lines.append(f"{where}: {who}: step {steps}")
    return lines


def _workflows_broken(fields: Sequence[FieldPlan]) -> list[str]:
    lines = workflow_lines(fields)
    return ["", WORKFLOWS_HEADING, *(f"- {line}" for line in lines)] if lines else []


def _saved_first(plan: SchemaPlan) -> list[str]:
    """
    Return what the apply saves before it destroys a value (#74), or that it cannot: no record to save beside.

    An apply that changes fields without destroying a value saves their definitions too (a rollback reads them); that
    is said in the apply's log and XCom, not here.
    """
    rows = plan.destroying
    if not rows:
        return []
    named = ", ".join(
        f"{_cell(row.field)!r}" + (f" in {row.rows:,} row(s)" if row.action == Action.REMOVE and row.rows else "")
        for row in rows
    )
    if not plan.record:
        return ["", f"**No undo**: the values of {named} cannot be saved first without a record_path: refused."]
    where = f"{one_line(plan.record)}.backups/{plan.fingerprint}.jsonl"
    return [
        "",
        f"**Saved first** (Blink has no undo): the values of {named}, at {where}, read back before any write "
        "(blink-schema rollback puts them back).",
    ]


def _summary_line(plan: SchemaPlan) -> str:
    """Return ``Plan <fingerprint> for ws/table: n to add, ... (where the record is)``."""
    counts = plan.counts
    since = f"recorded {plan.recorded_at}" if plan.recorded_at else "none recorded yet"
    since += f", {plan.recorded_by}" if plan.recorded_at and plan.recorded_by else ""
    where = f"last apply: {since}, at {one_line(plan.record)}" if plan.record else "no record kept"
    return (
        f"Plan {plan.fingerprint} for {one_line(plan.ws_id)}/{one_line(plan.table)}: "
        f"{counts_said(counts, counts['destructive'])} ({where})"
    )


def _left_alone(plan: SchemaPlan) -> list[str]:
    """Return the closing lines: removals with nothing to remove, and the fields not declared."""
    lines = []
    gone = [row.field for row in plan.fields if row.action == Action.UNCHANGED and row.risk]
    if gone:
        lines += ["", f"Already gone from Blink (nothing to remove): {_cell(', '.join(map(repr, gone)))}"]
    if plan.undeclared:
        names = _cell(", ".join(map(repr, plan.undeclared)))
        said = "Recorded but no longer declared" if plan.unread else "In Blink, not declared"
        lines += ["", f"{said} (left as they are): {names}"]
    return lines


def log_plan(plan: SchemaPlan, log: Any) -> None:
    """
    Log the plan, one line each.

    Its summary, refused, destructive and drifted rows, the table's own change, and each field that is added or
    changed; unchanged fields are counted, not listed. The plan's text without its Markdown and its table.
    """
    lines = [f"Blink's live schema could not be read ({plan.unread}): {RECORD_FALLBACK}"] if plan.unread else []
    lines += [_creation(plan)] if plan.table_plan.action == Action.CREATE else []
    lines.append(_summary_line(plan))
    for heading, rows, said in _flagged_rows(plan.fields):
        lines += [heading, *(f"  {_cell(row.field)}: {said(row)}" for row in rows)]
    broken = workflow_lines(plan.fields)
    lines += [WORKFLOWS_HEADING.replace("**", ""), *(f"  {line}" for line in broken)] if broken else []
    if plan.table_plan.action == Action.CHANGE:
        lines.append(f"The table ({one_line(plan.table_plan.name)}): change {_table_change(plan.table_plan)}")
    lines += [plan.table_plan.note] if plan.table_plan.note else []
    lines += [
        f"  {one_line(row.field)}: {_action_cell(row)} {_details(row)}"
        for row in plan.fields
        if row.action in (Action.ADD, Action.CHANGE)
    ]
    unchanged = plan.counts[Action.UNCHANGED]
    lines += [f"  ({unchanged} field(s) unchanged)"] if unchanged else []
    for line in lines:
        log.info("%s", line)


_FLAGS: tuple[tuple[str, str, Callable[[FieldPlan], bool], Callable[[FieldPlan], str]], ...] = (
    (
        "Refused",
        "(each says who refuses it and why; while any entry is refused the apply sends nothing to this table):",
        lambda plan: plan.action == Action.REFUSED,
        lambda plan: plan.risk,
    ),
    (
        "Destructive",
        "(removals first: each deletes the field's values in every row, irreversibly; then the changes that can "
        "orphan values already in the table or drop a check Blink enforces):",
        lambda plan: plan.destructive,
        lambda plan: _destructive_said(plan),
    ),
    (
        "Changed in Blink since the last apply",
        "(the plan is made against Blink's values):",
        lambda plan: bool(plan.drift),
        lambda plan: f"{', '.join(plan.drift)}{plan.changed_by}",
    ),
)
"""The plan's flagged rows, in the order a reviewer reads them: a title, what it means, which rows, what each says."""


def _destructive_said(plan: FieldPlan) -> str:
    """Return why a row is destructive: its risk, and the active workflows it breaks (or that were not checked)."""
    said = [f"{plan.action}: {plan.risk}" if plan.action in REMOVING else plan.risk] if plan.risk else []
    if not plan.risk:
        said.append(str(plan.action))
    breaking = [use for use in plan.workflows if use.breaks]
    if breaking:
        said.append(f"breaks {len(breaking)} active workflow(s): {', '.join(repr(use.workflow) for use in breaking)}")
    if plan.workflows_unread:
        said.append(plan.workflows_unread)
    if not plan.risk:
        return f"{said[0]}: {'; '.join(said[1:])}"
    return "; ".join(said)


def _removals_first(plan: FieldPlan) -> bool:
    return plan.action not in REMOVING


def _flagged_rows(
    fields: Sequence[FieldPlan],
) -> list[tuple[str, list[FieldPlan], Callable[[FieldPlan], str]]]:
    """Return each kind of flagged row that the plan has: its heading, its rows (removals first), what each says."""
    flagged = []
    for title, meaning, flags, said in _FLAGS:
        rows = sorted((plan for plan in fields if flags(plan)), key=_removals_first)
        flagged += [(f"{title} {meaning}", rows, said)] if rows else []
    return flagged


def _flagged(fields: Sequence[FieldPlan]) -> list[str]:
    """Return the refused, destructive (removals first) and drifted rows, each kind under its heading (Markdown)."""
    lines: list[str] = []
    for heading, rows, said in _flagged_rows(fields):
        title, meaning = heading.split(" (", 1)
        lines += ["", f"**{title}** ({meaning}", *(f"- {_cell(plan.field)}: {said(plan)}" for plan in rows)]
    return lines


def _field_rows(fields: Sequence[FieldPlan]) -> list[str]:
    """
    Return the table's rows.

    One per field to add, change or refuse, then the unchanged ones folded into one row with their count and names
    (Blink's name beside a field's where they differ).
    """
    rows = [f"| {_cell(p.field)} | {_action_cell(p)} | {_details(p)} |" for p in fields if p.action != Action.UNCHANGED]
    same = [
        f"{p.field} (Blink's name {p.blink_name!r})" if p.blink_name else p.field
        for p in fields
        if p.action == Action.UNCHANGED and not p.risk  # (a tombstone of a field Blink lacks is said apart)
    ]
    if same:
        names = _cell(", ".join(same))
        rows.append(f"| {len(same)} field{'s' if len(same) > 1 else ''} | unchanged | {names} |")
    return rows


def _creation(plan: SchemaPlan) -> str:
    """Return the plan's first line when it creates the table."""
    shown = dict((member, after) for member, _, after in plan.table_plan.values)
    adds = [row.field for row in plan.fields if row.action == Action.ADD]
    return (
        f"Create table {show(shown.get('display_name'))} in workspace {one_line(plan.ws_id)} with {len(adds)} "
        f"field(s): {_cell(', '.join(adds)) or 'none'} (Blink derives the table's name and its fields' names)"
    )


def _table_lines(table: TablePlan) -> list[str]:
    """Return the table's own change (its display name or description), and what could not be planned."""
    lines: list[str] = []
    if table.action == Action.CHANGE:
        lines += ["", f"**The table** ({one_line(table.name)}): change {_table_change(table)}"]
    if table.note:
        lines += ["", table.note]
    return lines


def _table_change(table: TablePlan) -> str:
    """Return the table's members that change, before and after."""
    return "; ".join(f"{member}: {show(before)} → {show(after)}" for member, before, after in table.values)


def _action_cell(plan: FieldPlan) -> str:
    return "change (destructive)" if plan.destructive and plan.action == Action.CHANGE else plan.action


POSTED_CHARS = 400
"""The most characters of an add's ``POST`` body its row shows."""


def _details(plan: FieldPlan) -> str:
    named = f"declared as {plan.field!r}, Blink's name is {plan.blink_name!r}; " if plan.blink_name else ""
    if plan.action == Action.ADD and plan.body is not None:
        return _cell(_added(plan.field, plan.body) + _fills(plan))
    if plan.action == Action.ADD:
        return _cell(", ".join(f"{member} {show(after)}" for member, _, after in plan.values))
    if plan.action in REMOVING:
        return _cell(f"{named}{plan.risk}")
    return _cell(named + _changed(plan) + _fills(plan))


def _added(name: str, body: FieldUpdate) -> str:
    """Return an add in words: ``adds Queue (text, required), shown as 'Queue'``, its attributes cut at a length."""
    given = body.to_body()
    attributes = dict(given.get("attributes") or {})
    checks = [
        check.replace("is_unique", "unique") for check in ("required", "is_unique") if attributes.pop(check, None)
    ]
    kind = ", ".join([str(given.get("type")), *checks])
    said = f"adds {name} ({kind}), shown as {show(given.get('display_name'))}"
    said += f", described {show(given['description'])}" if given.get("description") else ""
    if attributes:
        text = json.dumps(attributes, ensure_ascii=False, sort_keys=True)
        said += f", with {text if len(text) <= POSTED_CHARS else text[: POSTED_CHARS - 1] + '…'}"
    return said


def _fills(plan: FieldPlan) -> str:
    """Return what a backfill writes (``, fills 120 rows with 'triage'``), or "" (none, or nothing to fill)."""
    rows = (plan.counts or {}).get("backfill")
    if plan.backfill is None or plan.action == Action.RETYPE:  # (a retype's risk says its fill)
        return ""
    if rows is None:
        return f", fills its empty rows with {show(plan.backfill)} (not counted)"
    return f", fills {rows} empty row(s) with {show(plan.backfill)}" if rows else ""


def _changed(plan: FieldPlan) -> str:
    """Return a change's (or a refused change's) members, before and after, with what Blink keeps enforcing."""
    shown = "; ".join(f"{member}: {show(before)} → {show(after)}" for member, before, after in plan.values)
    if plan.kept and plan.action == Action.CHANGE:
        shown += f" (Blink keeps enforcing {' and '.join(plan.kept)}: not declared, sent as held)"
    return f"{shown} ({plan.risk})" if plan.action == Action.REFUSED else shown


def _cell(text: str) -> str:
    """Text as one Markdown table cell (:func:`blinkops_provider.utils.text.one_line`)."""
    return one_line(text)
