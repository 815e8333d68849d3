"""Operators for Blink tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from blinkops_provider.exceptions import BlinkApiError, BlinkAuthError, BlinkClientError, BlinkInputError
from blinkops_provider.hooks.blink import DEFAULT_UPDATE_CONCURRENCY, BlinkHook, FieldUpdates, check_concurrency
from blinkops_provider.models import FieldType, FieldUpdate, validate_field_updates, validate_input
from blinkops_provider.operators._base import BaseBlinkOperator
from blinkops_provider.rql import parse_json_object

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["UpdateTableFieldOperator", "UpdateTableFieldsOperator"]


class UpdateTableFieldOperator(BaseBlinkOperator):
    """Set the type, display name and attributes of a field of a Blink table.

    The update is a full replacement: Blink resets what it leaves out and refuses to change a
    field's type, so ``field_type`` (the field's current type) and ``display_name`` are
    required. The body is checked after templating and before any request.

    :param ws_id: the workspace id.
    :param table: the table's name (any characters; it is percent-encoded).
    :param field: the field's name.
    :param field_type: one of ``text``, ``long-text``, ``number``, ``risk-level``, ``checkbox``,
        ``single-select``, ``multi-select``, ``list``, ``reference``, ``date``.
    :param display_name: the name shown in Blink.
    :param attributes: ``default_value``, ``include_time``, ``options``, ``table_reference``
        (a dict, or a JSON string as a template renders it).
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``) the updated field as Blink returned it, a JSON-ready dict.
    :raises BlinkInputError: invalid input, before any request.
    :raises BlinkBadRequestError: Blink refused the update (the task fails without retry).
    """

    template_fields: Sequence[str] = ("ws_id", "table", "field", "field_type", "display_name", "attributes")
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
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        self.ws_id = ws_id
        self.table = table
        self.field = field
        self.field_type = field_type
        self.display_name = display_name
        self.attributes = attributes

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
        attributes = parse_json_object(self.attributes, "attributes")
        if attributes is not None:
            body["attributes"] = attributes
        return validate_input(FieldUpdate, body, what)

    def execute(self, context: Context) -> dict[str, Any]:
        update = self.build_update()
        updated = self.hook.update_table_field(self.ws_id, self.table, self.field, update)
        self.log.info(
            "Updated field %r of table %r in workspace %r (type %s)",
            self.field,
            self.table,
            self.ws_id,
            updated.type,
        )
        return updated.to_json_dict()


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
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``, pushed also when the task fails)
        ``{"ws_id", "table", "updated": [names], "failed": [{"field", "status", "message"}],
        "unknown": [names]}``, keyed by the declared names; pushed on every way out (a failure,
        ``execution_timeout``, a signal), with the fields in flight then as ``unknown``.
    :raises BlinkInputError: invalid entries, before any request.
    :raises BlinkClientError: some fields failed, every one with a 4xx: no Airflow retry helps.
    :raises BlinkApiError: some fields failed, at least one transiently: Airflow's retries apply
        (updates are full replacements, so applying the schema again is safe).
    """

    template_fields: Sequence[str] = ("ws_id", "table", "fields")
    template_fields_renderers = {"fields": "json"}
    ui_color = "#d8e9ff"

    def __init__(
        self,
        *,
        ws_id: str,
        table: str,
        fields: list[dict[str, Any]] | str,
        max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
        fail_fast: bool = False,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        check_concurrency(max_concurrency)
        self.ws_id = ws_id
        self.table = table
        self.fields = fields
        self.max_concurrency = max_concurrency
        self.fail_fast = fail_fast

    def execute(self, context: Context) -> dict[str, Any]:
        batch = validate_field_updates(self.fields, require_type_and_name=True)

        def push(result: FieldUpdates) -> None:  # every way out: failure, timeout, signal
            context["ti"].xcom_push(key="return_value", value=self._report(result))

        result = self.hook._apply_fields(
            self.ws_id,
            self.table,
            dict(batch),
            max_concurrency=self.max_concurrency,
            fail_fast=self.fail_fast,
            interrupted=push,
        )
        summary = self._report(result)
        if result.ok:
            return summary
        context["ti"].xcom_push(key="return_value", value=summary)
        raise self._failure(result)

    def _report(self, result: FieldUpdates) -> dict[str, Any]:
        """Log one line per field in the declared order, keyed by the declared names; the XCom summary."""
        failed: list[dict[str, Any]] = []
        self.log.info(
            "Schema of %s/%s: %d of %d fields applied", self.ws_id, self.table, len(result.applied), len(result.order)
        )
        for name in result.order:
            if name in result.applied:
                stored = result.applied[name]
                if stored is None:
                    self.log.info("  %s: applied; answer unreadable (Blink confirmed it with a 2xx)", name)
                else:
                    self.log.info("  %s: applied (%s, %r)", name, stored.type, stored.display_name)
                continue
            if name in result.unknown:
                self.log.warning("  %s: unknown: in flight when the task was interrupted (perhaps applied)", name)
                continue
            error = result.failed.get(name)
            status = error.status if error is not None else None
            if any(isinstance(error, BlinkAuthError) for error in result.failed.values()):
                stopped = "Blink refused the API key"
            else:
                stopped = "fail_fast stopped the batch" if self.fail_fast else "the task was interrupted"
            message = str(error.message) if error is not None else f"not sent: {stopped}"
            if error is not None and error.details and error.details != error.message:
                message = f"{message} ({error.details})"
            self.log.error("  %s: failed%s: %s", name, f" with {status}" if status else "", message)
            failed.append({"field": name, "status": status, "message": message})
        return {
            "ws_id": self.ws_id,
            "table": self.table,
            "updated": [name for name in result.order if name in result.applied],
            "failed": failed,
            "unknown": list(result.unknown),
        }

    @staticmethod
    def _failure(result: FieldUpdates) -> BlinkApiError:
        names = ", ".join(repr(name) for name in [*result.failed, *result.not_sent, *result.unknown])
        missing = len(result.failed) + len(result.not_sent) + len(result.unknown)
        message = f"{missing} of {len(result.order)} field(s) not applied: {names}"
        if all(isinstance(error, BlinkClientError) for error in result.failed.values()):
            return BlinkClientError(message)  # every failure was a 4xx: retrying the task cannot help
        return BlinkApiError(message)
