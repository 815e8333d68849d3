"""The client's private models and checks: the envelopes of Blink's answers (a created table, a
tables or fields listing, the error wrapper), the members RQL compares, and the check of a batch
of field updates (:func:`validate_field_updates`). The public types are in
:mod:`blinkops_provider.models`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, get_args

from pydantic import (
    BaseModel,
    ValidationError,
)

from blinkops_provider._inputs import RepeatedMember, describe_errors, unique_members
from blinkops_provider._names import segment
from blinkops_provider._raising import Problems, input_error
from blinkops_provider._text import first_problems
from blinkops_provider.models import BlinkTable, FieldBatch, FieldUpdate, ResponseModel, TableField

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
