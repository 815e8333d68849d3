"""
What a plan knows of the table's rows: each field's rows counted as the risk rules ask (``_risks``).

:func:`read_rows` reads them once per plan: one walk of the table (sorted by id), or, when every need is answered by a
count, Blink's ``total`` (one request per dropped option of a single select). Where Blink does not serve the records
read (404, 403, 405), the facts say why, with the table's ``estimated_records_count``: a plan never says a count it did
not make.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider.exceptions import BlinkAuthError, BlinkReadUnavailableError
from blinkops_provider.migrations._conversions import convert


def empty(value: Any) -> bool:
    """
    Return whether a record's value counts as empty.

    Missing, null, ``""`` or an empty list (Blink does not publish which it stores; all three are read as empty).
    """
    return value is None or value == "" or value == []


@dataclass(frozen=True)
class Need:
    """What the plan must know of one field's rows: ``name`` is Blink's name of the field."""

    name: str
    filled: bool = False
    unique: bool = False
    options: tuple[Any, ...] = ()
    multi: bool = False
    retype: tuple[str, str, tuple[Any, ...]] | None = None
    """For a retype: the field's type, the new type, and the new field's options."""

    def merged(self, other: Need) -> Need:
        """Return one need that asks what this one and ``other`` (of the same field) ask."""
        options = (*self.options, *(option for option in other.options if option not in self.options))
        return Need(
            self.name,
            self.filled or other.filled,
            self.unique or other.unique,
            options,
            self.multi or other.multi,
            self.retype or other.retype,
        )

    @property
    def by_total(self) -> bool:
        """Whether Blink's ``total`` answers the need (no need of what only the rows' values tell)."""
        return not (self.filled or self.unique or self.retype or (self.options and self.multi))


@dataclass
class FieldRows:
    """One field's rows, counted: how many hold a value, the repeated values, the dropped options' use."""

    filled: int = 0
    values: Counter[str] = field(default_factory=Counter)
    shown: dict[str, Any] = field(default_factory=dict)
    options: Counter[Any] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    """For a retype: the values that do not convert (by ``repr``), with their rows."""

    def unconverted(self) -> list[tuple[Any, int]]:
        """Return the values that do not convert, the most held first."""
        held = sorted(self.failed.items(), key=lambda item: (-item[1], item[0]))  # (not the walk's order)
        return [(self.shown[key], n) for key, n in held]

    def repeats(self) -> list[tuple[Any, int]]:
        """Return the values held by more than one row, the most held first."""
        held = sorted(self.values.items(), key=lambda item: (-item[1], item[0]))  # (not the walk's order)
        return [(self.shown[key], n) for key, n in held if n > 1]


@dataclass(frozen=True)
class RowFacts:
    """
    The table's rows as the plan counted them.

    :ivar total: the rows counted (None: the rows could not be read, ``unread`` says why).
    :ivar estimate: Blink's ``estimated_records_count`` (None: Blink does not say).
    """

    total: int | None = None
    tallies: Mapping[str, FieldRows] = field(default_factory=dict)
    unread: str = ""
    estimate: int | None = None

    @property
    def counted(self) -> bool:
        """Whether the rows were counted (not an estimate, nor unread)."""
        return self.total is not None

    def field_rows(self, name: str) -> FieldRows:
        """Return the rows counted for Blink's field ``name`` (none counted: an empty tally)."""
        return self.tallies.get(name) or FieldRows()


NOTHING_READ = RowFacts()
"""No row read: nothing in the plan needed them."""


def count_row(tallies: Mapping[str, FieldRows], needs: Sequence[Need], record: Mapping[str, Any]) -> None:
    """Count one row for every need (``tallies`` by the needs' names)."""
    for need in needs:
        value = record.get(need.name)
        if not empty(value):
            _tally_value(tallies[need.name], need, value)


def _tally_value(counted: FieldRows, need: Need, value: Any) -> None:
    """
    One row's value, counted as the need asks.

    For a retype, the value is tried against the new type first: one that does not convert is counted among the
    failures, and the repeats (``is_unique``) are those of the converted values, which the new field will hold.
    """
    counted.filled += 1
    if need.retype is not None:
        converts, converted = convert(value, *need.retype)
        if not converts:
            key = repr(value)
            counted.failed[key] += 1
            counted.shown.setdefault(key, value)
            return
        value = converted
    if need.unique:
        key = repr(_as_compared(value))
        counted.values[key] += 1
        counted.shown.setdefault(key, value)
    if need.options:
        held = value if isinstance(value, list) else [value]
        counted.options.update(option for option in need.options if option in held)


def _as_compared(value: Any) -> Any:
    """Return a value as a unique check compares it: a whole number the same whether held as 1 or 1.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def read_rows(hook: Any, ws_id: str, table: str, needs: Sequence[Need], estimate: int | None) -> RowFacts:
    """
    Return the rows the needs ask about.

    Counted from Blink's ``total`` (one request per option) when no need asks what only the rows' values tell, else by
    one walk of the table. Blink not serving the read (404, 403, 405) gives facts that say why, with the estimate.
    """
    if not needs:
        return NOTHING_READ
    try:
        total, tallies = 0, {need.name: FieldRows() for need in needs}
        if all(need.by_total for need in needs):
            total = hook.count_records(ws_id, table)
            for need in needs:
                for option in need.options:
                    tallies[need.name].options[option] = hook.count_records(ws_id, table, {need.name: option})
        else:
            for record in hook.iter_records(ws_id, table):  # one pass, counting every need
                total += 1
                count_row(tallies, needs, record)
    except (BlinkReadUnavailableError, BlinkAuthError) as err:
        return _facts_unread(err, estimate)
    return RowFacts(total, tallies, estimate=estimate)


def _facts_unread(err: BlinkReadUnavailableError | BlinkAuthError, estimate: int | None) -> RowFacts:
    """Facts that say why the rows could not be read (a 401 is not that: it goes on up)."""
    if isinstance(err, BlinkAuthError) and err.status != 403:
        raise err
    why = "no role to read them" if err.status == 403 else "not served"
    return RowFacts(unread=f"{err.status}: {why}", estimate=estimate)
