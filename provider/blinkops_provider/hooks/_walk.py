"""How the connection-type catalogue is walked, page by page, and how each page is checked.

**Keyset first.** Every request sorts on the user's sort keys, then ``id``, sends ``offset`` 0,
and asks for the items after the last one returned (:func:`~blinkops_provider.rql.position_filter`,
ANDed with the user's filter). Without a user ``sort`` every type that exists for the whole walk
is returned exactly once; with one, a type met again is dropped and those passed over are listed
by id at the end (:meth:`CatalogueWalk._reconcile`) and returned after the others, with a warning.

**Offset when the server does not honour the keyset** (it repeats ids, starts before the position,
answers another offset, refuses the ``id`` condition or does not sort as asked): plain
``limit``/``offset`` pages, dropping ids already returned, with one warning. It promises every type
once, the count checked against ``total``, and the requested order when the user gave a ``sort``.
A server seen to ignore RQL conditions with a user filter fails instead.

**Every page is checked, in every mode**, before it is yielded: the envelope, the offset and
limit answered, the ids, the order, and the end (only a short page the envelope agrees with ends
a walk). The checks are the functions below; docs/operators/connection_types.md lists them.

**Machinery only where it pays.** A one-page catalogue (Blink's) is one request on the caller's
thread. Worker threads fetch ahead only once an answer shows more pages; an id-ordered walk goes
on after page 2 in id ranges fetched ``max_concurrency`` at a time (:meth:`CatalogueWalk._ranges`).
"""

from __future__ import annotations

import json
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain, islice, pairwise
from typing import Any
from urllib.parse import quote

from blinkops_provider.exceptions import BlinkApiError, BlinkBadRequestError, BlinkInputError, BlinkResponseError
from blinkops_provider.rql import KEY, MAX_LIMIT, RQLQuery, SortKey, both, position_filter, precedes, sort_keys

__all__ = ["KEY", "KEYSET", "OFFSET", "CataloguePage", "CatalogueWalk"]

KEYSET = "keyset"
OFFSET = "offset"
PATH = "/connection_types"
MAX_Q_CHARS = 3000
"""The longest URL-encoded ``q`` a walk sends: with the base URL, requests stay under 4 KB."""


@dataclass
class CataloguePage:
    """One page of a walk: items as Blink sent them (plain JSON objects), and where the walk is.

    :ivar items: the connection types of this page, as dicts.
    :ivar number: 1 for the first page.
    :ivar returned: how many items the walk has returned, this page's included.
    :ivar total: the number of matching connection types the server reported at this page
        (those already returned plus those it still has), or None when it reports none.
    :ivar paging: how the walk pages: ``"keyset"`` (exact under change) or ``"offset"``.
    """

    items: list[dict[str, Any]]
    number: int
    returned: int
    total: int | None
    paging: str = KEYSET


class _Fallback(Exception):
    """The server does not honour the keyset; ``ignores_rql``: it answered as if the condition was
    not there (so a user filter cannot be trusted either), rather than refusing it or not sorting."""

    def __init__(self, reason: str, *, ignores_rql: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ignores_rql = ignores_rql


def _error(message: str) -> BlinkApiError:
    return BlinkApiError(message, method="GET", path=PATH)


# -- page checks ------------------------------------------------------------------------------


@dataclass
class Envelope:
    """A checked listing page: its items and what it says of itself."""

    items: list[dict[str, Any]]
    total: int | None
    limit: int | None
    offset: int | None


def check_envelope(data: Any) -> Envelope:
    """A listing body, after checking its shape.

    :raises BlinkResponseError: not ``{"results": [object, ...], ...}`` with integer (or absent)
        ``total``, ``limit`` and ``offset``.
    """

    def wrong(problem: str) -> BlinkResponseError:
        message = f"the listing is not a page of connection types: {problem}"
        return BlinkResponseError(message, status=200, method="GET", path=PATH)

    if not isinstance(data, dict):
        raise wrong(f"the body is a JSON {type(data).__name__}, not an object")
    results = data.get("results")
    if not isinstance(results, list):
        raise wrong("it has no 'results' array" if results is None else "'results' is not an array")
    for name in ("total", "limit", "offset"):
        value = data.get(name)
        if value is not None and (type(value) is not int or value < 0):
            raise wrong(f"{name!r} is {value!r}, not an integer of 0 or more")
    for position, item in enumerate(results):
        if type(item) is not dict:
            raise wrong(f"results[{position}] is a JSON {type(item).__name__}, not an object")
    return Envelope(results, data.get("total"), data.get("limit"), data.get("offset"))


def check_ids(items: list[dict[str, Any]], number: int) -> list[Any]:
    """The ids of a page, refusing one without an id or with an id twice."""
    ids = [item.get(KEY) for item in items]
    if len(set(map(_hashable, ids))) != len(ids) or None in ids:
        twice = next((i for n, i in enumerate(ids) if i is None or i in ids[:n]), None)
        what = "an item without an id" if twice is None else f"id {twice!r} twice"
        raise _error(f"the server sent {what} in page {number}; a walk cannot tell which types it returned")
    return ids


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def check_order(
    items: list[dict[str, Any]], keys: list[SortKey], after: tuple[Any, ...] | None, number: int
) -> _Fallback | None:
    """What is wrong with a page's order, or None: each item after the one before it, and the
    first one after ``after`` (the walk's position, when the page was asked for what follows it)."""
    if _rises_by_code_point(items, keys, after):
        return None  # then no pair is out of order both ways (the common case, checked at C speed)
    return _out_of_order(items, keys, after, number)


def _out_of_order(
    items: list[dict[str, Any]], keys: list[SortKey], after: tuple[Any, ...] | None, number: int
) -> _Fallback | None:
    previous = after
    for position, item in enumerate(items):
        values = tuple(item.get(k.name) for k in keys)
        if previous is not None and precedes(previous, values, keys) is False:
            if position == 0:  # the page ignored the position: the server ignores the condition
                reason = f"page {number} starts with {item.get(KEY)!r}, which is not after the walk's position"
                return _Fallback(reason, ignores_rql=True)
            return _Fallback(f"page {number} is not in the requested order at {item.get(KEY)!r}", ignores_rql=False)
        previous = values
    return None


def _rises_by_code_point(items: list[dict[str, Any]], keys: list[SortKey], after: tuple[Any, ...] | None) -> bool:
    """Whether the sort values (``after`` first) are strings rising strictly by code point on
    ascending keys: :func:`precedes` then finds no pair out of order."""
    if any(key.descending for key in keys):
        return False
    head = [] if after is None else [after]
    if len(keys) == 1:  # the id-ordered walk: scalars, no tuple per item
        values = [row[0] for row in head] + [item.get(keys[0].name) for item in items]
        return _rising_strings(values, values)
    rows = head + [tuple(item.get(key.name) for key in keys) for item in items]
    return _rising_strings(rows, chain.from_iterable(rows))


def _rising_strings(values: list[Any], flat: Iterable[Any]) -> bool:
    return set(map(type, flat)) <= {str} and all(a < b for a, b in pairwise(values))


def check_position(item: Mapping[str, Any], keys: list[SortKey], number: int) -> tuple[Any, ...]:
    """The sort values of a page's last item, where the next page starts.

    :raises BlinkApiError: the item lacks one (the walk cannot say where the next page starts).
    """
    values = tuple(item.get(key.name) for key in keys)
    for key, value in zip(keys, values, strict=True):
        if value is None or isinstance(value, (dict, list)):
            what = "has no" if value is None else "has a non-scalar"
            raise _error(
                f"cannot continue an exact walk after page {number}: connection type {item.get(KEY)!r} "
                f"{what} {key.name!r}, which the walk sorts by; sort on members every connection type has"
            )
    return values


def encoded_length(query: Mapping[str, Any]) -> int:
    """The length of ``q`` in a URL, as the hook sends it."""
    return len(quote(json.dumps(query, separators=(",", ":"), ensure_ascii=False), safe=""))


def _empty_ends(total: int | None, start: int, number: int) -> bool:
    """An empty page ends the walk, unless ``total`` says more are to come: then it is an error."""
    if total is not None and total > start:
        raise _error(f"the server sent an empty page {number} but reports {total - start} more connection types")
    return True


def _check_offset(page: Envelope, asked: int, keyset: bool) -> None:
    """The ``offset`` answered is the one asked (keyset pages ask for 0)."""
    if page.offset is None or page.offset == asked:
        return
    if keyset:
        raise _Fallback(f"it answered offset {page.offset} when asked for 0", ignores_rql=True)
    raise _error(
        f"the server answered offset {page.offset} when asked for offset {asked}; it honours "
        "neither the keyset condition nor offsets, so the catalogue cannot be walked"
    )


# -- the cursor --------------------------------------------------------------------------------


@dataclass
class Cursor:
    """Where a walk is, what it has returned, and the query of its next page."""

    query: RQLQuery
    page_size: int
    max_items: int | None
    keys: list[SortKey] = field(init=False)
    added: tuple[str, ...] = field(init=False)  # sort keys asked for beyond the user's select
    mode: str = KEYSET
    after: tuple[Any, ...] | None = None  # keyset: the sort values of the last item returned
    offset: int = 0  # offset: where the next page starts in the server's listing
    served: int = 0  # the server's own maximum page, once it shows one
    number: int = 0  # pages returned
    returned: int = 0
    total: int | None = None
    expected: int | None = None  # keyset: what the server should report next, if nothing changes
    upto: Any = None  # keyset, an id range: the last id it covers
    done: bool = False  # the walk reached its end
    seen: set[Any] = field(default_factory=set)
    high: Any = None  # offset, after an id-ordered keyset walk: every id up to this one was returned
    skipped: int = 0  # types met again, dropped

    def __post_init__(self) -> None:
        self.keys = sort_keys(self.query.sort)
        select = self.query.select
        self.added = tuple(k.name for k in self.keys if k.name not in select) if select else ()
        self.served = self.served or self.page_size

    @property
    def sorted_by_user(self) -> bool:
        """Whether the position includes values an update can change (any key but ``id``)."""
        return len(self.keys) > 1

    @property
    def tracks_ids(self) -> bool:
        """Whether the walk keeps the ids returned: an id-ordered keyset page is after the
        position (checked), so memory stays flat there whatever the catalogue's size."""
        return self.mode == OFFSET or self.sorted_by_user

    def limit(self) -> int:
        size = min(self.page_size, self.served)
        return size if self.max_items is None else min(size, self.max_items - self.returned)

    def build(self, after: tuple[Any, ...] | None, offset: int, limit: int) -> dict[str, Any] | None:
        """The RQL query of a page after ``after`` (from the start when None) at ``offset``;
        None when no item can follow."""
        flt = self.query.filter or None
        if after is not None:
            position = position_filter(self.keys, after)
            if position is None:
                return None
            if self.upto is not None:  # an id range: (after, upto]
                position = {KEY: {**position[KEY], "$lte": self.upto}}
            flt = both(flt, position)
        query: dict[str, Any] = {"sort": [f"-{k.name}" if k.descending else k.name for k in self.keys]}
        query["limit"] = limit
        query["offset"] = offset
        if flt:
            query["filter"] = flt
        if self.query.select:
            query["select"] = [*self.query.select, *self.added]
        return query

    def next_query(self) -> dict[str, Any] | None:
        """The query of the next page; None when the walk is over (``max_items`` reached)."""
        limit = self.limit()
        if limit <= 0:
            return None
        if self.mode == KEYSET:
            return self.build(self.after, 0, limit)
        return self.build(None, self.offset, limit)

    def strip(self, items: list[dict[str, Any]]) -> None:
        """Drop the sort keys the walk asked for beyond the user's select."""
        for item in items if self.added else ():
            for name in self.added:
                item.pop(name, None)

    def fresh(self, items: list[dict[str, Any]], ids: list[Any]) -> list[dict[str, Any]]:
        """The items of a page the walk has not returned yet, remembering them."""
        if not self.tracks_ids:
            return items
        high, by_id = self.high, [SortKey(KEY, False)]
        new = [
            item
            for item, i in zip(items, ids, strict=True)
            if i not in self.seen and (high is None or precedes((high,), (i,), by_id) is not False)
        ]
        self.seen.update(ids)
        self.skipped += len(items) - len(new)
        return new


class _Prefetch:
    """Fetches a walk's pages: on the caller's thread, or one page ahead on a worker thread,
    started only when a walk asks for a second page (and ``ahead`` allows it)."""

    def __init__(self, fetch: Callable[[dict[str, Any]], Any], workers: int) -> None:
        self.fetch = fetch
        self.workers = workers
        self.pool: ThreadPoolExecutor | None = None
        self.next: tuple[dict[str, Any], Future[Any]] | None = None

    def get(self, query: dict[str, Any]) -> Any:
        """The answer to ``query``: the one already asked for, or asked now."""
        pending, self.next = self.next, None
        if pending is not None and pending[0] == query:
            return pending[1].result()
        if pending is not None:
            pending[1].cancel()
        return self.fetch(query)

    def submit(self, query: dict[str, Any]) -> Future[Any]:
        """Ask for ``query`` on a worker thread."""
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="blink-walk")
        return self.pool.submit(self.fetch, query)

    def ask(self, query: dict[str, Any]) -> None:
        """Ask for ``query`` now, while the caller has the current page."""
        if self.workers > 1:
            self.next = (query, self.submit(query))

    def close(self, interrupted: bool) -> None:
        if self.pool is not None:  # interrupted: do not wait for a request in flight
            self.pool.shutdown(wait=not interrupted, cancel_futures=True)


# -- the walk ---------------------------------------------------------------------------------


@dataclass
class CatalogueWalk:
    """One walk over the catalogue: the validated query, and the pages it yields.

    :param query: the user's filter, sort and select (already validated).
    :param fetch: sends a query dict and returns the answer (the hook's request path, on the
        calling thread's session).
    :param parse: an answer's body as JSON data (on the caller's thread).
    :param max_concurrency: above 1, the next page is fetched while the caller has this one.
    """

    query: RQLQuery
    fetch: Callable[[dict[str, Any]], Any]
    parse: Callable[[Any], Any]
    page_size: int
    max_items: int | None
    max_pages: int
    log: logging.Logger | Any
    max_concurrency: int = 1
    requests: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        first = Cursor(self.query, self.page_size, self.max_items).build(None, 0, self.page_size)
        if first is not None and encoded_length(first) > MAX_Q_CHARS:
            raise BlinkInputError(
                f"the RQL query is too long for a URL ({encoded_length(first)} characters encoded, at most "
                f"{MAX_Q_CHARS}); shorten the filter"
            )

    def pages(self) -> Iterator[CataloguePage]:
        """Every page, in order, each checked before it is yielded."""
        cursor = Cursor(self.query, self.page_size, self.max_items)
        fetcher = _Prefetch(self.fetch, self.max_concurrency)
        splits = not cursor.sorted_by_user and self.max_items is None and self.max_concurrency > 1
        interrupted = True
        try:
            try:
                yield from self._walk(cursor, fetcher, stop_after=2 if splits else None)
                if splits and not cursor.done:
                    yield from self._ranges(cursor, fetcher)
            except _Fallback as fallback:
                self._fall_back(cursor, fallback)
                yield from self._walk(cursor, fetcher)
            yield from self._finish(cursor, fetcher)
            interrupted = False
        finally:
            fetcher.close(interrupted)

    def _finish(self, cursor: Cursor, fetcher: _Prefetch) -> Iterator[CataloguePage]:
        """After the last page: an offset walk's count is checked, a sorted walk's moved types found."""
        if cursor.mode == OFFSET:
            self._check_complete(cursor)
        elif cursor.sorted_by_user and (self.max_items is None or cursor.returned < self.max_items):
            yield from self._reconcile(cursor, fetcher)

    def _fall_back(self, cursor: Cursor, fallback: _Fallback) -> None:
        if fallback.ignores_rql and self.query.filter:
            raise _error(
                f"the server does not honour RQL conditions ({fallback.reason}), so the filter cannot be "
                "trusted either; walk without a filter, or ask Blink which members it filters on"
            ) from None
        self.log.warning(
            "the server does not honour the walk's keyset condition (%s): paging by offset from here, "
            "dropping types already returned; exactness while the catalogue changes is not guaranteed "
            "on this server",
            fallback.reason,
        )
        if not cursor.sorted_by_user and cursor.after is not None:
            cursor.high = cursor.after[0]  # the id-ordered pages returned every id up to it
        cursor.mode, cursor.offset, cursor.expected = OFFSET, cursor.returned, None

    def _walk(
        self, cursor: Cursor, fetcher: _Prefetch, *, announce: bool = True, stop_after: int | None = None
    ) -> Iterator[CataloguePage]:
        """The pages of a walk in the cursor's mode, from where the cursor is (``stop_after``:
        up to that page; ``cursor.done`` then says whether it ended the walk)."""
        query = cursor.next_query()
        cursor.done = query is None
        while query is not None:
            limit = query["limit"]
            page = self._page(fetcher, query, cursor)
            ids = self._check(page, cursor, limit)
            new = self._fresh(page, ids, cursor)
            done = self._ends(page, cursor, limit)
            if not page.items and cursor.number:
                cursor.done = True
                return  # the empty answer that confirms a full last page: nothing to yield
            self._advance(page, cursor, len(new))
            query = None if done else cursor.next_query()
            cursor.done = query is None
            if stop_after is not None and cursor.number >= stop_after:
                query = None  # the caller goes on from here
            elif query is not None:
                fetcher.ask(query)  # overlaps the caller's work on this page
            cursor.strip(new)
            if announce:
                self._log_page(cursor)
            yield CataloguePage(new, cursor.number, cursor.returned, cursor.total, cursor.mode)

    @staticmethod
    def _fresh(page: Envelope, ids: list[Any], cursor: Cursor) -> list[dict[str, Any]]:
        new = cursor.fresh(page.items, ids)
        if cursor.mode == OFFSET and page.items and not new:
            raise _error(
                f"the server sent only types already returned on page {cursor.number + 1} (offset "
                f"{cursor.offset}); it honours neither the keyset condition nor offsets, so the catalogue "
                "cannot be walked"
            )
        return new

    def _page(self, fetcher: _Prefetch, query: dict[str, Any], cursor: Cursor) -> Envelope:
        """The answer to ``query``, as a checked envelope; at most :attr:`max_pages` requests."""
        self.requests += 1
        if self.requests > self.max_pages:
            raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
        try:
            return check_envelope(self.parse(fetcher.get(query)))
        except BlinkBadRequestError as err:
            if cursor.mode == KEYSET and cursor.after is not None:
                raise _Fallback(f"it refused the id condition: {err}", ignores_rql=False) from None
            raise

    def _check(self, page: Envelope, cursor: Cursor, limit: int) -> list[Any]:
        """A page's ids, once its offset, size, ids and order are checked."""
        keyset, number = cursor.mode == KEYSET, cursor.number + 1
        _check_offset(page, 0 if keyset else cursor.offset, keyset)
        if page.limit is not None and 0 < page.limit < limit:
            cursor.served = page.limit  # the server's maximum page
        del page.items[limit:]  # a server that ignores limit must not break max_items
        ids = check_ids(page.items, number)
        if keyset or self.query.sort:
            problem = check_order(page.items, cursor.keys, cursor.after if keyset else None, number)
            if problem is not None and keyset:
                raise problem
            if problem is not None:
                raise _error(f"the server does not sort as asked ({problem.reason}); walk without sort")
        return ids

    def _ends(self, page: Envelope, cursor: Cursor, limit: int) -> bool:
        """Whether this page ends the walk: only a short page the envelope agrees with does."""
        start = 0 if cursor.mode == KEYSET else cursor.offset
        items, end, total = page.items, start + len(page.items), self._believable_total(page, cursor, start)
        if not items:
            return _empty_ends(total, start, cursor.number + 1)
        cut = self.max_items is not None and limit < min(self.page_size, cursor.served)  # the last, cut to max_items
        if cut or (cursor.upto is not None and items[-1].get(KEY) == cursor.upto):
            return True  # or an id range up to its last id: nothing of it can follow
        full = len(items) >= min(limit, cursor.served)
        if total is not None and total > end and not full:
            cursor.served = len(items)  # a page cut short without saying so: the server's maximum
            return False
        return not full  # a full page is never proof of the end: ask once more

    def _believable_total(self, page: Envelope, cursor: Cursor, start: int) -> int | None:
        """The page's ``total``, unless it is fewer than the server has sent (then None, and dropped)."""
        if page.total is not None and page.total < start + len(page.items):
            self.log.warning(
                "page %d: the server reports a total of %d, fewer than it has sent; not relying on it",
                cursor.number + 1,
                page.total,
            )
            page.total = None
        return page.total

    def _advance(self, page: Envelope, cursor: Cursor, new: int) -> None:
        """Move the cursor past a checked page of ``new`` fresh items."""
        reported, count = page.total, len(page.items)
        if cursor.mode == OFFSET:
            cursor.total = reported
            cursor.offset += count
        else:
            if None not in (reported, cursor.expected) and reported != cursor.expected:
                self.log.info(
                    "the catalogue changed during the walk: the server reports %d connection types still to "
                    "come, %d were expected",
                    reported,
                    cursor.expected,
                )
            cursor.expected = None if reported is None else reported - count
            if cursor.upto is None:  # a range reports its own count, not the catalogue's
                cursor.total = None if reported is None else cursor.returned + reported
            if page.items:
                cursor.after = check_position(page.items[-1], cursor.keys, cursor.number + 1)
        cursor.number += 1
        cursor.returned += new

    def _ranges(self, cursor: Cursor, fetcher: _Prefetch) -> Iterator[CataloguePage]:
        """The rest of an id-ordered walk, once page 2 has shown that the server honours the keyset,
        as consecutive id ranges ``(start, end]`` of about a page each (:meth:`_bounds`),
        ``max_concurrency`` asked for at once and yielded in order. Each range is walked and
        checked like any keyset walk (one that grew is walked on), so every type is in exactly one."""
        after, remaining = cursor.after, (cursor.total or 0) - cursor.returned
        if after is None or remaining <= self.page_size:
            yield from self._walk(cursor, fetcher)  # one page or less to go: no probes
            return
        asked = (self._ask(fetcher, start, end) for start, end in self._bounds(cursor, fetcher, after[0], remaining))
        ahead = deque(islice(asked, self.max_concurrency))
        while ahead:
            part, first = ahead.popleft()
            ahead.extend(islice(asked, 1))
            part.number, part.returned, part.total = cursor.number, cursor.returned, cursor.total
            if part.upto is None and cursor.total is not None:  # the open range: what the others left
                part.expected = cursor.total - cursor.returned
            fetcher.next = first
            for page in self._walk(part, fetcher):
                cursor.after, cursor.number, cursor.returned = part.after, part.number, part.returned
                cursor.total = part.total
                yield page
        cursor.done = True

    def _ask(self, fetcher: _Prefetch, start: Any, end: Any) -> tuple[Cursor, tuple[dict[str, Any], Future[Any]]]:
        """A range's cursor, and its first page asked for."""
        part = Cursor(self.query, self.page_size, None, after=(start,), upto=end)
        query = part.next_query() or {}
        return part, (query, fetcher.submit(query))

    def _bounds(self, cursor: Cursor, fetcher: _Prefetch, start: Any, remaining: int) -> Iterator[tuple[Any, Any]]:
        """The id ranges ``(start, end]`` after page 2, the last one open (``end`` None). Where each
        ends is found by one-item probes at an offset, kept ``max_concurrency`` ahead; a probe not
        after the one before (the catalogue moved) ends the ranges: the open last one is walked."""
        base = both(self.query.filter, position_filter(cursor.keys, (start,)))
        queries = (
            {"sort": [KEY], "select": [KEY], "limit": 1, "offset": k * self.page_size - 1, "filter": base}
            for k in range(1, -(-remaining // self.page_size))
        )
        probes = deque(fetcher.submit(query) for query in islice(queries, self.max_concurrency))
        while probes:
            found = check_envelope(self.parse(probes.popleft().result())).items
            probes.extend(fetcher.submit(query) for query in islice(queries, 1))  # keep as many ahead
            end = found[0].get(KEY) if found else None
            if end is None or precedes((start,), (end,), cursor.keys) is not True:
                self.log.info("the catalogue moved while it was split into ranges; walking on page by page")
                for rest in probes:
                    rest.cancel()
                break
            yield start, end
            start = end
        yield start, None

    def _log_page(self, cursor: Cursor) -> None:
        total = cursor.total
        pages = "?" if total is None else max(cursor.number, math.ceil(total / self.page_size))
        shown = "?" if total is None else total
        self.log.info("page %d/%s: %d of %s connection types", cursor.number, pages, cursor.returned, shown)

    def _check_complete(self, cursor: Cursor) -> None:
        """After an offset walk: fewer distinct types than the server reported is an error."""
        if self.max_items is None and cursor.total is not None and cursor.returned < cursor.total:
            raise _error(
                f"the offset walk returned {cursor.returned} distinct connection types, but the server reports "
                f"{cursor.total}: {cursor.total - cursor.returned} were passed over (the catalogue changed during "
                "the walk, or the server's order is not stable from page to page); run the task again"
            )

    def _reconcile(self, cursor: Cursor, fetcher: _Prefetch) -> Iterator[CataloguePage]:
        """After a sorted walk: return the matching types it never met (their sort value moved)."""
        for chunk in self._chunks(cursor, self._missing(cursor, fetcher)):
            query = cursor.build(None, 0, len(chunk)) or {}
            query["sort"] = [KEY]
            query["filter"] = both(self.query.filter, {"$or": [{KEY: i} for i in chunk]})
            page = self._page(fetcher, query, cursor)
            items = cursor.fresh(page.items, check_ids(page.items, cursor.number + 1))
            cursor.strip(items)
            cursor.returned += len(items)
            cursor.number += 1
            yield CataloguePage(items, cursor.number, cursor.returned, None)

    def _missing(self, cursor: Cursor, fetcher: _Prefetch) -> list[Any]:
        """The matching ids a sorted walk never met, listed once by id, with a warning."""
        listing = Cursor(RQLQuery(filter=self.query.filter, select=[KEY]), MAX_LIMIT, None)
        try:
            listed = [item[KEY] for page in self._walk(listing, fetcher, announce=False) for item in page.items]
        except _Fallback as fallback:
            raise _error(f"the listing of ids that checks a sorted walk failed: {fallback.reason}") from None
        if cursor.skipped:
            self.log.warning(
                "%d connection types came up twice during the sorted walk (their sort value changed); "
                "each was returned once",
                cursor.skipped,
            )
        missing = [i for i in listed if i not in cursor.seen]
        if missing:
            self.log.warning(
                "%d connection types changed their sort value during the walk and were passed over; they "
                "are returned now, after the others, out of order (sort on id, the default, for an exact "
                "order under change)",
                len(missing),
            )
        return missing

    @staticmethod
    def _chunks(cursor: Cursor, ids: list[Any]) -> Iterator[list[Any]]:
        """``ids`` in runs whose listing query stays within :data:`MAX_Q_CHARS` once encoded."""
        budget = MAX_Q_CHARS - encoded_length(cursor.build(None, 0, MAX_LIMIT) or {}) - 40  # the $and/$or
        chunk: list[Any] = []
        used = 0
        for i in ids:
            cost = encoded_length({KEY: i}) + 3
            if chunk and (used + cost > budget or len(chunk) == MAX_LIMIT):
                yield chunk
                chunk, used = [], 0
            chunk.append(i)
            used += cost
        if chunk:
            yield chunk
