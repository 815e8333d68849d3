"""Operators for Blink tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from blinkops_provider.assets import TABLES_ALIAS, table_lineage
from blinkops_provider.batch import FieldUpdates
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import DEFAULT_UPDATE_CONCURRENCY, BlinkHook
from blinkops_provider.inputs import check_concurrency, check_flag, check_lock_wait, parse_json_object, validate_input
from blinkops_provider.migrations import Holder, apply_schema, approved_plan, plan_schema
from blinkops_provider.migrations.merge import merged_with_blink
from blinkops_provider.migrations.report import ApplyReport, grouped, not_applied
from blinkops_provider.models import FieldBatch, FieldType, FieldUpdate, validate_field_updates
from blinkops_provider.operators._base import BaseBlinkOperator, with_alias

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["UpdateTableFieldOperator", "UpdateTableFieldsOperator"]


class UpdateTableFieldOperator(BaseBlinkOperator):
    """Set the type, display name and attributes of a field of a Blink table.

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
    :param replace: send the update as given, without reading the field first: Blink then
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
        """The request body from the (rendered) arguments.

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
        self._declared = [{"field": self.field, **update.to_body()}]  # for lineage
        if not self.replace:
            [(_, update)] = merged_with_blink(self.hook, self.ws_id, self.table, [(self.field, update)])
        updated = self.hook.update_table_field(self.ws_id, self.table, self.field, update)
        self.log.info(
            "Updated field %r of table %r in workspace %r (type %s)",
            self.field,
            self.table,
            self.ws_id,
            updated.type,
        )
        self.announce_table(context, self.ws_id, self.table, [self.field])
        return updated.to_json_dict()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the table as an output dataset with the field's schema (no request)."""
        declared = getattr(self, "_declared", None)
        if not declared:  # execute failed before the update was checked: nothing to describe
            from airflow.providers.openlineage.extractors import OperatorLineage

            return OperatorLineage()
        return table_lineage(self.hook.base_url, str(self.ws_id), str(self.table), declared)


class UpdateTableFieldsOperator(BaseBlinkOperator):
    """Apply a declared schema, many fields of one Blink table, in one task.

    Every entry is checked after templating and before any request (names, types, attributes,
    no field twice; all problems reported together), then the updates are sent
    ``max_concurrency`` at a time. A failing field does not stop the others unless ``fail_fast``.
    The log ends with one line per field, in the declared order.

    :param ws_id: the workspace id.
    :param table: the table's name.
    :param fields: the declared schema: a list of ``{"field": name, "type": ..., "display_name":
        ..., "attributes": {...}}`` (``type`` and ``display_name`` required: Blink resets what an
        update leaves out and refuses type changes), or its JSON text as a template renders it.
    :param max_concurrency: updates in flight at once, 1 to 32 (default 16, measured; see
        :meth:`~blinkops_provider.hooks.blink.BlinkHook.update_table_fields`).
    :param fail_fast: after the first failure, start no new update (those in flight finish).
    :param record_path: where the record of this table's last apply is kept (a local path shared by
        the workers, or an object-storage URI such as ``s3://bucket/blink/Incidents.json``), one
        per table: the task then plans first, against the table as Blink holds it, and applies as
        a migration (:mod:`blinkops_provider.migrations`, docs/operators/update_table_fields.md).
    :param only_changed: send only the fields the plan finds to add or change (needs
        ``record_path``). By default every declared field is sent: an update is a full
        replacement, so sending it again corrects a change made in Blink since.
    :param plan_only: check that Blink accepts the connection's key (one small request), log
        the plan and return it, and send nothing else (needs ``record_path``): the first task of
        a plan, review, apply DAG.
    :param plan: the approved plan, to apply it and nothing else (needs ``record_path``): the plan
        task's XCom (``plan=plan_task.output``, or its JSON text) or its ``fingerprint``. The
        apply plans again under the table's lock and, if the record or the schema changed since,
        fails with :class:`~blinkops_provider.exceptions.BlinkStalePlanError` and sends nothing.
    :param lock_wait: seconds to wait for another apply of the same table to finish (default 0:
        fail at once, naming who holds the table's lock and since when; Airflow's retries apply).
    :param replace: send each declaration as given instead of its merge with the field as Blink
        holds it (read first, one request per table): Blink then resets what it leaves out.
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``, pushed on every way out: a failure, ``execution_timeout``, a
        signal) ``{"ws_id", "table", "updated", "failed", "unknown", "outcomes": {name: outcome}}``,
        an outcome being ``added``, ``changed``, ``unchanged``, ``applied``, ``failed`` or
        ``unknown`` (in flight when interrupted); with ``plan_only``, the plan
        (:meth:`~blinkops_provider.migrations.plan.SchemaPlan.to_xcom`).
    :raises BlinkInputError: invalid entries, before any request.
    :raises BlinkStalePlanError: ``plan`` is not what would be applied now, before any request.
    :raises BlinkLockedError: another apply of the table holds its lock, before any request.
    :raises BlinkApiError: some fields failed: a :class:`BlinkClientError` (no retry) when one had a
        4xx, else Airflow's retries apply (:func:`~blinkops_provider.retry_policy.batch_error`).
    """

    template_fields: Sequence[str] = ("ws_id", "table", "fields", "record_path", "plan")
    template_fields_renderers = {"fields": "json", "plan": "json"}
    ui_color = "#d8e9ff"

    def __init__(
        self,
        *,
        ws_id: str,
        table: str,
        fields: list[dict[str, Any]] | str,
        max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
        fail_fast: bool = False,
        record_path: str | None = None,
        only_changed: bool = False,
        plan_only: bool = False,
        plan: dict[str, Any] | str | None = None,
        lock_wait: float = 0.0,
        replace: bool = False,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["outlets"] = with_alias(kwargs.get("outlets"), TABLES_ALIAS)
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        check_concurrency(max_concurrency)
        self.replace = check_flag(replace, "replace")
        for name, value in (("only_changed", only_changed), ("plan_only", plan_only), ("plan", plan is not None)):
            if check_flag(value, name) and not record_path:
                raise BlinkInputError(
                    f"{name}=True needs record_path: the plan compares the declared schema with the record "
                    "of the last apply kept there"
                )
        self.ws_id = ws_id
        self.table = table
        self.fields = fields
        self.max_concurrency = max_concurrency
        self.fail_fast = fail_fast
        self.record_path = record_path
        self.only_changed = only_changed
        self.plan_only = plan_only
        self.plan = plan
        self.lock_wait = check_lock_wait(lock_wait)

    def execute(self, context: Context) -> dict[str, Any]:
        batch = validate_field_updates(self.fields, require_type_and_name=True)
        if not batch:
            raise BlinkInputError(
                "fields declares no field: give at least one entry (a template that rendered '[]' or nothing?)"
            )
        approved = approved_plan(self.plan)  # checked before any request
        self._declared = [{"field": name, **update.to_body()} for name, update in batch]  # for lineage
        if self.plan_only:
            return self._plan(batch)
        report = ApplyReport(str(self.ws_id), str(self.table), self.log, self.fail_fast)
        result: FieldUpdates | None = None
        try:
            result = self._apply(context, batch, approved)
            if not result.ok:
                raise not_applied(result)
        except BaseException as exc:  # every way out: a failure, execution_timeout, a signal
            rate_limited = self.hook.rate_limited if "hook" in self.__dict__ else 0
            failed = report.failed(result, approved=approved, exc=exc, rate_limited=rate_limited)
            context["ti"].xcom_push(key="return_value", value=failed)
            raise
        summary = report.summary(result, approved=approved, rate_limited=self.hook.rate_limited)
        self._announce(context, summary, planned=result.plan is not None)
        return summary

    def _apply(self, context: Context, batch: FieldBatch, approved: Any) -> FieldUpdates:
        """Send the batch: as a migration of the table (lock, plan, record) with a ``record_path``."""
        if not self.record_path:
            sent = batch if self.replace else merged_with_blink(self.hook, self.ws_id, self.table, batch)
            return self.hook.update_table_fields(
                self.ws_id, self.table, sent, max_concurrency=self.max_concurrency, fail_fast=self.fail_fast
            )
        return apply_schema(
            self.hook,
            self.ws_id,
            self.table,
            batch,
            record_path=str(self.record_path),
            max_concurrency=self.max_concurrency,
            fail_fast=self.fail_fast,
            only_changed=self.only_changed,
            plan=approved,
            lock_wait=self.lock_wait,
            holder=Holder.current(context.get("ti")),
            replace=self.replace,
        )

    def _announce(self, context: Context, summary: dict[str, Any], *, planned: bool) -> None:
        """The table's asset event, unless a plan found nothing to add or change."""
        groups = grouped(summary["outcomes"]) if planned else None
        if groups is None or groups.get("added") or groups.get("changed"):
            self.announce_table(context, self.ws_id, self.table, summary["updated"], groups)
        else:
            self.log.info("No field was added or changed: no asset event for %s/%s", self.ws_id, self.table)

    def _plan(self, batch: FieldBatch) -> dict[str, Any]:
        """The plan's XCom, once the key is known to work (before anyone is asked to review)."""
        self.hook.check_key()
        plan = plan_schema(
            self.hook, self.ws_id, self.table, batch, record_path=str(self.record_path), replace=self.replace
        )
        plan.log_to(self.log)
        return plan.to_xcom()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the table as an output dataset with the declared schema (no request;
        what ``execute`` checked). A plan changes nothing: no dataset."""
        from airflow.providers.openlineage.extractors import OperatorLineage

        if self.plan_only or not getattr(self, "_declared", None):
            return OperatorLineage()
        return table_lineage(self.hook.base_url, str(self.ws_id), str(self.table), self._declared)
