"""How a migration writes values into the table's rows: a backfill fills a field's empty rows,
and a retype's copy writes each row's old value, converted, into the new field.

The table is walked page by page (:meth:`~blinkops_provider.hooks.blink.BlinkHook.iter_records`);
each row that holds no value for the field is read again just before its write
(:meth:`~blinkops_provider.hooks.blink.BlinkHook.get_record`), and written whole, as just read,
with the value filled in (:meth:`~blinkops_provider.hooks.blink.BlinkHook.update_record`: Blink
empties whatever an update leaves out). A row that holds a value by then (a person filled it since
the walk) is left as it is. Only empty values are written, so a rerun after an interruption
resumes where the last one stopped: the rows it filled are no longer empty.

The one window that remains: a change a person makes to the row between that second read and the
write (one round trip) is overwritten, since Blink's update has no version check.

Each page's writes go ``max_concurrency`` at a time on the apply's threads, each thread taking
its share of the page's rows in turn (one task per thread, not one per row: a task per row made
the interpreter's garbage collector a third of a long copy's time); the next page is read once
they are done, so memory stays flat however many rows the table has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from itertools import islice
from typing import Any

from blinkops_provider.migrations._convert import convert
from blinkops_provider.migrations._rows import empty

PROGRESS_EVERY = 500
"""Rows between two progress lines of a long fill."""


@dataclass
class Fill:
    """One field's backfill in one table (the same steps as a copy's, below).

    :param name: Blink's name of the field.
    :param value: what its empty rows get.
    :param expected: the empty rows the plan counted (for the progress lines).
    """

    hook: Any
    ws_id: str
    table: str
    name: str
    value: Any
    expected: int = 0
    workers: int = 16
    """The rows written at once (the apply's ``max_concurrency``)."""

    def run(self, pool: Executor, page_size: int = 500) -> int:
        """Fill every empty row; how many were written."""
        written = seen = 0
        rows = self.hook.iter_records(self.ws_id, self.table, page_size=page_size)
        for page in _pages(rows, page_size):
            empties = [row["id"] for row in page if empty(row.get(self.name))]
            written += in_turn(pool, self._fill_one, empties, self.workers)
            before, seen = seen, seen + len(empties)
            if seen // PROGRESS_EVERY != before // PROGRESS_EVERY:
                self.hook.log.info("backfilled %s: %s/%s rows", self.name, f"{written:,}", f"{self.expected:,}")
        return written

    def _fill_one(self, record_id: Any) -> int:
        """One row, read again and written whole with the value, if it is still empty: 1, else 0."""
        fresh = self.hook.get_record(self.ws_id, self.table, record_id)
        if not empty(fresh.get(self.name)):
            return 0
        self.hook.update_record(self.ws_id, self.table, record_id, {**fresh, self.name: self.value})
        return 1


def in_turn(pool: Executor, write: Callable[[Any], int], ids: list[Any], workers: int) -> int:
    """``write`` of every id, ``workers`` at a time on ``pool``: each of ``workers`` tasks takes
    its share of the ids in turn. The sum of what the writes return."""
    shares = [ids[start::workers] for start in range(min(workers, len(ids)))]
    return sum(pool.map(lambda share: sum(write(one) for one in share), shares))


def _pages(rows: Iterator[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    while page := list(islice(rows, size)):
        yield page


@dataclass
class Copy:
    """One pass of a retype's copy: each row's old value, converted, written to the new field.

    A row is due when its new field does not hold what its old value converts to (or holds a value
    while the old one is empty): rows copied already are not written again, so a rerun after a
    killed worker writes only what is left, and a pass after rows were edited during the copy
    writes exactly the edited ones.

    :param old: Blink's name of the field being retyped; ``new`` of the field replacing it.
    :param types: the old type, the new type, and the new field's options.
    :param strict: a value that does not convert stops the copy (``type_change: copy``); else
        (``copy_or_empty``) its row's new field is left empty.
    """

    hook: Any
    ws_id: str
    table: str
    old: str
    new: str
    types: tuple[str, str, tuple[Any, ...]]
    strict: bool = True
    expected: int = 0
    workers: int = 16
    """The rows written at once (the apply's ``max_concurrency``)."""

    def run(self, pool: Executor, page_size: int = 500) -> tuple[int, int, int]:
        """One pass over every row: ``(rows written, rows that hold the converted value, values
        that do not convert)``."""
        written = holding = failing = seen = 0
        for page in _pages(self.hook.iter_records(self.ws_id, self.table, page_size=page_size), page_size):
            due = []
            for row in page:
                ok, want = self.wanted(row)
                failing += 0 if ok else 1
                holding += 1 if ok and want is not None else 0
                due += [row["id"]] if ok and _differs(row.get(self.new), want) else []
            written += in_turn(pool, self._copy_one, due, self.workers)
            before, seen = seen, seen + len(page)
            if due and seen // PROGRESS_EVERY != before // PROGRESS_EVERY:
                self.hook.log.info("copied %s/%s rows", f"{written:,}", f"{self.expected:,}")
        return written, holding, failing

    def wanted(self, row: Mapping[str, Any]) -> tuple[bool, Any]:
        """What the row's new field should hold: ``(True, value or None)``, or ``(False, None)``
        when its old value does not convert and the copy is strict."""
        old = row.get(self.old)
        if empty(old):
            return True, None
        ok, value = convert(old, *self.types)
        if ok:
            return True, value
        return (not self.strict), None

    def _copy_one(self, record_id: Any) -> int:
        """One row, read again and written whole with its converted value, if still due: 1, else 0."""
        fresh = self.hook.get_record(self.ws_id, self.table, record_id)
        ok, want = self.wanted(fresh)
        if not ok or not _differs(fresh.get(self.new), want):
            return 0
        self.hook.update_record(self.ws_id, self.table, record_id, {**fresh, self.new: want})
        return 1


def _differs(held: Any, want: Any) -> bool:
    """Whether the new field's value is not the one wanted (empty forms being one)."""
    return bool((None if empty(held) else held) != want)
