"""
A migration's plan: what an apply will do to each field and to the table, and the plan's identity.

:class:`FieldPlan` (one field: its action, the members that differ, the rows counted, the body sent),
:class:`TablePlan` (the table itself) and :class:`SchemaPlan` (one table's plan: its fields, its counts, its
fingerprint, and :meth:`SchemaPlan.check_whole`, which refuses a plan with a refused entry). The planner (``_plan``)
makes them; the gate (``_review``) and what a person reads (``_text``) read them; this module imports neither.

What a plan's XCom says it does (:func:`rows_of`, :func:`changes`, :func:`risky`) is read from its rows here, once for
the gate and the fleet's review.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import FieldUpdate
from blinkops_provider.utils.states import FIELD_ACTIONS, REMOVING, Action, FieldOutcome
from blinkops_provider.utils.text import one_line

RECORD_FALLBACK = "planned against the record of the last apply"
"""What a plan says when Blink's fields read was not served."""

BASELINE = (
    "The baseline is the table as Blink holds it, read when the plan was made: what the declaration "
    "leaves out of a field is sent as Blink holds it, so nothing is reset by omission."
)
RECORD_BASELINE = (
    "The baseline is the last apply this provider recorded, not Blink's current state: changes made "
    "in Blink's UI or by other tools are not seen, and Blink resets what a declaration leaves out."
)

_DONE: dict[str, FieldOutcome] = {
    Action.ADD: FieldOutcome.ADDED,
    Action.CHANGE: FieldOutcome.CHANGED,
    Action.UNCHANGED: FieldOutcome.UNCHANGED,
    Action.REFUSED: FieldOutcome.CHANGED,
    Action.REMOVE: FieldOutcome.REMOVED,
    Action.RETYPE: FieldOutcome.RETYPED,
}


@dataclass(frozen=True)
class WorkflowUse:
    """
    A Blink workflow whose steps use what a change takes away (#75): the plan's blast radius, one entry per workflow.

    :ivar workflow: the workflow's name.
    :ivar id: its id.
    :ivar active: whether it is active (a change that breaks an active workflow is destructive).
    :ivar steps: ``(step id, how it uses the field)`` of each step it breaks, e.g. ``("S1", "filtered on")``.
    :ivar unread: why the workflow could not be read ("" when it was): listed, never guessed, not a known break.
    """

    workflow: str
    id: str
    active: bool
    steps: tuple[tuple[str, str], ...] = ()
    unread: str = ""

    @property
    def breaks(self) -> bool:
        """Whether it is an active workflow that the change is known to break."""
        return self.active and not self.unread

    def to_xcom(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "workflow": self.workflow,
            "id": self.id,
            "active": self.active,
            "steps": [{"step": step, "use": use} for step, use in self.steps],
        }
        if self.unread:
            entry["unread"] = self.unread
        return entry


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
    destroys: bool = False
    """Whether what it sends destroys values or a check, as the risk rules judged it (``_risks``)."""
    workflows: tuple[WorkflowUse, ...] = ()
    """The workflows whose steps use what the change takes away (#75), and those that could not be read."""
    workflows_unread: str = ""
    """Why the workflows were not checked for this change ("" when they were, or when it breaks no step)."""

    @property
    def breaks_workflows(self) -> bool:
        """Whether the change breaks an active workflow's step, or could and the workflows were not checked."""
        return bool(self.workflows_unread) or any(use.breaks for use in self.workflows)

    @property
    def destructive(self) -> bool:
        """
        Whether the row is destructive: a change, a retype or a removal the risk rules judged to destroy.

        Values already in the table orphaned or deleted, or a check Blink enforces dropped (a removal of a field
        empty in every row destroys nothing); or any change, an add too, that breaks an active workflow's step, or
        could and the workflows were not checked.
        """
        if self.destroys and self.action in (Action.CHANGE, Action.RETYPE, Action.REMOVE):
            return True
        return self.breaks_workflows and self.action in (Action.ADD, Action.CHANGE, Action.RETYPE, Action.REMOVE)

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
        if self.workflows:
            row["workflows"] = [use.to_xcom() for use in self.workflows]
        if self.workflows_unread:
            row["workflows_unread"] = self.workflows_unread
        if self.breaks_workflows:
            row["breaks_workflows"] = True
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
    workflows_digest: str = ""
    """A digest of the workflows read for the plan's blast radius ("" when no change needed them)."""

    @property
    def fingerprint(self) -> str:
        """
        The plan's identity: 16 hex digits of the target, the declared schema, the record and what Blink held.

        The same inputs give the same fingerprint; an apply given an approved plan sends nothing unless its own plan has
        the same one (a field changed in Blink since makes the approved plan stale).
        """
        parts = [self.schema_digest, self.record_digest, self.live_digest]
        parts += [self.rows_digest] if self.rows_digest or self.workflows_digest else []
        return digest([*parts, self.workflows_digest] if self.workflows_digest else parts)

    @property
    def workflows_named(self) -> dict[str, list[str]]:
        """
        Return, per field, the ids of the Blink workflows whose steps its change breaks (#75), active or not.

        What the record, the apply's XCom and the table's asset event keep of the plan's blast radius.
        """
        named = {row.field: sorted({use.id for use in row.workflows if not use.unread}) for row in self.fields}
        return {field: ids for field, ids in named.items() if ids}

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
    def destroying(self) -> list[FieldPlan]:
        """
        Return the rows whose values the apply can destroy, which it saves before its first write (#74).

        A removal of a field holding values (or whose rows were not counted), a retype (its old field goes), and a
        destructive change of the values' meaning (an option dropped while rows use it, a reference moved): not a
        check dropped, which loses no value.
        """
        return [row for row in self.fields if loses_values(row)]

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


VALUED_MEMBERS = ("attributes.options", "attributes.table_reference")
"""The members whose destructive change loses what rows hold (their values orphaned), not a check."""


def loses_values(row: FieldPlan) -> bool:
    """Return whether the apply of ``row`` can destroy values rows hold (see :attr:`SchemaPlan.destroying`)."""
    if row.action == Action.RETYPE:
        return True
    if row.action == Action.REMOVE:
        return row.rows != 0
    return (
        row.destroys
        and row.action == Action.CHANGE
        and any(member.startswith(VALUED_MEMBERS) for member in row.members)
    )


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def rows_of(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return a plan XCom's field rows (anything malformed left out)."""
    rows = plan.get("fields")
    return [row for row in rows if isinstance(row, Mapping)] if isinstance(rows, list) else []


def risky(plan: Mapping[str, Any], *, acknowledged: bool = False) -> bool:
    """
    Return whether a plan XCom refuses or destroys anything, by its rows (not its stored counts).

    A row is destructive as :attr:`FieldPlan.destructive` says; a removal the DAG acknowledged does not count.
    """
    return any(
        row.get("action") == Action.REFUSED
        or (row.get("action") in REMOVING and row.get("destructive") is not False and not acknowledged)
        or (row.get("destructive") is True and row.get("action") not in REMOVING)
        for row in rows_of(plan)
    )


def changes(plan: Mapping[str, Any]) -> bool:
    """
    Return whether a plan XCom adds, changes, removes or refuses anything, or creates or changes the table.

    By its rows (not its stored flag).
    """
    table = plan.get("table_plan")
    touched = isinstance(table, Mapping) and table.get("action") not in (None, Action.UNCHANGED)
    return touched or any(row.get("action") != Action.UNCHANGED for row in rows_of(plan))
