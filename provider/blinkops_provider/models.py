"""The types the hook returns and takes, and the migrations' request bodies: pydantic models of
the Blink API's request and response bodies (the public API; see the API reference).

Two families, with opposite rules:

* Request models (:class:`FieldUpdate`, :class:`FieldAttributes`, :class:`TableReference`,
  :class:`NewTable`, :class:`TableUpdate`) reject unknown members, naming the allowed ones, and
  reject values of the wrong type, so a typo such as ``opitons`` fails before any request is sent.
* Response models (:class:`TableField`, :class:`BlinkTable`, :class:`ConnectionType` and its
  parts, :class:`ConnectionTypePage`) accept missing and unknown members and keep the unknown ones:
  Blink adds fields over time, and ``model_dump()`` hands them on untouched. Members whose JSON
  name is not snake_case (``defaultAPIAddress``) have a snake_case attribute and are dumped under
  their JSON name.

The client's private models and checks: the envelopes of Blink's answers (a created table, a
tables or fields listing, the error wrapper), the members RQL compares, and the check of a batch
of field updates (:func:`validate_field_updates`). The public types are in
:mod:`blinkops_provider.models`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from blinkops_provider._inputs import RepeatedMember, describe_errors, first_problems, segment, unique_members
from blinkops_provider._raising import Problems, input_error

__all__ = [
    "READ_ONLY_ATTRIBUTES",
    "SYSTEM_FIELD_TYPES",
    "ActionToRunParamValues",
    "Authentication",
    "AuthenticationKey",
    "BlinkTable",
    "ConnectionType",
    "ConnectionTypeMetadata",
    "ConnectionTypeMethod",
    "ConnectionTypePage",
    "Extractor",
    "ExtractorExpiry",
    "FieldAttributes",
    "FieldBatch",
    "FieldType",
    "FieldUpdate",
    "NewTable",
    "Pagination",
    "RequestModel",
    "ResponseModel",
    "TableField",
    "TableRead",
    "TableReference",
    "TableUpdate",
    "TestConnection",
    "TwoLeggedValues",
    "Validation",
]


class FieldType(str, Enum):  # noqa: UP042  (StrEnum would change what str() of a member says)
    """The eighteen types a user can give a table field (Blink's own tool lists them; the API
    reference names ten of them). A field's type never changes once it is created."""

    TEXT = "text"
    LONG_TEXT = "long-text"
    NUMBER = "number"
    DURATION = "duration"
    RISK_LEVEL = "risk-level"
    CHECKBOX = "checkbox"
    SINGLE_SELECT = "single-select"
    MULTI_SELECT = "multi-select"
    LIST = "list"
    REFERENCE = "reference"
    STATUS = "status"
    USER = "user"
    DATE = "date"
    BUTTON = "button"
    ATTACHMENT = "attachment"
    SLA = "sla"
    VENDOR = "vendor"
    VENDORS = "vendors"

    def __str__(self) -> str:
        return self.value


SYSTEM_FIELD_TYPES = ("sys-id", "auto-increment-id", "incident", "generic-id", "sys-time", "sys-record-modifier")
"""The types of the fields Blink makes itself: never valid in a request."""


READ_ONLY_ATTRIBUTES = ("system", "protected")
"""Attributes Blink sets on its own fields: read, never sent."""


def _check_type(value: Any) -> Any:
    """A field type as a request may give it: refuse Blink's system-only types by name."""
    if isinstance(value, str) and not isinstance(value, FieldType) and value in SYSTEM_FIELD_TYPES:
        raise ValueError(
            f"{value!r} is one of Blink's own system types ({', '.join(SYSTEM_FIELD_TYPES)}), which Blink gives its "
            f"own fields and never accepts in a request; allowed: {', '.join(t.value for t in FieldType)}"
        )
    if isinstance(value, str) and not isinstance(value, FieldType) and value not in FieldType._value2member_map_:
        raise ValueError(f"unknown field type {value!r}; allowed: {', '.join(t.value for t in FieldType)}")
    return value


class RequestModel(BaseModel):
    """A body we send: in a declaration, unknown members and wrongly typed values are errors.

    A body merged with what Blink holds (validated with the context ``{"from_blink": True}``)
    keeps the members Blink sent that this provider does not know, so sending it back loses none.
    """

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_members(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and not (info.context or {}).get("from_blink"):
            problem = _unknown_members(cls, data)
            if problem:
                raise ValueError(f"{problem}; allowed: {', '.join(sorted(cls.model_fields))}")
        return data


def _unknown_members(cls: type[BaseModel], data: Mapping[Any, Any]) -> str:
    """What a user's body names that ``cls`` does not declare ("" when nothing): Blink's
    read-only markers of its own fields first, then unknown members."""
    read_only = sorted(str(key) for key in data if key in READ_ONLY_ATTRIBUTES) if cls is FieldAttributes else []
    if read_only:
        markers = f"Blink's read-only {_plural(read_only, 'marker')} of its own fields"
        return f"{_listed(read_only, 'is', 'are')} {markers} and cannot be declared"
    unknown = sorted(str(key) for key in data if key not in cls.model_fields)
    return f"unknown {_plural(unknown, 'member')} {_listed(unknown)} in {cls.__name__}" if unknown else ""


def _plural(names: Sequence[str], word: str) -> str:
    return word if len(names) == 1 else f"{word}s"


def _listed(names: Sequence[str], one: str = "", many: str = "") -> str:
    """The names quoted and comma-separated, then ``one`` or ``many`` as their number asks."""
    verb = one if len(names) == 1 else many
    return ", ".join(map(repr, names)) + (f" {verb}" if verb else "")


class TableReference(RequestModel):
    """The target of a reference field: a table and the field of it that is displayed."""

    table_name: StrictStr = Field(min_length=1)
    display_name_field: StrictStr | None = None


class FieldAttributes(RequestModel):
    """A field's settings: whether it is required or unique, its default, its select options,
    its reference target. A declaration may give only these; an attribute Blink holds that this
    provider does not know is kept when a migration's merge sends it back."""

    required: StrictBool | None = None
    is_unique: StrictBool | None = None
    default_value: StrictStr | None = None
    include_time: StrictBool | None = None
    options: list[StrictStr] | None = None
    table_reference: TableReference | None = None


class FieldUpdate(RequestModel):
    """The body of a field update (``PUT .../fields/{field}``).

    The update is a full replacement: Blink resets every member and attribute it leaves out
    (``required`` and ``is_unique`` included). Give ``type`` (the field's current type: Blink
    refuses to change it) and ``display_name`` to keep them, or send the merge of the update
    with the field as Blink holds it (what a migration sends).
    """

    type: FieldType | None = None
    display_name: StrictStr | None = Field(default=None, min_length=1)
    description: StrictStr | None = None
    attributes: FieldAttributes | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _user_type(cls, value: Any) -> Any:
        return _check_type(value)

    @field_validator("display_name")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("display_name must not be blank")
        return value

    def to_body(self) -> dict[str, Any]:
        """The JSON body to send: only the members that were given."""
        return self.model_dump(mode="json", exclude_none=True)


class NewTable(RequestModel):
    """The body that creates a table (``POST /workspace/{ws_id}/table``): Blink derives the
    table's ``name`` from ``display_name``; each field is ``{display_name, description, type,
    attributes}`` (no ``name``: Blink derives it too). ``options`` may hold Blink's
    ``with_default_fields`` or ``with_default_records``; a migration sends neither."""

    display_name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    options: list[StrictStr] = Field(default_factory=list)
    fields: list[FieldUpdate] = Field(default_factory=list)

    def to_body(self) -> dict[str, Any]:
        """The JSON body to send."""
        return {
            "display_name": self.display_name,
            "description": self.description,
            "options": list(self.options),
            "fields": [field.to_body() for field in self.fields],
        }


class TableUpdate(RequestModel):
    """The body that edits a table (``PUT /workspace/{ws_id}/table/{table}``): its display name,
    its description and its ``settings``, which Blink's own tool sends back as Blink holds them."""

    display_name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    settings: dict[str, Any] = Field(default_factory=dict)

    def to_body(self) -> dict[str, Any]:
        """The JSON body to send."""
        return {"display_name": self.display_name, "description": self.description, "settings": dict(self.settings)}


class ResponseModel(BaseModel):
    """A body we receive: members may be missing, unknown ones are kept."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of what Blink sent (unknown members included, absent ones left out)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """:meth:`to_json_dict` as JSON text, serialised without building the dict."""
        return self.model_dump_json(exclude_unset=True)


class TableField(ResponseModel):
    """A field of a Blink table, as the field update and the fields read return it (it must carry
    ``id`` or ``name``). Any type and any attribute Blink sends is kept."""

    id: str | None = None
    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    type: str | None = None
    attributes: dict[str, Any] | None = None
    indexes: dict[str, str] | None = None
    table_id: str | None = None
    workspace_id: str | None = None
    tenant_id: str | None = None
    created_at: int | None = None
    created_by: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None

    @model_validator(mode="after")
    def _identifies_a_field(self) -> TableField:
        if self.id is None and self.name is None:
            raise ValueError("the body does not identify a field: it has neither 'id' nor 'name'")
        return self


class BlinkTable(ResponseModel):
    """An entry of a workspace's tables (``GET /workspace/{ws_id}/tables``): ``name`` is what the
    table's paths take, ``display_name`` only its label in Blink's UI."""

    id: str | None = None
    name: str
    display_name: str | None = None
    description: str | None = None
    estimated_records_count: int | None = None
    settings: dict[str, Any] | None = None


@dataclass(frozen=True)
class TableRead:
    """A table as :meth:`~blinkops_provider.hooks.blink.BlinkHook.read_table` read it: its fields
    and (when asked) the workspace's tables, read at once.

    :ivar fields: the table's fields, Blink's system fields included; None when the fields read
        was not served (``unread`` says its status) or the table is ``missing``.
    :ivar tables: the workspace's tables; None when not asked, or when Blink does not serve the read.
    :ivar unread: the status of a fields read Blink does not serve (404 or 405), else ``""``.
    :ivar missing: Blink's tables read shows the workspace has no table of that name.
    """

    fields: list[TableField] | None = None
    tables: list[BlinkTable] | None = None
    unread: str = ""
    missing: bool = False


class AuthenticationKey(ResponseModel):
    """One credential a connection type asks for."""

    name: str | None = None
    format: str | None = None


class ActionToRunParamValues(ResponseModel):
    """The token request of a two-legged authentication."""

    url: str | None = None
    method: str | None = None
    content_type: str | None = Field(default=None, alias="contentType")
    headers: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    ignore_ssl: bool | None = Field(default=None, alias="ignoreSSL")


class ExtractorExpiry(ResponseModel):
    """Where the expiry of a two-legged token is read, and its default in seconds."""

    default_expiry: int | None = Field(default=None, alias="defaultExpiry")
    path: str | None = None
    type: str | None = None


class Extractor(ResponseModel):
    """How the access token is taken out of the token response."""

    access_key_path: str | None = Field(default=None, alias="accessKeyPath")
    is_in_header: bool | None = Field(default=None, alias="isInHeader")
    is_jwt: bool | None = Field(default=None, alias="isJWT")
    expiry: ExtractorExpiry | None = None


class TwoLeggedValues(ResponseModel):
    """Parameters of a two-legged token process."""

    connection_params: list[str] | None = Field(default=None, alias="connectionParams")
    action_to_run_param_values: ActionToRunParamValues | None = Field(default=None, alias="actionToRunParamValues")
    extractor: Extractor | None = None


class Authentication(ResponseModel):
    """How a connection type authenticates against its target system."""

    type: str | None = None
    keys: list[AuthenticationKey] | None = None
    static_headers: dict[str, Any] | None = Field(default=None, alias="staticHeaders")
    two_legged_values: TwoLeggedValues | None = Field(default=None, alias="twoLeggedValues")


class Pagination(ResponseModel):
    """The pagination method of the target system."""

    type: str | None = None
    descriptor: dict[str, Any] | None = None


class Validation(ResponseModel):
    """What makes a response of the target system valid."""

    content_type: str | None = Field(default=None, alias="contentType")
    error_path: str | None = Field(default=None, alias="errorPath")
    format_url: str | None = Field(default=None, alias="formatURL")
    payload: dict[str, Any] | None = None
    status_codes: str | None = Field(default=None, alias="statusCodes")


class TestConnection(ResponseModel):
    """How a connection of this type is tested."""

    __test__ = False  # not a pytest test class

    type: str | None = None
    endpoint: str | None = None
    body: dict[str, Any] | None = None
    expected: Validation | None = None


class ConnectionTypeMetadata(ResponseModel):
    """Authentication, addressing, pagination, testing and validation of a connection type."""

    authentication: Authentication | None = None
    default_api_address: str | None = Field(default=None, alias="defaultAPIAddress")
    ignore_ssl: bool | None = Field(default=None, alias="ignoreSSL")
    pagination: Pagination | None = None
    test_connection: TestConnection | None = Field(default=None, alias="testConnection")
    validation: Validation | None = None
    variables: dict[str, Any] | None = None


class ConnectionTypeMethod(ResponseModel):
    """An authentication method a connection type offers."""

    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    documentation_link: str | None = None
    attributes: list[str] | None = None
    hidden: bool | None = None
    is_recommended: bool | None = None
    oauth_supported: bool | None = None


class ConnectionType(ResponseModel):
    """An entry of Blink's connection-type catalogue."""

    id: str | None = None
    name: str | None = None
    display_name: str | None = None
    plugin_name: str | None = None
    documentation_link: str | None = None
    icon_uri: str | None = None
    oauth_supported: bool | None = None
    attributes: dict[str, Any] | None = None
    metadata: ConnectionTypeMetadata | None = None
    methods: list[ConnectionTypeMethod] | None = None
    tenant_id: str | None = None
    created_at: int | None = None
    created_by: str | None = None
    updated_at: int | None = None
    updated_by: str | None = None


class ConnectionTypePage(ResponseModel):
    """One page of the connection-type listing: ``results`` is required, the counts are integers."""

    limit: int | None = Field(default=None, strict=True, ge=0)
    offset: int | None = Field(default=None, strict=True, ge=0)
    total: int | None = Field(default=None, strict=True, ge=0)
    results: list[ConnectionType]


class FieldBatch(list[tuple[str, FieldUpdate]]):
    """A checked batch of field updates, ``(field name, update)`` pairs in the declared order:
    what the hook's and the migrations' checks of a batch return. Given one again, it returns it as it is (each
    input is checked once, where it enters), unless asked for a stricter check than it had.

    :ivar named: every entry gives ``type`` and ``display_name``.
    """

    def __init__(self, pairs: Iterable[tuple[str, FieldUpdate]] = (), *, named: bool) -> None:
        super().__init__(pairs)
        self.named = named


ModelT = TypeVar("ModelT", bound=BaseModel)


class CreatedTable(ResponseModel):
    """The answer of ``POST /workspace/{ws_id}/table``: ``{"table": {...}}``."""

    table: BlinkTable


class TableList(ResponseModel):
    """The answer of ``GET /workspace/{ws_id}/tables``."""

    results: list[BlinkTable]


class FieldList(ResponseModel):
    """The answer of ``GET /workspace/{ws_id}/table/{table}/fields``."""

    results: list[TableField]


def scalar_fields(model: type[BaseModel]) -> dict[str, type]:
    """The members of a model that hold one string, integer or boolean: what RQL compares."""
    kinds: dict[str, type] = {}
    for name, info in model.model_fields.items():
        args = [arg for arg in get_args(info.annotation) if arg is not type(None)] or [info.annotation]
        if len(args) == 1 and args[0] in (str, int, bool):
            kinds[name] = args[0]
    return kinds


class ErrorWrapper(ResponseModel):
    """The body of an error response; every member may be absent."""

    status: int | None = None
    message: str | None = None
    details: str | None = None
    identifier: str | None = None
    data: Any = None
    user_error: Any = None


def validate_field_updates(updates: Any, *, require_type_and_name: bool = False) -> FieldBatch:
    """Check a batch of field updates before any is sent, and report every problem at once.

    :param updates: a mapping ``{field name: update}``, or a list of entries in the declared-schema
        format ``{"field": name, "type": ..., "display_name": ..., "attributes": {...}}``, or the
        JSON text of either (as a template renders it).
    :param require_type_and_name: refuse entries without ``type`` or ``display_name`` (Blink
        resets what an update leaves out, and refuses a type change).
    :returns: ``(field name, FieldUpdate)`` pairs in the given order.
    :raises BlinkInputError: naming each wrong entry (its position and field) and what is wrong.
    """
    try:
        return checked_field_updates(updates, require_type_and_name=require_type_and_name)
    except Problems as err:
        raise input_error(err.message) from None


def checked_field_updates(updates: Any, *, require_type_and_name: bool = False) -> FieldBatch:
    """:func:`validate_field_updates`, raising :class:`~blinkops_provider._raising.Problems` (one
    line per wrong entry), which imports no Airflow."""
    if isinstance(updates, FieldBatch) and updates.named >= require_type_and_name:
        return updates  # checked where it entered
    entries = _field_entries(updates)
    problems: list[str] = []
    valid: list[tuple[str, FieldUpdate]] = []
    first_seen: dict[str, int] = {}
    for position, entry in enumerate(entries, start=1):
        checked = _checked_entry(position, entry, first_seen, require_type_and_name)
        if isinstance(checked, str):
            problems.append(checked)
        else:
            valid.append(checked)
    if problems:
        raise Problems(
            f"{len(problems)} of {len(entries)} field update(s) are invalid, so none was sent:"
            + "\n  - "
            + first_problems(problems, sep="\n  - "),
            problems,
        )
    return FieldBatch(valid, named=require_type_and_name)


def _field_entries(updates: Any) -> list[Any]:
    """The entries of a batch, in order: declared-schema objects, or ``(name, update)`` pairs
    from a mapping whose values are not objects; JSON text is read first."""
    if isinstance(updates, str):
        try:
            updates = json.loads(updates, object_pairs_hook=unique_members)
        except RepeatedMember as err:
            raise Problems(
                f"the field updates' JSON names {err.args[0]!r} twice in one object; JSON keeps only the last, "
                "so declare each field (and each member) once"
            ) from None
        except RecursionError:
            raise Problems("the field updates' JSON nests too deeply to read") from None
        except ValueError as err:
            raise Problems(f"the field updates are not valid JSON: {err}") from None
    if isinstance(updates, Mapping):
        return [
            {"field": name, **dict(update)} if isinstance(update, Mapping) else (name, update)
            for name, update in updates.items()
        ]
    if isinstance(updates, Sequence):
        return list(updates)
    raise Problems(
        "field updates must be a list of {'field': name, 'type': ..., 'display_name': ..., 'attributes': ...} "
        f"entries or a mapping of field name to update, not {type(updates).__name__}"
    )


def _named(position: int, entry: Any) -> tuple[str, Any] | str:
    """An entry's field name, checked, and the rest of it; or what is wrong with the name."""
    if isinstance(entry, tuple):  # (name, FieldUpdate) from a mapping
        name, body = entry
    elif isinstance(entry, Mapping):
        body = dict(entry)
        name = body.pop("field", None)
    else:
        return f"entry {position}: must be an object with 'field', 'type', 'display_name', 'attributes'"
    if not isinstance(name, str) or not name.strip() or name in (".", ".."):
        return f"entry {position}: 'field' must be a field name, got {name!r}"
    try:
        segment(name, "field name")
    except ValueError as err:
        return f"entry {position} ({name!r}): {err}; it cannot be sent in the request's path"
    return name, body


def _checked_entry(
    position: int, entry: Any, first_seen: dict[str, int], require_type_and_name: bool
) -> tuple[str, FieldUpdate] | str:
    """One entry as ``(field name, update)``, or what is wrong with it (``first_seen``: the
    position of each name met so far, updated here)."""
    named = _named(position, entry)
    if isinstance(named, str):
        return named
    name, body = named
    where = f"entry {position} ({name!r})"
    if name in first_seen:
        return f"{where}: field {name!r} is declared twice (entries {first_seen[name]} and {position})"
    first_seen[name] = position
    missing = _missing(body) if require_type_and_name else []
    if missing:
        return f"{where}: {' and '.join(missing)} required (Blink resets what an update leaves out)"
    try:
        update = body if isinstance(body, FieldUpdate) else FieldUpdate.model_validate(body)
    except ValidationError as err:
        return f"{where}: {describe_errors(err.errors())}"
    return name, update


def _missing(body: Any) -> list[str]:
    """``type`` and ``display_name`` where a body lacks them (an update must give both)."""
    if isinstance(body, FieldUpdate):
        body = {"type": body.type, "display_name": body.display_name}
    return [m for m in ("type", "display_name") if body.get(m) in (None, "")] if isinstance(body, Mapping) else []
