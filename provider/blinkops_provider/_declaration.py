"""What a repository declares of one Blink table, read and checked before any request.

A declaration is a list of entries, or an object ``{"display_name": ..., "description": ...,
"fields": [...]}`` that also declares the table's display name and description. An entry is a
field, ``{"field": name, "type": ..., "display_name": ..., "description": ..., "attributes":
{...}}`` (with ``"backfill": VALUE`` to fill its empty rows when it is added or turns
``required`` on), or a tombstone, ``{"field": "Old", "remove": true}``: the repository says what goes,
and a field that is not declared is never removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider._inputs import RepeatedMember, first_problems, segment, unique_members
from blinkops_provider._raising import Problems, input_error
from blinkops_provider.models import FieldBatch, checked_field_updates

TABLE_MEMBERS = ("display_name", "description", "fields")
"""What a declaration object may hold."""


@dataclass(frozen=True)
class Declaration:
    """A checked declaration: the fields in their declared order, the removals, and the table's
    display name and description (None: not declared, kept as Blink holds them)."""

    fields: FieldBatch
    removals: tuple[str, ...] = ()
    display_name: str | None = None
    description: str | None = None
    backfills: Mapping[str, Any] = field(default_factory=dict)
    """The declared ``backfill`` value of each field that has one."""
    type_changes: Mapping[str, str] = field(default_factory=dict)
    """The declared ``type_change`` of each field that has one: ``copy`` or ``copy_or_empty``."""

    def to_json(self) -> list[dict[str, Any]] | dict[str, Any]:
        """The declaration as JSON-ready data, in the form it was given (a list, or an object
        when it declares the table's display name or description)."""
        extra: dict[str, dict[str, Any]] = {name: {"backfill": value} for name, value in self.backfills.items()}
        for name, how in self.type_changes.items():
            extra.setdefault(name, {})["type_change"] = how
        entries = [{"field": name, **update.to_body(), **extra.get(name, {})} for name, update in self.fields]
        entries += [{"field": name, "remove": True} for name in self.removals]
        table = {member: getattr(self, member) for member in ("display_name", "description")}
        table = {member: value for member, value in table.items() if value is not None}
        return {**table, "fields": entries} if table else entries

    def digest_part(self) -> list[Any]:
        """What of the declaration the plan's identity covers."""
        return [
            [[name, update.to_body()] for name, update in self.fields],
            list(self.removals),
            sorted(self.backfills.items()),
            sorted(self.type_changes.items()),
            [self.display_name, self.description],
        ]


def read_declaration(value: Any, *, source: str = "the declared schema", prefix: bool = True) -> Declaration:
    """``value`` as a :class:`Declaration`: a list of entries, an object with ``fields``, a mapping
    ``{field name: update}``, or the JSON text of any of them.

    :param prefix: begin the error that lists the wrong entries with ``source`` (an operator's own
        argument needs no naming: its errors read as before).
    :raises BlinkInputError: naming ``source`` and every wrong entry, before any request.
    """
    try:
        return checked_declaration(value, source=source, prefix=prefix)
    except Problems as err:
        raise input_error(err.message) from None


def declaration_problems(value: Any, *, source: str) -> list[str]:
    """Every problem :func:`read_declaration` would refuse ``value`` for, one line each (an
    entry's names its position and field); none when it is valid. Imports no Airflow."""
    try:
        checked_declaration(value, source=source)
    except Problems as err:
        return err.problems
    return []


def checked_declaration(value: Any, *, source: str = "the declared schema", prefix: bool = True) -> Declaration:
    """:func:`read_declaration`, raising :class:`~blinkops_provider._raising.Problems`."""
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
    fields = _fields(entries, positions, problems, (source, prefix))
    _check_whole(fields, removals, source)
    shown = (table.get("display_name"), table.get("description"))
    return Declaration(fields, tuple(removals), *shown, backfills, type_changes)


TYPE_CHANGES = {
    "copy": "add a new field of the new type, copy every value (refused if one does not convert), remove the old",
    "copy_or_empty": "as copy, leaving empty the rows whose value does not convert (destructive, counted)",
}
"""What an entry's ``type_change`` may say."""


def _fields(entries: Any, positions: list[int] | None, problems: list[str], named: tuple[str, bool]) -> Any:
    """The declared fields, checked, once the tombstones and the extras were (their ``problems``):
    every problem raised at once, each entry named by its position in the declaration.

    :param named: the source, and whether the entries' own problems begin with it (an operator's
        own argument needs no naming)."""
    source, prefix = named
    try:
        fields = checked_field_updates(entries, require_type_and_name=True)
    except Problems as err:
        found = [_renumbered(problem, positions) for problem in err.problems]
        if not problems:  # (the entries' own problems alone: said as the batch check says them)
            message = _renumbered(err.message, positions, every=True)
            raise Problems(f"{source}: {message}" if prefix else message, found) from None
        problems = problems + found
    if problems:
        ordered = sorted(problems, key=lambda problem: entry_number(problem) or 0)
        raise Problems(f"{source}: " + first_problems(ordered), ordered)
    return fields


def entry_number(problem: str) -> int | None:
    """The position of the entry a problem names (``entry 3 ('Tags'): ...``), or None."""
    found = re.match(r"entry (\d+)\b", problem)
    return int(found.group(1)) if found else None


def _renumbered(text: str, positions: list[int] | None, *, every: bool = False) -> str:
    """``entry N`` of the fields alone, as the entry's position among every entry (tombstones too)."""
    if positions is None:
        return text
    pattern = r"\bentry (\d+)\b" if every else r"^entry (\d+)\b"
    return re.sub(pattern, lambda m: f"entry {positions[int(m.group(1)) - 1]}", text, flags=re.M)


def _extras(entries: list[Any], positions: list[int]) -> tuple[list[Any], dict[str, Any], dict[str, str], list[str]]:
    """The entries without their ``backfill`` and ``type_change`` members, each one declared by
    field name, and the problems: a backfill that is empty or not a JSON value a row can hold, a
    type_change that is not one of :data:`TYPE_CHANGES`."""
    kept, backfills, type_changes, problems = [], {}, {}, []
    for position, entry in zip(positions, entries, strict=True):
        if not isinstance(entry, Mapping) or not {"backfill", "type_change"} & set(entry):
            kept.append(entry)
            continue
        where, name = f"entry {position} ({entry.get('field')!r})", str(entry.get("field"))
        if "backfill" in entry:
            problems += [_backfill_problem(where, entry["backfill"])] if _not_a_value(entry["backfill"]) else []
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


def _not_a_value(value: Any) -> bool:
    """Whether a backfill cannot fill a row: empty, or an object."""
    return value is None or value == "" or value == [] or isinstance(value, dict)


def _table_and_fields(value: Any, source: str) -> tuple[dict[str, Any], Any]:
    """An object with ``fields``: its table members (checked) and its entries; anything else as it is."""
    if not (isinstance(value, Mapping) and "fields" in value):
        return {}, value
    table, fields = _table_members(value, source), value["fields"]
    if not isinstance(fields, list):
        raise Problems(f"{source}: 'fields' must be a list of entries, got {type(fields).__name__}")
    return table, fields


def _check_whole(fields: FieldBatch, removals: list[str], source: str) -> None:
    """:raises Problems: a field both declared and removed, or nothing declared at all."""
    twice = sorted({name for name, _ in fields} & set(removals))
    if twice:
        raise Problems(
            f"{source} both declares and removes {', '.join(map(repr, twice))}: keep the entry or the tombstone"
        )
    if not fields and not removals:
        raise Problems(f"{source} declares no field; give at least one (a template that rendered nothing?)")


def _json(text: str | bytes, source: str) -> Any:
    """A declaration's JSON text, read with each object's members named once."""
    try:
        return json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError as err:
        raise Problems(f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except RepeatedMember as err:
        raise Problems(f"{source} names {err.args[0]!r} twice in one object; name it once") from None
    except RecursionError:
        raise Problems(f"{source} nests too deeply to read") from None


def _table_members(value: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The table's display name and description of a declaration object, checked."""
    unknown = sorted(str(key) for key in value if key not in TABLE_MEMBERS)
    if unknown:
        raise Problems(
            f"{source} names {', '.join(map(repr, unknown))}, which a declaration does not take; allowed: "
            f"{', '.join(TABLE_MEMBERS)} (the table's display name and description, and its fields)"
        )
    table = {member: value.get(member) for member in ("display_name", "description") if member in value}
    for member, given in table.items():
        _check_text(given, f"{source}: the table's {member}")
    shown = table.get("display_name")
    if isinstance(shown, str) and not shown.strip():
        raise Problems(f"{source}: the table's display_name must not be blank")
    return table


def _check_text(given: Any, what: str) -> None:
    """:raises Problems: ``given`` is neither None nor text."""
    if given is not None and not isinstance(given, str):
        raise Problems(f"{what} must be text, got {type(given).__name__}")


def _split(entries: list[Any]) -> tuple[list[int], list[Any], list[str], list[str]]:
    """The field entries with their positions, the removed names (tombstones ``{"field": name,
    "remove": true}``), and the tombstones' problems."""
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
