"""The plan of a schema migration: each declared field against the table as Blink holds it
(``change`` with the members that differ, ``unchanged``, or ``refused``), what changed in Blink
since this provider's last apply (``drift``), the risk rules that flag a change destructive, and
the plan's identity.

The baseline is Blink's live schema (``GET .../fields``, one read per table). Blink's field
update replaces the whole field, so each field's body is the declaration merged with what Blink
holds (:func:`~blinkops_provider.models.merge_field`), unless ``replace``. Where Blink does not
serve the read (404 or 405), the plan falls back to the record of the last apply
(:mod:`blinkops_provider.migrations.record`) and says so in its first line; a field the record
does not hold is then an ``add``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from blinkops_provider.exceptions import BlinkStalePlanError
from blinkops_provider.models import (
    READ_ONLY_ATTRIBUTES,
    FieldUpdate,
    TableField,
    contradictions,
    field_body,
    merge_field,
)

__all__ = [
    "ACTIONS",
    "ADD",
    "BASELINE",
    "CHANGE",
    "RECORD_BASELINE",
    "REFUSED",
    "UNCHANGED",
    "FieldPlan",
    "SchemaPlan",
    "differing_members",
    "make_plan",
    "one_line",
    "plan_fields",
]

ADD, CHANGE, UNCHANGED, REFUSED = "add", "change", "unchanged", "refused"
ACTIONS = (ADD, CHANGE, UNCHANGED, REFUSED)
_DONE = {ADD: "added", CHANGE: "changed", UNCHANGED: "unchanged", REFUSED: "changed"}

SHOWN = 60
"""The most characters of one value a plan row shows (then ``…``)."""

BASELINE = (
    "The baseline is the table as Blink holds it, read when the plan was made: what the declaration "
    "leaves out of a field is sent as Blink holds it, so nothing is reset by omission."
)
RECORD_BASELINE = (
    "The baseline is the last apply this provider recorded, not Blink's current state: changes made "
    "in Blink's UI or by other tools are not seen, and Blink resets what a declaration leaves out."
)


@dataclass(frozen=True)
class FieldPlan:
    """What the apply will do to one field.

    :ivar action: ``add``, ``change``, ``unchanged`` or ``refused`` (a change Blink refuses, such
        as a type change: not sent).
    :ivar members: what differs, e.g. ``display_name``, ``attributes.options``.
    :ivar values: ``(member, before, after)`` for each member shown to a reviewer (before is
        None for an ``add``).
    :ivar risk: why a ``change`` is destructive (it can orphan existing values), or why a field
        is ``refused``; empty otherwise.
    :ivar drift: the members whose value in Blink differs from the record of the last apply
        (changed in Blink since); empty without a record or a live read.
    :ivar changed_by: who changed the field in Blink last, and when, as Blink says (with drift).
    :ivar body: what the apply sends for this field (None when it sends nothing).
    """

    field: str
    action: str
    members: tuple[str, ...] = ()
    values: tuple[tuple[str, Any, Any], ...] = ()
    risk: str = ""
    drift: tuple[str, ...] = ()
    changed_by: str = ""
    body: FieldUpdate | None = dataclasses.field(default=None, compare=False)

    @property
    def destructive(self) -> bool:
        """A change that can orphan data already in the table."""
        return self.action == CHANGE and bool(self.risk)

    def to_xcom(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "action": self.action,
            "members": list(self.members),
            "values": [{"member": m, "before": b, "after": a} for m, b, a in self.values],
            "destructive": self.destructive,
            "risk": self.risk,
            "drift": list(self.drift),
        }


@dataclass(frozen=True)
class SchemaPlan:
    """The declared schema of one table against the record of the last apply.

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

    @property
    def fingerprint(self) -> str:
        """The plan's identity: 16 hex digits of the target, the declared schema, the record and
        what Blink held. The same inputs give the same fingerprint; an apply given an approved
        plan sends nothing unless its own plan has the same one (a field changed in Blink since
        makes the approved plan stale)."""
        return _digest([self.schema_digest, self.record_digest, self.live_digest])

    @property
    def baseline(self) -> str:
        """What the plan was made against, in a sentence."""
        return RECORD_BASELINE if self.unread else BASELINE

    @cached_property
    def _by_field(self) -> dict[str, FieldPlan]:
        return {plan.field: plan for plan in self.fields}

    def action(self, field: str) -> str:
        """The action planned for a declared field."""
        return self._by_field[field].action

    def members(self, field: str) -> tuple[str, ...]:
        """The members that differ for a declared field (empty unless ``change`` or ``refused``)."""
        return self._by_field[field].members

    def risk(self, field: str) -> str:
        """Why a field is refused or its change destructive (empty otherwise)."""
        return self._by_field[field].risk

    def done(self, field: str) -> str:
        """A declared field's outcome once Blink confirmed it: ``added``, ``changed`` or ``unchanged``."""
        return _DONE[self._by_field[field].action]

    @property
    def counts(self) -> dict[str, int]:
        """``{"add": n, "change": n, "unchanged": n, "refused": n, "destructive": n}`` (the
        destructive ones are among the changes)."""
        counts = {action: 0 for action in ACTIONS}
        for plan in self.fields:
            counts[plan.action] += 1
        counts["destructive"] = sum(plan.destructive for plan in self.fields)
        return counts

    @property
    def has_changes(self) -> bool:
        """Whether the apply would add, change or refuse anything: something for a person to review."""
        return any(plan.action != UNCHANGED for plan in self.fields)

    def describe(self) -> str:
        """The plan as text for the log and for a reviewer: a summary line, refused and
        destructive changes first, the baseline, and a table of the fields with their values
        (Markdown, which reads as plain text too)."""
        counts = self.counts
        since = f"recorded {self.recorded_at}" if self.recorded_at else "none recorded yet"
        lines = (
            []
            if not self.unread
            else [
                f"Blink's live schema could not be read ({self.unread}): planned against the record of the last apply",
            ]
        )
        lines += [
            f"Plan {self.fingerprint} for {self.ws_id}/{self.table}: {counts[ADD]} to add, {counts[CHANGE]} to "
            f"change ({counts['destructive']} destructive), {counts[UNCHANGED]} unchanged, {counts[REFUSED]} "
            f"refused (last apply: {since}, at {self.record})",
        ]
        lines += _flagged(self.fields)
        lines += [
            "",
            self.baseline,
            "",
            "| field | action | details |",
            "|---|---|---|",
            *_rows(self.fields),
        ]
        if self.undeclared:
            names = ", ".join(map(repr, self.undeclared))
            lines += ["", f"Recorded but no longer declared (left as they are): {names}"]
        return "\n".join(lines)

    def log_to(self, log: Any) -> None:
        """Log the plan: its summary, refused and destructive changes, and each field that is
        added or changed, one line each; unchanged fields are counted, not listed."""
        text = self.describe().split("\n| field | action | details |")[0]
        for line in text.splitlines():
            if line and line != self.baseline:  # plain text: no Markdown emphasis, bullets as indents
                log.info(
                    "%s",
                    line.replace("**", "").replace("- ", "  ", 1) if line.startswith("- ") else line.replace("**", ""),
                )
        for plan in self.fields:
            if plan.action in (ADD, CHANGE):
                log.info("  %s: %s %s", one_line(plan.field), _action_cell(plan), _details(plan))
        if self.counts[UNCHANGED]:
            log.info("  (%d field(s) unchanged)", self.counts[UNCHANGED])

    def to_xcom(self) -> dict[str, Any]:
        """A JSON-ready dict: the identity, the fields with their actions and values, the counts,
        the baseline and the text."""
        return {
            "fingerprint": self.fingerprint,
            "schema_digest": self.schema_digest,
            "record_digest": self.record_digest,
            "live_digest": self.live_digest,
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
            "text": self.describe(),
        }

    def _check_rows(self, approved: Mapping[str, Any]) -> None:
        """A plan XCom with this fingerprint whose rows or text say anything else was edited: a
        reviewer may have approved a false description, so nothing is applied."""
        edited = _edited(approved, self)
        if edited:
            raise BlinkStalePlanError(
                f"the approved plan {self.fingerprint} has {' and '.join(edited)} that are not what it would apply: "
                "its XCom was edited after it was made. Nothing was sent: plan again and review the new plan"
            )

    def check_approved(self, approved: Mapping[str, Any] | str) -> None:
        """Refuse to apply anything but the approved plan.

        :param approved: the approved plan's XCom (:meth:`to_xcom`), or its fingerprint.
        :raises BlinkStalePlanError: this plan is not the approved one, saying what changed since:
            the record (when, and which fields are planned differently now), or the schema.
        """
        if isinstance(approved, str):
            if approved.strip() == self.fingerprint:
                return
            why = [f"the approved plan's fingerprint is {approved.strip()!r}"]
        else:
            if approved.get("fingerprint") == self.fingerprint:
                self._check_rows(approved)
                return
            why = self._stale_reasons(approved)
        raise BlinkStalePlanError(
            f"the approved plan is not what would be applied now (plan {self.fingerprint}): {'; '.join(why)}. "
            "Nothing was sent: plan again and review the new plan"
        )

    def _stale_reasons(self, approved: Mapping[str, Any]) -> list[str]:
        """What changed between the approved plan's XCom and this plan."""
        checks = (
            (approved.get("ws_id"), approved.get("table")) == (self.ws_id, self.table),
            approved.get("record_digest") == self.record_digest,
            approved.get("schema_digest") == self.schema_digest,
            approved.get("live_digest", "") == self.live_digest,
        )
        reasons = (
            f"it was made for {approved.get('ws_id')}/{approved.get('table')}",
            f"the record at {self.record} changed since the plan (last apply then: "
            f"{approved.get('recorded_at') or 'none'}; now: {self.recorded_at or 'none'})",
            "the declared schema changed since the plan",
            "the declared fields changed in Blink since the plan (or Blink's read answers differently)",
        )
        why = [reason for same, reason in zip(checks, reasons, strict=True) if not same]
        moved = self._moved(approved)
        listed = ", ".join(map(repr, moved[:20])) + (f" and {len(moved) - 20} more" if len(moved) > 20 else "")
        return why + ([f"fields planned differently now: {listed}"] if moved else [])

    def _moved(self, approved: Mapping[str, Any]) -> list[str]:
        """The fields whose rows differ between the approved plan's XCom and this plan."""
        then = {entry.get("field"): entry for entry in approved.get("fields") or [] if isinstance(entry, Mapping)}
        now: dict[Any, Any] = {plan.field: plan.to_xcom() for plan in self.fields}
        return [str(name) for name in dict.fromkeys([*then, *now]) if then.get(name) != now.get(name)]


def _edited(approved: Mapping[str, Any], plan: SchemaPlan) -> list[str]:
    """What of an approved plan's XCom differs from ``plan`` although its fingerprint is the same."""
    edited = [] if approved.get("fields") == [row.to_xcom() for row in plan.fields] else ["rows"]
    return edited + ([] if approved.get("text", plan.describe()) == plan.describe() else ["text"])


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


_FLAGS = (
    (
        "**Refused** (Blink refuses these changes; the apply does not send them and reports them failed):",
        lambda plan: plan.action == REFUSED,
        lambda plan: plan.risk,
    ),
    (
        "**Destructive** (these changes can orphan values already in the table):",
        lambda plan: plan.destructive,
        lambda plan: plan.risk,
    ),
    (
        "**Changed in Blink since the last apply** (the plan is made against Blink's values):",
        lambda plan: bool(plan.drift),
        lambda plan: f"{', '.join(plan.drift)}{plan.changed_by}",
    ),
)
"""The plan's flagged rows, in the order a reviewer reads them: a heading, which rows, what each says."""


def _flagged(fields: Sequence[FieldPlan]) -> list[str]:
    """The refused, destructive and drifted rows, each kind under its heading (none: no heading)."""
    lines: list[str] = []
    for heading, flagged, said in _FLAGS:
        rows = [plan for plan in fields if flagged(plan)]
        lines += ["", heading, *(f"- {_cell(plan.field)}: {said(plan)}" for plan in rows)] if rows else []
    return lines


def _rows(fields: Sequence[FieldPlan]) -> list[str]:
    """The table's rows: one per field to add, change or refuse, then the unchanged ones folded
    into one row with their count and names."""
    rows = [f"| {_cell(p.field)} | {_action_cell(p)} | {_details(p)} |" for p in fields if p.action != UNCHANGED]
    same = [p.field for p in fields if p.action == UNCHANGED]
    if same:
        names = _cell(", ".join(same))
        rows.append(f"| {len(same)} field{'s' if len(same) > 1 else ''} | unchanged | {names} |")
    return rows


def _action_cell(plan: FieldPlan) -> str:
    return "change (destructive)" if plan.destructive else plan.action


def _details(plan: FieldPlan) -> str:
    if plan.action == ADD:
        return _cell(", ".join(f"{member} {_shown(after)}" for member, _, after in plan.values))
    shown = "; ".join(f"{member}: {_shown(before)} → {_shown(after)}" for member, before, after in plan.values)
    return _cell(f"{shown} ({plan.risk})" if plan.action == REFUSED else shown)


_BREAKS = {ord(ch): f"\\u{ord(ch):04x}" for ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(text: str) -> str:
    """A name as a log line or a table cell shows it: on one line, nothing in it able to start
    another (line breaks of every kind escaped), ``|`` and ``\\`` escaped."""
    return _cell(text)


def _cell(text: str) -> str:
    """Text as one Markdown table cell: a backslash and ``|`` escaped, and every character that
    could break the line (``\\n``, ``\\r``, VT, FF, NEL, U+2028, U+2029, ...) written as its escape."""
    return text.replace("\\", "\\\\").replace("|", "\\|").translate(_BREAKS)


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
) -> SchemaPlan:
    """The plan of ``declared`` for one table.

    :param target: ``(Blink's host, workspace, table)``.
    :param record: where the record of the last apply is kept.
    :param recorded: the record's field bodies (``{}`` when there is none yet).
    :param live: the table's fields as Blink holds them, or None when Blink did not serve the
        read (``unread`` says why): the plan is then made against the record.
    :param replace: send each declaration as given (Blink resets what it leaves out) instead
        of its merge with what Blink holds.
    """
    host, ws_id, table = target
    held = None if live is None else {field.name: field for field in live if field.name is not None}
    names = {name for name, _ in declared}
    return SchemaPlan(
        ws_id=ws_id,
        table=table,
        record=record,
        recorded_at=recorded_at,
        fields=tuple(plan_fields(declared, recorded, held, table=table, replace=replace)),
        undeclared=tuple(name for name in recorded if name not in names),
        schema_digest=_digest([[host, ws_id, table], [[name, update.to_body()] for name, update in declared], replace]),
        record_digest=_digest([recorded_at, recorded]),
        live_digest=_live_digest(held, names=[name for name, _ in declared]),
        unread=unread,
    )


def _live_digest(held: Mapping[str, TableField] | None, names: Sequence[str]) -> str:
    """The digest of the declared fields as Blink holds them ("" without a live read)."""
    return "" if held is None else _digest([field_body(held[n]) if n in held else None for n in names])


def plan_fields(
    declared: Iterable[tuple[str, FieldUpdate]],
    recorded: Mapping[str, Any],
    live: Mapping[str, TableField] | None = None,
    *,
    table: str = "",
    replace: bool = False,
) -> list[FieldPlan]:
    """Each declared field against Blink's field (``live``) or, without a live read, its recorded
    body: ``add`` (only without a live read), ``change`` (destructive when it can orphan data or
    loses a check), ``unchanged``, or ``refused`` (not sent: a type change, a field Blink lacks or
    keeps to itself, a declaration that contradicts itself)."""
    plans = []
    for name, update in declared:
        before = recorded.get(name)
        if live is None:
            plan = _against(name, update, before if isinstance(before, Mapping) else None, update)
        elif name not in live:
            why = f"no field {name!r} in table {table!r}; create it in Blink first (a field update cannot add one)"
            plan = FieldPlan(name, REFUSED, risk=why)
        else:
            plan = _against_blink(name, update, live[name], before, replace)
        plans.append(plan)
    return plans


def _against_blink(name: str, update: FieldUpdate, held: TableField, recorded: Any, replace: bool) -> FieldPlan:
    """One declared field against Blink's: the merged body (unless ``replace``), with its drift."""
    markers = held.attributes or {}
    if any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES):
        why = f"{name!r} is one of Blink's own system fields, which Blink keeps to itself"
        return FieldPlan(name, REFUSED, risk=why)
    before = field_body(held)
    drift = tuple(differing_members(before, recorded)) if isinstance(recorded, Mapping) else ()
    changed_by = _changed_by(held) if drift else ""
    body = update if replace else merge_field(update, held, name=name)
    plan = _against(name, update, before, body)
    return dataclasses.replace(plan, drift=drift, changed_by=changed_by)


def _against(name: str, update: FieldUpdate, before: Mapping[str, Any] | None, body: FieldUpdate) -> FieldPlan:
    """One field's plan: ``body`` (what would be sent) against ``before`` (None: nothing known)."""
    problems = contradictions(body)
    if problems:
        return FieldPlan(name, REFUSED, risk=f"the declaration contradicts itself: {'; '.join(problems)}")
    after = body.to_body()
    if before is None:
        shown = tuple((member, None, _member(after, member)) for member in differing_members(after, {}))
        return FieldPlan(name, ADD, values=shown, body=body)  # every member declared, for the reviewer
    members = differing_members(after, before)
    if not members:
        return FieldPlan(name, UNCHANGED, body=body)
    values = tuple((member, _member(before, member), _member(after, member)) for member in members)
    if "type" in members and before.get("type") is not None:
        why = f"the type would change from {before['type']!r} to {after.get('type')!r}; Blink refuses type changes"
        return FieldPlan(name, REFUSED, tuple(members), values, why)
    return FieldPlan(name, CHANGE, tuple(members), values, _destruction(after, before), body=body)


def _changed_by(held: TableField) -> str:
    """`` (by <who>, <when>)`` as Blink says who changed the field last, and when."""
    when = ""
    if isinstance(held.updated_at, int) and not isinstance(held.updated_at, bool):
        try:
            when = dt.datetime.fromtimestamp(held.updated_at / 1000, dt.UTC).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            when = str(held.updated_at)
    said = [part for part in (f"by {one_line(held.updated_by)}" if held.updated_by else "", when) if part]
    return f" (changed in Blink {', '.join(said)})" if said else ""


def _member(body: Mapping[str, Any], member: str) -> Any:
    if member.startswith("attributes."):
        attributes = body.get("attributes")
        return attributes.get(member.split(".", 1)[1]) if isinstance(attributes, Mapping) else None
    return body.get(member)


def _destruction(after: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    """Why a change can orphan values already in the table: options removed from a select, or
    another table referenced; empty when it cannot."""
    risks = [*_orphaning(after, before)]
    risks += [why for member, why in _CHECKS if _member(after, member) is True and _member(before, member) is not True]
    if _member(before, "attributes.required") is True and _member(after, "attributes.required") is not True:
        risks.append("required dropped (a check is lost: rows may be saved without a value)")
    return "; ".join(risks)


def _orphaning(after: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    """Options removed from a select, and a reference moved to another table."""
    risks = []
    old_options, new_options = _member(before, "attributes.options"), _member(after, "attributes.options")
    kept = new_options if isinstance(new_options, list) else []
    removed = [option for option in old_options if option not in kept] if isinstance(old_options, list) else []
    if removed:
        risks.append(f"options removed: {', '.join(map(_shown, removed))} (values using them are orphaned)")
    old_ref, new_ref = _member(before, "attributes.table_reference"), _member(after, "attributes.table_reference")
    if old_ref is not None and _target(new_ref) != _target(old_ref):  # the displayed field alone breaks nothing
        risks.append(f"the reference moves from {_shown(old_ref)} to {_shown(new_ref)} (existing links break)")
    return risks


_CHECKS = (
    ("attributes.required", "required turned on (rows without a value no longer pass)"),
    ("attributes.is_unique", "is_unique turned on (rows with duplicate values conflict)"),
)


def _target(reference: Any) -> Any:
    """The table a ``table_reference`` links to."""
    return reference.get("table_name") if isinstance(reference, Mapping) else reference


def differing_members(declared: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """The members of two field bodies that differ: ``type``, ``display_name``, ``description``,
    and each attribute as ``attributes.<name>`` (an absent attribute and an absent ``attributes``
    count as unset)."""
    members = [name for name in ("type", "display_name") if declared.get(name) != recorded.get(name)]
    if (declared.get("description") or "") != (recorded.get("description") or ""):
        members.append("description")
    return members + _differing_attributes(declared.get("attributes") or {}, recorded.get("attributes") or {})


def _differing_attributes(after: Mapping[str, Any], before: Any) -> list[str]:
    """``attributes.<name>`` for each attribute that differs (a malformed ``before``: none set)."""
    before = before if isinstance(before, Mapping) else {}
    return [f"attributes.{name}" for name in sorted(set(after) | set(before)) if after.get(name) != before.get(name)]
