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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blinkops_provider._inputs import one_line
from blinkops_provider._states import Action
from blinkops_provider.migrations._matching import (
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
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan, TablePlan, digest
from blinkops_provider.migrations._rows import (
    NOTHING_READ,
    RowFacts,
    judge_add,
    judge_change,
    judge_retype,
    removal_said,
)
from blinkops_provider.models import BlinkTable, FieldUpdate, TableField, backfill_unfit


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
    backfills: Mapping[str, Any] | None = None,
    type_changes: Mapping[str, str] | None = None,
    recorded_by: str = "",
) -> SchemaPlan:
    """
    Return the plan of ``declared`` for one table.

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
    :param facts: what was counted in the table's rows (:func:`~._rows.read_rows`), for the
        changes that touch data.
    :param backfills: the declared ``backfill`` value of each field that has one.
    :param type_changes: the declared ``type_change`` of each field that has one.
    """
    host, ws_id, table = target
    table_plan = table_plan or TablePlan(name=table)
    facts = facts if facts.counted or facts.unread else dataclasses.replace(facts, estimate=table_plan.rows)
    backfills, type_changes = backfills or {}, type_changes or {}
    judged: dict[str, Any] = {"facts": facts, "backfills": backfills, "type_changes": type_changes}
    rows = plan_fields(declared, recorded, live, table=table, replace=replace, removals=removals, notes=notes, **judged)
    undeclared = _undeclared(rows, declared, recorded, live)
    schema = [[name, update.to_body(), backfills.get(name), type_changes.get(name)] for name, update in declared]
    return SchemaPlan(
        ws_id=ws_id,
        table=table,
        record=record,
        recorded_at=recorded_at,
        recorded_by=recorded_by,
        fields=tuple(rows),
        undeclared=tuple(undeclared),
        schema_digest=digest([[host, ws_id, table], schema, replace, list(removals), list(declared_table)]),
        record_digest=digest([recorded_at, recorded]),
        live_digest=_livedigest(live, rows, table_plan),
        unread=unread,
        table_plan=table_plan,
        rows_digest=_rowsdigest(rows, facts),
    )


def _rowsdigest(rows: Sequence[FieldPlan], facts: RowFacts) -> str:
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


def _livedigest(live: Sequence[TableField] | None, rows: Sequence[FieldPlan], table: TablePlan) -> str:
    """Return the digest of the declared fields as Blink holds them, and of the table ("" without a live read)."""
    if live is None:
        return ""
    held = {field.name: field for field in live}
    bodies = [
        [row.name_in_blink, field_body(held[row.name_in_blink]) if row.name_in_blink in held else None] for row in rows
    ]
    return digest([bodies, table.to_xcom()])


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
        return _table_to_create(table, display_name, description) if create else _unheld(table, declared, listed)
    before, after = _table_members(held, display_name, description)
    members = tuple(member for member in after if after[member] != before[member])
    if not members:
        return TablePlan(Action.UNCHANGED, held.name, rows=held.estimated_records_count)
    values: tuple[tuple[str, Any, Any], ...] = tuple((member, before[member], after[member]) for member in members)
    body = {**after, "settings": dict(held.settings or {})}
    return TablePlan(Action.CHANGE, held.name, members, values, body=body, rows=held.estimated_records_count)


def _table_members(
    held: BlinkTable, display_name: str | None, description: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """
    Return the table's display name and description as Blink holds them, and as declared.

    What is not declared is kept as held.
    """
    before = {"display_name": held.display_name or held.name, "description": held.description or ""}
    given = {"display_name": display_name, "description": description}
    return before, {member: _or(given[member], before[member]) for member in before}


def _or(given: str | None, held: str) -> str:
    """Return ``given``, or ``held`` when nothing is given."""
    return held if given is None else given


def _table_to_create(table: str, display_name: str | None, description: str | None) -> TablePlan:
    """Return the plan of a table Blink does not have, to create (with the declared display name, else its name)."""
    after = {"display_name": display_name or table, "description": description or ""}
    made = tuple((member, None, value) for member, value in after.items())
    return TablePlan(Action.CREATE, "", tuple(after), made, body={**after, "options": []}, rows=0)


def _unheld(table: str, declared: Sequence[str | None], listed: bool) -> TablePlan:
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
    Return each declared field against Blink's field (``live``, matched by :func:`match_fields`) or.

    Without a live read, its recorded body: ``add`` (a field Blink lacks: ``POST``; without a live read, one the record
    lacks), ``change`` (destructive when it can orphan data or loses a check), ``unchanged``, or ``refused`` (not sent:
    a type change, a field Blink keeps to itself, a declaration that contradicts itself or cannot be told apart); then
    each removal: ``remove`` (with ``rows``, the rows that lose their values), ``unchanged`` (Blink has no such field)
    or ``refused``. A change that touches data is judged with ``facts``, the rows counted (:mod:`._rows`).
    """
    declared = list(declared)
    if live is None:
        return _against_record(declared, recorded, removals)
    fields = list(live.values()) if isinstance(live, Mapping) else list(live)
    held = {field.name: field for field in fields if field.name is not None}
    matches = match_fields(declared, removals, fields, notes or {})
    targets = _referenced(fields)
    context = _Context(targets, table, facts, backfills or {}, type_changes or {})
    plans = [_one_live(name, update, matches, held, recorded, replace, context) for name, update in declared]
    return plans + [_removal(name, held.get(matches.gone.get(name, "")), facts) for name in removals]


@dataclass(frozen=True)
class _Context:
    """
    What each field's plan is judged with.

    The tables Blink's reference fields link to, the table's name, the rows counted, and the declared backfills.
    """

    targets: dict[str, str]
    table: str
    facts: RowFacts
    backfills: Mapping[str, Any]
    type_changes: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _one_live(
    name: str,
    update: FieldUpdate,
    matches: Matches,
    held: Mapping[str, TableField],
    recorded: Mapping[str, Any],
    replace: bool,
    context: _Context,
) -> FieldPlan:
    """Return one declared field's plan against Blink's fields: refused, an add, or against the field it is."""
    if name in matches.refused:
        return FieldPlan(name, Action.REFUSED, risk=matches.refused[name])
    backfill = context.backfills.get(name)
    if name not in matches.found:
        return _backfill_checked(dataclasses.replace(_add(name, update, context), backfill=backfill))
    found = matches.found[name]
    plan = _against_blink(name, update, held[found], recorded.get(name), replace, context)
    return _backfill_checked(dataclasses.replace(plan, blink_name=found if found != name else "", backfill=backfill))


def _backfill_checked(plan: FieldPlan) -> FieldPlan:
    """Return the plan, refused when the field it sends cannot hold its backfill (its type, a select's options)."""
    if plan.backfill is None or plan.body is None or plan.action not in (Action.ADD, Action.CHANGE, Action.RETYPE):
        return plan
    body = plan.body.to_body()
    options = (body.get("attributes") or {}).get("options")
    why = backfill_unfit(body.get("type"), plan.backfill, options if isinstance(options, list) else None)
    if not why:
        return plan
    return dataclasses.replace(plan, action=Action.REFUSED, risk=f"{why}: nothing is sent", body=None)


def _against_record(
    declared: Sequence[tuple[str, FieldUpdate]], recorded: Mapping[str, Any], removals: Sequence[str]
) -> list[FieldPlan]:
    """Return each declared field against its recorded body (Blink's fields read not served); no removal."""
    plans = []
    for name, update in declared:
        before = recorded.get(name)
        plans.append(_against(name, update, before if isinstance(before, Mapping) else None, update))
    why = "a removal needs Blink's fields read, which this Blink does not serve: nothing is removed"
    return plans + [FieldPlan(name, Action.REFUSED, risk=why) for name in removals]


def _referenced(fields: Sequence[TableField]) -> dict[str, str]:
    """Return the tables Blink's ``reference`` fields link to: target -> the field that links."""
    targets = {}
    for held in fields:
        reference = (held.attributes or {}).get("table_reference") if held.type == "reference" else None
        if isinstance(reference, Mapping) and isinstance(reference.get("table_name"), str):
            targets[reference["table_name"]] = str(held.name)
    return targets


def _add(name: str, update: FieldUpdate, context: _Context) -> FieldPlan:
    """
    Return the plan of a declared field Blink lacks.

    Added with its declaration as the ``POST`` body (refused when required on a table with rows and no backfill).
    """
    targets, table = context.targets, context.table
    problems = contradictions(update)
    if problems:
        return FieldPlan(name, Action.REFUSED, risk=f"the declaration contradicts itself: {'; '.join(problems)}")
    reference = update.attributes.table_reference if update.attributes is not None else None
    if update.type is not None and update.type.value == "reference" and reference is not None:
        linked = targets.get(reference.table_name)
        if linked is not None:
            why = (
                f"table {table!r} links to table {reference.table_name!r} through field {linked!r} already, and Blink "
                "allows one reference field per target table"
            )
            return FieldPlan(name, Action.REFUSED, risk=why)
        targets[reference.table_name] = name
    after = update.to_body()
    shown = tuple((member, None, member_value(after, member)) for member in differing_members(after, {}))
    judged = judge_add(after, context.facts, context.backfills.get(name))
    if judged.refusal:
        return FieldPlan(name, Action.REFUSED, values=shown, risk=judged.refusal, counts=judged.counts)
    return FieldPlan(name, Action.ADD, values=shown, body=update, counts=judged.counts or None)


def _removal(name: str, held: TableField | None, facts: RowFacts) -> FieldPlan:
    """
    Return a tombstone.

    The field removed with its values, refused for Blink's own fields, or ``unchanged`` when Blink has no such field.
    """
    if held is None:
        return FieldPlan(name, Action.UNCHANGED, risk=f"Blink has no field {name!r}: nothing to remove")
    blink_name = str(held.name) if held.name != name else ""
    why = removal_refused(name, held)  # (the gate says what no one may remove)
    if why:
        return FieldPlan(name, Action.REFUSED, risk=why, blink_name=blink_name)
    why, rows, _ = removal_said(facts, str(held.name))
    if facts.counted:
        counts: dict[str, Any] = {"rows": facts.total, "with_value": rows}
    else:
        counts = {"estimate": facts.estimate, **({"unread": facts.unread} if facts.unread else {})}
    return FieldPlan(name, Action.REMOVE, risk=why, blink_name=blink_name, rows=rows, counts=counts)


def _against_blink(
    name: str, update: FieldUpdate, held: TableField, recorded: Any, replace: bool, context: _Context
) -> FieldPlan:
    """Return one declared field against Blink's: the merged body (unless ``replace``), with its drift."""
    if kept_by_blink(held):
        why = f"{name!r} is one of Blink's own system fields, which Blink keeps to itself"
        return FieldPlan(name, Action.REFUSED, risk=why)
    before = field_body(held)
    drift = tuple(differing_members(before, recorded)) if isinstance(recorded, Mapping) else ()
    changed_by = _changed_by(held) if drift else ""
    body = update if replace else merge_field(update, held, name=name)
    plan = _against(name, update, before, body, str(held.name), context)
    kept = () if replace else _kept_checks(update, held.attributes or {})
    return dataclasses.replace(plan, drift=drift, changed_by=changed_by, kept=kept)


def _kept_checks(update: FieldUpdate, held: Mapping[str, Any]) -> tuple[str, ...]:
    """
    Return the checks Blink enforces on the field (``held``: its attributes) that the declaration leaves out.

    The merge keeps them.
    """
    given = update.attributes.model_dump(exclude_none=True) if update.attributes is not None else {}
    return tuple(check for check in _ENFORCED if check not in given and held.get(check) is True)


_ENFORCED = ("required", "is_unique")
"""The checks Blink enforces on a field's values."""


def _against(
    name: str,
    update: FieldUpdate,
    before: Mapping[str, Any] | None,
    body: FieldUpdate,
    blink_name: str | None = None,
    context: _Context | None = None,
) -> FieldPlan:
    """
    Return one field's plan.

    ``body`` (what would be sent) against ``before`` (None: nothing known), judged with the rows of Blink's field
    ``blink_name`` as ``context`` counted them (neither without a live read).
    """
    problems = contradictions(body)
    if problems:
        return FieldPlan(name, Action.REFUSED, risk=f"the declaration contradicts itself: {'; '.join(problems)}")
    after = body.to_body()
    if before is None:
        shown = tuple((member, None, member_value(after, member)) for member in differing_members(after, {}))
        return FieldPlan(name, Action.ADD, values=shown, body=body)  # every member declared, for the reviewer
    if not differing_members(after, before):
        return FieldPlan(name, Action.UNCHANGED, body=body)
    context = context or _Context({}, "", NOTHING_READ, {})
    if after.get("type") == before.get("type") or before.get("type") is None:
        return _change(name, before, body, blink_name or name, context)
    how = context.type_changes.get(name)
    if how is None:
        members, values = _differences(after, before)
        return FieldPlan(name, Action.REFUSED, members, values, _retyped(name, before, after))
    return _retype(name, before, retyped_body(body), blink_name or name, context, how)


def _differences(
    after: Mapping[str, Any], before: Mapping[str, Any]
) -> tuple[tuple[str, ...], tuple[tuple[str, Any, Any], ...]]:
    """Return the members of two bodies that differ, and each one's ``(member, before, after)``."""
    members = differing_members(after, before)
    return tuple(members), tuple(
        (member, member_value(before, member), member_value(after, member)) for member in members
    )


def _retype(
    name: str, before: Mapping[str, Any], new_field: FieldUpdate, blink_name: str, context: _Context, how: str
) -> FieldPlan:
    """
    Return the plan of a declared type change (``type_change``).

    A ``retype`` whose body is the new field (:func:`retyped_body`), judged with the rows (:func:`._rows.judge_retype`),
    or refused.
    """
    after = new_field.to_body()
    members, values = _differences(after, before)
    backfill = context.backfills.get(name)
    judged = judge_retype(blink_name, before, after, context.facts, how, backfill)
    counts = dict(judged.counts) or None
    if judged.refusal:
        return FieldPlan(name, Action.REFUSED, members, values, judged.refusal, counts=counts)
    return FieldPlan(
        name, Action.RETYPE, members, values, judged.risk, body=new_field, counts=counts, backfill=backfill
    )


def _retyped(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """Return why a type change is refused, and what to do instead."""
    return (
        f"the type would change from {before['type']!r} to {after.get('type')!r}; Blink refuses type changes: "
        f"add a new field of the new type (another name and display name), copy the values over, then "
        f'remove this one with a tombstone {{"field": {name!r}, "remove": true}}; or declare "type_change": "copy" '
        "on the entry, and the migration does it"
    )


def _change(name: str, before: Mapping[str, Any], body: FieldUpdate, blink_name: str, context: _Context) -> FieldPlan:
    """Return a change, judged with the rows (:func:`._rows.judge_change`): refused, or sent with its risk."""
    after = body.to_body()
    members, values = _differences(after, before)
    judged = judge_change(after, before, blink_name, context.facts, context.backfills.get(name))
    counts = dict(judged.counts) or None
    if judged.refusal:
        return FieldPlan(name, Action.REFUSED, members, values, judged.refusal, counts=counts)
    return FieldPlan(name, Action.CHANGE, members, values, judged.risk, body=body, counts=counts)


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
