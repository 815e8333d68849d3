"""How a table's records are read and written: the routes, the query, the walk and its checks.

Blink's records API (its published spec: TableFindRecord, TableGetRecord, TableUpdateRecord):
``GET /workspace/{ws}/table/{table}?q={"limit", "offset", "filter"}`` answers ``{limit, offset,
results, total}``. A walk asks page after page by offset and checks each answer against what it
asked: the offset and limit answered, no more rows than asked, ids present and never twice in a
page or in two pages in a row, ``total`` the same on every page, and the walk's end: the rows
returned add up to ``total`` exactly (fewer is a short walk, more a doubled one). Without a
``total``, the walk ends at the first page shorter than asked. Only the last page's ids are kept,
so a walk's memory does not grow with the table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from blinkops_provider._blink import MAX_LIMIT
from blinkops_provider._inputs import path_segment
from blinkops_provider.exceptions import BlinkInputError, BlinkResponseError

DEFAULT_PAGE_SIZE = 500
"""Rows per page of a walk (Blink's largest page is 1000)."""


class RecordPage(BaseModel):
    """One answer of TableFindRecord."""

    model_config = ConfigDict(extra="allow")

    results: list[dict[str, Any]]
    total: int | None = Field(default=None, ge=0)
    limit: int | None = Field(default=None, ge=0)
    offset: int | None = Field(default=None, ge=0)


def table_route(ws_id: str, table: str) -> str:
    return "/workspace/{}/table/{}".format(path_segment(ws_id, "ws_id"), path_segment(table, "table"))


def record_route(ws_id: str, table: str, record_id: Any) -> str:
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)):
        raise BlinkInputError(f"record_id must be a record's id (text), got {type(record_id).__name__}")
    return f"{table_route(ws_id, table)}/{path_segment(str(record_id), 'record_id')}"


def check_where(where: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A filter as Blink's query object takes it (``{}``: every row).

    :raises BlinkInputError: not a JSON object (or its text), or not JSON-ready.
    """
    if where is None:
        return {}
    if isinstance(where, str):
        try:
            where = json.loads(where)
        except (ValueError, RecursionError):
            raise BlinkInputError('where must be a JSON object such as {"Severity": "High"}') from None
    if not isinstance(where, Mapping) or not all(isinstance(key, str) for key in where):
        raise BlinkInputError(
            f"where must be an object of field conditions, $or and $and (Blink's filter), got {type(where).__name__}"
        )
    try:
        json.dumps(where, allow_nan=False)
    except (TypeError, ValueError):
        raise BlinkInputError("where must hold only JSON values (text, numbers, booleans, lists, objects)") from None
    return dict(where)


def check_page_size(page_size: Any) -> int:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_LIMIT:
        raise BlinkInputError(f"page_size must be an integer from 1 to {MAX_LIMIT}, got {page_size!r}")
    return page_size


def query(where: Mapping[str, Any], limit: int, offset: int) -> dict[str, str]:
    """The ``q`` parameter of one page."""
    body: dict[str, Any] = {"limit": limit, "offset": offset}
    if where:
        body["filter"] = where
    return {"q": json.dumps(body, separators=(",", ":"), ensure_ascii=False)}


class Walk:
    """The checks of a walk of every record matching a filter, page by page (the module says
    which): the hook sends each page and hands it to :meth:`checked`, then asks :meth:`ended`.

    :param route: the route read (named in errors).
    """

    def __init__(self, route: str, page_size: int, max_pages: int) -> None:
        self.route, self.page_size, self.max_pages = route, page_size, max_pages
        self.total: int | None = None
        self.returned = 0
        self._last: set[Any] = set()

    def error(self, problem: str) -> BlinkResponseError:
        return BlinkResponseError(
            f"the records read of {self.route} went wrong: {problem}. Nothing was counted or written from it",
            status=200,
            method="GET",
            path=self.route,
        )

    def checked(self, page: RecordPage, number: int) -> RecordPage:
        """The page, checked; its rows counted as returned."""
        self._check_paging(page, number)
        self._check_ids(page, number)
        self.returned += len(page.results)
        return page

    def _check_paging(self, page: RecordPage, number: int) -> None:
        """The limit and offset answered, the rows no more than asked, and the same ``total``."""
        asked = (self.page_size, self.returned)
        if (page.limit not in (None, asked[0])) or (page.offset not in (None, asked[1])):
            raise self.error(f"page {number} answered limit {page.limit} offset {page.offset}, asked {asked}")
        if len(page.results) > self.page_size:
            raise self.error(f"page {number} holds {len(page.results)} rows, more than the {self.page_size} asked")
        if number == 1:
            self.total = page.total
        elif page.total != self.total:
            raise self.error(
                f"the table changed while it was read: {self.total} rows matched at the first page, "
                f"{page.total} at page {number} (a walk by offset would skip or double rows)"
            )

    def _check_ids(self, page: RecordPage, number: int) -> None:
        """Every row has an id, none twice in the page or in the page before."""
        ids = [row.get("id") for row in page.results]
        if any(isinstance(i, bool) or not isinstance(i, (str, int)) or i == "" for i in ids):
            raise self.error(f"page {number} holds a row without an id")
        seen = set(ids)
        if len(seen) != len(ids) or seen & self._last:
            raise self.error(f"page {number} repeats a row (a doubled walk)")
        self._last = seen

    def ended(self, page: RecordPage) -> bool:
        """Whether the walk has every row (after :meth:`checked` of its last page)."""
        if self.total is None:
            return len(page.results) < self.page_size
        if self.returned > self.total:
            raise self.error(f"it returned {self.returned} rows where Blink said {self.total} (a doubled walk)")
        if self.returned == self.total:
            return True
        if len(page.results) < self.page_size:
            raise self.error(f"it ended at {self.returned} rows where Blink said {self.total} (a short walk)")
        return False


def counted(page: RecordPage, route: str) -> int | None:
    """The exact count a one-row page gives (its ``total``, checked against the page), or None."""
    if page.total is None:
        return None
    if len(page.results) != min(1, page.total):
        raise BlinkResponseError(
            f"the records read of {route} said {page.total} rows but answered {len(page.results)} for a page of one",
            status=200,
            method="GET",
            path=route,
        )
    return page.total


def checked_record(answer: Any, record_id: Any, method: str, route: str) -> dict[str, Any]:
    """A record answered for ``record_id``: a JSON object whose ``id`` is that id."""
    if not isinstance(answer, dict) or str(answer.get("id")) != str(record_id):
        said = "not a JSON object" if not isinstance(answer, dict) else "another record's id, or none"
        raise BlinkResponseError(
            f"the answer for record {record_id!r} is {said} (unknown: this may not be Blink's answer)",
            status=200,
            method=method,
            path=route,
        )
    return answer
