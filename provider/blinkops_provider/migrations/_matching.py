"""
Which of Blink's fields and tables a declared entry is, and the body sent for each.

Blink derives the name of a field it adds (and of a table it creates) from its display name, by a rule it does not
publish. So a declared entry is matched to Blink's field (:func:`match_fields`):

1. by ``name``: Blink has a field named as the entry;
2. by the record's note of the name Blink gave the field when this provider added it (so a later change of its display
   name still finds it);
3. by ``display_name``: exactly one of Blink's fields is shown so, and no other entry claims it.

An entry that matches nothing is a field to add. Two entries that would add fields shown alike, an entry whose display
name two of Blink's fields show, two entries claiming one field, and an add whose display name a field of Blink's
already shows are refused before anything is sent: each would leave Blink with fields nobody can tell apart. A table is
matched by name, then by the record's note, then by display name in Blink's tables read (:func:`match_table`).

Blink's field update replaces the whole field, so the body sent is the declaration merged with the field as Blink holds
it (:func:`merge_field`: what the declaration leaves out is sent as held); a retype's new field carries the old one's
members but those of its old type alone (:func:`retyped_body`); a body that contradicts itself is refused before it is
sent (:func:`contradictions`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import (
    READ_ONLY_ATTRIBUTES,
    BlinkTable,
    FieldAttributes,
    FieldType,
    FieldUpdate,
    TableField,
)
from blinkops_provider.utils.inputs import describe_errors
from blinkops_provider.utils.text import one_line


@dataclass
class Matches:
    """
    What the declaration's entries are in Blink.

    :ivar found: declared name -> the name of Blink's field it is.
    :ivar refused: declared name -> why it is refused (not sent).
    :ivar gone: removed (tombstoned) name -> the name of Blink's field it removes.
    """

    found: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)


def match_fields(
    declared: Sequence[tuple[str, FieldUpdate]],
    removals: Sequence[str],
    live: Sequence[TableField],
    notes: Mapping[str, str],
) -> Matches:
    """
    Return each declared entry's field in Blink (``live``), and each removal's.

    An entry is matched by name, the record's ``notes``, then display name; a removal by name,
    then the record's note.
    """
    by_name = {held.name: held for held in live if held.name is not None}
    matches = Matches()
    matches.found.update({name: name for name, _ in declared if name in by_name})
    claimed = set(matches.found.values())
    _match_by_note(declared, by_name, notes, matches, claimed)
    _match_by_display_name(declared, live, matches, claimed)
    _refuse_adds_alike(declared, live, matches)
    for name in removals:
        target = name if name in by_name else notes.get(name)
        if target in by_name:
            matches.gone[name] = str(target)
    return matches


def _match_by_note(
    declared: Sequence[tuple[str, FieldUpdate]],
    by_name: Mapping[str, TableField],
    notes: Mapping[str, str],
    matches: Matches,
    claimed: set[str],
) -> None:
    """
    Match the entries not found by name by the record's note of the name Blink gave the field this provider added.

    A field no entry claimed yet.
    """
    for name, _ in declared:
        noted = notes.get(name)
        if name not in matches.found and noted in by_name and noted not in claimed:
            matches.found[name] = claimed_name = str(noted)
            claimed.add(claimed_name)


def _match_by_display_name(
    declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches, claimed: set[str]
) -> None:
    """Match the entries not found by name by display name, to one field no entry claimed."""
    wanted: dict[str, list[str]] = defaultdict(list)
    for name, update in declared:
        if name in matches.found:
            continue
        hits = [held.name for held in live if held.display_name == update.display_name and held.name not in claimed]
        if len(hits) > 1:
            shown = ", ".join(repr(hit) for hit in hits)
            matches.refused[name] = (
                f"its display name {update.display_name!r} is shown by {len(hits)} of Blink's fields ({shown}): "
                "declare it under the name of the one it is"
            )
        elif hits:
            wanted[str(hits[0])].append(name)
    _claim_for_one_entry(wanted, matches)


def _claim_for_one_entry(wanted: Mapping[str, list[str]], matches: Matches) -> None:
    """
    Give each of Blink's fields that one entry matched by display name to that entry.

    One that several matched is refused to all of them.
    """
    for blink_name, names in wanted.items():
        if len(names) == 1:
            matches.found[names[0]] = blink_name
            continue
        for name in names:
            matches.refused[name] = (
                f"entries {', '.join(map(repr, names))} all match Blink's field {blink_name!r} by display name: "
                "declare it once, under its name"
            )


def _refuse_adds_alike(
    declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches
) -> None:
    """Refuse adds that could not be told apart: two shown alike, or one shown as a field Blink has."""
    adds: dict[str, list[str]] = defaultdict(list)
    for name, update in declared:
        if name not in matches.found and name not in matches.refused:
            adds[str(update.display_name)].append(name)
    shown = {held.display_name: held.name for held in live}
    for display_name, names in adds.items():
        for name in names:
            if len(names) > 1:
                matches.refused[name] = (
                    f"entries {', '.join(map(repr, names))} would add fields shown alike as {display_name!r}: "
                    "Blink derives names from display names, so give each its own"
                )
            elif display_name in shown:
                matches.refused[name] = (
                    f"Blink's field {shown[display_name]!r} is shown as {display_name!r} already and another entry "
                    "declares it: give the new field a display name of its own"
                )


def match_table(table: str, tables: Sequence[BlinkTable], noted: str | None) -> BlinkTable | None:
    """
    Return the table ``table`` names in Blink's tables read.

    By name, the record's note of Blink's name, then the one table shown as ``table``; None: no such table. A
    declaration's display name never picks a table here (:func:`created_as`).

    :raises ValueError: two or more tables are shown so and none is named so.
    """
    by_name = {entry.name: entry for entry in tables}
    for name in (table, noted):
        if name is not None and name in by_name:
            return by_name[name]
    return _table_shown_as(tables, table)


def created_as(table: str, tables: Sequence[BlinkTable], declared: str) -> tuple[BlinkTable | None, str]:
    """
    With ``create_table``, when no table is named or shown as ``table`` and no record notes Blink's name.

    The one table shown as the ``declared`` display name, taken as the one this DAG created under it, and the plan's
    sentence that says so; ``(None, "")`` when there is none.

    :raises ValueError: two or more tables are shown so.
    """
    found = _table_shown_as(tables, declared)
    if found is None:
        return None, ""
    return found, (
        f"no table is named or shown as {one_line(table)!r}: the table shown as the declared display name "
        f"{one_line(declared)!r} (Blink's name {one_line(found.name)!r}) is taken as the one this DAG created "
        "(create_table=True, and no record notes Blink's name); give table its name to plan against it by name"
    )


def _table_shown_as(tables: Sequence[BlinkTable], shown_as: str) -> BlinkTable | None:
    """
    Return the one table shown as ``shown_as`` (None: none).

    :raises ValueError: two or more are.
    """
    shown = [entry for entry in tables if entry.display_name == shown_as]
    if len(shown) > 1:
        raise ValueError(
            f"{len(shown)} tables of the workspace are shown as {one_line(shown_as)!r} "
            f"({', '.join(repr(one_line(entry.name)) for entry in shown)}): give table the name of the one it is"
        )
    return shown[0] if shown else None


_SELECT_TYPES = (FieldType.SINGLE_SELECT, FieldType.MULTI_SELECT)


def contradictions(update: FieldUpdate) -> list[str]:
    """
    Return what contradicts itself in one field's body.

    A select without options or with an option given twice, a ``reference`` without ``table_reference``, ``include_time:
    true`` on a type that is not ``date``. (``include_time: false`` and a ``default_value`` outside the options are not
    contradictions: Blink's own published example sends both.)
    """
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
    """
    Return a field as Blink holds it, in the shape of an update's body.

    ``type``, ``display_name``, ``description`` and the attributes, without Blink's read-only markers (``system``,
    ``protected``) and without members Blink left empty.
    """
    held = field.model_dump(mode="json", exclude_none=True) if isinstance(field, TableField) else dict(field)
    body = {member: held[member] for member in ("type", "display_name", "description") if held.get(member) is not None}
    attributes = held.get("attributes")
    if isinstance(attributes, Mapping):
        body["attributes"] = {
            name: value for name, value in attributes.items() if name not in READ_ONLY_ATTRIBUTES and value is not None
        }
    return body


def merge_field(update: FieldUpdate, held: TableField | Mapping[str, Any], *, name: str) -> FieldUpdate:
    """
    Return the body that changes what ``update`` gives and keeps everything else of the field as Blink holds it.

    Blink's update replaces the whole field, so a member or attribute the update leaves out (``required``,
    ``is_unique``, ``description``, one Blink added later) is sent as held.

    :param held: Blink's field, or its body as :func:`field_body` gives it.
    :param name: the field's name, for the error.
    :raises BlinkInputError: Blink holds a value this provider cannot send back unchanged
        (then ``replace=True`` sends the update as given).
    """
    kept, given = field_body(held) if isinstance(held, TableField) else dict(held), update.to_body()
    merged = {**kept, **given, "attributes": {**kept.get("attributes", {}), **given.get("attributes", {})}}
    try:
        return FieldUpdate.model_validate(merged, context={"from_blink": True})
    except ValidationError as err:
        raise BlinkInputError(
            f"field {name!r} as Blink holds it cannot be sent back unchanged ({describe_errors(err.errors())}); "
            "nothing was sent: replace=True sends the declaration as given, and Blink resets what it leaves out"
        ) from None


_TYPE_BOUND: tuple[tuple[str, tuple[FieldType, ...]], ...] = (
    ("options", _SELECT_TYPES),
    ("include_time", (FieldType.DATE,)),
    ("table_reference", (FieldType.REFERENCE,)),
)
"""The attributes that belong to some types only: a retype's new field of another type does not carry them."""


def retyped_body(body: FieldUpdate) -> FieldUpdate:
    """
    Return the new field of a retype: ``body`` (the declaration merged with the old field) for the new type.

    Everything the old field holds is carried (description, ``required``, ``is_unique``, the default, attributes this
    provider does not know), but the attributes of the old type alone (a select's options, a date's ``include_time``,
    a reference's target) when the new type has none; the plan shows each dropped one.
    """
    given = body.to_body()
    attributes = dict(given.get("attributes") or {})
    for attribute, types in _TYPE_BOUND:
        if attribute in attributes and body.type not in types:
            del attributes[attribute]
    return FieldUpdate.model_validate({**given, "attributes": attributes}, context={"from_blink": True})


def member_value(body: Mapping[str, Any], member: str) -> Any:
    """Return a body's ``member`` (``attributes.<name>``: that attribute; None when unset)."""
    if member.startswith("attributes."):
        attributes = body.get("attributes")
        return attributes.get(member.split(".", 1)[1]) if isinstance(attributes, Mapping) else None
    return body.get(member)


def differing_members(declared: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """
    Return the members of two field bodies that differ.

    ``type``, ``display_name``, ``description``, and each attribute as ``attributes.<name>`` (an absent attribute and an
    absent ``attributes`` count as unset).
    """
    members = [name for name in ("type", "display_name") if declared.get(name) != recorded.get(name)]
    if (declared.get("description") or "") != (recorded.get("description") or ""):
        members.append("description")
    return members + _differing_attributes(declared.get("attributes") or {}, recorded.get("attributes") or {})


def _differing_attributes(after: Mapping[str, Any], before: Any) -> list[str]:
    """Return ``attributes.<name>`` for each attribute that differs (a malformed ``before``: none set)."""
    before = before if isinstance(before, Mapping) else {}
    return [f"attributes.{name}" for name in sorted(set(after) | set(before)) if after.get(name) != before.get(name)]


def removal_refused(name: str, held: TableField) -> str:
    """
    Return why no one may remove Blink's field ``held`` (declared as ``name``), whoever approves.

    It is one of Blink's system or protected fields. "" when a removal of it may be let through (by a person's Approve,
    or ``acknowledge_risks``: ``_review.pass_gate``).
    """
    if kept_by_blink(held):
        return f"{name!r} is one of Blink's system or protected fields, which Blink does not let anyone remove"
    return ""


def kept_by_blink(held: TableField) -> bool:
    """Return whether Blink keeps a field to itself (``system`` or ``protected``)."""
    markers = held.attributes or {}
    return any(markers.get(marker) is True for marker in READ_ONLY_ATTRIBUTES)


CHECKS = ("required", "is_unique")
"""The checks Blink enforces on a field's values: a new field gets them only once its rows hold their values."""


def without_checks(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return a field's body with its checks (``required``, ``is_unique``) left off."""
    attributes = body.get("attributes")
    if not isinstance(attributes, Mapping) or not any(attributes.get(check) for check in CHECKS):
        return dict(body)
    return {**body, "attributes": {key: value for key, value in attributes.items() if key not in CHECKS}}


def field_update_of(body: Mapping[str, Any]) -> FieldUpdate:
    """Return a body made from a plan's (which may hold attributes Blink keeps that this provider does not know)."""
    return FieldUpdate.model_validate(dict(body), context={"from_blink": True})


def options_of(body: Mapping[str, Any]) -> list[Any]:
    """Return a body's select options (none when it has none)."""
    attributes = body.get("attributes")
    options = attributes.get("options") if isinstance(attributes, Mapping) else None
    return list(options) if isinstance(options, list) else []
