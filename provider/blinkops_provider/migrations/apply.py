"""How a schema migration is planned and applied.

- :func:`plan_schema` reads the table's fields from Blink (one request) and plans the declared
  fields against them, with the record of the last apply as the drift baseline (and as the
  baseline itself where Blink does not serve the read); it changes nothing.
- :func:`apply_schema` takes the table's lock (:mod:`blinkops_provider.migrations.lock`), plans
  again under it, refuses anything but the approved plan, sends what the plan sends through the
  hook (:meth:`BlinkHook.update_table_fields <blinkops_provider.hooks.blink.BlinkHook.update_table_fields>`,
  the Blink API client), and records the fields Blink confirmed, before it lets the lock go.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from blinkops_provider.batch import FieldUpdates
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkReadUnavailableError,
)
from blinkops_provider.hooks.blink import DEFAULT_UPDATE_CONCURRENCY, BlinkHook
from blinkops_provider.inputs import RepeatedMember, check_concurrency, check_flag, unique_members
from blinkops_provider.migrations.fleet import check_let_through
from blinkops_provider.migrations.lock import Holder, TableLock
from blinkops_provider.migrations.plan import REFUSED, UNCHANGED, SchemaPlan, make_plan
from blinkops_provider.migrations.record import SchemaRecord, check_shared, record_location
from blinkops_provider.models import (
    FieldBatch,
    FieldUpdate,
    TableField,
    validate_field_updates,
)
from blinkops_provider.names import segment
from blinkops_provider.storage import storage_path

__all__ = ["apply_schema", "approved_plan", "declared_schema", "plan_schema"]

Updates = Mapping[str, FieldUpdate | Mapping[str, Any]] | Sequence[Mapping[str, Any]] | FieldBatch | str
Batch = list[tuple[str, FieldUpdate]]

_FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def approved_plan(value: Any) -> dict[str, Any] | str | None:
    """The ``plan`` argument as the apply checks it: the plan's XCom (a dict, its JSON text, or
    the Python text a template renders of it) or its 16-hex-digit fingerprint.

    :raises BlinkInputError: anything else, saying what is allowed.
    """
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _FINGERPRINT.fullmatch(text):
            return text
        for read in (json.loads, ast.literal_eval):
            try:
                parsed = read(text)
            except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
                continue
            if isinstance(parsed, dict) and "fingerprint" in parsed:
                return parsed
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:79] + "…"
    raise BlinkInputError(
        f"plan must be the plan task's XCom (plan=plan_task.output, or its JSON) or its 16-hex-digit fingerprint, "
        f"got {shown}"
    )


def declared_schema(value: Any, *, source: str) -> list[dict[str, Any]]:
    """The entries of a declared schema, checked before any request: from its JSON text, a
    ``{"fields": [...]}`` object, or the list of entries itself.

    :param source: where the schema came from, named in every error (``"the 'schema' param"``,
        ``"schema file /opt/schemas/incidents.json"``).
    :returns: the entries as JSON-ready dicts, ``{"field": name, "type": ..., "display_name":
        ..., "attributes": {...}}``, in the declared order.
    :raises BlinkInputError: naming the source, and the line and column of a JSON syntax error
        or the position of each wrong entry.
    """
    if isinstance(value, (str, bytes)):
        value = _schema_json(value, source)
    if isinstance(value, Mapping):
        if not isinstance(value.get("fields"), list):
            raise BlinkInputError(f"{source} is an object without a 'fields' list; give {{\"fields\": [entries]}}")
        value = value["fields"]
    if not isinstance(value, list):
        raise BlinkInputError(
            f"{source} is a {type(value).__name__}; give a list of entries or an object with a 'fields' list"
        )
    try:
        batch = validate_field_updates(value, require_type_and_name=True)
    except BlinkInputError as err:
        raise BlinkInputError(f"{source}: {err}") from None
    if not batch:
        raise BlinkInputError(f"{source} declares no field; give at least one (a template that rendered nothing?)")
    return [{"field": name, **update.to_body()} for name, update in batch]


def _schema_json(text: str | bytes, source: str) -> Any:
    """A declared schema's JSON text, read with each object's members named once."""
    try:
        return json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError as err:
        raise BlinkInputError(
            f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from None
    except RepeatedMember as err:
        raise BlinkInputError(f"{source} names {err.args[0]!r} twice in one object; name it once") from None
    except RecursionError:
        raise BlinkInputError(f"{source} nests too deeply to read") from None


def _check_names(ws_id: str, table: str) -> None:
    """:raises BlinkInputError: a workspace or table name that cannot name a record."""
    for name, what in ((ws_id, "ws_id"), (table, "table")):
        try:
            segment(name, what)
        except ValueError as err:
            raise BlinkInputError(str(err)) from None


def _record(hook: BlinkHook, ws_id: str, table: str, location: str) -> SchemaRecord:
    """The record at ``location`` (:func:`~blinkops_provider.migrations.record.record_location`'s)."""
    check_shared(location)  # no worker-local record under an executor of several machines
    storage_path(
        location, "record_path", BlinkConfigurationError
    )  # a location that cannot hold a record is refused before the lock
    return SchemaRecord(location, blink=hook.base_url, ws_id=ws_id, table=table)


def _read_live(hook: BlinkHook, ws_id: str, table: str) -> tuple[list[TableField] | None, str]:
    """The table's fields as Blink holds them, or None and why when Blink does not serve the read."""
    try:
        return hook.get_table_fields(ws_id, table), ""
    except BlinkReadUnavailableError as err:
        hook.log.warning(
            "Blink's live schema of %s/%s could not be read (%s): planning against the record of the last apply",
            ws_id,
            table,
            err.status,
        )
        return None, str(err.status)


def _plan(hook: BlinkHook, record: SchemaRecord, batch: Batch, replace: bool) -> tuple[SchemaPlan, dict[str, Any]]:
    """The plan of ``batch`` against Blink's fields (one read) and the record, and the record's bodies."""
    recorded, recorded_at = record.read()
    live, unread = _read_live(hook, record.ws_id, record.table)
    plan = make_plan(
        target=(record.host, record.ws_id, record.table),
        record=record.location,
        declared=batch,
        recorded=recorded,
        recorded_at=recorded_at,
        live=live,
        unread=unread,
        replace=replace,
    )
    return plan, recorded


def plan_schema(
    hook: BlinkHook,
    ws_id: str,
    table: str,
    updates: Updates,
    *,
    record_path: str | os.PathLike[str],
    replace: bool = False,
) -> SchemaPlan:
    """What applying ``updates`` would do to each field of ``ws_id``/``table``: against Blink's
    fields (one ``GET .../fields``), with the record at ``record_path`` as the drift baseline, or
    against the record alone where Blink does not serve the read. Changes nothing.

    :param replace: plan to send each declaration as given (Blink resets what it leaves out)
        instead of its merge with the field as Blink holds it.
    :raises BlinkInputError: invalid updates, or a file at ``record_path`` that is not this
        table's record.
    :raises BlinkNotFoundError: Blink has no such table.
    """
    batch = validate_field_updates(updates)
    _check_names(ws_id, table)
    location = record_location(record_path, ws_id, table)
    plan, _ = _plan(hook, _record(hook, ws_id, table, location), batch, check_flag(replace, "replace"))
    return plan


@dataclasses.dataclass
class _Recording:
    """A batch applied under a plan: what is sent, the plan's part of the report, the record's update."""

    record: SchemaRecord
    recorded: dict[str, dict[str, Any]]
    plan: SchemaPlan
    batch: Batch
    only_changed: bool

    def __post_init__(self) -> None:
        action = self.plan.action
        self.refused = {name: self.plan.risk(name) for name, _ in self.batch if action(name) == REFUSED}
        self.skipped = [name for name, _ in self.batch if self.only_changed and action(name) == UNCHANGED]

    def sent(self) -> FieldBatch:
        """The plan's bodies (merged with Blink's fields, unless ``replace``) less what is not
        sent: the refused fields and, with ``only_changed``, the unchanged (judged by the plan)."""
        left_out = {*self.refused, *self.skipped}
        bodies = {plan.field: plan.body for plan in self.plan.fields if plan.body is not None}
        sent = ((name, bodies[name]) for name, _ in self.batch if name not in left_out)
        return FieldBatch(sent, named=True, judged=True)

    def report(self, result: FieldUpdates) -> FieldUpdates:
        refused = {name: BlinkBadRequestError(f"not sent: {why}") for name, why in self.refused.items()}
        order = [name for name, _ in self.batch]
        failed = {**refused, **result.failed}
        return dataclasses.replace(result, order=order, plan=self.plan, skipped=self.skipped, failed=failed)

    def complete(self, result: FieldUpdates, now: Any, *, raising: bool, log: Any) -> FieldUpdates:
        """The batch's report with the plan's part, after recording the fields Blink confirmed. A
        record that cannot be written fails the task (``raising``) or is logged (an interruption
        goes on up anyway); either way the report travels with the exception."""
        full = self.report(result)
        try:
            if result.applied:
                confirmed = {name: body.to_body() for name, body in self.sent() if name in result.applied}
                self.record.write({**self.recorded, **confirmed}, now=now)
        except Exception as err:
            if not raising:
                log.error("The schema record at %s was not updated: %s", self.record.location, type(err).__name__)
                return full
            if isinstance(err, BlinkConfigurationError):
                full.attach_to(err)
                raise
            why = str(err) if isinstance(err, BlinkInputError) else type(err).__name__
            error = BlinkApiError(
                f"the fields were sent, but the schema record at {self.record.location!r} could not be updated "
                f"({why}); the next plan would be wrong, so the task fails. A retry applies the schema again (safe: "
                "updates are full replacements) and records it"
            )
            full.attach_to(error)
            raise error from None
        return full


def _check_review(log: Any, planned: SchemaPlan, approved: Mapping[str, Any] | str) -> None:
    """Refuse a plan that the review policy recorded in its XCom should not have let through
    unreviewed (judged from this apply's own plan); say which policy let it through.

    :raises BlinkInputError: the policy asks a person to approve this plan, and no one did.
    """
    review = approved.get("review") if isinstance(approved, Mapping) else None
    if isinstance(review, Mapping):
        check_let_through(planned.to_xcom(), review.get("policy"), review.get("reviewed"))
        who = "approved by a person" if review.get("reviewed") else "no one was asked"
        log.info("Plan %s let through by review policy %r (%s)", planned.fingerprint, review.get("policy"), who)


def apply_schema(
    hook: BlinkHook,
    ws_id: str,
    table: str,
    updates: Updates,
    *,
    record_path: str | os.PathLike[str],
    max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
    fail_fast: bool = False,
    only_changed: bool = False,
    plan: Mapping[str, Any] | str | None = None,
    lock_wait: float = 0.0,
    holder: Holder | None = None,
    replace: bool = False,
) -> FieldUpdates:
    """Apply ``updates`` to ``ws_id``/``table`` as a migration: lock, read Blink's fields and
    plan, check, send each field's merge with what Blink holds, record.

    The arguments are those of :meth:`BlinkHook.update_table_fields
    <blinkops_provider.hooks.blink.BlinkHook.update_table_fields>` and
    :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`; ``holder`` names who
    holds the table's lock (by default this process, as the task instance running now).

    :raises BlinkInputError: invalid input, before the lock is taken.
    :raises BlinkStalePlanError: ``plan`` is not what would be applied now (nothing sent).
    :raises BlinkLockedError: another apply holds the table's lock (nothing sent).
    :raises BlinkConfigurationError: the record's location cannot be read or written.
    """
    check_concurrency(max_concurrency)
    approved = approved_plan(plan)
    replace = check_flag(replace, "replace")
    batch = validate_field_updates(updates)
    _check_names(ws_id, table)
    clock = hook.clock
    lock = TableLock(  # checks lock_wait and where the record goes
        os.fspath(record_path),
        ws_id=ws_id,
        table=table,
        holder=holder or Holder.current(),
        wait=lock_wait,
        now=clock.now,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        log=hook.log,
    )
    record = _record(hook, ws_id, table, lock.record)  # reads the connection: a broken one fails here
    with lock:
        planned, recorded = _plan(hook, record, batch, replace)
        if approved is not None:
            planned.check_approved(approved)  # before anything is sent
            _check_review(hook.log, planned, approved)
        planned.log_to(hook.log)
        recording = _Recording(record, recorded, planned, batch, only_changed)
        return _send(hook, recording, max_concurrency=max_concurrency, fail_fast=fail_fast)


def _send(hook: BlinkHook, recording: _Recording, *, max_concurrency: int, fail_fast: bool) -> FieldUpdates:
    """Send the plan's bodies, then record what Blink confirmed (also when interrupted)."""
    record, now = recording.record, hook.clock.now
    try:
        result = hook.update_table_fields(
            record.ws_id, record.table, recording.sent(), max_concurrency=max_concurrency, fail_fast=fail_fast
        )
    except BaseException as exc:
        partial = FieldUpdates.carried_by(exc)
        if partial is not None:
            recording.complete(partial, now(), raising=False, log=hook.log).attach_to(exc)
        raise
    return recording.complete(result, now(), raising=True, log=hook.log)
