"""
Operators for Blink tables, and what an apply of one table tells.

One log line per field that was not left unchanged, the summary its task pushes to XCom (on every way out, and what a
fleet's summary reads), and the error that ends a batch that did not apply every field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperatorLink, XCom

from blinkops_provider.assets import CHANGING, TABLES_ALIAS, table_lineage
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkInputError,
    BlinkLockedError,
    BlinkStalePlanError,
)
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import (
    ApplyRequest,
    ApplyResult,
    Holder,
    apply,
    apply_schema,
    check_workflow_usage,
    log_plan,
    plan,
    plan_xcom,
)
from blinkops_provider.models import FieldBatch, FieldType, FieldUpdate
from blinkops_provider.operators._answer import approval_from_review
from blinkops_provider.operators._base import TABLE_PAGE_KEY, BaseBlinkOperator, with_alias
from blinkops_provider.retry_policy import batch_error
from blinkops_provider.utils.inputs import (
    DEFAULT_UPDATE_CONCURRENCY,
    check_concurrency,
    check_flag,
    check_lock_wait,
    parse_json_object,
    rendered_flag,
    validate_input,
)
from blinkops_provider.utils.states import FieldOutcome, TableOutcome
from blinkops_provider.utils.text import one_line

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


FIELD_OUTCOMES = tuple(FieldOutcome)
"""A field's outcomes, in the order the summary line counts them."""

SHOWN_FIELDS = 20
"""The most fields the final error names one by one."""


def grouped(outcomes: dict[str, str]) -> dict[str, list[str]]:
    """Field names by outcome (``{"added": [...], "changed": [...], ...}``), in the declared order."""
    groups: dict[str, list[str]] = {}
    for name, outcome in outcomes.items():
        groups.setdefault(outcome, []).append(name)
    return groups


def _table_outcome(counts: Counter[str], exc: BaseException | None) -> str:
    """
    Return the table's outcome for a fleet.

    ``failed`` (a field failed, or unknown, or the task did), ``applied`` (a field sent), else ``unchanged``.
    """
    if exc is not None or counts[FieldOutcome.FAILED] or counts[FieldOutcome.UNKNOWN]:
        return TableOutcome.FAILED
    sent = (FieldOutcome.ADDED, FieldOutcome.CHANGED, FieldOutcome.REMOVED, FieldOutcome.RETYPED, FieldOutcome.APPLIED)
    return TableOutcome.APPLIED if any(counts[outcome] for outcome in sent) else TableOutcome.UNCHANGED


def _why(name: str, result: ApplyResult) -> str:
    """Return a field the batch did not apply, with why in a few words: ``'Tags' (404: not found)``."""
    unclear = result.unconfirmed.get(name)
    error = unclear or result.failed.get(name)
    if error is None:
        return f"{one_line(name)!r} ({'in flight when interrupted' if name in result.unknown else 'not sent'})"
    why = one_line(f"{error.status}: {error.message}" if error.status else str(error.message))
    why = f"unknown: {why}" if unclear is not None else why
    return f"{one_line(name)!r} ({why})"  # whole: the advice is at the end of a reason (#72)


def not_applied(result: ApplyResult) -> BlinkApiError:
    """
    Return the error that ends a batch that did not apply every field.

    Each field and why, and the class :func:`~blinkops_provider.retry_policy.batch_error` gives it (whether a retry
    helps).
    """
    missing = [*result.failed, *result.not_sent, *result.unknown]
    more = f" and {len(missing) - SHOWN_FIELDS} more" if len(missing) > SHOWN_FIELDS else ""
    names = ", ".join(_why(name, result) for name in missing[:SHOWN_FIELDS]) + more
    return batch_error(f"{len(missing)} of {len(result.order)} field(s) not applied: {names}", result.failed.values())


@dataclass(frozen=True)
class ApplyReport:
    """The report of one table's apply, logged to ``log``."""

    ws_id: str
    table: str
    log: logging.Logger | Any
    fail_fast: bool = False

    def summary(
        self,
        result: ApplyResult,
        *,
        let_through: dict[str, Any] | None = None,
        exc: BaseException | None = None,
        rate_limited: int = 0,
    ) -> dict[str, Any]:
        """
        Log the outcome, keyed by the declared names.

        A summary line, then one line per field added, changed, failed or unknown (unchanged fields are counted, not
        listed); the XCom summary. Linear in the number of fields.
        """
        outcomes = result.outcomes()
        counts = Counter(outcomes.values())
        self._log_tally(result, counts)
        stopped = self._stopped_by(result, exc)
        failed = [
            failure
            for name in result.order
            if outcomes[name] != FieldOutcome.UNCHANGED
            and (failure := self._log_field(name, outcomes[name], result, stopped))
        ]
        if counts[FieldOutcome.UNCHANGED]:
            self.log.info("  (%d field(s) unchanged)", counts[FieldOutcome.UNCHANGED])
        named = {"names": result.names(), **({"table_name": result.table_name} if result.table_name else {})}
        named |= {"backfilled": dict(result.backfilled)} if result.backfilled else {}
        named |= {"backup": result.backup} if result.backup else {}  # what a rollback of this apply reads
        named |= {"workflows": dict(result.workflows)} if result.workflows else {}  # what its changes break
        return {
            **self._head([name for name in result.order if name in result.applied], failed, list(result.unknown)),
            "outcomes": {name: str(outcome) for name, outcome in outcomes.items()},  # plain text: JSON
            **named,
            **self.fleet_facts(let_through, exc, _table_outcome(counts, exc), rate_limited),
        }

    def _log_tally(self, result: ApplyResult, counts: Counter[str]) -> None:
        """Log the summary line: ``Schema of ws/table: n of m fields applied (k changed, ...)``."""
        tally = ", ".join(f"{counts[word]} {word}" for word in FIELD_OUTCOMES if counts[word])
        self.log.info(
            "Schema of %s/%s: %d of %d fields applied (%s)",
            one_line(self.ws_id),
            one_line(self.table),
            len(result.applied) + len(result.skipped),
            len(result.order),
            tally,
        )

    def failed(
        self,
        result: ApplyResult | None,
        *,
        let_through: dict[str, Any] | None = None,
        exc: BaseException,
        rate_limited: int = 0,
    ) -> dict[str, Any]:
        """
        Return the XCom of an apply that ``exc`` ended.

        What was known then (``result``, or what the exception carries), or an apply that sent nothing (stale, locked,
        unreachable).
        """
        known = result or ApplyResult.carried_by(exc)
        if known is not None:
            return self.summary(known, let_through=let_through, exc=exc, rate_limited=rate_limited)
        outcome = TableOutcome.STALE if isinstance(exc, BlinkStalePlanError) else TableOutcome.FAILED
        return {**self._head([], [], []), "outcomes": {}, **self.fleet_facts(let_through, exc, outcome, rate_limited)}

    def _head(self, updated: list[str], failed: list[dict[str, Any]], unknown: list[str]) -> dict[str, Any]:
        return {"ws_id": self.ws_id, "table": self.table, "updated": updated, "failed": failed, "unknown": unknown}

    @staticmethod
    def fleet_facts(
        let_through: dict[str, Any] | None, exc: BaseException | None, outcome: str, rate_limited: int
    ) -> dict[str, Any]:
        """
        Return what a fleet's summary reads of an apply.

        Its outcome, its rate-limit waits, who let its plan through (``approved_by`` and ``approved_at``, or
        ``acknowledged``), and why it failed (a provider error's scrubbed text).
        """
        facts: dict[str, Any] = {"outcome": str(outcome), "rate_limited": rate_limited, **(let_through or {})}
        if exc is not None:
            shown = str(exc) if isinstance(exc, (BlinkApiError, BlinkInputError, BlinkLockedError)) else ""
            facts["error"] = f"{type(exc).__name__}: {shown}"[:2000].rstrip(": ")  # room for the unlock command
        return facts

    def _stopped_by(self, result: ApplyResult, exc: BaseException | None = None) -> str:
        """
        Return why fields were left unsent.

        The key refused, ``fail_fast``, an earlier step's failure (an error of Blink's or the provider's), or an
        interruption (a timeout, a signal).
        """
        auth = next((error for error in result.failed.values() if isinstance(error, BlinkAuthError)), None)
        if auth is not None:
            return "Blink refused the API key (401)" if auth.status != 403 else "the key lacks the workspace role (403)"
        if self.fail_fast:
            return "fail_fast stopped the batch"
        failed_step = isinstance(exc, (BlinkApiError, BlinkInputError))
        return "an earlier step of the apply failed" if failed_step else "the task was interrupted"

    def _log_field(self, name: str, outcome: str, result: ApplyResult, stopped: str) -> dict[str, Any] | None:
        """Log one field's line; a failed field's XCom entry (None for any other)."""
        if name in result.applied:
            self._log_applied(name, outcome, result)
            return None
        if outcome == FieldOutcome.UNKNOWN:
            unclear = result.unconfirmed.get(name)
            why = f"sent, but {unclear.message}" if unclear is not None else "in flight when the task was interrupted"
            self.log.warning("  %s: unknown: %s (perhaps applied; not recorded)", one_line(name), one_line(why))
            return None
        error = result.failed.get(name)
        status = error.status if error is not None else None
        message = str(error.message) if error is not None else f"not sent: {stopped}"
        if error is not None and error.details and error.details != error.message:
            message = f"{message} ({error.details})"
        self.log.error("  %s: failed%s: %s", one_line(name), f" with {status}" if status else "", one_line(message))
        return {"field": name, "status": status, "message": message}

    def _log_applied(self, name: str, outcome: str, result: ApplyResult) -> None:
        stored = result.applied[name]
        if outcome == FieldOutcome.REMOVED:
            self.log.info("  %s: removed, with its values", one_line(name))
            return
        if outcome == FieldOutcome.RETYPED and stored is not None:
            self.log.info("  %s: retyped to %s (Blink's name is now %r)", one_line(name), stored.type, stored.name)
            return
        if outcome == FieldOutcome.ADDED and stored is not None and stored.name != name:
            self.log.info(
                "  %s: added (%s, %r; Blink's name is %r)",
                one_line(name),
                stored.type,
                stored.display_name,
                stored.name,
            )
            return
        members = result.plan.members(name) if result.plan is not None else ()
        detail = f"; {', '.join(members)}" if members else ""
        if stored is None:
            self.log.info("  %s: %s%s (Blink confirmed it, 2xx, without showing it)", one_line(name), outcome, detail)
        else:
            self.log.info("  %s: %s (%s, %r%s)", one_line(name), outcome, stored.type, stored.display_name, detail)


__all__ = ["BlinkTableLink", "UpdateTableFieldOperator", "UpdateTableFieldsOperator"]


class BlinkTableLink(BaseOperatorLink):
    """
    The "Blink table" button of a table task.

    The table in Blink's UI, built from the connection's host (see
    :meth:`~blinkops_provider.hooks.blink.BlinkHook.table_page`) when the task ran; no button before.
    """

    name = "Blink table"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """Return the address the task kept (an ``http(s)`` URL), else ""."""
        page = XCom.get_value(ti_key=ti_key, key=TABLE_PAGE_KEY)
        return page if isinstance(page, str) and page.startswith(("https://", "http://")) else ""


class UpdateTableFieldOperator(BaseBlinkOperator):
    """
    Set the type, display name and attributes of a field of a Blink table.

    Blink's update replaces the whole field, so the operator reads the table's fields first and
    sends the update merged with the field as Blink holds it: what it leaves out (``required``,
    ``is_unique``, ``description``, other attributes) is kept. Blink refuses to change a field's
    type, so ``field_type`` (the field's current type) and ``display_name`` are required. The
    body is checked after templating and before any request.

    :param ws_id: the workspace id.
    :param table: the table's name (any characters; it is percent-encoded).
    :param field: the field's name.
    :param field_type: one of ``text``, ``long-text``, ``number``, ``risk-level``, ``checkbox``,
        ``single-select``, ``multi-select``, ``list``, ``reference``, ``date``.
    :param display_name: the name shown in Blink.
    :param attributes: ``required``, ``is_unique``, ``default_value``, ``include_time``,
        ``options``, ``table_reference`` (a dict, or a JSON string as a template renders it).
    :param description: the field's description (kept as Blink holds it when not given).
    :param replace: send the update as given, not merged with the field as Blink holds it (the
        table's fields are still read, to tell an add from a change; where Blink does not serve
        that read, the update is sent without it): Blink then
        resets every member and attribute it leaves out.
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``) the updated field as Blink returned it, a JSON-ready dict.
    :raises BlinkInputError: invalid input, before any request.
    :raises BlinkBadRequestError: Blink refused the update (the task fails without retry).
    """

    template_fields: Sequence[str] = (
        "ws_id",
        "table",
        "field",
        "field_type",
        "display_name",
        "description",
        "attributes",
    )
    template_fields_renderers = {"attributes": "json"}
    ui_color = "#d8e9ff"
    operator_extra_links = (BlinkTableLink(),)

    def __init__(
        self,
        *,
        ws_id: str,
        table: str,
        field: str,
        field_type: FieldType | str,
        display_name: str,
        attributes: dict[str, Any] | str | None = None,
        description: str | None = None,
        replace: bool = False,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["outlets"] = with_alias(kwargs.get("outlets"), TABLES_ALIAS)
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        self.ws_id = ws_id
        self.table = table
        self.field = field
        self.field_type = field_type
        self.display_name = display_name
        self.description = description
        self.attributes = attributes
        self.replace = check_flag(replace, "replace")

    def build_update(self) -> FieldUpdate:
        """
        Return the request body from the (rendered) arguments.

        :raises BlinkInputError: a wrong type, a blank display name, unknown attributes.
        """
        what = f"update of field {self.field!r}"
        missing = [name for name in ("field_type", "display_name") if getattr(self, name) in (None, "")]
        if missing:
            raise BlinkInputError(
                f"invalid {what}: {' and '.join(missing)} required; Blink resets what a field "
                "update leaves out and refuses to change a field's type"
            )
        body: dict[str, Any] = {"type": self.field_type, "display_name": self.display_name}
        if self.description is not None:
            body["description"] = self.description
        attributes = parse_json_object(self.attributes, "attributes")
        if attributes is not None:
            body["attributes"] = attributes
        return validate_input(FieldUpdate, body, what)

    def execute(self, context: Context) -> dict[str, Any]:
        update = self.build_update()
        self.keep_table_page(context, self.ws_id, self.table)
        self._declared = [{"field": self.field, **update.to_body()}]  # for lineage
        entry = FieldBatch([(self.field, update)], named=True)
        result = apply_schema(self.hook, self.ws_id, self.table, entry, replace=self.replace, max_concurrency=1)
        if not result.ok:
            raise result.failed.get(self.field) or not_applied(result)
        updated = result.applied.get(self.field)
        self.log.info(
            "Field %r of table %r in workspace %r: %s (type %s)",
            self.field,
            self.table,
            self.ws_id,
            result.outcome(self.field),
            updated.type if updated is not None else update.type,
        )
        self.announce_table(context, self.ws_id, self.table, [self.field])
        if updated is not None:
            return updated.to_json_dict()
        return {"name": result.names().get(self.field, self.field), **update.to_body()}  # (Blink's name, always)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the table as an output dataset with the field's schema (no request)."""
        declared = getattr(self, "_declared", None)
        if not declared:  # execute failed before the update was checked: nothing to describe
            from airflow.providers.openlineage.extractors import OperatorLineage

            return OperatorLineage()
        return table_lineage(self.hook.base_url, str(self.ws_id), str(self.table), declared)


@dataclasses.dataclass
class _Outcome:
    """What one apply gave: its result (None until it returns), then the XCom's summary."""

    result: ApplyResult | None = None
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)


class UpdateTableFieldsOperator(BaseBlinkOperator):
    """
    Make a Blink table match its declared schema, in one task.

    Fields added, changed and (behind an approval) removed, the table created or its display name and description
    changed.

    Every entry is checked after templating and before any request (names, types, attributes,
    no field twice; all problems reported together). The task plans against the table as Blink
    holds it (:mod:`blinkops_provider.migrations`: each entry matched to Blink's field by name, the
    record's note of Blink's name, then display name) and sends, in this order: the table's
    creation (``create_table``), the fields to add (``POST``), the fields to change (``PUT``, each
    merged with what Blink holds), the table's display name or description, and the removals last,
    ``max_concurrency`` at a time. A failing field does not stop the others unless ``fail_fast``;
    a failure before the removals sends no removal. The log ends with one line per field.

    :param ws_id: the workspace id.
    :param table: the table's name (or, for a table this provider created, its display name).
    :param fields: the declared schema: a list of entries ``{"field": name, "type": ...,
        "display_name": ..., "description": ..., "attributes": {...}}`` (``type`` and
        ``display_name`` required) and tombstones ``{"field": "Old", "remove": true}``; or an
        object ``{"display_name": ..., "description": ..., "fields": [...]}`` that declares the
        table's display name and description too; or its JSON text as a template renders it.
    :param max_concurrency: requests in flight at once, 1 to 32 (default 16, measured; see
        :meth:`~blinkops_provider.hooks.blink.BlinkHook.update_table_fields`).
    :param fail_fast: after the first failure, start no new request (those in flight finish).
    :param record_path: where the record of this table's last apply is kept (a local path shared by
        the workers, or an object-storage URI such as ``s3://bucket/blink/Incidents.json``), one
        per table: the drift baseline, Blink's names of the fields this provider added, and the
        table's lock. Without it there is no drift baseline and no lock; nothing else differs.
    :param only_changed: send only what the plan finds to add, change or remove, also when the plan
        was made against the record alone. A field the plan finds ``unchanged`` against Blink's own
        fields is never sent (Blink holds exactly the declaration: a rerun writes nothing); against
        the record alone (Blink's fields read refused), by default every declared field is sent
        again, which corrects a change made in Blink since.
    :param plan_only: check that Blink accepts the connection's key (one small request), log
        the plan and return it, and send nothing else: the first task of a plan, review, apply DAG.
    :param fail_on_refusal: with ``plan_only``, fail the task when the plan refuses an entry (every
        refusal said in full), so that nobody is asked to review a plan that would apply nothing: a
        plan is applied whole or not at all, and the apply itself refuses such a plan before any
        write. ``BlinkSchemaFleet`` sets False, so that its other tables go on.
    :param plan: the approved plan, to apply it and nothing else: the plan task's XCom
        (``plan=plan_task.output``, or its JSON text) or its ``fingerprint``. The apply plans again
        (under the table's lock with a ``record_path``) and, if anything changed since, fails with
        :class:`~blinkops_provider.exceptions.BlinkStalePlanError` and sends nothing.
    :param review_task_id: the task id, in the same DAG run, of an ``ApprovalOperator`` (Airflow
        3.1+) upstream of this task: a Reject it pushed fails the task before anything is sent. Its
        answer is read from its XCom, a copy that a user allowed to edit XComs may overwrite, and a
        task may not read another task's record of the answer: so it never lets a removal through.
        A removal approved by a person needs the apply to ask itself, as
        :class:`~blinkops_provider.task_groups.BlinkTableMigration`'s apply does (it reads its own
        record of the answer), or ``acknowledge_risks``.
    :param acknowledge_risks: apply removals although no person approved the plan in review
        (as Blink's own tool's ``acknowledge_risks``). By default a plan with a removal is
        refused, before anything is sent. ``True``/``False``, or a template that renders one.
    :param workflow_usage: what a change that breaks an active Blink workflow's step is (the plan names each such
        workflow and step, see :doc:`/workflows`): ``review`` (the default: destructive, so a person's Approve or
        ``acknowledge_risks`` lets it through) or ``refuse`` (refused: the plan applies nothing, the workflows and
        steps named).
    :param create_table: create the table with its declared fields when Blink does not have it
        (by default a missing table fails the task, naming this flag).
    :param lock_wait: seconds to wait for another apply of the same table to finish (default 0:
        fail at once, naming who holds the table's lock and since when; Airflow's retries apply).
    :param replace: send each declaration as given instead of its merge with the field as Blink
        holds it: Blink then resets what it leaves out.
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``, pushed on every way out: a failure, ``execution_timeout``, a
        signal) ``{"ws_id", "table", "updated", "failed", "unknown", "outcomes": {name: outcome},
        "names": {name: Blink's name of each field, where it is not the declared name}, "outcome",
        "rate_limited"}``, with
        ``"table_name"`` (Blink's name of the table) when it created the table, ``"approved_by"``
        and ``"approved_at"`` when a person approved the plan in the review this task asked (see
        :class:`~blinkops_provider.task_groups.BlinkTableMigration`), or ``"acknowledged": true`` with
        ``acknowledge_risks``, ``"backfilled"`` (the rows each declared ``backfill`` filled, by
        field), and ``"backup"`` (where the apply saved what it changed and destroyed, before its first write:
        see :doc:`/undo`); an outcome being ``added``, ``changed``, ``removed``, ``retyped``, ``unchanged``,
        ``applied``, ``failed`` or ``unknown`` (in flight when interrupted); with ``plan_only``, the plan
        (:func:`~blinkops_provider.migrations.plan_xcom`).
    :raises BlinkInputError: invalid entries, before any request; a plan that refuses an entry
        (every refusal said; nothing sent to the table); a ``review_task_id`` that names
        no approval task upstream, or whose answer rejected the plan; a removal not acknowledged,
        before anything is sent.
    :raises BlinkStalePlanError: ``plan`` is not what would be applied now, before anything is sent.
    :raises BlinkLockedError: another apply of the table holds its lock, before anything is sent.
    :raises BlinkNotFoundError: no such table, and ``create_table`` is False, before anything is sent.
    :raises BlinkApiError: some fields failed: a
        :class:`~blinkops_provider.exceptions.BlinkClientError` (no retry) when one had a 4xx,
        else Airflow's retries apply (the retry policy's decision for a batch).
    """

    template_fields: Sequence[str] = ("ws_id", "table", "fields", "record_path", "plan", "acknowledge_risks")
    template_fields_renderers = {"fields": "json", "plan": "json"}
    ui_color = "#d8e9ff"
    operator_extra_links = (BlinkTableLink(),)

    def __init__(
        self,
        *,
        ws_id: str,
        table: str,
        fields: list[dict[str, Any]] | dict[str, Any] | str,
        max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
        fail_fast: bool = False,
        record_path: str | None = None,
        only_changed: bool = False,
        plan_only: bool = False,
        plan: dict[str, Any] | str | None = None,
        lock_wait: float = 0.0,
        replace: bool = False,
        acknowledge_risks: bool | str = False,
        create_table: bool = False,
        review_task_id: str | None = None,
        fail_on_refusal: bool = True,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        workflow_usage: str = "review",
        **kwargs: Any,
    ) -> None:
        kwargs["outlets"] = with_alias(kwargs.get("outlets"), TABLES_ALIAS)
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        check_concurrency(max_concurrency)
        if review_task_id is not None and (not isinstance(review_task_id, str) or not review_task_id):
            raise BlinkInputError(f"review_task_id must be a task id (text) or None, got {review_task_id!r}")
        self.review_task_id = review_task_id
        self.replace = check_flag(replace, "replace")
        self.create_table = check_flag(create_table, "create_table")
        self.acknowledge_risks = (
            acknowledge_risks
            if isinstance(acknowledge_risks, str)
            else check_flag(acknowledge_risks, "acknowledge_risks")
        )
        self.ws_id = ws_id
        self.table = table
        self.fields = fields
        self.max_concurrency = max_concurrency
        self.fail_fast = fail_fast
        self.record_path = record_path
        self.only_changed = check_flag(only_changed, "only_changed")
        self.plan_only = check_flag(plan_only, "plan_only")
        self.fail_on_refusal = check_flag(fail_on_refusal, "fail_on_refusal")
        self.plan = plan
        self.lock_wait = check_lock_wait(lock_wait)
        self.workflow_usage = check_workflow_usage(workflow_usage)

    def execute(self, context: Context) -> dict[str, Any]:
        request = self._request(context)  # every argument checked (the static ones when the operator was built)
        self.keep_table_page(context, self.ws_id, self.table)
        if self.plan_only:
            return self._plan(request)
        if self.review_task_id is not None:  # a Reject there stops; it approves nothing
            approval_from_review(self, context.get("ti"), self.review_task_id)
        with self._reported(context, request) as outcome:
            outcome.result = apply(self.hook, request)
        return outcome.summary

    @contextlib.contextmanager
    def _reported(self, context: Context, request: ApplyRequest) -> Iterator[_Outcome]:
        """
        Around one apply of ``request``, called in the ``with`` block.

        Its XCom pushed on every way out (a failure, execution_timeout, a signal), and its summary logged and announced
        when it succeeded.
        """
        let_through = request.let_through
        report = ApplyReport(str(self.ws_id), str(self.table), self.log, self.fail_fast)
        outcome = _Outcome()
        try:
            yield outcome
            if outcome.result is None or not outcome.result.ok:
                raise not_applied(outcome.result) if outcome.result else RuntimeError("no apply was made")
        except BaseException as exc:
            rate_limited = self.hook.rate_limited if "hook" in self.__dict__ else 0
            failed = report.failed(outcome.result, let_through=let_through, exc=exc, rate_limited=rate_limited)
            context["ti"].xcom_push(key="return_value", value=failed)
            raise
        summary = report.summary(outcome.result, let_through=let_through, rate_limited=self.hook.rate_limited)
        self._announce(context, summary, planned=outcome.result.plan is not None)
        outcome.summary = summary

    def _request(self, context: Context) -> ApplyRequest:
        """
        Return the plan's or apply's arguments.

        The templated ones checked here, once rendered, before any request; the others were checked when the operator
        was built.
        """
        rendered = ApplyRequest.checked(self.ws_id, self.table, self.fields, source="fields", approved=self.plan)
        self._declared = [{"field": name, **update.to_body()} for name, update in rendered.declared.fields]  # lineage
        return dataclasses.replace(
            rendered,
            record_path=str(self.record_path) if self.record_path else None,
            replace=self.replace,
            create_table=self.create_table,
            max_concurrency=self.max_concurrency,
            fail_fast=self.fail_fast,
            only_changed=self.only_changed,
            lock_wait=self.lock_wait,
            holder=Holder.current(context.get("ti")),
            acknowledge_risks=rendered_flag(self.acknowledge_risks, "acknowledge_risks"),
            workflow_usage=self.workflow_usage,
        )

    def _announce(self, context: Context, summary: dict[str, Any], *, planned: bool) -> None:
        """Announce the table's asset event, unless a plan found nothing to add, change or remove."""
        groups = grouped(summary["outcomes"]) if planned else None
        if groups is None or any(groups.get(outcome) for outcome in CHANGING):
            self.announce_table(
                context,
                self.ws_id,
                self.table,
                summary["updated"],
                groups,
                backup=summary.get("backup", ""),
                workflows=summary.get("workflows"),
            )
        else:
            where = one_line(f"{self.ws_id}/{self.table}")
            self.log.info("No field was added, changed or removed: no asset event for %s", where)

    def _plan(self, request: ApplyRequest) -> dict[str, Any]:
        """Return the plan's XCom, once the key is known to work (before anyone is asked to review)."""
        self.hook.check_key()
        planned = plan(self.hook, request)
        log_plan(planned, self.log)
        if self.fail_on_refusal:
            planned.check_whole()  # a plan that refuses an entry applies nothing: nobody is asked to review it
        return plan_xcom(planned)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """
        OpenLineage: the table as an output dataset with the declared schema (no request; what ``execute`` checked).

        A plan changes nothing: no dataset.
        """
        from airflow.providers.openlineage.extractors import OperatorLineage

        if self.plan_only or not getattr(self, "_declared", None):
            return OperatorLineage()
        return table_lineage(self.hook.base_url, str(self.ws_id), str(self.table), self._declared)
