"""The plan of a schema migration: each declared field against the record of this provider's
last apply to the table (``add``, ``change`` with the members that differ, ``unchanged``, or
``refused``), the risk rules that flag a change destructive, and the plan's identity.

Blink's API can update a table's field but cannot read one, so the only baseline there is, is
what this provider last applied and recorded (:mod:`blinkops_provider.migrations.record`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from blinkops_provider.exceptions import BlinkStalePlanError
from blinkops_provider.models import FieldUpdate

__all__ = [
    "ACTIONS",
    "ADD",
    "BASELINE",
    "CHANGE",
    "REFUSED",
    "UNCHANGED",
    "FieldPlan",
    "SchemaPlan",
    "differing_members",
    "one_line",
    "plan_fields",
]

ADD, CHANGE, UNCHANGED, REFUSED = "add", "change", "unchanged", "refused"
ACTIONS = (ADD, CHANGE, UNCHANGED, REFUSED)
_DONE = {ADD: "added", CHANGE: "changed", UNCHANGED: "unchanged", REFUSED: "changed"}

SHOWN = 60
"""The most characters of one value a plan row shows (then ``…``)."""

BASELINE = (
    "The baseline is the last apply this provider recorded, not Blink's current state: Blink's API "
    "cannot read a table's fields, so changes made in Blink's UI or by other tools are not seen."
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
    """

    field: str
    action: str
    members: tuple[str, ...] = ()
    values: tuple[tuple[str, Any, Any], ...] = ()
    risk: str = ""

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
    :ivar record_digest: a digest of the baseline: the record's fields and when they were recorded.
    """

    ws_id: str
    table: str
    record: str
    recorded_at: str | None
    fields: tuple[FieldPlan, ...]
    undeclared: tuple[str, ...] = ()
    schema_digest: str = ""
    record_digest: str = ""

    @property
    def fingerprint(self) -> str:
        """The plan's identity: 16 hex digits of the target, the declared schema and the baseline.
        The same inputs give the same fingerprint; an apply given an approved plan sends nothing
        unless its own plan has the same one."""
        return _digest([self.schema_digest, self.record_digest])

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
        lines = [
            f"Plan {self.fingerprint} for {self.ws_id}/{self.table}: {counts[ADD]} to add, {counts[CHANGE]} to "
            f"change ({counts['destructive']} destructive), {counts[UNCHANGED]} unchanged, {counts[REFUSED]} "
            f"refused (last apply: {since}, at {self.record})",
        ]
        refused = [plan for plan in self.fields if plan.action == REFUSED]
        destructive = [plan for plan in self.fields if plan.destructive]
        if refused:
            lines += [
                "",
                "**Refused** (Blink refuses these changes; the apply does not send them and reports them failed):",
            ]
            lines += [f"- {_cell(plan.field)}: {plan.risk}" for plan in refused]
        if destructive:
            lines += ["", "**Destructive** (these changes can orphan values already in the table):"]
            lines += [f"- {_cell(plan.field)}: {plan.risk}" for plan in destructive]
        lines += [
            "",
            BASELINE,
            "",
            "| field | action | details |",
            "|---|---|---|",
            *(f"| {_cell(plan.field)} | {_action_cell(plan)} | {_details(plan)} |" for plan in self.fields),
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
            if line and line != BASELINE:  # plain text: no Markdown emphasis, bullets as indents
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
            "ws_id": self.ws_id,
            "table": self.table,
            "record": self.record,
            "recorded_at": self.recorded_at,
            "baseline": BASELINE,
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
            then = {entry.get("field"): entry for entry in approved.get("fields") or [] if isinstance(entry, Mapping)}
            now = {plan.field: plan.to_xcom() for plan in self.fields}
            names: dict[Any, None] = dict.fromkeys([*then, *now])
            moved = [str(name) for name in names if then.get(name) != now.get(name)]
            listed = ", ".join(map(repr, moved[:20])) + (f" and {len(moved) - 20} more" if len(moved) > 20 else "")
            why = []
            if (approved.get("ws_id"), approved.get("table")) != (self.ws_id, self.table):
                why.append(f"it was made for {approved.get('ws_id')}/{approved.get('table')}")
            if approved.get("record_digest") != self.record_digest:
                why.append(
                    f"the record at {self.record} changed since the plan (last apply then: "
                    f"{approved.get('recorded_at') or 'none'}; now: {self.recorded_at or 'none'})"
                )
            if approved.get("schema_digest") != self.schema_digest:
                why.append("the declared schema changed since the plan")
            if moved:
                why.append(f"fields planned differently now: {listed}")
        raise BlinkStalePlanError(
            f"the approved plan is not what would be applied now (plan {self.fingerprint}): {'; '.join(why)}. "
            "Nothing was sent: plan again and review the new plan"
        )


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


def plan_fields(declared: Iterable[tuple[str, FieldUpdate]], recorded: Mapping[str, Any]) -> list[FieldPlan]:
    """Each declared field against its recorded body: ``add``, ``change`` (destructive when it
    can orphan data), ``unchanged``, or ``refused`` (a type change, which Blink refuses)."""
    plans = []
    for name, update in declared:
        after, before = update.to_body(), recorded.get(name)
        if not isinstance(before, Mapping):
            shown = tuple((member, None, after[member]) for member in ("type", "display_name") if member in after)
            plans.append(FieldPlan(name, ADD, values=shown))
            continue
        members = differing_members(after, before)
        if not members:
            plans.append(FieldPlan(name, UNCHANGED))
            continue
        values = tuple((member, _member(before, member), _member(after, member)) for member in members)
        if "type" in members and before.get("type") is not None:
            why = f"the type would change from {before['type']!r} to {after.get('type')!r}; Blink refuses type changes"
            plans.append(FieldPlan(name, REFUSED, tuple(members), values, why))
            continue
        plans.append(FieldPlan(name, CHANGE, tuple(members), values, _destruction(after, before)))
    return plans


def _member(body: Mapping[str, Any], member: str) -> Any:
    if member.startswith("attributes."):
        attributes = body.get("attributes")
        return attributes.get(member.split(".", 1)[1]) if isinstance(attributes, Mapping) else None
    return body.get(member)


def _destruction(after: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    """Why a change can orphan values already in the table: options removed from a select, or
    another table referenced; empty when it cannot."""
    risks = []
    old_options, new_options = _member(before, "attributes.options"), _member(after, "attributes.options")
    if isinstance(old_options, list):
        kept = new_options if isinstance(new_options, list) else []
        removed = [option for option in old_options if option not in kept]
        if removed:
            risks.append(f"options removed: {', '.join(map(_shown, removed))} (values using them are orphaned)")
    old_ref, new_ref = _member(before, "attributes.table_reference"), _member(after, "attributes.table_reference")
    if old_ref is not None and _target(new_ref) != _target(old_ref):  # the displayed field alone breaks nothing
        risks.append(f"the reference moves from {_shown(old_ref)} to {_shown(new_ref)} (existing links break)")
    return "; ".join(risks)


def _target(reference: Any) -> Any:
    """The table a ``table_reference`` links to."""
    return reference.get("table_name") if isinstance(reference, Mapping) else reference


def differing_members(declared: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """The members of two field bodies that differ: ``type``, ``display_name``, and each attribute
    as ``attributes.<name>`` (an absent attribute and an absent ``attributes`` count as unset)."""
    members = [name for name in ("type", "display_name") if declared.get(name) != recorded.get(name)]
    after, before = declared.get("attributes") or {}, recorded.get("attributes") or {}
    if not isinstance(before, Mapping):
        before = {}
    names = sorted(set(after) | set(before))
    members += [f"attributes.{name}" for name in names if after.get(name) != before.get(name)]
    return members
