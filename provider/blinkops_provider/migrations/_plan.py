"""
The planner: each declared entry against the table as Blink holds it, judged with the table's rows.

:func:`make_plan` makes one table's :class:`~blinkops_provider.migrations.SchemaPlan`: each entry matched to Blink's
field (``_matching``) and planned as ``add``, ``change`` (with the members that differ), ``retype``, ``unchanged`` or
``refused``; each tombstone as ``remove``; what changed in Blink since this provider's last apply (``drift``); the
changes that touch data judged with the rows (``_rows``). :func:`plan_table` plans the table itself.

The baseline is Blink's live schema (``GET .../fields``, one read per table); each field's body is the declaration
merged with what Blink holds, unless ``replace``. Where Blink does not serve the read (404 or 405), the plan falls back
to the record of the last apply (``_lock``) and says so; a field the record does not hold is then an ``add``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blinkops_provider.migrations._matching import (
    CHECKS,
    Matches,
    contradictions,
    differing_members,
    field_body,
    kept_by_blink,
    match_fields,
    member_value,
    merge_field,
    removal_refused,
    retyped_body,
)
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan, TablePlan, WorkflowUse, digest
from blinkops_provider.migrations._risks import Change, judge, needs_of, step_breaks
from blinkops_provider.migrations._rows import NOTHING_READ, Need, RowFacts
from blinkops_provider.migrations._usage import Probe, Usage
from blinkops_provider.models import BlinkTable, FieldUpdate, TableField, backfill_unfit
from blinkops_provider.utils.states import Action
from blinkops_provider.utils.text import one_line


def make_plan(
    *,
    target: Sequence[str],
    record: str,
    declared: Sequence[tuple[str, FieldUpdate]],
    recorded: Mapping[str, Any],
    recorded_at: str | None,
    live: Sequence[TableField] | None,
    unread: str = "",
    replace: bool = False,
    removals: Sequence[str] = (),
    notes: Mapping[str, str] | None = None,
    table_plan: TablePlan | None = None,
    declared_table: Sequence[str | None] = (None, None),
    facts: RowFacts = NOTHING_READ,
    count_rows: Callable[[Sequence[Need]], RowFacts] | None = None,
    backfills: Mapping[str, Any] | None = None,
    type_changes: Mapping[str, str] | None = None,
    recorded_by: str = "",
    read_usage: Callable[[Sequence[Probe]], Usage] | None = None,
    workflow_usage: str = "review",
) -> SchemaPlan:
    """
    Return the plan of ``declared`` for one table.

    Each entry is matched and its body made once; the risk rules say which rows the changes need, ``count_rows``
    counts them, and each change is judged with them.

    :param target: ``(Blink's host, workspace, table)``.
    :param record: where the record of the last apply is kept ("" when none is kept).
    :param recorded: the record's field bodies (``{}`` when there is none yet).
    :param live: the table's fields as Blink holds them, or None when Blink did not serve the
        read (``unread`` says why): the plan is then made against the record.
    :param replace: send each declaration as given (Blink resets what it leaves out) instead
        of its merge with what Blink holds.
    :param removals: the declared tombstones' field names.
    :param notes: the record's note of the name Blink gave each field this provider added.
    :param table_plan: what happens to the table itself (:func:`plan_table`).
    :param declared_table: the table's declared display name and description.
    :param facts: what is known of the table's rows when ``count_rows`` is not given.
    :param count_rows: counts the rows the changes need (``_rows.read_rows`` of the table), called at most once and
        only when a change needs its rows; None: the rows are not read (``facts`` stand).
    :param backfills: the declared ``backfill`` value of each field that has one.
    :param type_changes: the declared ``type_change`` of each field that has one.
    :param read_usage: reads which workflows the changes break (``_usage.read_usage`` of the table), called at most
        once and only when a change can break a workflow's step; None: the workflows are not read.
    :param workflow_usage: ``review`` (a change that breaks an active workflow is destructive) or ``refuse`` (it is
        refused).
    """
    host, ws_id, table = target
    table_plan = table_plan or TablePlan(name=table)
    backfills, type_changes = backfills or {}, type_changes or {}
    context = _Context(table, backfills, type_changes)
    drafts = _drafts(declared, recorded, live, replace, removals, notes or {}, context)
    needs = needs_of(draft.change for draft in drafts if draft.change is not None)
    if count_rows is not None and needs:
        facts = count_rows(needs)
    if not (facts.counted or facts.unread):
        facts = dataclasses.replace(facts, estimate=table_plan.rows)
    rows = [_judged_row(draft, facts) for draft in drafts]
    rows, usage = _with_workflows(rows, drafts, read_usage, workflow_usage)
    schema = [[name, update.to_body(), backfills.get(name), type_changes.get(name)] for name, update in declared]
    return SchemaPlan(
        ws_id=ws_id,
        table=table,
        record=record,
        recorded_at=recorded_at,
        recorded_by=recorded_by,
        fields=tuple(rows),
        undeclared=tuple(_undeclared(rows, declared, recorded, live)),
        schema_digest=digest([[host, ws_id, table], schema, replace, list(removals), list(declared_table)]),
        record_digest=digest([recorded_at, recorded]),
        live_digest=_live_digest(live, drafts, table_plan),
        unread=unread,
        table_plan=table_plan,
        rows_digest=_rows_digest(rows, facts),
        workflows_digest=usage.digest if usage is not None else "",
    )


def _with_workflows(
    rows: list[FieldPlan],
    drafts: Sequence[_Draft],
    read_usage: Callable[[Sequence[Probe]], Usage] | None,
    policy: str,
) -> tuple[list[FieldPlan], Usage | None]:
    """
    Return the rows with the workflows each change breaks (#75), and what the workflows read found.

    Read once, and only when a change can break a step; under ``refuse``, a change that breaks an active workflow is
    refused, the workflows and steps named.
    """
    probes = {
        draft.change.name: Probe(draft.change.name, kinds)
        for draft in drafts
        if draft.change is not None and (kinds := step_breaks(draft.change))
    }
    if read_usage is None or not probes:
        return rows, None
    usage = read_usage(list(probes.values()))
    marked = []
    for row, draft in zip(rows, drafts, strict=True):
        name = draft.change.name if draft.change is not None else None
        if name not in probes:
            marked.append(row)
            continue
        uses = tuple(usage.uses.get(name, ()))
        unread = f"workflows not checked: {usage.unread}" if usage.unread else ""
        row = dataclasses.replace(row, workflows=uses, workflows_unread=unread)
        breaking = [use for use in uses if use.breaks]
        if policy == "refuse" and breaking and row.action != Action.REFUSED:
            why = f"it breaks active workflow(s) {breaks_said(breaking)}, and workflow_usage='refuse'"
            row = dataclasses.replace(row, action=Action.REFUSED, risk=why, body=None)
        marked.append(row)
    return marked, usage


def breaks_said(uses: Sequence[WorkflowUse]) -> str:
    """Return workflows and their steps in words: ``'Triage' (wf-1): S1 (filtered on), S2 (written)``."""
    return "; ".join(
        f"{one_line(use.workflow)!r} ({one_line(use.id)}): "
        + ", ".join(f"{one_line(step)} ({how})" for step, how in use.steps)
        for use in uses
    )


def _rows_digest(rows: Sequence[FieldPlan], facts: RowFacts) -> str:
    """Return the digest of what the plan counted in the rows ("" when it counted nothing)."""
    return digest([[row.field, row.counts] for row in rows if row.counts]) if facts.counted else ""


def _undeclared(
    rows: Sequence[FieldPlan],
    declared: Sequence[tuple[str, FieldUpdate]],
    recorded: Mapping[str, Any],
    live: Sequence[TableField] | None,
) -> list[str]:
    """
    Return the fields left as they are.

    In Blink (or, without a live read, in the record) and not declared, Blink's own fields aside.
    """
    if live is None:
        names = {name for name, _ in declared}
        return [name for name in recorded if name not in names]
    matched = {row.name_in_blink for row in rows if row.action != Action.ADD}
    return [str(f.name) for f in live if f.name not in matched and not kept_by_blink(f)]


def _live_digest(live: Sequence[TableField] | None, drafts: Sequence[_Draft], table: TablePlan) -> str:
    """Return the digest of the declared fields as Blink holds them, and of the table ("" without a live read)."""
    if live is None:
        return ""
    return digest([[[draft.plan.name_in_blink, draft.held] for draft in drafts], table.to_xcom()])


def plan_table(
    table: str,
    declared: Sequence[str | None],
    held: BlinkTable | None,
    *,
    create: bool = False,
    listed: bool = True,
) -> TablePlan:
    """
    Return what happens to the table itself.

    Created (Blink does not have it and ``create``), its display name or description changed (as declared; what is not
    declared is kept as Blink holds it, and its ``settings`` are sent back as held), or nothing.

    :param declared: the table's declared ``(display_name, description)`` (None: not declared).
    :param held: the table in Blink's tables read (None: not there, or ``listed`` is False).
    :param listed: whether Blink served its tables read.
    """
    display_name, description = declared
    if held is None:
        return (
            _table_to_create(table, display_name, description) if create else _table_not_listed(table, declared, listed)
        )
    before, after = _table_before_and_after(held, display_name, description)
    members = tuple(member for member in after if after[member] != before[member])
    if not members:
        return TablePlan(Action.UNCHANGED, held.name, rows=held.estimated_records_count)
    values: tuple[tuple[str, Any, Any], ...] = tuple((member, before[member], after[member]) for member in members)
    body = {**after, "settings": dict(held.settings or {})}
    return TablePlan(Action.CHANGE, held.name, members, values, body=body, rows=held.estimated_records_count)


def _table_before_and_after(
    held: BlinkTable, display_name: str | None, description: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """
    Return the table's display name and description as Blink holds them, and as declared.

    What is not declared is kept as held.
    """
    before = {"display_name": held.display_name or held.name, "description": held.description or ""}
    given = {"display_name": display_name, "description": description}
    return before, {member: _given_or_held(given[member], before[member]) for member in before}


def _given_or_held(given: str | None, held: str) -> str:
    """Return ``given``, or ``held`` when nothing is given."""
    return held if given is None else given


def _table_to_create(table: str, display_name: str | None, description: str | None) -> TablePlan:
    """Return the plan of a table Blink does not have, to create (with the declared display name, else its name)."""
    after = {"display_name": display_name or table, "description": description or ""}
    made = tuple((member, None, value) for member, value in after.items())
    return TablePlan(Action.CREATE, "", tuple(after), made, body={**after, "options": []}, rows=0)


def _table_not_listed(table: str, declared: Sequence[str | None], listed: bool) -> TablePlan:
    """Return the plan of a table not in Blink's tables read: nothing, saying so when the read is not served."""
    unplanned = "Blink's tables read is not served: the table's display name and description are not planned"
    note = "" if tuple(declared) == (None, None) or listed else unplanned
    return TablePlan(Action.UNCHANGED, table, note=note)


def plan_fields(
    declared: Iterable[tuple[str, FieldUpdate]],
    recorded: Mapping[str, Any],
    live: Sequence[TableField] | Mapping[str, TableField] | None = None,
    *,
    table: str = "",
    replace: bool = False,
    removals: Sequence[str] = (),
    notes: Mapping[str, str] | None = None,
    facts: RowFacts = NOTHING_READ,
    backfills: Mapping[str, Any] | None = None,
    type_changes: Mapping[str, str] | None = None,
) -> list[FieldPlan]:
    """
    Return each declared field against Blink's field (``live``, matched by :func:`~._matching.match_fields`).

    Without a live read, against its recorded body: ``add`` (a field Blink lacks: ``POST``; without a live read, one
    the record lacks), ``change`` (destructive when it can orphan data or loses a check), ``retype``, ``unchanged``, or
    ``refused`` (not sent: a type change without ``type_change``, a field Blink keeps to itself, a declaration that
    contradicts itself or cannot be told apart); then each removal: ``remove`` (with ``rows``, the rows that lose their
    values), ``unchanged`` (Blink has no such field) or ``refused``. A change that touches data is judged with
    ``facts``, the rows counted, by the risk rules (``_risks``).
    """
    context = _Context(table, backfills or {}, type_changes or {})
    drafts = _drafts(list(declared), recorded, live, replace, removals, notes or {}, context)
    return [_judged_row(draft, facts) for draft in drafts]


@dataclass(frozen=True)
class _Context:
    """What each field is planned with: the table's name, the declared backfills and type changes."""

    table: str
    backfills: Mapping[str, Any]
    type_changes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    targets: dict[str, str] = dataclasses.field(default_factory=dict)
    """The tables Blink's reference fields link to (and the adds planned so far): target -> the field that links."""


@dataclass(frozen=True)
class _Draft:
    """
    One row of the plan before the rows are judged.

    :ivar plan: the row as matching and merging make it.
    :ivar held: Blink's field as a body (:func:`~._matching.field_body`, once per field); None when Blink has none.
    :ivar change: what the risk rules judge with the rows (None: nothing to judge).
    """

    plan: FieldPlan
    held: Mapping[str, Any] | None = None
    change: Change | None = None


def _drafts(
    declared: Sequence[tuple[str, FieldUpdate]],
    recorded: Mapping[str, Any],
    live: Sequence[TableField] | Mapping[str, TableField] | None,
    replace: bool,
    removals: Sequence[str],
    notes: Mapping[str, str],
    context: _Context,
) -> list[_Draft]:
    """Return each declared entry's row and each removal's, matched to Blink's fields (or the record), not judged."""
    if live is None:
        return _drafts_against_record(declared, recorded, removals)
    fields = list(live.values()) if isinstance(live, Mapping) else list(live)
    held = {field.name: field for field in fields if field.name is not None}
    matches = match_fields(declared, removals, fields, notes)
    context.targets.update(_referenced(fields))
    drafts = [_draft_live(name, update, matches, held, recorded, replace, context) for name, update in declared]
    return drafts + [_removal_draft(name, held.get(matches.gone.get(name, ""))) for name in removals]


def _judged_row(draft: _Draft, facts: RowFacts) -> FieldPlan:
    """Return a drafted row judged with the rows (``_risks.judge``): refused, or with its risk and counts."""
    if draft.change is None:
        return draft.plan
    judged = judge(draft.change, facts)
    counts = dict(judged.counts) or None
    if judged.refusal:
        return dataclasses.replace(draft.plan, action=Action.REFUSED, risk=judged.refusal, body=None, counts=counts)
    rows = judged.rows if draft.plan.action == Action.REMOVE else draft.plan.rows
    return dataclasses.replace(draft.plan, risk=judged.risk, counts=counts, destroys=judged.destroys, rows=rows)


def _draft_live(
    name: str,
    update: FieldUpdate,
    matches: Matches,
    held: Mapping[str, TableField],
    recorded: Mapping[str, Any],
    replace: bool,
    context: _Context,
) -> _Draft:
    """Return one declared field's row against Blink's fields: refused, an add, or against the field it is."""
    if name in matches.refused:
        return _Draft(FieldPlan(name, Action.REFUSED, risk=matches.refused[name]))
    backfill = context.backfills.get(name)
    if name not in matches.found:
        return _backfill_checked(_add_draft(name, update, backfill, context))
    found = matches.found[name]
    draft = _draft_against_blink(name, update, held[found], recorded.get(name), replace, context)
    plan = dataclasses.replace(draft.plan, blink_name=found if found != name else "", backfill=backfill)
    return _backfill_checked(dataclasses.replace(draft, plan=plan))


def _backfill_checked(draft: _Draft) -> _Draft:
    """Return the row, refused when the field it sends cannot hold its backfill (its type, a select's options)."""
    plan = draft.plan
    if plan.backfill is None or plan.body is None or plan.action not in (Action.ADD, Action.CHANGE, Action.RETYPE):
        return draft
    body = plan.body.to_body()
    options = (body.get("attributes") or {}).get("options")
    why = backfill_unfit(body.get("type"), plan.backfill, options if isinstance(options, list) else None)
    if not why:
        return draft
    refused = dataclasses.replace(plan, action=Action.REFUSED, risk=f"{why}: nothing is sent", body=None)
    return _Draft(refused, draft.held)


def _drafts_against_record(
    declared: Sequence[tuple[str, FieldUpdate]], recorded: Mapping[str, Any], removals: Sequence[str]
) -> list[_Draft]:
    """Return each declared field against its recorded body (Blink's fields read not served); no removal."""
    drafts = []
    for name, update in declared:
        before = recorded.get(name)
        drafts.append(_draft_against(name, before if isinstance(before, Mapping) else None, update, name))
    why = "a removal needs Blink's fields read, which this Blink does not serve: nothing is removed"
    return drafts + [_Draft(FieldPlan(name, Action.REFUSED, risk=why)) for name in removals]


def _referenced(fields: Sequence[TableField]) -> dict[str, str]:
    """Return the tables Blink's ``reference`` fields link to: target -> the field that links."""
    targets = {}
    for held in fields:
        reference = (held.attributes or {}).get("table_reference") if held.type == "reference" else None
        if isinstance(reference, Mapping) and isinstance(reference.get("table_name"), str):
            targets[reference["table_name"]] = str(held.name)
    return targets


def _add_draft(name: str, update: FieldUpdate, backfill: Any, context: _Context) -> _Draft:
    """
    Return the row of a declared field Blink lacks: added with its declaration as the ``POST`` body.

    Refused when it contradicts itself, or links to a table another reference field of the table links to already.
    """
    problems = contradictions(update)
    if problems:
        why = f"the declaration contradicts itself: {'; '.join(problems)}"
        return _Draft(FieldPlan(name, Action.REFUSED, risk=why, backfill=backfill))
    reference = update.attributes.table_reference if update.attributes is not None else None
    if update.type is not None and update.type.value == "reference" and reference is not None:
        linked = context.targets.get(reference.table_name)
        if linked is not None:
            why = (
                f"table {context.table!r} links to table {reference.table_name!r} through field {linked!r} already, "
                "and Blink allows one reference field per target table"
            )
            return _Draft(FieldPlan(name, Action.REFUSED, risk=why, backfill=backfill))
        context.targets[reference.table_name] = name
    after = update.to_body()
    shown = tuple((member, None, member_value(after, member)) for member in differing_members(after, {}))
    plan = FieldPlan(name, Action.ADD, values=shown, body=update, backfill=backfill)
    return _Draft(plan, change=Change(name, name, Action.ADD, {}, after, backfill))


def _removal_draft(name: str, held: TableField | None) -> _Draft:
    """
    Return a tombstone's row.

    The field removed with its values, refused for Blink's own fields, or ``unchanged`` when Blink has no such field.
    """
    if held is None:
        return _Draft(FieldPlan(name, Action.UNCHANGED, risk=f"Blink has no field {name!r}: nothing to remove"))
    blink_name = str(held.name) if held.name != name else ""
    before = field_body(held)
    why = removal_refused(name, held)  # (Blink's own fields: no one may remove them)
    if why:
        return _Draft(FieldPlan(name, Action.REFUSED, risk=why, blink_name=blink_name), before)
    plan = FieldPlan(name, Action.REMOVE, blink_name=blink_name)
    return _Draft(plan, before, Change(name, str(held.name), Action.REMOVE, before))


def _draft_against_blink(
    name: str, update: FieldUpdate, held: TableField, recorded: Any, replace: bool, context: _Context
) -> _Draft:
    """Return one declared field against Blink's: the merged body (unless ``replace``), with its drift."""
    before = field_body(held)
    if kept_by_blink(held):
        why = f"{name!r} is one of Blink's own system fields, which Blink keeps to itself"
        return _Draft(FieldPlan(name, Action.REFUSED, risk=why), before)
    drift = tuple(differing_members(before, recorded)) if isinstance(recorded, Mapping) else ()
    changed_by = _changed_by(held) if drift else ""
    body = update if replace else merge_field(update, before, name=name)
    draft = _draft_against(name, before, body, str(held.name), context)
    kept = () if replace else _kept_checks(update, held.attributes or {})
    plan = dataclasses.replace(draft.plan, drift=drift, changed_by=changed_by, kept=kept)
    return _Draft(plan, before, draft.change)


def _kept_checks(update: FieldUpdate, held: Mapping[str, Any]) -> tuple[str, ...]:
    """
    Return the checks Blink enforces on the field (``held``: its attributes) that the declaration leaves out.

    The merge keeps them.
    """
    given = update.attributes.model_dump(exclude_none=True) if update.attributes is not None else {}
    return tuple(check for check in CHECKS if check not in given and held.get(check) is True)


_NO_CONTEXT = _Context("", {})


def _draft_against(
    name: str,
    before: Mapping[str, Any] | None,
    body: FieldUpdate,
    blink_name: str,
    context: _Context = _NO_CONTEXT,
) -> _Draft:
    """
    Return one field's row: ``body`` (what would be sent) against ``before`` (None: nothing known).

    Its change (of Blink's field ``blink_name``) is judged with the rows later; a type change is a retype when the
    entry declares its ``type_change``, else refused.
    """
    problems = contradictions(body)
    if problems:
        return _Draft(
            FieldPlan(name, Action.REFUSED, risk=f"the declaration contradicts itself: {'; '.join(problems)}")
        )
    after = body.to_body()
    if before is None:
        shown = tuple((member, None, member_value(after, member)) for member in differing_members(after, {}))
        return _Draft(FieldPlan(name, Action.ADD, values=shown, body=body))  # every member declared, for the reviewer
    if not differing_members(after, before):
        return _Draft(FieldPlan(name, Action.UNCHANGED, body=body))
    backfill = context.backfills.get(name)
    if after.get("type") == before.get("type") or before.get("type") is None:
        members, values = _differences(after, before)
        plan = FieldPlan(name, Action.CHANGE, members, values, body=body)
        return _Draft(plan, change=Change(name, blink_name, Action.CHANGE, before, after, backfill))
    how = context.type_changes.get(name)
    if how is None:
        members, values = _differences(after, before)
        return _Draft(FieldPlan(name, Action.REFUSED, members, values, _type_change_refused(name, before, after)))
    new_field = retyped_body(body)
    after = new_field.to_body()
    members, values = _differences(after, before)
    plan = FieldPlan(name, Action.RETYPE, members, values, body=new_field, backfill=backfill)
    return _Draft(plan, change=Change(name, blink_name, Action.RETYPE, before, after, backfill, how))


def _differences(
    after: Mapping[str, Any], before: Mapping[str, Any]
) -> tuple[tuple[str, ...], tuple[tuple[str, Any, Any], ...]]:
    """Return the members of two bodies that differ, and each one's ``(member, before, after)``."""
    members = differing_members(after, before)
    values = tuple((member, member_value(before, member), member_value(after, member)) for member in members)
    return tuple(members), values


def _type_change_refused(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """Return why a type change without ``type_change`` is refused, and what to do instead."""
    return (
        f"the type would change from {before['type']!r} to {after.get('type')!r}; Blink refuses type changes: "
        f"add a new field of the new type (another name and display name), copy the values over, then "
        f'remove this one with a tombstone {{"field": {name!r}, "remove": true}}; or declare "type_change": "copy" '
        "on the entry, and the migration does it"
    )


def _changed_by(held: TableField) -> str:
    """Return `` (by <who>, <when>)`` as Blink says who changed the field last, and when."""
    when = ""
    if isinstance(held.updated_at, int) and not isinstance(held.updated_at, bool):
        try:
            when = dt.datetime.fromtimestamp(held.updated_at / 1000, dt.UTC).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            when = str(held.updated_at)
    said = [
        part
        for part in (f"by {one_line(held.updated_by)}" if held.updated_by else "", f"at {when}" if when else "")
        if part
    ]
    return f" (last changed in Blink {' '.join(said)})" if said else ""  # (Blink keeps one editor per field)
