"""
How a migration writes values into the table's rows, and the retype those writes serve.

A backfill fills a field's empty rows (:class:`Fill`), a retype's copy writes each row's old value, converted, into the
new field (:class:`Copy`), and :class:`Retype` makes a type change as a whole. The apply (``_steps``) says when each
runs.

The table is walked page by page (:meth:`~blinkops_provider.hooks.blink.BlinkHook.iter_records`); each row that needs a
write is read again just before it (:meth:`~blinkops_provider.hooks.blink.BlinkHook.get_record`), and written whole, as
just read, with the value filled in (:meth:`~blinkops_provider.hooks.blink.BlinkHook.update_record`: Blink empties
whatever an update leaves out). A row that no longer needs it by then (a person filled it since the walk) is left as it
is. Only what is missing is written, so a rerun after an interruption resumes where the last one stopped, and passes go
on until one writes nothing: a write's answer says Blink accepted it, not what it stored.

The one window that remains: a change a person makes to the row between that second read and the write (one round
trip) is overwritten, since Blink's update has no version check.

Each page's writes go ``max_concurrency`` at a time on the apply's threads, each thread taking its share of the page's
rows in turn (:func:`in_turn`: one task per thread, not one per row: a task per row made the interpreter's garbage
collector a third of a long copy's time); the next page is read once they are done, so memory stays flat however many
rows the table has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from itertools import islice
from typing import Any

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError, BlinkResponseError
from blinkops_provider.migrations._conversions import convert
from blinkops_provider.migrations._matching import field_update_of, options_of, without_checks
from blinkops_provider.migrations._plan_types import FieldPlan
from blinkops_provider.migrations._rows import empty
from blinkops_provider.models import FieldUpdate, TableField
from blinkops_provider.utils.text import one_line

COPY_PASSES = 5
"""The most passes a copy or a fill makes before it gives up on rows that keep changing (or writes that do not hold)."""


@dataclass
class Fill:
    """
    One field's backfill in one table (the same steps as a copy's, below).

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
        """
        Fill every empty row, in passes until one finds none empty; how many rows were filled.

        A write's answer says Blink accepted it, not what it stored, so the pass that finds no empty row is what
        confirms the fill (a row whose write did not hold is written again in the next pass, and counted once).

        :raises BlinkApiError: rows were still empty after :data:`COPY_PASSES` passes.
        """
        filled: set[Any] = set()
        for _ in range(COPY_PASSES):
            written = self._one_pass(pool, page_size, filled)
            if not written:
                return len(filled)
        raise BlinkApiError(
            f"{self.name!r}: rows were still empty after {COPY_PASSES} passes of the backfill (Blink accepted the "
            "writes but did not keep them, or rows keep being emptied): run the apply again"
        )

    def _one_pass(self, pool: Executor, page_size: int, filled: set[Any]) -> int:
        """Return how many rows one pass wrote (their ids added to ``filled``)."""
        written = seen = 0
        rows = self.hook.iter_records(self.ws_id, self.table, page_size=page_size)
        for page in pages_of(rows, page_size):
            empties = [row["id"] for row in page if empty(row.get(self.name))]
            done = in_turn(pool, self._fill_one, empties, self.workers)
            wrote = [one for one, written_now in zip(empties, done, strict=True) if written_now]
            written += len(wrote)
            filled.update(wrote)
            seen += len(page)
            if wrote:
                self.hook.log.info(
                    "backfilled %s: %s/%s rows (%s rows read)",
                    self.name,
                    f"{len(filled):,}",
                    f"{self.expected:,}",
                    f"{seen:,}",
                )
        return written

    def _fill_one(self, record_id: Any) -> int:
        """Fill one row, read again and written whole with the value, if it is still empty: 1, else 0."""
        fresh = self.hook.get_record(self.ws_id, self.table, record_id)
        if not empty(fresh.get(self.name)):
            return 0
        self.hook.update_record(self.ws_id, self.table, record_id, {**fresh, self.name: self.value})
        return 1


def in_turn(pool: Executor, write: Callable[[Any], int], ids: list[Any], workers: int) -> list[int]:
    """
    Return ``write`` of every id, in the order of ``ids``, ``workers`` at a time on ``pool``.

    Each of ``workers`` tasks takes its share of the ids in turn (every ``workers``-th id).
    """
    count = min(workers, len(ids))
    shares = [ids[start::workers] for start in range(count)]
    done = list(pool.map(lambda share: [write(one) for one in share], shares))
    return [done[n % count][n // count] for n in range(len(ids))]


def pages_of(rows: Iterator[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    while page := list(islice(rows, size)):
        yield page


@dataclass
class Copy:
    """
    A retype's copy: each row's old value, converted, written to the new field.

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
    declared: str = ""
    """The declared name of the field (for the log and the errors)."""

    def run(self, pool: Executor, page_size: int = 500) -> int:
        """
        Copy in passes until one writes nothing (rows edited meanwhile are copied again); the rows holding their value.

        :raises BlinkInputError: a row now holds a value that does not convert (nothing removed).
        :raises BlinkApiError: rows kept changing for :data:`COPY_PASSES` passes (nothing removed).
        """
        for _ in range(COPY_PASSES):
            written, holding, failing = self.one_pass(pool, page_size)
            if failing:
                raise BlinkInputError(
                    f"{self.declared!r}: {failing} row(s) now hold a value that does not convert (changed since the "
                    'plan): the old field is kept. Fix them in Blink, or declare "type_change": "copy_or_empty"'
                )
            if not written:
                self.hook.log.info(
                    "%s: verified, %d row(s) hold their converted values", one_line(self.declared), holding
                )
                return holding
        raise BlinkApiError(
            f"{self.declared!r}: rows kept changing during {COPY_PASSES} passes of the copy: the old field is kept; "
            "run the apply again (it resumes with the new field)"
        )

    def one_pass(self, pool: Executor, page_size: int = 500) -> tuple[int, int, int]:
        """Make one pass over every row: ``(rows written, rows holding the converted value, values not converting)``."""
        written = holding = failing = seen = 0
        for page in pages_of(self.hook.iter_records(self.ws_id, self.table, page_size=page_size), page_size):
            due = []
            for row in page:
                ok, want = self.wanted(row)
                failing += 0 if ok else 1
                holding += 1 if ok and want is not None else 0
                due += [row["id"]] if ok and _differs(row.get(self.new), want) else []
            written += sum(in_turn(pool, self._copy_one, due, self.workers))
            seen += len(page)
            if due:
                self.hook.log.info(
                    "%s: copied %s/%s rows (%s rows read)", self.new, f"{written:,}", f"{self.expected:,}", f"{seen:,}"
                )
        return written, holding, failing

    def wanted(self, row: Mapping[str, Any]) -> tuple[bool, Any]:
        """
        Return what the row's new field should hold.

        ``(True, value or None)``, or ``(False, None)`` when its old value does not convert and the copy is strict.
        """
        old = row.get(self.old)
        if empty(old):
            return True, None
        ok, value = convert(old, *self.types)
        if ok:
            return True, value
        return (not self.strict), None

    def _copy_one(self, record_id: Any) -> int:
        """Copy one row, read again and written whole with its converted value, if still due: 1, else 0."""
        fresh = self.hook.get_record(self.ws_id, self.table, record_id)
        ok, want = self.wanted(fresh)
        if not ok or not _differs(fresh.get(self.new), want):
            return 0
        self.hook.update_record(self.ws_id, self.table, record_id, {**fresh, self.new: want})
        return 1


def _differs(held: Any, want: Any) -> bool:
    """Return whether the new field's value is not the one wanted (empty forms being one)."""
    return bool((None if empty(held) else held) != want)


@dataclass
class Retype:
    """
    A type change as Blink says, on the rows: a new field, every value copied and converted, the old field removed.

    :param row: the plan's ``retype`` row (its body the new field, as declared).
    :param how: the declared ``type_change`` (``copy``: a value that does not convert stops it; ``copy_or_empty``).
    :param new_field: returns the new field's name (the one a checkpoint names, or one added now), given the declared
        name and the new field's body (the apply's: it checkpoints the name in the record).
    :param remove: removes Blink's field of that name (the apply's: a 404 is confirmed by a read).
    """

    hook: Any
    ws_id: str
    table: str
    row: FieldPlan
    how: str | None
    new_field: Callable[[str, FieldUpdate], str]
    remove: Callable[[str], None]
    workers: int = 16
    backfilled: int | None = None
    """The rows the new field's backfill wrote (None: it had none to fill)."""

    def run(self, pool: Executor) -> TableField:
        """
        Retype, and return the field as Blink holds it at the end.

        The new field is shown as ``<display name> (retyping)`` and added without its checks; the copy is checked by a
        pass that finds nothing left to write; the new field's empty rows get the backfill, then its checks, before
        the old field is removed (confirmed by a read); the new field gets the declared display name last.
        """
        row = self.row
        assert row.body is not None
        old, target = row.name_in_blink, row.body.to_body()
        source = next(str(before) for member, before, _ in row.values if member == "type")
        checked = {**target, "display_name": f"{target.get('display_name')} (retyping)"}
        new = self.new_field(row.field, field_update_of(without_checks(checked)))
        copy = Copy(
            self.hook, self.ws_id, self.table, old, new, (source, str(target["type"]), tuple(options_of(target)))
        )
        copy.strict, copy.workers, copy.declared = self.how != "copy_or_empty", self.workers, row.field
        copy.expected = int((row.counts or {}).get("converted") or 0)
        holding = copy.run(pool)
        empties = int((row.counts or {}).get("backfill") or 0)
        if row.backfill is not None and empties:
            self.backfilled = Fill(self.hook, self.ws_id, self.table, new, row.backfill, empties, self.workers).run(
                pool
            )
        if checked != without_checks(checked):  # the checks once the rows hold their values, before the old goes
            self.hook.update_table_field(self.ws_id, self.table, new, field_update_of(checked))
        self.remove(old)
        if old in {field.name for field in self.hook.get_table_fields(self.ws_id, self.table)}:
            raise BlinkResponseError(f"the removal of {old!r} was answered, but Blink still lists it: the retype stops")
        final: TableField = self.hook.update_table_field(self.ws_id, self.table, new, row.body)
        self.hook.log.info(
            "%s: retyped %s → %s, %d row(s) copied, Blink's name %r",
            one_line(row.field),
            source,
            target["type"],
            holding,
            new,
        )
        return final
