"""
The plan of a schema migration.

Each declared field against the table as Blink holds it (``change`` with the members that differ, ``unchanged``, or
``refused``), what changed in Blink since this provider's last apply (``drift``), the risk rules that flag a change
destructive, and the plan's identity. Its text is the review's (``_review``: :func:`plan_text`).

The baseline is Blink's live schema (``GET .../fields``, one read per table). Blink's field
update replaces the whole field, so each field's body is the declaration merged with what Blink
holds (:func:`merge_field`), unless ``replace``. Where Blink does not
serve the read (404 or 405), the plan falls back to the record of the last apply
(:mod:`blinkops_provider.migrations._lock`) and says so in its first line; a field the record
does not hold is then an ``add``.

Which of Blink's fields (and tables) a declared entry is, without guessing Blink's naming rule.

Blink derives the name of a field it adds (and of a table it creates) from its display name, by a
rule it does not publish. So a declared entry is matched to Blink's field:

1. by ``name``: Blink has a field named as the entry;
2. by the record's note of the name Blink gave the field when this provider added it (so a
   later change of its display name still finds it);
3. by ``display_name``: exactly one of Blink's fields is shown so, and no other entry claims it.

An entry that matches nothing is a field to add. Two entries that would add fields shown alike,
an entry whose display name two of Blink's fields show, two entries claiming one field, and an
add whose display name a field of Blink's already shows are refused before anything is sent:
each would leave Blink with fields nobody can tell apart. A table is matched by name, then by
the record's note, then by display name in Blink's tables read.

How a declared field's body is made from what Blink holds: Blink's field update replaces the
whole field, so the body sent is the declaration merged with the field as Blink holds it (what the
declaration leaves out is sent back as held), and a body that contradicts itself is refused
before it is sent.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from blinkops_provider._inputs import describe_errors, one_line
from blinkops_provider._states import FIELD_ACTIONS, REMOVING, Action, FieldOutcome
from blinkops_provider.exceptions import BlinkInputError, BlinkStalePlanError
from blinkops_provider.migrations._review import BASELINE, RECORD_BASELINE, log_plan, plan_text
from blinkops_provider.migrations._rows import (
    NOTHING_READ,
    RowFacts,
    judge_add,
    judge_change,
    judge_retype,
    removal_said,
)
from blinkops_provider.models import (
    READ_ONLY_ATTRIBUTES,
    BlinkTable,
    FieldAttributes,
    FieldType,
    FieldUpdate,
    TableField,
    backfill_unfit,
)


@dataclass
class Matches:
    """
    What the declaration's entries are in Blink.

    :ivar found: declared name -> the name of Blink's field it is.
    :ivar refused: declared name -> why it is refused (not sent).
    :ivar gone: removed (tombstoned) name -> the name of Blink's field it removes.
    """

    found: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)


def match_fields(
    declared: Sequence[tuple[str, FieldUpdate]],
    removals: Sequence[str],
    live: Sequence[TableField],
    notes: Mapping[str, str],
) -> Matches:
    """
    Return each declared entry's field in Blink (``live``), and each removal's.

    An entry is matched by name, the record's ``notes``, then display name; a removal by name,
    then the record's note.
    """
    by_name = {held.name: held for held in live if held.name is not None}
    matches = Matches()
    matches.found.update({name: name for name, _ in declared if name in by_name})
    claimed = set(matches.found.values())
    _by_note(declared, by_name, notes, matches, claimed)
    _by_display_name(declared, live, matches, claimed)
    _adds_told_apart(declared, live, matches)
    for name in removals:
        target = name if name in by_name else notes.get(name)
        if target in by_name:
            matches.gone[name] = str(target)
    return matches


def _by_note(
    declared: Sequence[tuple[str, FieldUpdate]],
    by_name: Mapping[str, TableField],
    notes: Mapping[str, str],
    matches: Matches,
    claimed: set[str],
) -> None:
    """
    Step 2.

    The entries not found by name, matched by the record's note of the name Blink gave the field this provider added (a
    field no entry claimed yet).
    """
    for name, _ in declared:
        noted = notes.get(name)
        if name not in matches.found and noted in by_name and noted not in claimed:
            matches.found[name] = claimed_name = str(noted)
            claimed.add(claimed_name)


def _by_display_name(
    declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches, claimed: set[str]
) -> None:
    """Step 3: the entries not found by name, matched by display name to one unclaimed field."""
    wanted: dict[str, list[str]] = defaultdict(list)
    for name, update in declared:
        if name in matches.found:
            continue
        hits = [held.name for held in live if held.display_name == update.display_name and held.name not in claimed]
        if len(hits) > 1:
            shown = ", ".join(repr(hit) for hit in hits)
            matches.refused[name] = (
                f"its display name {update.display_name!r} is shown by {len(hits)} of Blink's fields ({shown}): "
                "declare it under the name of the one it is"
            )
        elif hits:
            wanted[str(hits[0])].append(name)
    _one_entry_each(wanted, matches)


def _one_entry_each(wanted: Mapping[str, list[str]], matches: Matches) -> None:
    """
    Each of Blink's fields that one entry matched by display name is that entry's.

    One that several matched is refused to all of them.
    """
    for blink_name, names in wanted.items():
        if len(names) == 1:
            matches.found[names[0]] = blink_name
            continue
        for name in names:
            matches.refused[name] = (
                f"entries {', '.join(map(repr, names))} all match Blink's field {blink_name!r} by display name: "
                "declare it once, under its name"
            )


def _adds_told_apart(declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches) -> None:
    """Refuse adds that could not be told apart: two shown alike, or one shown as a field Blink has."""
    adds: dict[str, list[str]] = defaultdict(list)
    for name, update in declared:
        if name not in matches.found and name not in matches.refused:
            adds[str(update.display_name)].append(name)
    shown = {held.display_name: held.name for held in live}
    for display_name, names in adds.items():
        for name in names:
            if len(names) > 1:
                matches.refused[name] = (
                    f"entries {', '.join(map(repr, names))} would add fields shown alike as {display_name!r}: "
                    "Blink derives names from display names, so give each its own"
                )
            elif display_name in shown:
                matches.refused[name] = (
                    f"Blink's field {shown[display_name]!r} is shown as {display_name!r} already and another entry "
                    "declares it: give the new field a display name of its own"
                )


def match_table(table: str, tables: Sequence[BlinkTable], noted: str | None) -> BlinkTable | None:
    """
    Return the table ``table`` names in Blink's tables read.

    By name, the record's note of Blink's name, then the one table shown as ``table``; None: no such table. A
    declaration's display name never picks a table here (:func:`created_as`).

    :raises ValueError: two or more tables are shown so and none is named so.
    """
    by_name = {entry.name: entry for entry in tables}
    for name in (table, noted):
        if name is not None and name in by_name:
            return by_name[name]
    return _shown_as(tables, table)


def created_as(table: str, tables: Sequence[BlinkTable], declared: str) -> tuple[BlinkTable | None, str]:
    """
    With ``create_table``, when no table is named or shown as ``table`` and no record notes Blink's name.

    The one table shown as the ``declared`` display name, taken as the one this DAG created under it, and the plan's
    sentence that says so; ``(None, "")`` when there is none.

    :raises ValueError: two or more tables are shown so.
    """
    found = _shown_as(tables, declared)
    if found is None:
        return None, ""
    return found, (
        f"no table is named or shown as {one_line(table)!r}: the table shown as the declared display name "
        f"{one_line(declared)!r} (Blink's name {one_line(found.name)!r}) is taken as the one this DAG created "
        "(create_table=True, and no record notes Blink's name); give table its name to plan against it by name"
    )


def _shown_as(tables: Sequence[BlinkTable], shown_as: str) -> BlinkTable | None:
    """
    Return the one table shown as ``shown_as`` (None: none).

    :raises ValueError: two or more are.
    """
    shown = [entry for entry in tables if entry.display_name == shown_as]
    if len(shown) > 1:
        raise ValueError(
            f"{len(shown)} tables of the workspace are shown as {one_line(shown_as)!r} "
            f"({', '.join(repr(one_line(entry.name)) for entry in shown)}): give table the name of the one it is"
        )
    return shown[0] if shown else None


_SELECT_TYPES = (FieldType.SINGLE_SELECT, FieldType.MULTI_SELECT)


def contradictions(update: FieldUpdate) -> list[str]:
    """
    Return what contradicts itself in one field's body.

    A select without options or with an option given twice, a ``reference`` without ``table_reference``, ``include_time:
    true`` on a type that is not ``date``. (``include_time: false`` and a ``default_value`` outside the options are not
    contradictions: Blink's own published example sends both.)
    """
    attributes, kind = update.attributes or FieldAttributes(), update.type
    options = attributes.options or []
    problems = [f"option {option!r} is given twice" for n, option in enumerate(options) if option in options[:n]]
    return problems + [said(kind) for rule, said in _CONTRADICTIONS if rule(kind, attributes)]


_CONTRADICTIONS: tuple[tuple[Callable[[Any, FieldAttributes], bool], Callable[[Any], str]], ...] = (
    (
        lambda kind, attributes: kind in _SELECT_TYPES and not attributes.options,
        lambda kind: f"a {kind.value!r} field needs attributes.options (its choices)",
    ),
    (
        lambda kind, attributes: attributes.include_time is True and kind not in (None, FieldType.DATE),
        lambda kind: f"include_time is for a 'date' field, and this one is {kind.value!r}",
    ),
    (
        lambda kind, attributes: kind is FieldType.REFERENCE and attributes.table_reference is None,
        lambda kind: "a 'reference' field needs attributes.table_reference (the table it links to)",
    ),
)
"""Each rule a field's body may break (its type, its attributes), and what is said of it."""


def field_body(field: TableField | Mapping[str, Any]) -> dict[str, Any]:
    """
    Return a field as Blink holds it, in the shape of an update's body.

    ``type``, ``display_name``, ``description`` and the attributes, without Blink's read-only markers (``system``,
    ``protected``) and without members Blink left empty.
    """
    held = field.model_dump(mode="json", exclude_none=True) if isinstance(field, TableField) else dict(field)
    body = {member: held[member] for member in ("type", "display_name", "description") if held.get(member) is not None}
    attributes = held.get("attributes")
    if isinstance(attributes, Mapping):
        body["attributes"] = {
            name: value for name, value in attributes.items() if name not in READ_ONLY_ATTRIBUTES and value is not None
        }
    return body


def merge_field(update: FieldUpdate, held: TableField | Mapping[str, Any], *, name: str) -> FieldUpdate:
    """
    Return the body that changes what ``update`` gives and keeps everything else of the field as Blink holds it.

    Blink's update replaces the whole field, so a member or attribute the update leaves out (``required``,
    ``is_unique``, ``description``, one Blink added later) is sent as held.

    :param name: the field's name, for the error.
    :raises BlinkInputError: Blink holds a value this provider cannot send back unchanged
        (then ``replace=True`` sends the update as given).
    """
    kept, given = field_body(held), update.to_body()
    merged = {**kept, **given, "attributes": {**kept.get("attributes", {}), **given.get("attributes", {})}}
    try:
        return FieldUpdate.model_validate(merged, context={"from_blink": True})
    except ValidationError as err:
        raise BlinkInputError(
            f"field {name!r} as Blink holds it cannot be sent back unchanged ({describe_errors(err.errors())}); "
            "nothing was sent: replace=True sends the declaration as given, and Blink resets what it leaves out"
        ) from None


_TYPE_BOUND: tuple[tuple[str, tuple[FieldType, ...]], ...] = (
    ("options", _SELECT_TYPES),
    ("include_time", (FieldType.DATE,)),
    ("table_reference", (FieldType.REFERENCE,)),
)
"""The attributes that belong to some types only: a retype's new field of another type does not carry them."""


def retyped_body(body: FieldUpdate) -> FieldUpdate:
    """
    Return the new field of a retype: ``body`` (the declaration merged with the old field) for the new type.

    Everything the old field holds is carried (description, ``required``, ``is_unique``, the default, attributes this
    provider does not know), but the attributes of the old type alone (a select's options, a date's ``include_time``,
    a reference's target) when the new type has none; the plan shows each dropped one.
    """
    given = body.to_body()
    attributes = dict(given.get("attributes") or {})
    for attribute, types in _TYPE_BOUND:
        if attribute in attributes and body.type not in types:
            del attributes[attribute]
    return FieldUpdate.model_validate({**given, "attributes": attributes}, context={"from_blink": True})


_DONE: dict[str, FieldOutcome] = {
    Action.ADD: FieldOutcome.ADDED,
    Action.CHANGE: FieldOutcome.CHANGED,
    Action.UNCHANGED: FieldOutcome.UNCHANGED,
    Action.REFUSED: FieldOutcome.CHANGED,
    Action.REMOVE: FieldOutcome.REMOVED,
    Action.RETYPE: FieldOutcome.RETYPED,
}


@dataclass(frozen=True)
class FieldPlan:
    """
    What the apply will do to one field.

    :ivar action: ``add``, ``change``, ``retype`` (a declared type change: a new field, the values
        copied, the old one removed), ``remove`` (a tombstone), ``unchanged`` or ``refused`` (not
        sent, and while any entry is refused the apply sends nothing to the table).
    :ivar members: what differs, e.g. ``display_name``, ``attributes.options``.
    :ivar values: ``(member, before, after)`` for each member shown to a reviewer (before is
        None for an ``add``).
    :ivar risk: why a ``change`` is destructive (it can orphan existing values), or why a field
        is ``refused``; empty otherwise.
    :ivar drift: the members whose value in Blink differs from the record of the last apply
        (changed in Blink since); empty without a record or a live read.
    :ivar changed_by: who changed the field in Blink last, and when, as Blink says (with drift).
    :ivar body: what the apply sends for this field (None when it sends nothing): the ``PUT``
        body of a change, the ``POST`` body of an add (sent without its checks, which a ``PUT`` gives
        once its rows are filled), the new field of a retype.
    :ivar blink_name: Blink's name of the field, when it is not the declared one (Blink derived
        it when the field was added).
    :ivar rows: for a ``remove``, how many rows lose their values: counted, or Blink's
        ``estimated_records_count`` where the rows could not be read (``counts`` says which; None:
        neither is known).
    """

    field: str
    action: str
    members: tuple[str, ...] = ()
    values: tuple[tuple[str, Any, Any], ...] = ()
    risk: str = ""
    drift: tuple[str, ...] = ()
    changed_by: str = ""
    body: FieldUpdate | None = dataclasses.field(default=None, compare=False)
    blink_name: str = ""
    rows: int | None = None
    kept: tuple[str, ...] = ()
    """The checks Blink enforces on the field (``required``, ``is_unique``) that the declaration
    leaves out and the merge sends back as Blink holds them: shown to a reviewer."""
    counts: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)
    """What the plan counted in the table's rows for this field: ``rows``, and
    ``with_value``, ``empty``, ``repeated``, ``options`` or ``backfill`` as the change needs; or
    ``estimate`` and ``unread`` when the rows could not be read. None: no row was needed."""
    backfill: Any = dataclasses.field(default=None, compare=False)
    """The declared value that fills the field's empty rows (None: none declared)."""

    @property
    def destructive(self) -> bool:
        """A change that can orphan data already in the table, or a removal whose field holds values."""
        if self.action == Action.REMOVE:
            return not (self.counts and self.counts.get("with_value") == 0)
        return self.action == Action.RETYPE or (self.action == Action.CHANGE and bool(self.risk))

    @property
    def name_in_blink(self) -> str:
        """The name Blink's paths take for this field."""
        return self.blink_name or self.field

    def to_xcom(self) -> dict[str, Any]:
        row = {
            "field": self.field,
            "action": str(self.action),  # plain text: an XCom, rendered or not, is JSON
            "members": list(self.members),
            "values": [{"member": m, "before": b, "after": a} for m, b, a in self.values],
            "destructive": self.destructive,
            "risk": self.risk,
            "drift": list(self.drift),
        }
        if self.blink_name:
            row["blink_name"] = self.blink_name
        if self.action == Action.REMOVE:
            row["rows"] = self.rows
        if self.kept:
            row["kept"] = list(self.kept)
        if self.counts:
            row["counts"] = dict(self.counts)
        if self.backfill is not None:
            row["backfill"] = self.backfill
        return row


@dataclass(frozen=True)
class TablePlan:
    """
    What the apply will do to the table itself.

    :ivar action: ``create`` (Blink does not have it, and ``create_table=True``), ``change`` (its
        display name or description), or ``unchanged``.
    :ivar name: Blink's name of the table ("" for one to create: Blink derives it).
    :ivar values: ``(member, before, after)`` of what changes.
    :ivar body: the ``POST .../table`` body (without its fields) or the ``PUT .../table/{table}``
        body; None when nothing is sent.
    :ivar rows: the table's ``estimated_records_count`` (None: Blink does not say).
    :ivar note: what could not be planned, or how the table was found when not by its name, in a
        sentence ("" when neither).
    """

    action: str = Action.UNCHANGED
    name: str = ""
    members: tuple[str, ...] = ()
    values: tuple[tuple[str, Any, Any], ...] = ()
    body: dict[str, Any] | None = dataclasses.field(default=None, compare=False)
    rows: int | None = None
    note: str = ""

    def to_xcom(self) -> dict[str, Any]:
        return {
            "action": str(self.action),  # plain text: an XCom, rendered or not, is JSON
            "name": self.name,
            "members": list(self.members),
            "values": [{"member": m, "before": b, "after": a} for m, b, a in self.values],
            "rows": self.rows,
            "note": self.note,
        }


@dataclass(frozen=True)
class SchemaPlan:
    """
    The declared schema of one table against the record of the last apply.

    :ivar record: where the record is kept.
    :ivar recorded_at: when it was last written (ISO 8601), None when there is none yet.
    :ivar fields: one :class:`FieldPlan` per declared field, in the declared order.
    :ivar undeclared: fields in the record that the schema no longer declares (left as they are:
        a field update cannot delete a field).
    :ivar schema_digest: a digest of the target (Blink, workspace, table) and the declared schema.
    :ivar record_digest: a digest of the record's fields and when they were recorded.
    :ivar live_digest: a digest of the declared fields as Blink held them when the plan was made.
    :ivar unread: why Blink's live schema could not be read (its status, e.g. ``404``): the plan
        was made against the record; empty when it was made against Blink.
    :ivar table_plan: what the apply does to the table itself (create it, change its display
        name or description, or nothing).
    """

    ws_id: str
    table: str
    record: str
    recorded_at: str | None
    fields: tuple[FieldPlan, ...]
    undeclared: tuple[str, ...] = ()
    schema_digest: str = ""
    record_digest: str = ""
    live_digest: str = ""
    unread: str = ""
    table_plan: TablePlan = TablePlan()
    rows_digest: str = ""
    """A digest of what the plan counted in the table's rows ("" when nothing was counted)."""
    recorded_by: str = ""
    """Who let the last apply through, as its record says (``approved by X at T in review``, or ``acknowledged``)."""

    @property
    def fingerprint(self) -> str:
        """
        The plan's identity: 16 hex digits of the target, the declared schema, the record and what Blink held.

        The same inputs give the same fingerprint; an apply given an approved plan sends nothing unless its own plan has
        the same one (a field changed in Blink since makes the approved plan stale).
        """
        parts = [self.schema_digest, self.record_digest, self.live_digest]
        return _digest([*parts, self.rows_digest] if self.rows_digest else parts)

    @property
    def against_blink(self) -> bool:
        """
        Whether the plan was made against Blink's fields read.

        Then an ``add`` is a field Blink lacks (the apply creates it); against the record alone, one the record lacks
        (the apply sends it as every other body, a full replacement).
        """
        return not self.unread

    @property
    def baseline(self) -> str:
        """What the plan was made against, in a sentence."""
        return RECORD_BASELINE if self.unread else BASELINE

    @cached_property
    def _by_field(self) -> dict[str, FieldPlan]:
        return {plan.field: plan for plan in self.fields}

    def action(self, field: str) -> str:
        """Return the action planned for a declared field."""
        return self._by_field[field].action

    def members(self, field: str) -> tuple[str, ...]:
        """Return the members that differ for a declared field (empty unless ``change`` or ``refused``)."""
        return self._by_field[field].members

    def risk(self, field: str) -> str:
        """Return why a field is refused or its change destructive (empty otherwise)."""
        return self._by_field[field].risk

    def done(self, field: str) -> str:
        """Return a declared field's outcome once Blink confirmed it: ``added``, ``changed`` or ``unchanged``."""
        return _DONE[self._by_field[field].action]

    @property
    def counts(self) -> dict[str, int]:
        """
        Count the fields by action.

        ``{"add": n, "change": n, "unchanged": n, "refused": n, "remove": n, "retype": n, "gone": n,
        "destructive": n}``: ``unchanged`` the declared fields Blink holds as declared, ``gone`` the tombstones of
        fields Blink no longer has (nothing to remove), ``destructive`` every row the Destructive section lists
        (changes, removals that lose values, and retypes).
        """
        counts: dict[str, int] = {action.value: 0 for action in FIELD_ACTIONS}  # plain text keys: XCom-ready
        for plan in self.fields:
            counts[str(plan.action)] += 1
        counts["gone"] = sum(plan.action == Action.UNCHANGED and bool(plan.risk) for plan in self.fields)
        counts[Action.UNCHANGED.value] -= counts["gone"]
        counts["destructive"] = sum(plan.destructive for plan in self.fields)
        return counts

    @property
    def removals(self) -> list[FieldPlan]:
        """
        The rows that remove a field from Blink.

        Its removal, or a retype (which copies the values to a new field first): both pass the removal gate.
        """
        return [plan for plan in self.fields if plan.action in REMOVING]

    @property
    def has_changes(self) -> bool:
        """
        Whether the apply would add, change, remove or refuse anything, or create or change the table.

        Something for a person to review.
        """
        return self.table_plan.action != Action.UNCHANGED or any(
            plan.action != Action.UNCHANGED for plan in self.fields
        )

    def check_whole(self) -> None:
        """
        Check that the plan refuses no entry: a reviewed plan is one unit, so a plan with a refusal applies nothing.

        :raises BlinkInputError: every refused entry and why, in full; nothing was sent.
        """
        refused = [row for row in self.fields if row.action == Action.REFUSED]
        if not refused:
            return
        said = "; ".join(f"{one_line(row.field)!r}: {row.risk}" for row in refused)
        raise BlinkInputError(
            f"plan {self.fingerprint} for {self.ws_id}/{self.table} refuses {len(refused)} of {len(self.fields)} "
            f"entries, so nothing is applied to this table (a plan is applied whole or not at all): {said}. Change the "
            "declaration and plan again"
        )

    def describe(self) -> str:
        """Return the plan as text for the log and for a reviewer (the text a review shows)."""
        return plan_text(self)

    def log_to(self, log: Any) -> None:
        """Log the plan: its summary, refused and destructive changes, and each field added or changed."""
        log_plan(self, log)

    def to_xcom(self) -> dict[str, Any]:
        """
        Return a JSON-ready dict.

        The identity, the fields with their actions and values, the counts, the baseline and the text.
        """
        return {
            "fingerprint": self.fingerprint,
            "schema_digest": self.schema_digest,
            "record_digest": self.record_digest,
            "live_digest": self.live_digest,
            "rows_digest": self.rows_digest,
            "unread": self.unread,
            "ws_id": self.ws_id,
            "table": self.table,
            "record": self.record,
            "recorded_at": self.recorded_at,
            "baseline": self.baseline,
            "fields": [plan.to_xcom() for plan in self.fields],
            "counts": self.counts,
            "has_changes": self.has_changes,
            "undeclared": list(self.undeclared),
            "table_plan": self.table_plan.to_xcom(),
            "text": self.describe(),
        }

    def _check_rows(self, approved: Mapping[str, Any]) -> None:
        """
        Refuse a plan XCom with this fingerprint whose rows or text say anything else: it was edited.

        A reviewer may have approved a false description, so nothing is applied.
        """
        edited = _edited(approved, self)
        if edited:
            raise BlinkStalePlanError(
                f"the plan this apply was given, {self.fingerprint}, shows {' and '.join(edited)} other than it would "
                "apply: "
                "its XCom was edited after it was made. Nothing was sent: plan again and review the new plan"
            )

    def check_approved(self, approved: Mapping[str, Any] | str) -> None:
        """
        Refuse to apply anything but the approved plan.

        :param approved: the approved plan's XCom (:meth:`to_xcom`), or its fingerprint.
        :raises BlinkStalePlanError: this plan is not the approved one, saying what changed since:
            the record (when, and which fields are planned differently now), or the schema.
        """
        if isinstance(approved, str):
            if approved.strip() == self.fingerprint:
                return
            given, why = approved.strip(), ["its fingerprint is not this plan's"]
        else:
            if approved.get("fingerprint") == self.fingerprint:
                self._check_rows(approved)
                return
            given, why = str(approved.get("fingerprint")), self._stale_reasons(approved)
        raise BlinkStalePlanError(
            f"the plan this apply was given, {one_line(given)}, is not what would be applied now (plan "
            f"{self.fingerprint}): {'; '.join(why)}. Nothing was sent: plan again and review the new plan"
        )

    def _stale_reasons(self, approved: Mapping[str, Any]) -> list[str]:
        """Return what changed between the approved plan's XCom and this plan."""
        checks = (
            (approved.get("ws_id"), approved.get("table")) == (self.ws_id, self.table),
            approved.get("record_digest") == self.record_digest,
            approved.get("schema_digest") == self.schema_digest,
            approved.get("live_digest", "") == self.live_digest,
            approved.get("rows_digest", "") == self.rows_digest,
        )
        reasons = (
            f"it was made for {approved.get('ws_id')}/{approved.get('table')}",
            f"the record at {self.record} changed since the plan (last apply then: "
            f"{approved.get('recorded_at') or 'none'}; now: {self.recorded_at or 'none'})",
            "the declared schema changed since the plan",
            "the declared fields changed in Blink since the plan (or Blink's read answers differently)",
            "the table's rows changed since the plan (what it counted is not what they hold now)",
        )
        why = [reason for same, reason in zip(checks, reasons, strict=True) if not same]
        moved = self._moved(approved)
        listed = ", ".join(map(repr, moved[:20])) + (f" and {len(moved) - 20} more" if len(moved) > 20 else "")
        return why + ([f"the fields planned differently now (each changed since the plan): {listed}"] if moved else [])

    def _moved(self, approved: Mapping[str, Any]) -> list[str]:
        """Return the fields whose rows differ between the approved plan's XCom and this plan."""
        then = {entry.get("field"): entry for entry in approved.get("fields") or [] if isinstance(entry, Mapping)}
        now: dict[Any, Any] = {plan.field: plan.to_xcom() for plan in self.fields}
        return [str(name) for name in dict.fromkeys([*then, *now]) if then.get(name) != now.get(name)]


def _edited(approved: Mapping[str, Any], plan: SchemaPlan) -> list[str]:
    """Return what of an approved plan's XCom differs from ``plan`` although its fingerprint is the same."""
    edited = [] if approved.get("fields") == [row.to_xcom() for row in plan.fields] else ["rows"]
    table = plan.table_plan.to_xcom()
    edited += [] if approved.get("table_plan", table) == table else ["a table change"]
    return edited + ([] if approved.get("text", plan.describe()) == plan.describe() else ["a text"])


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
        schema_digest=_digest([[host, ws_id, table], schema, replace, list(removals), list(declared_table)]),
        record_digest=_digest([recorded_at, recorded]),
        live_digest=_live_digest(live, rows, table_plan),
        unread=unread,
        table_plan=table_plan,
        rows_digest=_rows_digest(rows, facts),
    )


def _rows_digest(rows: Sequence[FieldPlan], facts: RowFacts) -> str:
    """Return the digest of what the plan counted in the rows ("" when it counted nothing)."""
    return _digest([[row.field, row.counts] for row in rows if row.counts]) if facts.counted else ""


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
    return [str(f.name) for f in live if f.name not in matched and not _system(f)]


def _system(field: TableField) -> bool:
    """Return whether Blink keeps a field to itself (``system`` or ``protected``)."""
    markers = field.attributes or {}
    return any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES)


def _live_digest(live: Sequence[TableField] | None, rows: Sequence[FieldPlan], table: TablePlan) -> str:
    """Return the digest of the declared fields as Blink holds them, and of the table ("" without a live read)."""
    if live is None:
        return ""
    held = {field.name: field for field in live}
    bodies = [
        [row.name_in_blink, field_body(held[row.name_in_blink]) if row.name_in_blink in held else None] for row in rows
    ]
    return _digest([bodies, table.to_xcom()])


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
    shown = tuple((member, None, _member(after, member)) for member in differing_members(after, {}))
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
    markers = held.attributes or {}
    if any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES):
        why = f"{name!r} is one of Blink's own system fields, which Blink keeps to itself"
        return FieldPlan(name, Action.REFUSED, risk=why)
    before = field_body(held)
    drift = tuple(differing_members(before, recorded)) if isinstance(recorded, Mapping) else ()
    changed_by = _changed_by(held) if drift else ""
    body = update if replace else merge_field(update, held, name=name)
    plan = _against(name, update, before, body, str(held.name), context)
    kept = () if replace else _kept_checks(update, markers)
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
        shown = tuple((member, None, _member(after, member)) for member in differing_members(after, {}))
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
    return tuple(members), tuple((member, _member(before, member), _member(after, member)) for member in members)


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


def _member(body: Mapping[str, Any], member: str) -> Any:
    if member.startswith("attributes."):
        attributes = body.get("attributes")
        return attributes.get(member.split(".", 1)[1]) if isinstance(attributes, Mapping) else None
    return body.get(member)


def differing_members(declared: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """
    Return the members of two field bodies that differ.

    ``type``, ``display_name``, ``description``, and each attribute as ``attributes.<name>`` (an absent attribute and an
    absent ``attributes`` count as unset).
    """
    members = [name for name in ("type", "display_name") if declared.get(name) != recorded.get(name)]
    if (declared.get("description") or "") != (recorded.get("description") or ""):
        members.append("description")
    return members + _differing_attributes(declared.get("attributes") or {}, recorded.get("attributes") or {})


def _differing_attributes(after: Mapping[str, Any], before: Any) -> list[str]:
    """Return ``attributes.<name>`` for each attribute that differs (a malformed ``before``: none set)."""
    before = before if isinstance(before, Mapping) else {}
    return [f"attributes.{name}" for name in sorted(set(after) | set(before)) if after.get(name) != before.get(name)]


def removal_refused(name: str, held: TableField) -> str:
    """
    Return why no one may remove Blink's field ``held`` (declared as ``name``), whoever approves.

    It is one of Blink's system or protected fields. "" when a removal of it may be let through (by a person's Approve,
    or ``acknowledge_risks``: :func:`admit`).
    """
    markers = held.attributes or {}
    if any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES):
        return f"{name!r} is one of Blink's system or protected fields, which Blink does not let anyone remove"
    return ""
