"""Pydantic models of the Blink API's request and response bodies.

Two families, with opposite rules:

* Request models (:class:`FieldUpdate`, :class:`FieldAttributes`, :class:`TableReference`)
  reject unknown members, naming the allowed ones, and reject values of the wrong type, so a
  typo such as ``opitons`` fails before any request is sent.
* Response models accept missing and unknown members and keep the unknown ones: Blink adds
  fields over time, and ``model_dump()`` hands them on untouched. Members whose JSON name is not
  snake_case (``defaultAPIAddress``) have a snake_case attribute and are dumped under their JSON
  name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.names import segment

__all__ = [
    "ActionToRunParamValues",
    "Authentication",
    "AuthenticationKey",
    "ConnectionType",
    "ConnectionTypeMetadata",
    "ConnectionTypeMethod",
    "ConnectionTypePage",
    "ErrorWrapper",
    "Extractor",
    "ExtractorExpiry",
    "FieldAttributes",
    "FieldType",
    "FieldUpdate",
    "Pagination",
    "TableField",
    "TableReference",
    "TestConnection",
    "TwoLeggedValues",
    "Validation",
    "describe_errors",
    "scalar_fields",
    "validate_field_updates",
    "validate_input",
]

ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_input(model: type[ModelT], data: Any, what: str) -> ModelT:
    """Validate user input into ``model``.

    :raises BlinkInputError: naming each wrong member, why, and what is allowed.
    """
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise BlinkInputError(f"invalid {what}: {describe_errors(err.errors())}") from None


SHOWN_VALUE_CHARS = 40
"""How much of a wrong input value a message echoes."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 3] + "..."


def describe_errors(errors: Iterable[Mapping[str, Any]]) -> str:
    """Pydantic's error list of a user's input as one line: ``where: what is wrong (got <value>); ...``,
    each wrong value cut to :data:`SHOWN_VALUE_CHARS` characters (what a user typed, not a secret:
    responses are described without their values)."""
    problems = []
    for error in errors:
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if "input" in error and error["input"] is not None and not isinstance(error["input"], (dict, list)):
            message = f"{message} (got {_shown(error['input'])})"
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


class FieldType(str, Enum):  # noqa: UP042  (StrEnum would change what str() of a member says)
    """The types a table field can have (the values accepted by the field update)."""

    TEXT = "text"
    LONG_TEXT = "long-text"
    NUMBER = "number"
    RISK_LEVEL = "risk-level"
    CHECKBOX = "checkbox"
    SINGLE_SELECT = "single-select"
    MULTI_SELECT = "multi-select"
    LIST = "list"
    REFERENCE = "reference"
    DATE = "date"

    def __str__(self) -> str:
        return self.value


class _RequestModel(BaseModel):
    """A body we send: unknown members and wrongly typed values are errors."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_members(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = sorted(name for name in cls.model_fields)
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                raise ValueError(
                    f"unknown member{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                    f"in {cls.__name__}; allowed: {', '.join(allowed)}"
                )
        return data


class TableReference(_RequestModel):
    """The target of a reference field: a table and the field of it that is displayed."""

    table_name: StrictStr = Field(min_length=1)
    display_name_field: StrictStr | None = None


class FieldAttributes(_RequestModel):
    """Type-specific settings of a field (defaults, select options, reference target)."""

    default_value: StrictStr | None = None
    include_time: StrictBool | None = None
    options: list[StrictStr] | None = None
    table_reference: TableReference | None = None


class FieldUpdate(_RequestModel):
    """The body of a field update (``PUT .../fields/{field}``).

    The update is a full replacement: a member left out is reset by Blink. Give ``type`` (the
    field's current type: Blink refuses to change it) and ``display_name`` to keep them.
    """

    type: FieldType | None = None
    display_name: StrictStr | None = Field(default=None, min_length=1)
    attributes: FieldAttributes | None = None

    @field_validator("display_name")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("display_name must not be blank")
        return value

    def to_body(self) -> dict[str, Any]:
        """The JSON body to send: only the members that were given."""
        return self.model_dump(mode="json", exclude_none=True)


class _ResponseModel(BaseModel):
    """A body we receive: members may be missing, unknown ones are kept."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of what Blink sent (unknown members included, absent ones left out)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """:meth:`to_json_dict` as JSON text, serialised without building the dict."""
        return self.model_dump_json(exclude_unset=True)


class TableField(_ResponseModel):
    """A field of a Blink table, as the field update returns it (it must carry ``id`` or ``name``)."""

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


class AuthenticationKey(_ResponseModel):
    """One credential a connection type asks for."""

    name: str | None = None
    format: str | None = None


class ActionToRunParamValues(_ResponseModel):
    """The token request of a two-legged authentication."""

    url: str | None = None
    method: str | None = None
    content_type: str | None = Field(default=None, alias="contentType")
    headers: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    ignore_ssl: bool | None = Field(default=None, alias="ignoreSSL")


class ExtractorExpiry(_ResponseModel):
    """Where the expiry of a two-legged token is read, and its default in seconds."""

    default_expiry: int | None = Field(default=None, alias="defaultExpiry")
    path: str | None = None
    type: str | None = None


class Extractor(_ResponseModel):
    """How the access token is taken out of the token response."""

    access_key_path: str | None = Field(default=None, alias="accessKeyPath")
    is_in_header: bool | None = Field(default=None, alias="isInHeader")
    is_jwt: bool | None = Field(default=None, alias="isJWT")
    expiry: ExtractorExpiry | None = None


class TwoLeggedValues(_ResponseModel):
    """Parameters of a two-legged token process."""

    connection_params: list[str] | None = Field(default=None, alias="connectionParams")
    action_to_run_param_values: ActionToRunParamValues | None = Field(default=None, alias="actionToRunParamValues")
    extractor: Extractor | None = None


class Authentication(_ResponseModel):
    """How a connection type authenticates against its target system."""

    type: str | None = None
    keys: list[AuthenticationKey] | None = None
    static_headers: dict[str, Any] | None = Field(default=None, alias="staticHeaders")
    two_legged_values: TwoLeggedValues | None = Field(default=None, alias="twoLeggedValues")


class Pagination(_ResponseModel):
    """The pagination method of the target system."""

    type: str | None = None
    descriptor: dict[str, Any] | None = None


class Validation(_ResponseModel):
    """What makes a response of the target system valid."""

    content_type: str | None = Field(default=None, alias="contentType")
    error_path: str | None = Field(default=None, alias="errorPath")
    format_url: str | None = Field(default=None, alias="formatURL")
    payload: dict[str, Any] | None = None
    status_codes: str | None = Field(default=None, alias="statusCodes")


class TestConnection(_ResponseModel):
    """How a connection of this type is tested."""

    __test__ = False  # not a pytest test class

    type: str | None = None
    endpoint: str | None = None
    body: dict[str, Any] | None = None
    expected: Validation | None = None


class ConnectionTypeMetadata(_ResponseModel):
    """Authentication, addressing, pagination, testing and validation of a connection type."""

    authentication: Authentication | None = None
    default_api_address: str | None = Field(default=None, alias="defaultAPIAddress")
    ignore_ssl: bool | None = Field(default=None, alias="ignoreSSL")
    pagination: Pagination | None = None
    test_connection: TestConnection | None = Field(default=None, alias="testConnection")
    validation: Validation | None = None
    variables: dict[str, Any] | None = None


class ConnectionTypeMethod(_ResponseModel):
    """An authentication method a connection type offers."""

    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    documentation_link: str | None = None
    attributes: list[str] | None = None
    hidden: bool | None = None
    is_recommended: bool | None = None
    oauth_supported: bool | None = None


class ConnectionType(_ResponseModel):
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


def scalar_fields(model: type[BaseModel]) -> dict[str, type]:
    """The members of a model that hold one string, integer or boolean: what RQL compares."""
    kinds: dict[str, type] = {}
    for name, info in model.model_fields.items():
        args = [arg for arg in get_args(info.annotation) if arg is not type(None)] or [info.annotation]
        if len(args) == 1 and args[0] in (str, int, bool):
            kinds[name] = args[0]
    return kinds


class ConnectionTypePage(_ResponseModel):
    """One page of the connection-type listing: ``results`` is required, the counts are integers."""

    limit: int | None = Field(default=None, strict=True, ge=0)
    offset: int | None = Field(default=None, strict=True, ge=0)
    total: int | None = Field(default=None, strict=True, ge=0)
    results: list[ConnectionType]


class ErrorWrapper(_ResponseModel):
    """The body of an error response; every member may be absent."""

    status: int | None = None
    message: str | None = None
    details: str | None = None
    identifier: str | None = None
    data: Any = None
    user_error: Any = None


class _RepeatedMember(ValueError):
    pass


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose members are all named once (``json.loads`` keeps only the last)."""
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise _RepeatedMember(name)
        members[name] = value
    return members


def validate_field_updates(updates: Any, *, require_type_and_name: bool = False) -> list[tuple[str, FieldUpdate]]:
    """Check a batch of field updates before any is sent, and report every problem at once.

    :param updates: a mapping ``{field name: update}``, or a list of entries in the declared-schema
        format ``{"field": name, "type": ..., "display_name": ..., "attributes": {...}}``, or the
        JSON text of either (as a template renders it).
    :param require_type_and_name: refuse entries without ``type`` or ``display_name`` (Blink
        resets what an update leaves out, and refuses a type change).
    :returns: ``(field name, FieldUpdate)`` pairs in the given order.
    :raises BlinkInputError: naming each wrong entry (its position and field) and what is wrong.
    """
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
        raise BlinkInputError(
            f"{len(problems)} of {len(entries)} field update(s) are invalid, so none was sent:"
            + "".join(f"\n  - {problem}" for problem in problems)
        )
    return valid


def _field_entries(updates: Any) -> list[Any]:
    """The entries of a batch, in order: declared-schema objects, or ``(name, update)`` pairs
    from a mapping whose values are not objects; JSON text is read first."""
    if isinstance(updates, str):
        try:
            updates = json.loads(updates, object_pairs_hook=_unique_members)
        except _RepeatedMember as err:
            raise BlinkInputError(
                f"the field updates' JSON names {err.args[0]!r} twice in one object; JSON keeps only the last, "
                "so declare each field (and each member) once"
            ) from None
        except RecursionError:
            raise BlinkInputError("the field updates' JSON nests too deeply to read") from None
        except ValueError as err:
            raise BlinkInputError(f"the field updates are not valid JSON: {err}") from None
    if isinstance(updates, Mapping):
        return [
            {"field": name, **dict(update)} if isinstance(update, Mapping) else (name, update)
            for name, update in updates.items()
        ]
    if isinstance(updates, Sequence):
        return list(updates)
    raise BlinkInputError(
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
    if require_type_and_name and isinstance(body, Mapping):
        missing = [member for member in ("type", "display_name") if body.get(member) in (None, "")]
        if missing:
            return f"{where}: {' and '.join(missing)} required (Blink resets what an update leaves out)"
    try:
        update = body if isinstance(body, FieldUpdate) else FieldUpdate.model_validate(body)
    except ValidationError as err:
        return f"{where}: {describe_errors(err.errors())}"
    problems = contradictions(update)
    return f"{where}: {'; '.join(problems)}" if problems else (name, update)


def contradictions(update: FieldUpdate) -> list[str]:
    """What contradicts itself in one field's declaration: a select option given twice, a
    ``default_value`` not among the ``options``, ``include_time`` on a type that is not ``date``,
    a ``reference`` without ``table_reference``."""
    attributes, kind = update.attributes or FieldAttributes(), update.type
    options = attributes.options or []
    problems = [f"option {option!r} is given twice" for n, option in enumerate(options) if option in options[:n]]
    if (
        attributes.options is not None
        and attributes.default_value is not None
        and attributes.default_value not in options
    ):
        problems.append(f"default_value {attributes.default_value!r} is not one of the options {options}")
    if attributes.include_time is not None and kind is not None and kind is not FieldType.DATE:
        problems.append(f"include_time is for a 'date' field, and this one is {kind.value!r}")
    if kind is FieldType.REFERENCE and attributes.table_reference is None:
        problems.append("a 'reference' field needs attributes.table_reference (the table it links to)")
    return problems
