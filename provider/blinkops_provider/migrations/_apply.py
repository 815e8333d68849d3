"""
How a schema migration is planned and applied.

- :func:`plan` reads the table and its fields from Blink in one round trip
  (:meth:`~blinkops_provider.hooks.blink.BlinkHook.read_table`) and plans the declaration against
  them (``_matching`` matches each entry to Blink's field, ``_plan`` plans it), with the record of the last apply as the
  drift baseline (and as the baseline itself where Blink does not serve the fields read); it
  changes nothing.
- :func:`apply` computes the record's location once, takes the table's lock there (``_lock``),
  plans again under it, refuses anything but the approved plan, refuses a removal no person
  approved and nobody acknowledged (``_review``), sends what the plan sends (``_steps``: create,
  add, change, the table, remove) through the hook, and records what Blink confirmed, before it
  lets the lock go.

:class:`ApplyRequest` holds the arguments of both, checked once where they enter.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blinkops_provider.exceptions import (
    BlinkConfigurationError,
    BlinkInputError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
)
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._lock import Holder, SchemaRecord, TableLock, check_shared, record_location
from blinkops_provider.migrations._matching import created_as, match_table
from blinkops_provider.migrations._plan import make_plan, plan_table
from blinkops_provider.migrations._plan_types import SchemaPlan, TablePlan
from blinkops_provider.migrations._review import check_approval, let_through_record, pass_gate
from blinkops_provider.migrations._rows import read_rows
from blinkops_provider.migrations._steps import ApplyResult
from blinkops_provider.migrations._steps import Steps as _Steps
from blinkops_provider.migrations._text import log_plan
from blinkops_provider.migrations._usage import check_workflow_usage, read_usage
from blinkops_provider.models import (
    BlinkTable,
    Declaration,
    FieldBatch,
    FieldUpdate,
    TableField,
    TableRead,
    read_declaration,
)
from blinkops_provider.utils.inputs import DEFAULT_UPDATE_CONCURRENCY, check_concurrency, check_flag, check_lock_wait
from blinkops_provider.utils.names import segment
from blinkops_provider.utils.states import Action
from blinkops_provider.utils.storage import storage_path
from blinkops_provider.utils.text import one_line

Updates = Mapping[str, FieldUpdate | Mapping[str, Any]] | Sequence[Mapping[str, Any]] | FieldBatch | Declaration | str

_FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def approved_plan(value: Any) -> dict[str, Any] | str | None:
    """
    Return the ``plan`` argument as the apply checks it.

    The plan's XCom (a dict, its JSON text, or the Python text a template renders of it) or its 16-hex-digit
    fingerprint.

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


def declared_schema(value: Any, *, source: str) -> list[dict[str, Any]] | dict[str, Any]:
    """
    Return a declared schema, checked before any request.

    From its JSON text, an object ``{"display_name": ..., "description": ..., "fields": [...]}`` (the table's display
    name and description are optional), or the list of entries itself. An entry is a field or a tombstone ``{"field":
    "Old", "remove": true}``.

    :param source: where the schema came from, named in every error (``"the 'schema' param"``,
        ``"schema file /opt/schemas/incidents.json"``).
    :returns: the entries as JSON-ready dicts, ``{"field": name, "type": ..., "display_name":
        ..., "attributes": {...}}`` and tombstones, in the declared order; an object with them as
        ``fields`` when it declares the table's display name or description.
    :raises BlinkInputError: naming the source, and the line and column of a JSON syntax error
        or the position of each wrong entry.
    """
    if isinstance(value, Mapping) and "fields" not in value:
        raise BlinkInputError(f"{source} is an object without a 'fields' list; give {{\"fields\": [entries]}}")
    if not isinstance(value, (str, bytes, Mapping, list)):
        raise BlinkInputError(
            f"{source} is a {type(value).__name__}; give a list of entries or an object with a 'fields' list"
        )
    return read_declaration(value, source=source).to_json()


def let_through_said(approval: Mapping[str, Any]) -> str:
    """Return who let an apply through, as its record notes it, in words ("" when the record says nothing)."""
    if approval.get("approved_by"):
        return f"approved by {one_line(str(approval['approved_by']))} at {one_line(str(approval.get('approved_at')))}"
    return "acknowledged by the DAG (acknowledge_risks=True)" if approval.get("acknowledged") else ""


def check_names(ws_id: str, table: str) -> None:
    """
    Check that the workspace and table names can name a record.

    :raises BlinkInputError: a name that cannot.
    """
    for name, what in ((ws_id, "ws_id"), (table, "table")):
        try:
            segment(name, what)
        except ValueError as err:
            raise BlinkInputError(str(err)) from None


class _NoRecord(SchemaRecord):
    """No record kept (no ``record_path``): no drift baseline, no note of Blink's names."""

    def read(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        return {}, None

    def write(self, fields: Mapping[str, Mapping[str, Any]], **kwargs: Any) -> None:
        """Nothing is kept."""


def schema_record(hook: BlinkHook, ws_id: str, table: str, location: str | None) -> SchemaRecord:
    """
    Return the record at ``location``, or none kept when it is None.

    The location is :func:`~blinkops_provider.migrations._lock.record_location`'s.
    """
    if location is None:
        return _NoRecord("", blink=hook.base_url, ws_id=ws_id, table=table)
    check_shared(location)  # no worker-local record under an executor of several machines
    storage_path(
        location, "record_path", BlinkConfigurationError
    )  # a location that cannot hold a record is refused before the lock
    return SchemaRecord(location, blink=hook.base_url, ws_id=ws_id, table=table)


def _rows_matter(live: list[TableField] | None, table_plan: TablePlan) -> bool:
    """Return whether the plan's rows are read: the table is there and its fields were read."""
    return live is not None and table_plan.action != Action.CREATE


def _live(
    hook: BlinkHook, record: SchemaRecord, read: TableRead, table_plan: TablePlan, replace: bool
) -> tuple[list[TableField] | None, str]:
    """
    Return the table's fields as Blink holds them (none for a table to create).

    Or None and why when Blink does not serve the read.

    :raises BlinkReadUnavailableError: the fields are unread, no record is kept, and not ``replace``.
    """
    if table_plan.action == Action.CREATE:
        return [], ""
    if read.fields is None and isinstance(record, _NoRecord) and not replace:
        unread = read.unread
        raise BlinkReadUnavailableError(
            f"Blink's fields of table {record.table!r} in workspace {record.ws_id!r} could not be read ({unread}). "
            "Without them the update cannot keep what it leaves out, so nothing was sent; replace=True sends the "
            "update as given (Blink then resets what it leaves out), or a record_path plans against the last apply",
            status=int(unread) if unread.isdigit() else None,
        )
    if read.fields is None:
        hook.log.warning(
            "Blink's live schema of %s/%s could not be read (%s): planning against the record of the last apply",
            one_line(record.ws_id),
            one_line(record.table),
            read.unread,
        )
    return read.fields, read.unread


def _table_of(
    record: SchemaRecord, declared: Declaration, create_table: bool, read: TableRead, listed: bool
) -> tuple[TablePlan, str | None]:
    """
    Return the table as Blink holds it (matched as ``_matching``'s :func:`match_table` says) and what happens to it.

    From a read with Blink's tables read (``listed``: else the table is the one its name names); and, when its fields
    are still to be read (a table found under another name), the name to read them by.

    :raises BlinkNotFoundError: Blink has no such table, and ``create_table`` is False.
    """
    if not listed:
        return TablePlan(name=record.table), None
    held, note = _matched(record, read.tables, declared, create_table)
    wanted = (declared.display_name, declared.description)
    if read.tables is not None and held is None:
        return _to_create(record, wanted, create_table), None
    table_plan = plan_table(record.table, wanted, held, listed=read.tables is not None)
    if note:
        table_plan = dataclasses.replace(table_plan, note=note)
    if table_plan.name == record.table and not read.missing:
        return table_plan, None
    return table_plan, table_plan.name or record.table


def _fields_tell_all(declared: Declaration) -> bool:
    """Return whether the fields read tells all the plan needs: no table member declared, no removal."""
    return declared.display_name is None and declared.description is None and not declared.removals


def _matched(
    record: SchemaRecord, tables: list[BlinkTable] | None, declared: Declaration, create_table: bool
) -> tuple[BlinkTable | None, str]:
    """
    Return the table ``table`` names in Blink's tables read, and what the plan must say of how it was found.

    The match is ``_matching``'s :func:`match_table`; None when not there or not read. The declared
    display name finds a table only with ``create_table`` (one this DAG created), and the plan says so.

    :raises BlinkInputError: the read shows it ambiguously.
    """
    if tables is None:
        return None, ""
    try:
        held = match_table(record.table, tables, record.table_name)
        if held is None and create_table and declared.display_name:
            return created_as(record.table, tables, declared.display_name)
    except ValueError as err:
        raise BlinkInputError(f"{err}. Nothing was sent") from None
    return held, ""


def _to_create(record: SchemaRecord, wanted: tuple[str | None, str | None], create_table: bool) -> TablePlan:
    """
    Return the plan of a table Blink does not have: created, with no fields to read.

    :raises BlinkNotFoundError: ``create_table`` is False.
    """
    if not create_table:
        raise BlinkNotFoundError(
            f"no table {record.table!r} in workspace {record.ws_id!r}: Blink's tables read lists no table named or "
            "shown so. Nothing was sent: give the operator create_table=True to create it with its declared fields, "
            "or give table the name of an existing table"
        )
    return plan_table(record.table, wanted, None, create=True)


def _plan(
    hook: BlinkHook,
    record: SchemaRecord,
    declared: Declaration,
    replace: bool,
    create_table: bool = False,
    workflow_usage: str = "review",
) -> tuple[SchemaPlan, dict[str, Any], list[TableField] | None]:
    """
    Return the plan of ``declared`` against Blink's table, its fields and the record; the record's bodies; the fields.

    The fields as Blink held them when the plan was made (None: the read was not served): the apply's backup saves
    them, with no second read.

    One plan: the rows its changes need are counted while it is made (``make_plan``'s ``count_rows``), and the
    workspace's workflows read when a change can break their steps (``read_usage``).
    """
    recorded, recorded_at = record.read()
    listed = not _fields_tell_all(declared)  # Blink's tables read, only for what the fields read does not tell
    read = hook.read_table(record.ws_id, record.table, tables=listed)
    if read.missing and not listed:  # not found by its name: by the record's note or its display name, or to create
        listed, read = True, hook.read_table(record.ws_id, record.table)
    table_plan, other_name = _table_of(record, declared, create_table, read, listed)
    if other_name is not None:  # found under another name: its fields are read by that name
        read = hook.read_table(record.ws_id, other_name, tables=False)
    live, unread = _live(hook, record, read, table_plan, replace)
    rows_of_table = table_plan.name or record.table
    count_rows = (
        functools.partial(read_rows, hook, record.ws_id, rows_of_table, estimate=table_plan.rows)
        if _rows_matter(live, table_plan)
        else None
    )
    usage = functools.partial(read_usage, hook, record.ws_id, rows_of_table) if _rows_matter(live, table_plan) else None
    plan = make_plan(
        target=(record.host, record.ws_id, record.table),
        record=record.location,
        declared=declared.fields,
        recorded=recorded,
        recorded_at=recorded_at,
        recorded_by=let_through_said(record.approval),
        live=live,
        unread=unread,
        replace=replace,
        removals=declared.removals,
        notes=record.names,
        table_plan=table_plan,
        declared_table=(declared.display_name, declared.description),
        count_rows=count_rows,
        backfills=declared.backfills,
        type_changes=declared.type_changes,
        read_usage=usage,
        workflow_usage=workflow_usage,
    )
    return plan, recorded, live


@dataclass(frozen=True)
class ApplyRequest:
    """
    One plan's or apply's arguments (:func:`plan`, :func:`apply`), each checked once where it enters.

    By :meth:`checked`, or by the operator as it is built (the static arguments) and rendered (the templated ones).
    Below that, nothing checks them again: an ``ApplyRequest`` is taken as checked. The arguments are those of
    :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`.

    :ivar declared: the declaration, read and checked.
    :ivar record_path: where the record and the lock live (None: neither is kept).
    :ivar approved: the approved plan (its XCom or fingerprint): the apply refuses any other.
    :ivar holder: who holds the table's lock (None: this process).
    :ivar approval: who approved the plan in Airflow's review and when, ``{"approved_by",
        "approved_at"}``, as the operator read Airflow's record of the answer: it lets the plan's
        removals through, and the record keeps it.
    """

    ws_id: str
    table: str
    declared: Declaration
    record_path: str | None = None
    replace: bool = False
    create_table: bool = False
    max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY
    fail_fast: bool = False
    only_changed: bool = False
    approved: Mapping[str, Any] | str | None = None
    lock_wait: float = 0.0
    holder: Holder | None = None
    acknowledge_risks: bool = False
    approval: Mapping[str, str] | None = None
    workflow_usage: str = "review"

    @property
    def let_through(self) -> dict[str, Any]:
        """
        What lets this request's plan through, as its XCom and record say it.

        ``{"approved_by", "approved_at"}``, ``{"acknowledged": True}``, or nothing.
        """
        return let_through_record(self.approval, self.acknowledge_risks)

    @classmethod
    def checked(
        cls, ws_id: str, table: str, updates: Updates, *, source: str | None = None, **given: Any
    ) -> ApplyRequest:
        """
        Return a request of these arguments, each checked (the fields' names as this class's).

        :param updates: the declaration: a list of entries and tombstones, an object with
            ``fields`` and the table's display name and description, its JSON text, or a
            :class:`~blinkops_provider.migrations.Declaration`.
        :param source: how errors name the declaration (``"fields"``: an operator's argument).
        :raises BlinkInputError: the first wrong argument (every wrong entry of the declaration),
            saying what is allowed.
        """
        if "max_concurrency" in given:
            check_concurrency(given["max_concurrency"])
        if "approved" in given:
            given["approved"] = approved_plan(given["approved"])
        for flag in ("replace", "create_table", "only_changed", "acknowledge_risks"):
            if flag in given:
                given[flag] = check_flag(given[flag], flag)
        if "lock_wait" in given:
            given["lock_wait"] = check_lock_wait(given["lock_wait"])
        if "approval" in given:
            check_approval(given["approval"])
        if "workflow_usage" in given:
            given["workflow_usage"] = check_workflow_usage(given["workflow_usage"])
        declared = (
            read_declaration(updates) if source is None else read_declaration(updates, source=source, prefix=False)
        )
        check_names(ws_id, table)
        record_path = given.pop("record_path", None)
        return cls(ws_id, table, declared, os.fspath(record_path) if record_path is not None else None, **given)


def plan_schema(
    hook: BlinkHook,
    ws_id: str,
    table: str,
    updates: Updates,
    *,
    record_path: str | os.PathLike[str] | None = None,
    replace: bool = False,
    create_table: bool = False,
    workflow_usage: str = "review",
) -> SchemaPlan:
    """
    Return what applying ``updates`` would do to ``ws_id``/``table``.

    Against Blink's table and fields (``GET .../tables`` and ``GET .../fields``), with the record at ``record_path``
    (when given) as the drift baseline, or against the record alone where Blink does not serve the fields read. Changes
    nothing.

    :param updates: the declaration (:func:`declared_schema`'s forms: a list of entries and
        tombstones, an object with ``fields`` and the table's display name and description).
    :param replace: plan to send each declaration as given (Blink resets what it leaves out)
        instead of its merge with the field as Blink holds it.
    :param create_table: plan the table's creation when Blink does not have it.
    :param workflow_usage: what a change that breaks an active Blink workflow's step is: ``review`` (destructive: a
        person's Approve or ``acknowledge_risks`` lets it through) or ``refuse`` (refused: the plan applies nothing).
    :raises BlinkInputError: an invalid declaration, or a file at ``record_path`` that is not
        this table's record.
    :raises BlinkNotFoundError: Blink has no such table, and ``create_table`` is False.
    """
    given: dict[str, Any] = {
        "record_path": record_path,
        "replace": replace,
        "create_table": create_table,
        "workflow_usage": workflow_usage,
    }
    return plan(hook, ApplyRequest.checked(ws_id, table, updates, **given))


def _location(request: ApplyRequest) -> str | None:
    """Return where the request's record is kept (None: no record): computed here, once per plan or apply."""
    if request.record_path is None:
        return None
    return record_location(request.record_path, request.ws_id, request.table)


def plan(hook: BlinkHook, request: ApplyRequest) -> SchemaPlan:
    """Return what applying ``request`` would do (:func:`plan_schema`, whose arguments it holds, checked)."""
    record = schema_record(hook, request.ws_id, request.table, _location(request))
    planned, _, _ = _plan(hook, record, request.declared, request.replace, request.create_table, request.workflow_usage)
    return planned


def table_lock(
    hook: BlinkHook, location: str | None, *, records: Any, ws_id: str, table: str, holder: Holder | None, wait: float
) -> TableLock | contextlib.nullcontext[None]:
    """
    Return the table's lock beside its record at ``location`` (none without a record).

    ``records`` is the ``record_path`` as given (for the unlock command a refusal prints).
    """
    if location is None:
        return contextlib.nullcontext()
    clock = hook.clock
    return TableLock(
        location,
        records=records,
        ws_id=ws_id,
        table=table,
        holder=holder or Holder.current(),
        wait=wait,
        now=clock.now,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        log=hook.log,
    )


def apply_schema(
    hook: BlinkHook,
    ws_id: str,
    table: str,
    updates: Updates,
    *,
    record_path: str | os.PathLike[str] | None = None,
    max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
    fail_fast: bool = False,
    only_changed: bool = False,
    plan: Mapping[str, Any] | str | None = None,
    lock_wait: float = 0.0,
    holder: Holder | None = None,
    replace: bool = False,
    acknowledge_risks: bool = False,
    create_table: bool = False,
    approval: Mapping[str, str] | None = None,
    workflow_usage: str = "review",
) -> ApplyResult:
    """
    Apply ``updates`` to ``ws_id``/``table`` as a migration.

    Lock, read Blink's table and fields and plan, check, then create the table, add fields, change fields (each sent
    merged with what Blink holds), change the table, and remove fields last; record.

    The arguments are those of :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`;
    ``holder`` names who holds the table's lock (by default this process, as the task instance
    running now). Without ``record_path`` there is no drift baseline and no lock file; nothing
    else differs.

    :param acknowledge_risks: apply a plan that removes fields, or breaks an active Blink workflow, although no
        person approved it in review (as Blink's own tool's ``acknowledge_risks``).
    :param create_table: create the table, with its declared fields, when Blink does not have it.
    :param workflow_usage: ``review`` (a change that breaks an active workflow needs an approval or
        ``acknowledge_risks``) or ``refuse`` (refused before any write).
    :param approval: who approved the plan in Airflow's review and when, ``{"approved_by",
        "approved_at"}``, as the review task's recorded answer gives it (the operator's
        ``review_task_id`` reads it): it lets the plan's removals through, and the record keeps it.
    :raises BlinkInputError: invalid input, before the lock is taken; a removal or a break of an active workflow
        neither approved nor acknowledged, or refused by ``workflow_usage`` (nothing sent).
    :raises BlinkStalePlanError: ``plan`` is not what would be applied now (nothing sent).
    :raises BlinkLockedError: another apply holds the table's lock (nothing sent).
    :raises BlinkNotFoundError: Blink has no such table, and ``create_table`` is False (nothing sent).
    :raises BlinkConfigurationError: the record's location cannot be read or written.
    """
    given: dict[str, Any] = {"record_path": record_path, "max_concurrency": max_concurrency, "fail_fast": fail_fast}
    given |= {"holder": holder, "only_changed": only_changed, "approved": plan, "lock_wait": lock_wait}
    given |= {"replace": replace, "acknowledge_risks": acknowledge_risks, "create_table": create_table}
    given |= {"approval": approval, "workflow_usage": workflow_usage}  # (each checked once, in ApplyRequest.checked)
    return apply(hook, ApplyRequest.checked(ws_id, table, updates, **given))


def apply(hook: BlinkHook, request: ApplyRequest) -> ApplyResult:
    """Apply ``request`` (:func:`apply_schema`, whose arguments it holds, checked)."""
    location = _location(request)
    lock = table_lock(
        hook,
        location,
        records=request.record_path,
        ws_id=request.ws_id,
        table=request.table,
        holder=request.holder,
        wait=request.lock_wait,
    )
    record = schema_record(hook, request.ws_id, request.table, location)  # reads the connection
    with lock:
        planned, recorded, held = _plan(
            hook, record, request.declared, request.replace, request.create_table, request.workflow_usage
        )
        who = pass_gate(
            hook.log, planned, request.approved, request.approval, request.acknowledge_risks
        )  # before sending
        log_plan(planned, hook.log)
        sender = _Steps(
            hook,
            record,
            recorded,
            planned,
            request.only_changed,
            request.max_concurrency,
            request.fail_fast,
            who,
            request.declared.type_changes,
            held=held,
        )
        result = sender.run()
    result.let_through = who
    return result
