"""
The sandbox's own models of Blink's bodies, written from Blink's contract and Blink's own open-source tool.

Not from the client's models: an emulator that shared the client's models could only agree with it.

Members are named as they travel (``defaultAPIAddress``, not a Python alias); every answer model
keeps what it does not know, since the sandbox only documents answers with them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

USER_FIELD_TYPES = (
    "text",
    "long-text",
    "number",
    "duration",
    "risk-level",
    "checkbox",
    "single-select",
    "multi-select",
    "list",
    "reference",
    "status",
    "user",
    "date",
    "button",
    "attachment",
    "sla",
    "vendor",
    "vendors",
)
"""The eighteen types a user may give a field."""

SYSTEM_ONLY_TYPES = ("sys-id", "auto-increment-id", "incident", "generic-id", "sys-time", "sys-record-modifier")
"""Types only Blink's own fields have: a request naming one is refused."""

SELECTS = ("single-select", "multi-select")
MARKERS = ("system", "protected")
"""Attributes Blink sets on its own fields, never taken from a request."""

SYSTEM_FIELDS = (
    ("id", "ID", "sys-id"),
    ("created_at", "Created at", "sys-time"),
    ("updated_at", "Updated at", "sys-time"),
    ("created_by", "Created by", "sys-record-modifier"),
    ("updated_by", "Updated by", "sys-record-modifier"),
)
"""The five fields Blink adds to every table: (name, display name, type)."""

FieldType = Enum("FieldType", {name.upper().replace("-", "_"): name for name in USER_FIELD_TYPES}, type=str)  # type: ignore[misc]
"""The user types, as the OpenAPI document lists them."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class TableReference(_Open):
    table_name: str | None = None
    display_name_field: str | None = None


class FieldAttributes(_Open):
    """What Blink's UpdateField takes as attributes (the contract's four, and Blink's checks)."""

    required: bool | None = None
    is_unique: bool | None = None
    default_value: str | None = None
    include_time: bool | None = None
    options: list[str] | None = None
    table_reference: TableReference | None = None


class FieldUpdate(_Open):
    """UpdateField's body: it replaces the whole field, so what it leaves out is reset."""

    type: FieldType | None = None  # type: ignore[valid-type]
    display_name: str | None = None
    description: str | None = None
    attributes: FieldAttributes | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _not_system_only(cls, value: Any) -> Any:
        if value in SYSTEM_ONLY_TYPES:
            raise ValueError(f"{value!r} is a system-only type: Blink gives it to its own fields, never in a request")
        return value


class TableField(_Open):
    attributes: dict[str, Any] | None = None
    created_at: int | None = None
    created_by: str | None = None
    description: str | None = None
    display_name: str | None = None
    id: str | None = None
    indexes: dict[str, str] | None = None
    name: str | None = None
    table_id: str | None = None
    tenant_id: str | None = None
    type: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None
    workspace_id: str | None = None


class FieldList(_Open):
    results: list[TableField]


class TableEntry(_Open):
    name: str
    id: str | None = None
    display_name: str | None = None
    description: str | None = None
    estimated_records_count: int | None = None
    settings: dict[str, Any] | None = None


class NewTable(_Open):
    """CreateTable's body: the fields have no names (Blink derives them, as the table's)."""

    display_name: str
    description: str | None = None
    options: list[str] | None = None
    fields: list[FieldUpdate] = []


class TableEdit(_Open):
    """UpdateTable's body: the table's display name, description and settings."""

    display_name: str
    description: str | None = None
    settings: dict[str, Any] | None = None


class CreatedTable(_Open):
    table: TableEntry


class TableList(_Open):
    results: list[TableEntry]


class Playbook(_Open):
    """A workflow, as ``models.Playbook`` (its definition, ``playbook``, as text: YAML)."""

    id: str
    name: str
    active: bool
    playbook: str
    type: str | None = None
    version: int | None = None
    tags: list[str] | None = None
    is_request: bool | None = None
    workspace_id: str | None = None
    created_at: int | None = None
    created_by: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None


class PlaybookPage(_Open):
    limit: int
    offset: int
    total: int
    results: list[Playbook]


class ErrorWrapper(_Open):
    status: int | None = None
    message: str | None = None
    details: str | None = None
    identifier: str | None = None
    data: Any = None
    user_error: Any = None


class AuthenticationKey(_Open):
    name: str | None = None
    format: str | None = None


class ActionToRunParamValues(_Open):
    url: str | None = None
    method: str | None = None
    contentType: str | None = None
    headers: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    ignoreSSL: bool | None = None


class ExtractorExpiry(_Open):
    defaultExpiry: int | None = None
    path: str | None = None
    type: str | None = None


class Extractor(_Open):
    accessKeyPath: str | None = None
    isInHeader: bool | None = None
    isJWT: bool | None = None
    expiry: ExtractorExpiry | None = None


class TwoLeggedValues(_Open):
    connectionParams: list[str] | None = None
    actionToRunParamValues: ActionToRunParamValues | None = None
    extractor: Extractor | None = None


class Authentication(_Open):
    type: str | None = None
    keys: list[AuthenticationKey] | None = None
    staticHeaders: dict[str, Any] | None = None
    twoLeggedValues: TwoLeggedValues | None = None


class Pagination(_Open):
    type: str | None = None
    descriptor: dict[str, Any] | None = None


class Validation(_Open):
    contentType: str | None = None
    errorPath: str | None = None
    formatURL: str | None = None
    payload: dict[str, Any] | None = None
    statusCodes: str | None = None


class TestConnection(_Open):
    __test__ = False  # not a pytest test class

    type: str | None = None
    endpoint: str | None = None
    body: dict[str, Any] | None = None
    expected: Validation | None = None


class ConnectionTypeMetadata(_Open):
    authentication: Authentication | None = None
    defaultAPIAddress: str | None = None
    ignoreSSL: bool | None = None
    pagination: Pagination | None = None
    testConnection: TestConnection | None = None
    validation: Validation | None = None
    variables: dict[str, Any] | None = None


class ConnectionTypeMethod(_Open):
    attributes: list[str] | None = None
    description: str | None = None
    display_name: str | None = None
    documentation_link: str | None = None
    hidden: bool | None = None
    is_recommended: bool | None = None
    name: str | None = None
    oauth_supported: bool | None = None


class ConnectionType(_Open):
    attributes: dict[str, Any] | None = None
    created_at: int | None = None
    created_by: str | None = None
    display_name: str | None = None
    documentation_link: str | None = None
    icon_uri: str | None = None
    id: str | None = None
    metadata: ConnectionTypeMetadata | None = None
    methods: list[ConnectionTypeMethod] | None = None
    name: str | None = None
    oauth_supported: bool | None = None
    plugin_name: str | None = None
    tenant_id: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None


class ConnectionTypePage(_Open):
    limit: int | None = None
    offset: int | None = None
    total: int | None = None
    results: list[ConnectionType]


def type_change(update: FieldUpdate, field: str, current_type: str) -> str:
    """Return why ``update`` would change a field's type (a left-out type resets to ``text``), or empty."""
    given = update.type.value if update.type is not None else "text"
    if given == current_type:
        return ""
    how = f"to {given!r}" if update.type is not None else "by leaving 'type' out (it resets to 'text')"
    return f"field {field!r} is of type {current_type!r}; the update would change it {how}. Send its type to keep it."


def field_problems(update: FieldUpdate) -> list[str]:
    """
    Return why Blink would refuse ``update`` of a field of its own type (empty: it takes it).

    A select needs options, a reference its table.
    """
    given = update.type.value if update.type is not None else "text"
    problems = []
    attributes = update.attributes or FieldAttributes()
    if given in SELECTS and not attributes.options:
        problems.append(f"a {given!r} field needs attributes.options")
    if given == "reference" and (attributes.table_reference is None or not attributes.table_reference.table_name):
        problems.append("a 'reference' field needs attributes.table_reference.table_name")
    return problems


def errors_text(errors: list[Any]) -> str:
    """Return a validation error list as one line, ``where: what; ...`` (no values echoed)."""
    parts = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ()))
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def declared_fields(entries: list[Any]) -> list[dict[str, Any]]:
    """
    Return a new table's fields from declared-schema entries (``{"field", "type", "display_name", "attributes"}``).

    As Blink's UI would make them.

    :raises ValueError: naming the first wrong entry.
    """
    fields: list[dict[str, Any]] = []
    for position, entry in enumerate(entries, start=1):
        name = entry.get("field") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip() or any(f["name"] == name for f in fields):
            raise ValueError(f"entry {position}: a 'field' name, given once, is required")
        try:
            body = FieldUpdate.model_validate({k: v for k, v in entry.items() if k != "field"})
        except ValidationError as err:
            raise ValueError(f"entry {position} ({name!r}): {errors_text(err.errors())}") from None
        if body.type is None or not body.display_name:
            raise ValueError(f"entry {position} ({name!r}): type and display_name are required")
        fields.append({"attributes": {}, **body.model_dump(mode="json", exclude_none=True), "name": name})
    return fields
