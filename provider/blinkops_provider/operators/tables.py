"""Operators for Blink tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.models import FieldType, FieldUpdate, validate_input
from blinkops_provider.operators._base import BaseBlinkOperator
from blinkops_provider.rql import parse_json_object

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["UpdateTableFieldOperator"]


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
            self.field, self.table, self.ws_id, updated.type,
        )  # fmt: skip
        return updated.to_json_dict()
