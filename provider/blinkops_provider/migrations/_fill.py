"""How a migration writes values into the table's rows: a backfill fills a field's empty rows.

The table is walked page by page (:meth:`~blinkops_provider.hooks.blink.BlinkHook.iter_records`);
each row that holds no value for the field is read again just before its write
(:meth:`~blinkops_provider.hooks.blink.BlinkHook.get_record`), and written whole, as just read,
with the value filled in (:meth:`~blinkops_provider.hooks.blink.BlinkHook.update_record`: Blink
empties whatever an update leaves out). A row that holds a value by then (a person filled it since
the walk) is left as it is. Only empty values are written, so a rerun after an interruption
resumes where the last one stopped: the rows it filled are no longer empty.

The one window that remains: a change a person makes to the row between that second read and the
write (one round trip) is overwritten, since Blink's update has no version check.

Each page's writes go ``max_concurrency`` at a time on the apply's threads; the next page is read
once they are done, so memory stays flat however many rows the table has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from itertools import islice
from typing import Any

from blinkops_provider.migrations._rows import empty

PROGRESS_EVERY = 500
"""Rows between two progress lines of a long fill."""


@dataclass
class Fill:
    """One field's backfill in one table.

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

    def run(self, pool: Executor, page_size: int = 500) -> int:
        """Fill every empty row; how many were written."""
        written = seen = 0
        rows = self.hook.iter_records(self.ws_id, self.table, page_size=page_size)
        for page in _pages(rows, page_size):
            empties = [row["id"] for row in page if empty(row.get(self.name))]
            written += sum(pool.map(self._fill_one, empties))
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


def _pages(rows: Iterator[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    while page := list(islice(rows, size)):
        yield page
