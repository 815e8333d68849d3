"""
The types the hook returns and takes, and the migrations' request bodies.

Pydantic models of the Blink API's request and response bodies (the public API; see the API reference).

Two families, with opposite rules:

* Request models (:class:`FieldUpdate`, :class:`FieldAttributes`, :class:`TableReference`,
  :class:`NewTable`, :class:`TableUpdate`) reject unknown members, naming the allowed ones, and
  reject values of the wrong type, so a typo such as ``opitons`` fails before any request is sent.
* Response models (:class:`TableField`, :class:`BlinkTable`, :class:`ConnectionType` and its
  parts, :class:`ConnectionTypePage`, :class:`Workflow`) accept missing and unknown members and keep the unknown ones:
  Blink adds fields over time, and ``model_dump()`` hands them on untouched. Members whose JSON
  name is not snake_case (``defaultAPIAddress``) have a snake_case attribute and are dumped under
  their JSON name.

Beside them, not in ``__all__``, the client's private models and checks: the envelopes of
Blink's answers (a created table, a tables or fields listing, the error wrapper), the members RQL
compares, and the check of a batch of field updates (``validate_field_updates``).

What a repository declares of one Blink table, read and checked before any request.

A declaration is a list of entries, or an object ``{"display_name": ..., "description": ...,
"fields": [...]}`` that also declares the table's display name and description. An entry is a
field, ``{"field": name, "type": ..., "display_name": ..., "description": ..., "attributes":
{...}}`` (with ``"backfill": VALUE`` to fill its empty rows when it is added or turns
``required`` on), or a tombstone, ``{"field": "Old", "remove": true}``: the repository says what goes,
and a field that is not declared is never removed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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

from blinkops_provider.utils.inputs import RepeatedMember, describe_errors, unique_members
from blinkops_provider.utils.names import segment
from blinkops_provider.utils.raising import Problems, input_error
from blinkops_provider.utils.text import first_problems

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
    "Workflow",
]


class FieldType(str, Enum):  # noqa: UP042  (StrEnum would change what str() of a member says)
    """
    The eighteen types a user can give a table field.

    Blink's own tool lists them; the API reference names ten of them. A field's type never
    changes once it is created.
    """

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
    """Return a field type as a request may give it: refuse Blink's system-only types by name."""
    if isinstance(value, str) and not isinstance(value, FieldType) and value in SYSTEM_FIELD_TYPES:
        raise ValueError(
            f"{value!r} is one of Blink's own system types ({', '.join(SYSTEM_FIELD_TYPES)}), which Blink gives its "
            f"own fields and never accepts in a request; allowed: {', '.join(t.value for t in FieldType)}"
        )
    if isinstance(value, str) and not isinstance(value, FieldType) and value not in FieldType._value2member_map_:
        raise ValueError(f"unknown field type {value!r}; allowed: {', '.join(t.value for t in FieldType)}")
    return value


class RequestModel(BaseModel):
    """
    A body we send: in a declaration, unknown members and wrongly typed values are errors.

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
    """
    Return what a user's body names that ``cls`` does not declare ("" when nothing).

    Blink's read-only markers of its own fields first, then unknown members.
    """
    read_only = sorted(str(key) for key in data if key in READ_ONLY_ATTRIBUTES) if cls is FieldAttributes else []
    if read_only:
        markers = f"Blink's read-only {_plural(read_only, 'marker')} of its own fields"
        return f"{_quoted_names(read_only, 'is', 'are')} {markers} and cannot be declared"
    unknown = sorted(str(key) for key in data if key not in cls.model_fields)
    return f"unknown {_plural(unknown, 'member')} {_quoted_names(unknown)} in {cls.__name__}" if unknown else ""


def _plural(names: Sequence[str], word: str) -> str:
    return word if len(names) == 1 else f"{word}s"


def _quoted_names(names: Sequence[str], one: str = "", many: str = "") -> str:
    """Return the names quoted and comma-separated, then ``one`` or ``many`` as their number asks."""
    verb = one if len(names) == 1 else many
    return ", ".join(map(repr, names)) + (f" {verb}" if verb else "")


class TableReference(RequestModel):
    """The target of a reference field: a table and the field of it that is displayed."""

    table_name: StrictStr = Field(min_length=1)
    display_name_field: StrictStr | None = None


class FieldAttributes(RequestModel):
    """
    A field's settings: whether it is required or unique, its default, its select options, its reference target.

    A declaration may give only these; an attribute Blink holds that this provider does not know is kept when a
    migration's merge sends it back.
    """

    required: StrictBool | None = None
    is_unique: StrictBool | None = None
    default_value: StrictStr | None = None
    include_time: StrictBool | None = None
    options: list[StrictStr] | None = None
    table_reference: TableReference | None = None


class FieldUpdate(RequestModel):
    """
    The body of a field update (``PUT .../fields/{field}``).

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
        """Return the JSON body to send: only the members that were given."""
        return self.model_dump(mode="json", exclude_none=True)


class NewTable(RequestModel):
    """
    The body that creates a table (``POST /workspace/{ws_id}/table``).

    Blink derives the table's ``name`` from ``display_name``; each field is ``{display_name, description, type,
    attributes}`` (no ``name``: Blink derives it too). ``options`` may hold Blink's ``with_default_fields`` or
    ``with_default_records``; a migration sends neither.
    """

    display_name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    options: list[StrictStr] = Field(default_factory=list)
    fields: list[FieldUpdate] = Field(default_factory=list)

    def to_body(self) -> dict[str, Any]:
        """Return the JSON body to send."""
        return {
            "display_name": self.display_name,
            "description": self.description,
            "options": list(self.options),
            "fields": [field.to_body() for field in self.fields],
        }


class TableUpdate(RequestModel):
    """
    The body that edits a table (``PUT /workspace/{ws_id}/table/{table}``).

    Its display name, its description and its ``settings``, which Blink's own tool sends back as Blink holds them.
    """

    display_name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    settings: dict[str, Any] = Field(default_factory=dict)

    def to_body(self) -> dict[str, Any]:
        """Return the JSON body to send."""
        return {"display_name": self.display_name, "description": self.description, "settings": dict(self.settings)}


class ResponseModel(BaseModel):
    """A body we receive: members may be missing, unknown ones are kept."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    def to_json_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict of what Blink sent (unknown members included, absent ones left out)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """:meth:`to_json_dict` as JSON text, serialised without building the dict."""
        return self.model_dump_json(exclude_unset=True)


class TableField(ResponseModel):
    """
    A field of a Blink table, as the field update and the fields read return it (it must carry ``id`` or ``name``).

    Any type and any attribute Blink sends is kept.
    """

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
    """
    An entry of a workspace's tables (``GET /workspace/{ws_id}/tables``).

    ``name`` is what the table's paths take, ``display_name`` only its label in Blink's UI.
    """

    id: str | None = None
    name: str
    display_name: str | None = None
    description: str | None = None
    estimated_records_count: int | None = None
    settings: dict[str, Any] | None = None


class Workflow(ResponseModel):
    """
    A workflow of a workspace (Blink's "playbook"), as the playbooks read gives it (``models.Playbook``).

    ``playbook`` is the workflow's definition as text (YAML); :func:`blinkops_provider.workflows.read_workflow` reads
    the table steps it holds. Any other member Blink sends is kept.
    """

    id: str = Field(min_length=1)
    name: str = ""
    active: bool = False
    updated_at: str | int | None = None
    updated_by: str | None = None
    playbook: str | None = None


@dataclass(frozen=True)
class TableRead:
    """
    A table as :meth:`~blinkops_provider.hooks.blink.BlinkHook.read_table` read it.

    Its fields and (when asked) the workspace's tables, read at once.

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
    """
    A checked batch of field updates, ``(field name, update)`` pairs in the declared order.

    What the hook's and the migrations' checks of a batch return. Given one again, it returns it as it is (each input is
    checked once, where it enters), unless asked for a stricter check than it had.

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
    """Return the members of a model that hold one string, integer or boolean: what RQL compares."""
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
    """
    Check a batch of field updates before any is sent, and report every problem at once.

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
    """
    Return :func:`validate_field_updates`'s batch, raising :class:`~blinkops_provider.utils.raising.Problems`.

    One line per wrong entry; it imports no Airflow.
    """
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
    """
    Return the entries of a batch, in order.

    Declared-schema objects, or ``(name, update)`` pairs from a mapping whose values are not objects; JSON text is read
    first.
    """
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
    """Return an entry's field name, checked, and the rest of it; or what is wrong with the name."""
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
    """
    Return one entry as ``(field name, update)``, or what is wrong with it.

    ``first_seen``: the position of each name met so far, updated here.
    """
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
    """Return ``type`` and ``display_name`` where a body lacks them (an update must give both)."""
    if isinstance(body, FieldUpdate):
        body = {"type": body.type, "display_name": body.display_name}
    return [m for m in ("type", "display_name") if body.get(m) in (None, "")] if isinstance(body, Mapping) else []


TABLE_MEMBERS = ("display_name", "description", "fields")
"""What a declaration object may hold."""


@dataclass(frozen=True)
class Declaration:
    """
    A checked declaration.

    The fields in their declared order, the removals, and the table's display name and description (None: not declared,
    kept as Blink holds them).
    """

    fields: FieldBatch
    removals: tuple[str, ...] = ()
    display_name: str | None = None
    description: str | None = None
    backfills: Mapping[str, Any] = field(default_factory=dict)
    """The declared ``backfill`` value of each field that has one."""
    type_changes: Mapping[str, str] = field(default_factory=dict)
    """The declared ``type_change`` of each field that has one: ``copy`` or ``copy_or_empty``."""

    def to_json(self) -> list[dict[str, Any]] | dict[str, Any]:
        """
        Return the declaration as JSON-ready data.

        In the form it was given (a list, or an object when it declares the table's display name or description).
        """
        extra: dict[str, dict[str, Any]] = {name: {"backfill": value} for name, value in self.backfills.items()}
        for name, how in self.type_changes.items():
            extra.setdefault(name, {})["type_change"] = how
        entries = [{"field": name, **update.to_body(), **extra.get(name, {})} for name, update in self.fields]
        entries += [{"field": name, "remove": True} for name in self.removals]
        table = {member: getattr(self, member) for member in ("display_name", "description")}
        table = {member: value for member, value in table.items() if value is not None}
        return {**table, "fields": entries} if table else entries


def read_declaration(value: Any, *, source: str = "the declared schema", prefix: bool = True) -> Declaration:
    """
    Return ``value`` as a :class:`Declaration`.

    A list of entries, an object with ``fields``, a mapping ``{field name: update}``, or the JSON text of any of them.

    :param prefix: begin the error that lists the wrong entries with ``source`` (an operator's own
        argument needs no naming: its errors read as before).
    :raises BlinkInputError: naming ``source`` and every wrong entry, before any request.
    """
    try:
        return checked_declaration(value, source=source, prefix=prefix)
    except Problems as err:
        raise input_error(err.message) from None


def declaration_problems(value: Any, *, source: str) -> list[str]:
    """
    Return every problem :func:`read_declaration` would refuse ``value`` for.

    One line each (an entry's names its position and field); none when it is valid. Imports no Airflow.
    """
    try:
        checked_declaration(value, source=source)
    except Problems as err:
        return err.problems
    return []


def checked_declaration(value: Any, *, source: str = "the declared schema", prefix: bool = True) -> Declaration:
    """:func:`read_declaration`, raising :class:`~blinkops_provider.utils.raising.Problems`."""
    if isinstance(value, Declaration):
        return value
    if isinstance(value, FieldBatch):
        return Declaration(value)
    if isinstance(value, (str, bytes)):
        value = _json(value, source)
    table, value = _table_and_fields(value, source)
    backfills: dict[str, Any] = {}
    type_changes: dict[str, str] = {}
    problems: list[str] = []
    positions: list[int] | None = None
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        positions, entries, removals, problems = _split(list(value))
        entries, backfills, type_changes, extra = _extras(entries, positions)
        problems += extra
    else:  # a mapping {field name: update}, or what validate_field_updates names as wrong
        entries, removals = value, []
    total = len(value) if positions is not None else None
    fields = _fields(entries, positions, problems, (source, prefix), total)
    _check_whole(fields, removals, source)
    shown = (table.get("display_name"), table.get("description"))
    return Declaration(fields, tuple(removals), *shown, backfills, type_changes)


TYPE_CHANGES = {
    "copy": "add a new field of the new type, copy every value (refused if one does not convert), remove the old",
    "copy_or_empty": "as copy, leaving empty the rows whose value does not convert (destructive, counted)",
}
"""What an entry's ``type_change`` may say."""


def _fields(
    entries: Any, positions: list[int] | None, problems: list[str], named: tuple[str, bool], total: int | None = None
) -> Any:
    """
    Return the declared fields, checked, once the tombstones and the extras were (their ``problems``).

    Every problem raised at once, each entry named by its position in the declaration.

    :param named: the source, and whether the entries' own problems begin with it (an operator's
        own argument needs no naming).
    """
    source, prefix = named
    try:
        fields = checked_field_updates(entries, require_type_and_name=True)
    except Problems as err:
        found = [_renumbered(problem, positions) for problem in err.problems]
        if not problems:  # (the entries' own problems alone: said as the batch check says them)
            message = _renumbered(err.message, positions, every=True)
            if total is not None and total != len(positions or ()):  # (tombstones too: every entry counted)
                message = re.sub(r"^(\d+) of \d+ field update\(s\)", rf"\1 of {total} entries", message)
            raise Problems(f"{source}: {message}" if prefix else message, found) from None
        problems = problems + found
    if problems:
        ordered = sorted(problems, key=lambda problem: entry_number(problem) or 0)
        raise Problems(f"{source}: " + first_problems(ordered), ordered)
    return fields


def entry_number(problem: str) -> int | None:
    """Return the position of the entry a problem names (``entry 3 ('Tags'): ...``), or None."""
    found = re.match(r"entry (\d+)\b", problem)
    return int(found.group(1)) if found else None


def _renumbered(text: str, positions: list[int] | None, *, every: bool = False) -> str:
    """Return ``entry N`` of the fields alone, as the entry's position among every entry (tombstones too)."""
    if positions is None:
        return text
    pattern = r"\bentry (\d+)\b" if every else r"^entry (\d+)\b"
    return re.sub(pattern, lambda m: f"entry {positions[int(m.group(1)) - 1]}", text, flags=re.M)


def _extras(entries: list[Any], positions: list[int]) -> tuple[list[Any], dict[str, Any], dict[str, str], list[str]]:
    """
    Return the entries without their ``backfill`` and ``type_change`` members, those members, and the problems.

    The members are returned by field name. A problem is a backfill that is empty or not a JSON
    value a row can hold, or a type_change that is not one of :data:`TYPE_CHANGES`.
    """
    kept, backfills, type_changes, problems = [], {}, {}, []
    for position, entry in zip(positions, entries, strict=True):
        if not isinstance(entry, Mapping) or not {"backfill", "type_change"} & set(entry):
            kept.append(entry)
            continue
        where, name = f"entry {position} ({entry.get('field')!r})", str(entry.get("field"))
        if "backfill" in entry:
            if _not_a_value(entry["backfill"]):
                problems.append(_backfill_problem(where, entry["backfill"]))
            else:
                given = entry.get("attributes")
                attributes: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
                options = attributes.get("options") if isinstance(attributes.get("options"), list) else None
                unfit = backfill_unfit(entry.get("type"), entry["backfill"], options)
                problems += [f"{where}: {unfit}"] if unfit else []
            backfills[name] = entry["backfill"]
        if "type_change" in entry:
            problems += _type_change_problem(where, entry["type_change"])
            type_changes[name] = str(entry["type_change"])
        kept.append({key: member for key, member in entry.items() if key not in ("backfill", "type_change")})
    return kept, backfills, type_changes, problems


def _type_change_problem(where: str, how: Any) -> list[str]:
    if how in TYPE_CHANGES:
        return []
    allowed = "; ".join(f"{name!r} ({meaning})" for name, meaning in TYPE_CHANGES.items())
    return [f"{where}: 'type_change' must be one of: {allowed}; got {how!r}"]


def _backfill_problem(where: str, value: Any) -> str:
    return (
        f"{where}: 'backfill' must be the value to write in its empty rows (text, a number, true/false or a list), "
        f"not {value!r}"
    )


_BACKFILL_FORMS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "text": (lambda value: isinstance(value, str), "text"),
    "long-text": (lambda value: isinstance(value, str), "text"),
    "number": (lambda value: _is_number(value), "a number"),
    "duration": (lambda value: _is_number(value), "a number"),
    "checkbox": (lambda value: isinstance(value, bool), "true or false"),
    "risk-level": (lambda value: value in ("Low", "Medium", "High", "Critical"), "one of Low, Medium, High, Critical"),
    "single-select": (lambda value: isinstance(value, str), "one of its options"),
    "multi-select": (
        lambda value: isinstance(value, list) and all(isinstance(v, str) for v in value),
        "a list of its options",
    ),
    "list": (lambda value: isinstance(value, list), "a list"),
    "date": (lambda value: _is_date(value), "an ISO 8601 date (YYYY-MM-DD, or with a time)"),
}
"""What a backfill of each type must be; the other types' values have no published form (no backfill)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_date(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        dt.date.fromisoformat(value) if len(value) == 10 else dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def backfill_unfit(kind: Any, value: Any, options: Sequence[Any] | None = None) -> str:
    """
    Return why a field of type ``kind`` cannot hold the backfill ``value`` ("" when it can).

    Its type's form (text, a number, true/false, a list...), a select's ``options`` (when known: a declaration that
    leaves them out is checked against Blink's at plan time).
    """
    kind = getattr(kind, "value", kind)
    if not isinstance(kind, str) or kind not in _BACKFILL_FORMS:
        return (
            f"'backfill' cannot fill a {kind!r} field: Blink publishes no form of its values (backfill text, "
            f"number, checkbox, risk-level, select, list and date fields)"
        )
    fits, form = _BACKFILL_FORMS[kind]
    if not fits(value):
        return f"'backfill' of a {kind!r} field must be {form}, got {value!r:.80}"
    chosen = value if isinstance(value, list) else [value]
    if kind in ("single-select", "multi-select") and options is not None:
        missing = [choice for choice in chosen if choice not in options]
        if missing:
            return f"'backfill' {value!r:.80} is not among the field's options {options!r:.200}"
    return ""


def _not_a_value(value: Any) -> bool:
    """Return whether a backfill cannot fill a row: empty, or an object."""
    return value is None or value == "" or value == [] or isinstance(value, dict)


def _table_and_fields(value: Any, source: str) -> tuple[dict[str, Any], Any]:
    """Return an object with ``fields``: its table members (checked) and its entries; anything else as it is."""
    if not (isinstance(value, Mapping) and "fields" in value):
        return {}, value
    table, fields = _declared_table_members(value, source), value["fields"]
    if not isinstance(fields, list):
        raise Problems(f"{source}: 'fields' must be a list of entries, got {type(fields).__name__}")
    return table, fields


def _check_whole(fields: FieldBatch, removals: list[str], source: str) -> None:
    """
    Check that the declaration declares something, and no field both ways.

    :raises Problems: a field both declared and removed, or nothing declared at all.
    """
    twice = sorted({name for name, _ in fields} & set(removals))
    if twice:
        raise Problems(
            f"{source} both declares and removes {', '.join(map(repr, twice))}: keep the entry or the tombstone"
        )
    shown: dict[str, list[str]] = {}
    for name, update in fields:
        if update.display_name is not None:
            shown.setdefault(update.display_name.strip(), []).append(name)
    alike = [names for names in shown.values() if len(names) > 1]
    if alike:
        said = "; ".join(" and ".join(map(repr, names)) for names in alike)
        raise Problems(
            f"{source} gives one display name to several entries ({said}): Blink shows each field by its display "
            "name, and derives an added field's name from it, so give each entry its own display name"
        )
    if not fields and not removals:
        raise Problems(f"{source} declares no field; give at least one (a template that rendered nothing?)")


def _json(text: str | bytes, source: str) -> Any:
    """Return a declaration's JSON text, read with each object's members named once."""
    try:
        return json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError as err:
        raise Problems(f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except RepeatedMember as err:
        raise Problems(f"{source} names {err.args[0]!r} twice in one object; name it once") from None
    except RecursionError:
        raise Problems(f"{source} nests too deeply to read") from None


def _declared_table_members(value: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Return the table's display name and description of a declaration object, checked."""
    unknown = sorted(str(key) for key in value if key not in TABLE_MEMBERS)
    if unknown:
        raise Problems(
            f"{source} names {', '.join(map(repr, unknown))}, which a declaration does not take; allowed: "
            f"{', '.join(TABLE_MEMBERS)} (the table's display name and description, and its fields)"
        )
    table = {member: value.get(member) for member in ("display_name", "description") if member in value}
    for member, given in table.items():
        _check_text_member(given, f"{source}: the table's {member}")
    shown = table.get("display_name")
    if isinstance(shown, str) and not shown.strip():
        raise Problems(f"{source}: the table's display_name must not be blank")
    return table


def _check_text_member(given: Any, what: str) -> None:
    """
    Check a text member.

    :raises Problems: ``given`` is neither None nor text.
    """
    if given is not None and not isinstance(given, str):
        raise Problems(f"{what} must be text, got {type(given).__name__}")


def _split(entries: list[Any]) -> tuple[list[int], list[Any], list[str], list[str]]:
    """
    Return the field entries with their positions, the removed names, and the tombstones' problems.

    A removal is a tombstone, ``{"field": name, "remove": true}``.
    """
    positions: list[int] = []
    fields: list[Any] = []
    removals: list[str] = []
    problems: list[str] = []
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping) or "remove" not in entry:
            positions.append(position)
            fields.append(entry)
            continue
        name = entry.get("field")
        problem = _tombstone_problem(name, entry, removals)
        if problem:
            problems.append(f"entry {position} ({name!r}): {problem}")
        else:
            removals.append(str(name))
    return positions, fields, removals, problems


def _tombstone_problem(name: Any, entry: Mapping[str, Any], removals: list[str]) -> str:
    if entry.get("remove") is not True:
        return "'remove' must be true (a tombstone); leave it out to declare the field"
    extra = sorted(str(key) for key in entry if key not in ("field", "remove"))
    if extra:
        return f"a tombstone names only 'field' and 'remove': true, not {', '.join(map(repr, extra))}"
    if not isinstance(name, str) or not name.strip():
        return "'field' must be the name of the field to remove"
    try:
        segment(name, "field name")
    except ValueError as err:
        return str(err)
    return f"{name!r} is removed twice" if name in removals else ""
