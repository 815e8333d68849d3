"""How a declared field's body is made from what Blink holds: Blink's field update replaces the
whole field, so the body sent is the declaration merged with the field as Blink holds it (what the
declaration leaves out is sent back as held), and a body that contradicts itself is refused
before it is sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from blinkops_provider._inputs import describe_errors
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import READ_ONLY_ATTRIBUTES, FieldAttributes, FieldType, FieldUpdate, TableField

_SELECT_TYPES = (FieldType.SINGLE_SELECT, FieldType.MULTI_SELECT)


def contradictions(update: FieldUpdate) -> list[str]:
    """What contradicts itself in one field's body: a select without options or with an option
    given twice, a ``reference`` without ``table_reference``, ``include_time: true`` on a type
    that is not ``date``. (``include_time: false`` and a ``default_value`` outside the options are
    not contradictions: Blink's own published example sends both.)"""
    attributes, kind = update.attributes or FieldAttributes(), update.type
    options = attributes.options or []
    problems = [f"option {option!r} is given twice" for n, option in enumerate(options) if option in options[:n]]
    return problems + [said(kind) for rule, said in _CONTRADICTIONS if rule(kind, attributes)]


_CONTRADICTIONS: tuple[tuple[Callable[[Any, FieldAttributes], bool], Callable[[Any], str]], ...] = (
    (
        lambda kind, attributes: kind in _SELECT_TYPES and not attributes.options,
        lambda kind: f"a {kind.value!r} field needs attributes.options (its choices)",
    ),
    (
        lambda kind, attributes: attributes.include_time is True and kind not in (None, FieldType.DATE),
        lambda kind: f"include_time is for a 'date' field, and this one is {kind.value!r}",
    ),
    (
        lambda kind, attributes: kind is FieldType.REFERENCE and attributes.table_reference is None,
        lambda kind: "a 'reference' field needs attributes.table_reference (the table it links to)",
    ),
)
"""Each rule a field's body may break (its type, its attributes), and what is said of it."""


def field_body(field: TableField | Mapping[str, Any]) -> dict[str, Any]:
    """A field as Blink holds it, in the shape of an update's body: ``type``, ``display_name``,
    ``description`` and the attributes, without Blink's read-only markers (``system``,
    ``protected``) and without members Blink left empty."""
    held = field.model_dump(mode="json", exclude_none=True) if isinstance(field, TableField) else dict(field)
    body = {member: held[member] for member in ("type", "display_name", "description") if held.get(member) is not None}
    attributes = held.get("attributes")
    if isinstance(attributes, Mapping):
        body["attributes"] = {
            name: value for name, value in attributes.items() if name not in READ_ONLY_ATTRIBUTES and value is not None
        }
    return body


def merge_field(update: FieldUpdate, held: TableField | Mapping[str, Any], *, name: str) -> FieldUpdate:
    """The body that changes what ``update`` gives and keeps everything else of the field as Blink
    holds it: Blink's update replaces the whole field, so a member or attribute the update leaves
    out (``required``, ``is_unique``, ``description``, one Blink added later) is sent as held.

    :param name: the field's name, for the error.
    :raises BlinkInputError: Blink holds a value this provider cannot send back unchanged
        (then ``replace=True`` sends the update as given).
    """
    kept, given = field_body(held), update.to_body()
    merged = {**kept, **given, "attributes": {**kept.get("attributes", {}), **given.get("attributes", {})}}
    try:
        return FieldUpdate.model_validate(merged, context={"from_blink": True})
    except ValidationError as err:
        raise BlinkInputError(
            f"field {name!r} as Blink holds it cannot be sent back unchanged ({describe_errors(err.errors())}); "
            "nothing was sent: replace=True sends the declaration as given, and Blink resets what it leaves out"
        ) from None
