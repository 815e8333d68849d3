"""Which of Blink's fields (and tables) a declared entry is, without guessing Blink's naming rule.

Blink derives the name of a field it adds (and of a table it creates) from its display name, by a
rule it does not publish. So a declared entry is matched to Blink's field:

1. by ``name``: Blink has a field named as the entry;
2. by the record's note of the name Blink gave the field when this provider added it (so a
   later change of its display name still finds it);
3. by ``display_name``: exactly one of Blink's fields is shown so, and no other entry claims it.

An entry that matches nothing is a field to add. Two entries that would add fields shown alike,
an entry whose display name two of Blink's fields show, two entries claiming one field, and an
add whose display name a field of Blink's already shows are refused before anything is sent:
each would leave Blink with fields nobody can tell apart. A table is matched by name, then by
the record's note, then by display name in Blink's tables read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from blinkops_provider._text import one_line
from blinkops_provider.models import BlinkTable, FieldUpdate, TableField


@dataclass
class Matches:
    """What the declaration's entries are in Blink.

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
    """Each declared entry's field in Blink (``live``), by name, the record's ``notes``, then
    display name; and each removal's (by name, then the record's note)."""
    by_name = {held.name: held for held in live if held.name is not None}
    matches = Matches()
    matches.found.update({name: name for name, _ in declared if name in by_name})
    claimed = set(matches.found.values())
    _by_note(declared, by_name, notes, matches, claimed)
    _by_display_name(declared, live, matches, claimed)
    _adds_told_apart(declared, live, matches)
    for name in removals:
        target = name if name in by_name else notes.get(name)
        if target in by_name:
            matches.gone[name] = str(target)
    return matches


def _by_note(
    declared: Sequence[tuple[str, FieldUpdate]],
    by_name: Mapping[str, TableField],
    notes: Mapping[str, str],
    matches: Matches,
    claimed: set[str],
) -> None:
    """Step 2: the entries not found by name, matched by the record's note of the name Blink
    gave the field this provider added (a field no entry claimed yet)."""
    for name, _ in declared:
        noted = notes.get(name)
        if name not in matches.found and noted in by_name and noted not in claimed:
            matches.found[name] = claimed_name = str(noted)
            claimed.add(claimed_name)


def _by_display_name(
    declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches, claimed: set[str]
) -> None:
    """Step 3: the entries not found by name, matched by display name to one unclaimed field."""
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
    _one_entry_each(wanted, matches)


def _one_entry_each(wanted: Mapping[str, list[str]], matches: Matches) -> None:
    """Each of Blink's fields that one entry matched by display name is that entry's; one that
    several matched is refused to all of them."""
    for blink_name, names in wanted.items():
        if len(names) == 1:
            matches.found[names[0]] = blink_name
            continue
        for name in names:
            matches.refused[name] = (
                f"entries {', '.join(map(repr, names))} all match Blink's field {blink_name!r} by display name: "
                "declare it once, under its name"
            )


def _adds_told_apart(declared: Sequence[tuple[str, FieldUpdate]], live: Sequence[TableField], matches: Matches) -> None:
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
    """The table ``table`` names in Blink's tables read: by name, the record's note of Blink's
    name, then the one table shown as ``table``; None: no such table. A declaration's display name
    never picks a table here (:func:`created_as`).

    :raises ValueError: two or more tables are shown so and none is named so.
    """
    by_name = {entry.name: entry for entry in tables}
    for name in (table, noted):
        if name is not None and name in by_name:
            return by_name[name]
    return _shown_as(tables, table)


def created_as(table: str, tables: Sequence[BlinkTable], declared: str) -> tuple[BlinkTable | None, str]:
    """With ``create_table``, when no table is named or shown as ``table`` and no record notes
    Blink's name: the one table shown as the ``declared`` display name, taken as the one this DAG
    created under it, and the plan's sentence that says so; ``(None, "")`` when there is none.

    :raises ValueError: two or more tables are shown so.
    """
    found = _shown_as(tables, declared)
    if found is None:
        return None, ""
    return found, (
        f"no table is named or shown as {one_line(table)!r}: the table shown as the declared display name "
        f"{one_line(declared)!r} (Blink's name {one_line(found.name)!r}) is taken as the one this DAG created "
        "(create_table=True, and no record notes Blink's name); give table its name to plan against it by name"
    )


def _shown_as(tables: Sequence[BlinkTable], shown_as: str) -> BlinkTable | None:
    """The one table shown as ``shown_as`` (None: none).

    :raises ValueError: two or more are.
    """
    shown = [entry for entry in tables if entry.display_name == shown_as]
    if len(shown) > 1:
        raise ValueError(
            f"{len(shown)} tables of the workspace are shown as {one_line(shown_as)!r} "
            f"({', '.join(repr(one_line(entry.name)) for entry in shown)}): give table the name of the one it is"
        )
    return shown[0] if shown else None
