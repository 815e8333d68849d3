"""
A rollback, planned from live state: one apply's backup (``_backup``) put back into the table as Blink holds it now.

:func:`plan_rollback` reads the backup (whole, or it refuses before sending anything), Blink's fields and one walk of
the rows, and plans, for each field the apply touched:

- ``recreate``: a field the apply removed (or a retype's old field): added again with its saved definition (Blink
  names it: the plan says the name it got once it has one), then its saved values written back by record id;
- ``restore``: a field the apply changed: each member put back to the saved body where Blink still holds what the
  apply sent; where a person changed it since, the drift is shown and the person's value kept (``overwrite_drift``
  puts the saved one back anyway); the values an option dropped orphaned, written back;
- ``remove``: a field the apply added (a retype's new field among them): its values saved in the rollback's own backup
  first, so the rollback can itself be rolled back;
- ``unchanged``: nothing left to put back.

Every row is counted: restored (to write), already restored (a rollback resumed), deleted since (skipped), changed by
a person since (kept). A rollback is a plan like any other: its fingerprint is its identity (an approved plan that is
no longer what would be done is stale), it is destructive when it removes a field holding values (an Approve or
``acknowledge_risks`` lets it through), it runs under the table's lock, and it resumes after a killed worker: a
re-created field is found again by its saved display name and type (a field the table did not have before the apply),
and only rows not yet holding their saved value are written.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from blinkops_provider.exceptions import BlinkInputError, BlinkNotFoundError, BlinkStalePlanError
from blinkops_provider.hooks._batch import workers
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._apply import table_lock
from blinkops_provider.migrations._backup import FORMAT, Backup, backup_rows, backups_of, read_backup, write_backup
from blinkops_provider.migrations._data_steps import COPY_PASSES, in_turn
from blinkops_provider.migrations._lock import Holder, SchemaRecord, record_location
from blinkops_provider.migrations._matching import differing_members, field_update_of, without_checks
from blinkops_provider.migrations._plan_types import digest
from blinkops_provider.migrations._rows import empty
from blinkops_provider.models import TableField
from blinkops_provider.utils.inputs import DEFAULT_UPDATE_CONCURRENCY
from blinkops_provider.utils.text import one_line, show

PAGE_SIZE = 500
"""Rows read per request, and backup rows written back per round."""

DEFINITION = ("type", "display_name", "description", "attributes")
"""The members of a field's definition a rollback sends (Blink's own members, e.g. ``id``, are Blink's)."""


@dataclass(frozen=True)
class RollbackRequest:
    """
    One rollback's arguments (:func:`plan_rollback`, :func:`rollback`).

    :ivar ws_id: the workspace.
    :ivar table: Blink's name of the table.
    :ivar record_path: where the table's record and its backups are (as the apply's ``record_path``).
    :ivar apply: the plan id of the apply to undo (its backup's name); None: the newest backup.
    :ivar approved: the rollback plan's fingerprint a person approved: the rollback refuses any other (stale).
    :ivar approval: who approved it and when, ``{"approved_by", "approved_at"}``: it lets the plan's removals through.
    :ivar acknowledge_risks: let the removals through without a person's approval.
    :ivar overwrite_drift: put the saved value back where a person changed it since the apply (default: keep it).
    """

    ws_id: str
    table: str
    record_path: str
    apply: str | None = None
    approved: str | None = None
    approval: Mapping[str, str] | None = None
    acknowledge_risks: bool = False
    overwrite_drift: bool = False
    max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY
    lock_wait: float = 0.0
    holder: Holder | None = None

    def __post_init__(self) -> None:
        for name in ("ws_id", "table", "record_path"):
            value = getattr(self, name)
            if not isinstance(value, str | os.PathLike) or not os.fspath(value).strip():
                raise BlinkInputError(f"rollback: {name} must be a non-empty string, got {show(value)}")
        if self.apply is not None and (not isinstance(self.apply, str) or not self.apply.strip()):
            raise BlinkInputError(f"rollback: apply must be a plan id (16 hex digits), got {show(self.apply)}")
        if not isinstance(self.max_concurrency, int) or not 1 <= self.max_concurrency <= 32:
            raise BlinkInputError(f"rollback: max_concurrency must be 1 to 32, got {show(self.max_concurrency)}")

    @property
    def record(self) -> str:
        """Where the table's record is (its backups beside it)."""
        return record_location(os.fspath(self.record_path), self.ws_id, self.table)


@dataclass(frozen=True)
class RollbackStep:
    """
    What a rollback does to one field.

    :ivar field: the field's display name, as saved (or as Blink shows it, for a field the apply added).
    :ivar action: ``recreate``, ``restore``, ``remove`` or ``unchanged``.
    :ivar name: Blink's name of the field now ("" for one not re-created yet: Blink will name it).
    :ivar saved: its name in the backup ("" for a field the apply added).
    :ivar members: the members put back, ``(member, now, saved)``.
    :ivar drift: the members a person changed since the apply, kept (``(member, now, saved)``).
    :ivar restore: rows whose saved value is written back.
    :ivar already: rows already holding their saved value (a resumed rollback).
    :ivar deleted: rows of the backup deleted since (skipped).
    :ivar kept: rows a person changed since the apply (their value kept).
    :ivar holding: for a removal, the rows holding a value (saved first).
    """

    field: str
    action: str
    name: str = ""
    saved: str = ""
    members: tuple[tuple[str, Any, Any], ...] = ()
    drift: tuple[tuple[str, Any, Any], ...] = ()
    restore: int = 0
    already: int = 0
    deleted: int = 0
    kept: int = 0
    holding: int = 0
    body: dict[str, Any] | None = dataclasses.field(default=None, compare=False)
    """The definition sent: the re-created field's whole saved body, or the restored field's put-back body."""

    def to_xcom(self) -> dict[str, Any]:
        """Return the step as JSON-ready data."""
        return {
            "field": self.field,
            "action": self.action,
            "name": self.name,
            "saved": self.saved,
            "members": [{"member": m, "now": n, "saved": s} for m, n, s in self.members],
            "drift": [{"member": m, "now": n, "saved": s} for m, n, s in self.drift],
            "rows": {
                "restore": self.restore,
                "already": self.already,
                "deleted": self.deleted,
                "kept": self.kept,
                "holding": self.holding,
            },
        }


@dataclass(frozen=True)
class RollbackPlan:
    """
    What a rollback of one apply would do to the table now.

    :ivar backup: the apply's backup, read whole.
    :ivar steps: one per field the apply touched.
    :ivar live_digest: a digest of what the plan read (the fields, the rows it counted): part of the fingerprint.
    """

    ws_id: str
    table: str
    record: str
    backup: Backup
    steps: tuple[RollbackStep, ...]
    live_digest: str

    @property
    def fingerprint(self) -> str:
        """The rollback plan's identity: 16 hex digits of the backup and of what Blink held when it was made."""
        return digest(["rollback", self.backup.digest, self.live_digest])

    @property
    def destructive(self) -> bool:
        """Whether it removes a field that holds values (an Approve or ``acknowledge_risks`` lets it through)."""
        return any(step.action == "remove" and step.holding for step in self.steps)

    @property
    def has_changes(self) -> bool:
        """Whether it would send anything."""
        return any(step.action != "unchanged" for step in self.steps)

    @property
    def counts(self) -> dict[str, int]:
        """Count the steps by action and the rows by what becomes of them."""
        counts = {action: 0 for action in ("recreate", "restore", "remove", "unchanged")}
        for step in self.steps:
            counts[step.action] += 1
        for rows in ("restore", "already", "deleted", "kept"):
            counts[f"rows_{rows}"] = sum(getattr(step, rows) for step in self.steps)
        return counts

    def text(self) -> str:
        """Return the plan as a person reads it (the log, the terminal, the review)."""
        counts = self.counts
        lines = [
            f"Rollback {self.fingerprint} of apply {self.backup.plan_id} for {one_line(self.ws_id)}/"
            f"{one_line(self.table)}: {counts['recreate']} to re-create, {counts['restore']} to put back, "
            f"{counts['remove']} to remove, {counts['unchanged']} unchanged; rows: {counts['rows_restore']:,} to "
            f"restore, {counts['rows_already']:,} already as saved, {counts['rows_deleted']:,} deleted since "
            f"(skipped), {counts['rows_kept']:,} changed by a person since (kept)",
        ]
        if self.destructive:
            lines += ["", "**Destructive**: it removes fields that hold values (saved first, in its own backup)."]
        lines += ["", f"From the backup at {self.backup.location}, saved {self.backup.saved_at}.", ""]
        lines += [f"- {_said(step)}" for step in self.steps]  # (a Markdown list: the review renders it)
        return "\n".join(lines)

    def to_xcom(self) -> dict[str, Any]:
        """Return the plan as JSON-ready data (``blink-schema rollback --format json``)."""
        return {
            "fingerprint": self.fingerprint,
            "kind": "rollback",
            "ws_id": self.ws_id,
            "table": self.table,
            "record": self.record,
            "apply": self.backup.plan_id,
            "backup": self.backup.location,
            "steps": [step.to_xcom() for step in self.steps],
            "counts": self.counts,
            "destructive": self.destructive,
            "has_changes": self.has_changes,
            "text": self.text(),
        }


def _said(step: RollbackStep) -> str:
    name = one_line(step.field)
    rows = f"{step.restore:,} row(s) to restore" + (f", {step.already:,} already as saved" if step.already else "")
    rows += f", {step.deleted:,} deleted since (skipped)" if step.deleted else ""
    rows += f", {step.kept:,} changed by a person since (kept)" if step.kept else ""
    if step.action == "recreate":
        named = f"Blink's name {step.name!r}" if step.name else "Blink names it"
        return f"{name}: re-create ({named}; saved as {step.saved!r}), {rows}"
    if step.action == "remove":
        return f"{name}: remove (added by the apply; Blink's name {step.name!r}), {step.holding:,} row(s) hold values"
    put = "; ".join(f"{m}: {show(n)} → {show(s)}" for m, n, s in step.members)
    drift = "; ".join(f"{m}: {show(n)} (saved {show(s)})" for m, n, s in step.drift)
    parts = [f"put back {put}" if put else "", f"kept, changed by a person since: {drift}" if drift else ""]
    parts += [rows] if step.restore or step.already or step.deleted or step.kept else []
    return f"{name}: {step.action}" + (": " + "; ".join(part for part in parts if part) if any(parts) else "")


@dataclass
class RollbackResult:
    """
    What a rollback did.

    :ivar plan: the plan it carried out.
    :ivar backup: where it saved what it removed and changed first (a rollback of the rollback reads it).
    :ivar names: each re-created field's saved name -> the name Blink gave it.
    :ivar restored: rows written back, by field.
    """

    plan: RollbackPlan
    backup: str = ""
    names: dict[str, str] = field(default_factory=dict)
    restored: dict[str, int] = field(default_factory=dict)

    def to_xcom(self) -> dict[str, Any]:
        """Return the result as JSON-ready data."""
        return {
            "fingerprint": self.plan.fingerprint,
            "apply": self.plan.backup.plan_id,
            "backup": self.backup,
            "names": dict(self.names),
            "restored": dict(self.restored),
            "counts": self.plan.counts,
        }


# -- planning ---------------------------------------------------------------------------------------------------------


def chosen_backup(request: RollbackRequest) -> Backup:
    """
    Return the backup the rollback reads: the apply's (``request.apply``) or the newest apply's, read whole.

    A rollback's own backup is never the newest apply's: rolling a rollback back names it (``apply``).

    :raises BlinkConfigurationError: it is missing, truncated or corrupt (saying which).
    :raises BlinkInputError: there is no backup of the table at all.
    """
    record = request.record
    if request.apply is not None:
        return read_backup(f"{record}.backups/{request.apply.strip()}.jsonl")
    found = [backup for backup in backups_of(record) if not backup.header.get("rollback_of")]
    if not found:
        raise BlinkInputError(
            f"no backup of an apply to {request.ws_id}/{request.table} beside its record at {record}: an apply writes "
            "one before its first write (with this record_path); nothing was sent"
        )
    return found[-1]


def plan_rollback(hook: BlinkHook, request: RollbackRequest) -> RollbackPlan:
    """
    Return what a rollback of ``request``'s apply would do to the table now; sends nothing.

    :raises BlinkConfigurationError: the backup is missing, truncated or corrupt (saying which).
    :raises BlinkInputError: there is no backup, or it is of another table.
    """
    backup = chosen_backup(request)
    header = backup.header
    if (header.get("ws_id"), header.get("table")) != (request.ws_id, request.table):
        raise BlinkInputError(
            f"the backup at {backup.location} is of {header.get('ws_id')}/{header.get('table')}, not "
            f"{request.ws_id}/{request.table}; nothing was sent"
        )
    live = hook.get_table_fields(request.ws_id, request.table)
    return _planned(hook, request, backup, live)


def _body(held: Mapping[str, Any]) -> dict[str, Any]:
    """Return a field's definition (what a rollback sends), from Blink's whole field."""
    return {member: held[member] for member in DEFINITION if held.get(member) is not None}


def _member(body: Mapping[str, Any], member: str) -> Any:
    if member.startswith("attributes."):
        return (body.get("attributes") or {}).get(member.partition(".")[2])
    value = body.get(member)
    return (value or "") if member == "description" else value


def _planned(hook: BlinkHook, request: RollbackRequest, backup: Backup, live: list[TableField]) -> RollbackPlan:
    header = backup.header
    before = set(header.get("before") or ())
    by_name = {str(held.name): held for held in live}
    saved = [dict(one) for one in header.get("fields") or () if isinstance(one, Mapping)]
    sent: Mapping[str, Any] = header.get("sent") or {}
    valued = set(header.get("valued") or ())
    recreated = _recreated(saved, by_name, before)
    adds = set(header.get("adds") or ())
    claimed = set(recreated.values())
    removed = [
        held for held in live if held.name not in before and held.name not in claimed and held.display_name in adds
    ]
    drafts: list[dict[str, Any]] = []
    for one in saved:
        name = str(one.get("name"))
        if name in by_name:
            drafts.append(_restore_draft(one, by_name[name].to_json_dict(), sent.get(name), request.overwrite_drift))
        else:
            drafts.append({"action": "recreate", "saved": name, "name": recreated.get(name, ""), "body": _body(one)})
    rows = _count_rows(hook, request, backup, drafts, removed, valued)
    steps = [
        RollbackStep(
            field=str(draft["body"].get("display_name") or draft["saved"]) if draft.get("body") else draft["saved"],
            action=draft["action"],
            name=draft.get("name", ""),
            saved=draft["saved"],
            members=tuple(draft.get("members", ())),
            drift=tuple(draft.get("drift", ())),
            body=draft.get("body"),
            **rows.get(draft["saved"], {}),
        )
        for draft in drafts
    ]
    steps += [
        RollbackStep(
            field=str(held.display_name or held.name),
            action="remove",
            name=str(held.name),
            holding=rows.get(f"+{held.name}", {}).get("holding", 0),
        )
        for held in removed
    ]
    steps = [_settled(step, by_name) for step in steps]
    seen = [
        held.to_json_dict()
        for held in live
        if held.name in claimed | {s.saved for s in steps} | {h.name for h in removed}
    ]
    return RollbackPlan(
        ws_id=request.ws_id,
        table=request.table,
        record=request.record,
        backup=backup,
        steps=tuple(steps),
        live_digest=digest([seen, [step.to_xcom()["rows"] for step in steps]]),
    )


def _settled(step: RollbackStep, by_name: Mapping[str, TableField]) -> RollbackStep:
    """
    Return a step with nothing left to do as ``unchanged``.

    A ``restore`` with nothing to put back; a ``recreate`` whose field Blink holds as saved, every row restored.
    """
    if step.action == "restore" and not step.members and not step.restore:
        return dataclasses.replace(step, action="unchanged", body=None)
    held = by_name.get(step.name) if step.action == "recreate" and step.name else None
    if held is not None and not step.restore and not differing_members(step.body or {}, _body(held.to_json_dict())):
        return dataclasses.replace(step, action="unchanged", body=None)
    return step


def _recreated(saved: list[dict[str, Any]], by_name: Mapping[str, TableField], before: set[str]) -> dict[str, str]:
    """
    Return each removed field's saved name -> Blink's name of the field a rollback already re-created for it.

    A field Blink has that the table did not have before the apply, of the saved type, shown as the saved display
    name (a rollback that was stopped); the first such field, each claimed once.
    """
    found: dict[str, str] = {}
    for one in saved:
        name = str(one.get("name"))
        if name in by_name:
            continue
        shown = str(one.get("display_name") or name)
        for held in by_name.values():
            if (
                held.name not in before
                and held.name not in found.values()
                and held.type == one.get("type")
                and held.display_name == shown
            ):
                found[name] = str(held.name)
                break
    return found


def _restore_draft(
    saved: Mapping[str, Any], now: Mapping[str, Any], sent: Mapping[str, Any] | None, overwrite: bool
) -> dict[str, Any]:
    """Return a changed field's step: each member put back where Blink holds what the apply sent, drift kept."""
    name = str(saved.get("name"))
    members, drift = [], []
    for member in differing_members(_body(saved), _body(now)):
        was, is_now = _member(saved, member), _member(now, member)
        if sent is not None and _member(sent, member) != is_now and not overwrite:
            drift.append((member, is_now, was))
        else:
            members.append((member, is_now, was))
    body = _body(now)
    for member, _, was in members:
        if member.startswith("attributes."):
            attributes = dict(body.get("attributes") or {})
            key = member.partition(".")[2]
            if was is None:
                attributes.pop(key, None)
            else:
                attributes[key] = was
            body["attributes"] = attributes
        else:
            body[member] = was
    return {"action": "restore", "saved": name, "name": name, "members": members, "drift": drift, "body": body}


def _count_rows(
    hook: BlinkHook,
    request: RollbackRequest,
    backup: Backup,
    drafts: list[dict[str, Any]],
    removed: list[TableField],
    valued: set[str],
) -> dict[str, dict[str, int]]:
    """
    Count every row: one walk of the table, then the backup's rows against it.

    Per saved field: ``restore``, ``already``, ``deleted``, ``kept``; per field removed (``+<name>``): ``holding``.
    """
    targets = {d["saved"]: d.get("name", "") for d in drafts if d["saved"] in valued}
    counts: dict[str, dict[str, int]] = {}
    if not targets and not removed:
        return counts
    now: dict[Any, dict[str, Any]] = {}
    holding = {str(held.name): 0 for held in removed}
    for row in hook.iter_records(request.ws_id, request.table, page_size=PAGE_SIZE):
        now[row.get("id")] = {target: row.get(target) for target in targets.values() if target}
        for name in holding:
            holding[name] += 0 if empty(row.get(name)) else 1
    for name, held in holding.items():
        counts[f"+{name}"] = {"holding": held}
    for saved in targets:
        counts[saved] = {"restore": 0, "already": 0, "deleted": 0, "kept": 0}
    for row in backup_rows(backup):
        values = row.get("values") or {}
        current = now.get(row.get("id"))
        for saved, target in targets.items():
            verdict = _verdict(values.get(saved), current, target, request.overwrite_drift)
            if verdict:
                counts[saved][verdict] += 1
    return counts


def _verdict(saved: Any, current: Mapping[str, Any] | None, target: str, overwrite: bool) -> str:
    """
    Return what becomes of one row of one field: ``restore``, ``already``, ``deleted``, ``kept``, or "" (nothing).

    An empty saved value needs nothing; a deleted row is skipped; a row holding the saved value is done; an empty one
    (or one in a field not re-created yet) gets it back; one holding another value was changed by a person: kept.
    """
    if empty(saved):
        return ""
    if current is None:
        return "deleted"
    held = current.get(target) if target else None
    if held == saved:
        return "already"
    if empty(held) or overwrite:
        return "restore"
    return "kept"


# -- applying ---------------------------------------------------------------------------------------------------------


def rollback(hook: BlinkHook, request: RollbackRequest) -> RollbackResult:
    """
    Roll the apply back: plan again under the table's lock, check it, save, then put the table back.

    In order: the rollback's own backup (what it removes and changes); the removed fields re-created (without their
    checks); the changed fields put back; the saved values written back, in passes until
    one writes nothing; the apply's added fields removed; each re-created field given its saved definition whole.

    :raises BlinkStalePlanError: ``request.approved`` is not what would be done now (nothing sent).
    :raises BlinkInputError: it removes fields holding values, and neither a person approved it nor
        ``acknowledge_risks``; or no backup (nothing sent).
    :raises BlinkConfigurationError: the backup is missing, truncated or corrupt, or its own cannot be written (nothing
        sent).
    """
    lock = table_lock(
        hook,
        request.record,
        records=request.record_path,
        ws_id=request.ws_id,
        table=request.table,
        holder=request.holder,
        wait=request.lock_wait,
    )
    with lock:
        planned = plan_rollback(hook, request)
        _gate(planned, request)
        hook.log.info("%s", planned.text())
        return _Rollback(hook, request, planned).run()


def _gate(planned: RollbackPlan, request: RollbackRequest) -> None:
    if request.approved is not None and request.approved.strip() != planned.fingerprint:
        raise BlinkStalePlanError(
            f"the approved rollback {request.approved.strip()} is not what would be done now ({planned.fingerprint}): "
            "the table changed since it was planned. Nothing was sent: plan the rollback again and review it"
        )
    if planned.destructive and not (request.approval or request.acknowledge_risks):
        removed = ", ".join(repr(step.field) for step in planned.steps if step.action == "remove" and step.holding)
        raise BlinkInputError(
            f"rollback {planned.fingerprint} removes fields that hold values ({removed}): it needs a person's "
            "approval (blink-schema rollback --apply-now, or the review) or acknowledge_risks=True; nothing was sent"
        )


class _Rollback:
    """The sends of one rollback, in order (see :func:`rollback`)."""

    def __init__(self, hook: BlinkHook, request: RollbackRequest, planned: RollbackPlan) -> None:
        self.hook, self.request, self.plan = hook, request, planned
        self.ws_id, self.table = request.ws_id, request.table
        self.result = RollbackResult(plan=planned)
        self.counting = threading.Lock()

    def run(self) -> RollbackResult:
        if not self.plan.has_changes:
            self.hook.log.info("Rollback %s: nothing to put back", self.plan.fingerprint)
            self.result.names = {step.saved: step.name for step in self.plan.steps if step.name and step.saved}
            self._record({saved: name for saved, name in self.result.names.items() if saved != name})
            return self.result
        self.result.backup = self._own_backup()
        names = self._fields_back()
        targets = {step.saved: names.get(step.saved, step.name) for step in self.plan.steps if step.restore}
        if targets:
            with workers(self.request.max_concurrency) as pool:
                self.result.restored = self._write_back(pool, targets)
        for step in self.plan.steps:
            if step.action == "remove":
                self.hook.delete_table_field(self.ws_id, self.table, step.name)
        for step in self.plan.steps:
            if step.action == "recreate":
                self.hook.update_table_field(
                    self.ws_id, self.table, names[step.saved], field_update_of(step.body or {})
                )
        self._record(names)
        self.hook.log.info(
            "Rollback %s of apply %s done: %s re-created, %s row(s) restored; its own backup at %s",
            self.plan.fingerprint,
            self.plan.backup.plan_id,
            ", ".join(f"{saved!r} as {name!r}" for saved, name in self.result.names.items()) or "none",
            f"{sum(self.result.restored.values()):,}",
            self.result.backup,
        )
        return self.result

    def _fields_back(self) -> dict[str, str]:
        """Re-create the removed fields and put the changed ones back; return each re-created field's Blink name."""
        names = {step.saved: step.name for step in self.plan.steps if step.action == "recreate" and step.name}
        for step in self.plan.steps:
            if step.action == "recreate" and not step.name:
                names[step.saved] = self._recreate(step)
        self.result.names = dict(names)
        for step in self.plan.steps:
            if step.action == "restore" and step.members:
                self.hook.update_table_field(self.ws_id, self.table, step.name, field_update_of(step.body or {}))
        return names

    def _record(self, names: Mapping[str, str]) -> None:
        """
        Put the table's record back as it was before the apply, noting the re-created fields' names.

        The record is what the next plan matches the declaration with: each re-created field's new name is noted under
        the field's declared name (so ``Risk`` finds ``risk``, not the retype's removed field), the names of the
        fields the apply added are dropped, and who let the rollback through is noted as the record's approval.
        """
        header = self.plan.backup.header
        prior: Mapping[str, Any] = header.get("record") or {}
        declared: Mapping[str, str] = header.get("declared") or {}
        noted = {str(k): str(v) for k, v in (prior.get("names") or {}).items()}
        for saved, name in names.items():
            key = str(declared.get(saved, saved))
            if name != key:
                noted[key] = name
            else:
                noted.pop(key, None)
        record = SchemaRecord(self.plan.record, blink=self.hook.base_url, ws_id=self.ws_id, table=self.table)
        record.write(
            dict(prior.get("fields") or {}),
            now=self.hook.clock.now(),
            names=noted,
            table_name=prior.get("table_name"),
            approval=self._approval(),
            backup=self.result.backup,
        )

    def _own_backup(self) -> str:
        """Save what the rollback removes and changes, as an apply does (a rollback of the rollback reads it)."""
        steps = self.plan.steps
        live = self.hook.get_table_fields(self.ws_id, self.table)
        touched = {step.name for step in steps if step.action in ("restore", "remove") and step.name}
        location = f"{self.plan.record}.backups/{self.plan.fingerprint}.jsonl"
        target_exists = backups_of(self.plan.record, only=self.plan.fingerprint)
        if target_exists:
            return target_exists[0].location
        header = {
            "format": FORMAT,
            "plan_id": self.plan.fingerprint,
            "saved_at": self.hook.clock.now().isoformat(),
            "ws_id": self.ws_id,
            "table": self.table,
            "before": sorted(str(held.name) for held in live),
            "fields": [held.to_json_dict() for held in live if held.name in touched],
            "sent": {step.name: step.body for step in steps if step.action == "restore" and step.members and step.body},
            "adds": [
                str((step.body or {}).get("display_name") or step.saved) for step in steps if step.action == "recreate"
            ],
            "valued": sorted(
                {step.name for step in steps if step.action == "remove"}
                | {step.name for step in steps if step.action == "restore" and step.restore}
            ),
            "rollback_of": self.plan.backup.plan_id,
            "approval": self._approval(),
        }
        backup = write_backup(self.hook, location, header)
        self.hook.log.info("Rollback %s: %s (read back whole)", self.plan.fingerprint, backup.said())
        return backup.location

    def _approval(self) -> dict[str, Any]:
        """Return who let the rollback through, as its backup keeps it: a person's approval, or acknowledged."""
        if self.request.approval:
            return dict(self.request.approval)
        return {"acknowledged": bool(self.request.acknowledge_risks)}

    def _recreate(self, step: RollbackStep) -> str:
        """
        Add the removed field again, without its checks; return the name Blink gave it.

        Under its saved display name, from which Blink derives the name (so it is as close to the old one as Blink's
        rule makes it): a resumed rollback finds it again by that display name and its type.
        """
        body = without_checks(step.body or {})
        made = self.hook.create_table_field(self.ws_id, self.table, field_update_of(body))
        name = made.name if made is not None else None  # (read_unnamed: Blink's name, or an error)
        if not name:
            raise BlinkStalePlanError(
                f"{step.field!r}: Blink added the field without naming it: run the rollback again"
            )
        self.hook.log.info("%s: re-created as %r", one_line(step.field), name)
        return name

    def _write_back(self, pool: Any, targets: Mapping[str, str]) -> dict[str, int]:
        """Write each row's saved values back, in passes until one writes nothing; the rows written, by field."""
        written: dict[str, set[Any]] = {saved: set() for saved in targets}
        due: set[Any] | None = None  # the first pass reads every row of the backup; the next, those it wrote
        for _ in range(COPY_PASSES):
            wrote: set[Any] = set()
            for chunk in _chunks(backup_rows(self.plan.backup), PAGE_SIZE):
                rows = [row for row in chunk if due is None or row.get("id") in due]
                done = in_turn(
                    pool, lambda row: self._restore_one(row, targets, written), rows, self.request.max_concurrency
                )
                wrote.update(row.get("id") for row, one in zip(rows, done, strict=True) if one)
            if not wrote:
                return {saved: len(ids) for saved, ids in written.items()}
            due = wrote
        raise BlinkStalePlanError(
            f"rollback {self.plan.fingerprint}: rows did not keep their restored values after {COPY_PASSES} passes "
            "(Blink accepted the writes but did not keep them, or rows keep changing): run the rollback again"
        )

    def _restore_one(self, row: Mapping[str, Any], targets: Mapping[str, str], written: dict[str, set[Any]]) -> int:
        """Write one row's saved values back where they are due (read again first): 1 if written, else 0."""
        values = row.get("values") or {}
        if all(empty(values.get(saved)) for saved in targets):
            return 0
        try:
            fresh = self.hook.get_record(self.ws_id, self.table, str(row.get("id")))
        except BlinkNotFoundError:
            return 0  # deleted since: skipped (counted by the plan)
        due = {
            target: values.get(saved)
            for saved, target in targets.items()
            if _verdict(values.get(saved), fresh, target, self.request.overwrite_drift) == "restore"
        }
        if not due:
            return 0
        self.hook.update_record(self.ws_id, self.table, str(row.get("id")), {**fresh, **due})
        with self.counting:
            for saved, target in targets.items():
                if target in due:
                    written[saved].add(row.get("id"))
        return 1


def _chunks(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while chunk := list(islice(rows, size)):
        yield chunk
