"""How the connection-type catalogue is walked, page by page, and how each page is checked.

**Keyset paging.** Plain offsets are not exact while the catalogue changes: a type deleted
between two pages shifts the rest forward, so one that still exists is skipped; a type inserted
before the position shifts the rest back, so one comes twice. The walk therefore never sends an
offset other than 0. Every request sorts on the user's sort keys and then on ``id`` (unique, and
never changed), and asks, through RQL, for the items *after* the last one returned::

    (k1 > v1) or (k1 = v1 and k2 > v2) or ... or (k1 = v1 and ... and id > last_id)

Each disjunct is ANDed with the user's filter (``{"$or": [filter], ...}``); ``$lt`` replaces
``$gt`` for a descending key, and a boolean key uses ``$eq`` with the other value.

**The guarantee.** Every connection type that exists for the whole walk is returned exactly
once, and none is returned twice:

* Without a user ``sort`` (the default) the position is the ``id`` alone, which no update
  changes: inserts, deletes and updates between pages cannot make the walk skip or repeat a type.
* With a user ``sort``, an update may move a type's sort value across the walk's position. The
  walk remembers the ids it has returned and drops a type it meets again, and once at the end
  it lists the ids that match the filter (an ``id``-sorted walk of ``select: ["id"]``): a type
  it never returned is fetched and returned then, after the sorted ones, with a warning that
  says how many came out of order. ``max_items`` ends the walk before that check.
* ``select`` without ``id`` (or a sort key): the walk asks for them too, and removes them again
  from what it returns.
* The position needs a value for every sort key: a type that lacks one at a page's end stops the
  walk with an error that says so, rather than guess where such types sort on the server.

**Page checks** (one function each, below): the envelope is a JSON object whose ``results`` is a
list of JSON objects and whose ``total``, ``limit`` and ``offset`` are integers when present;
the server honours ``offset`` 0; a page does not repeat an item of the page before it (a server
that ignores the position would loop); the walk stops on an empty page, a short page, at the
reported total, at ``max_items``, and with an error after ``max_pages`` pages. A ``total`` that
changes mid-walk is logged.

**Speed.** Items stay the plain dicts pydantic-core parsed them into: no model is built per
item. The next page is requested, in one worker thread with its own HTTP session, while the
caller still processes the current one.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import requests

from blinkops_provider.exceptions import BlinkApiError, BlinkResponseError
from blinkops_provider.hooks._workers import WorkerPool
from blinkops_provider.rql import MAX_LIMIT, RQLQuery

__all__ = ["KEY", "CataloguePage", "CatalogueWalk"]

KEY = "id"
"""The unique, unchanging member every walk sorts on last."""

PATH = "/connection_types"
_RECONCILE_CHUNK = 100
"""Ids per request when a sorted walk fetches the types it found missing."""

Fetch = Callable[..., Any]
"""``fetch(query, session=None)``: sends one RQL query (a dict), returns the parsed JSON body."""
Submit = Callable[[dict[str, Any]], "Future[Any]"]
"""Hands a query to a worker thread; the future holds the parsed body."""


@dataclass
class CataloguePage:
    """One page of a walk: items as Blink sent them (plain JSON objects), and where the walk is.

    :ivar items: the connection types of this page, as dicts.
    :ivar number: 1 for the first page.
    :ivar returned: how many items the walk has returned, this page's included.
    :ivar total: the number of matching connection types the server reported at this page
        (those already returned plus those it still has), or None when it reports none.
    """

    items: list[dict[str, Any]]
    number: int
    returned: int
    total: int | None


@dataclass
class _SortKey:
    name: str
    descending: bool


def _error(message: str) -> BlinkApiError:
    return BlinkApiError(message, method="GET", path=PATH)


# -- page checks ------------------------------------------------------------------------------


def check_envelope(data: Any) -> tuple[list[dict[str, Any]], int | None, int | None]:
    """A listing body's items, ``total`` and ``offset``, after checking its shape.

    :raises BlinkResponseError: not ``{"results": [object, ...], ...}`` with integer (or absent)
        ``total``, ``limit`` and ``offset``.
    """

    def wrong(problem: str) -> BlinkResponseError:
        return BlinkResponseError(f"the listing is not a page of connection types: {problem}", status=200,
                                  method="GET", path=PATH)  # fmt: skip

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
    return results, data.get("total"), data.get("offset")


def check_offset(offset: int | None) -> None:
    """The walk always sends offset 0; a server that answers another ignores the query's paging."""
    if offset is not None and offset != 0:
        raise _error(f"the server answered offset {offset} when asked for offset 0; it ignores paging, "
                     "so the catalogue cannot be walked")  # fmt: skip


def check_progress(items: list[dict[str, Any]], previous: set[Any], number: int, *, strict: bool) -> set[Any]:
    """The ids of a page, refusing a page that repeats the page before it.

    Every page asks for what comes after the previous page's last item, so a repeat means the
    server ignored the position and the walk would loop. ``strict`` (a walk positioned on ``id``
    alone, which never changes): any item of the previous page seen again is such a repeat.
    Otherwise an update may legitimately move one item forward, and only a page made wholly of
    the previous page's items is refused.
    """
    ids = {item.get(KEY) for item in items}
    if previous and ids and (not ids.isdisjoint(previous) if strict else ids <= previous):
        raise _error(f"the server sent items of page {number - 1} again on page {number}; it ignores "
                     "the walk's position, so stopping rather than looping")  # fmt: skip
    return ids


def check_position(item: Mapping[str, Any], keys: list[_SortKey], number: int) -> tuple[Any, ...]:
    """The sort values of a page's last item, where the next page starts.

    :raises BlinkApiError: the item lacks one (the walk cannot say where the next page starts).
    """
    values = []
    for key in keys:
        value = item.get(key.name)
        if value is None or isinstance(value, (dict, list)):
            what = "has no" if value is None else "has a non-scalar"
            raise _error(
                f"cannot continue an exact walk after page {number}: connection type {item.get(KEY)!r} "
                f"{what} {key.name!r}, which the walk sorts by; sort on members every connection type has"
            )
        values.append(value)
    return tuple(values)


# -- the query --------------------------------------------------------------------------------


def _after(key: _SortKey, value: Any) -> dict[str, Any] | None:
    """The predicate 'strictly after ``value``' for one key, or None when nothing can be."""
    if isinstance(value, bool):  # RQL orders booleans false < true, but has no $gt for them
        if value is key.descending:
            return {"$eq": not value}
        return None
    return {"$lt" if key.descending else "$gt": value}


def position_filter(keys: list[_SortKey], values: tuple[Any, ...], user_filter: dict[str, Any] | None) -> Any:
    """The RQL filter of 'after ``values`` in the order of ``keys``', ANDed with the user's filter."""
    disjuncts = []
    for index, key in enumerate(keys):
        after = _after(key, values[index])
        if after is None:
            continue
        condition: dict[str, Any] = {k.name: {"$eq": v} for k, v in zip(keys[:index], values[:index], strict=True)}
        condition[key.name] = after
        if user_filter:
            condition["$or"] = [user_filter]
        disjuncts.append(condition)
    if not disjuncts:
        return None
    return disjuncts[0] if len(disjuncts) == 1 else {"$or": disjuncts}


@dataclass
class CatalogueWalk:
    """One walk over the catalogue: the validated query, and the pages it yields.

    :param query: the user's filter, sort and select (already validated).
    :param fetch: sends a query dict (on the given session, the hook's when None) and returns
        the parsed body: the hook's request path.
    :param new_session: makes an HTTP session for a worker thread.
    """

    query: RQLQuery
    fetch: Fetch
    new_session: Callable[[], requests.Session]
    page_size: int
    max_items: int | None
    max_pages: int
    log: logging.Logger | Any
    max_concurrency: int = 1
    keys: list[_SortKey] = field(init=False)
    added: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        keys: list[_SortKey] = []
        for item in self.query.sort or ():
            name = item.lstrip("+-")
            if all(k.name != name for k in keys):
                keys.append(_SortKey(name, item.startswith("-")))
            if name == KEY:  # unique: later keys never decide anything
                break
        if all(k.name != KEY for k in keys):
            keys.append(_SortKey(KEY, False))
        self.keys = keys
        select = self.query.select
        self.added = tuple(k.name for k in keys if k.name not in select) if select else ()

    @property
    def sorted_by_user(self) -> bool:
        """Whether the position includes values an update can change (any key but ``id``)."""
        return len(self.keys) > 1

    def request(self, after: tuple[Any, ...] | None, limit: int) -> dict[str, Any] | None:
        """The RQL query of the page after ``after`` (the first page when None); None when no item can follow."""
        user_filter = self.query.filter or None
        flt = user_filter if after is None else position_filter(self.keys, after, user_filter)
        if after is not None and flt is None:
            return None
        query: dict[str, Any] = {
            "sort": [f"-{k.name}" if k.descending else k.name for k in self.keys],
            "limit": limit,
            "offset": 0,
        }
        if flt:
            query["filter"] = flt
        if self.query.select:
            query["select"] = [*self.query.select, *self.added]
        return query

    def pages(self) -> Iterator[CataloguePage]:
        """Every page, in order, fetched by worker threads while the caller processes the last one."""
        workers = 1 if self.sorted_by_user else self.max_concurrency
        with WorkerPool(workers, self.new_session, "blink-walk") as pool:
            yield from self._pages(lambda query: pool.submit(self.fetch, query), workers)

    def _limit(self, returned: int) -> int:
        return self.page_size if self.max_items is None else min(self.page_size, self.max_items - returned)

    def _pages(self, submit: Submit, workers: int = 1) -> Iterator[CataloguePage]:
        limit = self._limit(0)
        first = self.request(None, limit)
        if limit <= 0 or first is None:
            return
        pending: Future[Any] | None = submit(first)
        seen: set[Any] | None = set() if self.sorted_by_user else None
        previous: set[Any] = set()
        returned, skipped = 0, 0
        expected: int | None = None  # what the server should report next, if nothing changes
        number = 0
        while True:
            number += 1
            if number > self.max_pages:
                raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
            assert pending is not None  # every way round the loop asks for the next page
            items, remaining, offset = check_envelope(pending.result())
            pending = None
            check_offset(offset)
            if len(items) > limit:  # a server that ignores limit must not break max_items
                del items[limit:]
            previous = check_progress(items, previous, number, strict=seen is None)
            if not items:
                return
            if expected is not None and remaining is not None and remaining != expected:
                self.log.info(
                    "the catalogue changed during the walk: the server reports %d connection types still to "
                    "come, %d were expected", remaining, expected,
                )  # fmt: skip
            done = len(items) < limit or (remaining is not None and remaining <= len(items))
            if not done and number == 1 and workers > 1 and remaining is not None and self.max_items is None:
                (last,) = check_position(items[-1], self.keys, number)
                probes = self._probe(last, remaining - len(items), submit, workers)
                self._strip(items)
                self.log.info("page 1/%d: %d of %d connection types; %d requests in flight from here",
                              math.ceil(remaining / self.page_size), len(items), remaining, workers)  # fmt: skip
                yield CataloguePage(items=items, number=1, returned=len(items), total=remaining)
                resume = yield from self._ranged_pages(last, probes, submit, workers, len(items))
                if resume is None:
                    return
                self.log.info("the catalogue moved while it was split into ranges; walking on page by page")
                last, number, returned = resume
                limit, expected, previous = self._limit(returned), None, set()
                pending = submit(self.request((last,), limit) or {})
                continue
            capped = False
            if not done:
                limit = self._limit(returned + len(items))
                after = check_position(items[-1], self.keys, number)
                query = self.request(after, limit) if limit > 0 else None
                capped = query is not None and number >= self.max_pages  # ask for no page past the cap
                if query is None or capped:
                    done = True
                else:
                    pending = submit(query)  # overlaps the caller's work on this page
                    expected = None if remaining is None else remaining - len(items)
            if seen is not None:
                kept = [item for item in items if item.get(KEY) not in seen]
                skipped += len(items) - len(kept)
                seen.update(item.get(KEY) for item in kept)
                items = kept
            self._strip(items)
            returned += len(items)
            total = None if remaining is None else returned - len(items) + remaining
            self.log.info(
                "page %d/%s: %d of %s connection types", number,
                "?" if total is None else math.ceil(total / self.page_size), returned, "?" if total is None else total,
            )  # fmt: skip
            yield CataloguePage(items=items, number=number, returned=returned, total=total)
            if capped:
                raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
            if done:
                if seen is not None and (self.max_items is None or returned < self.max_items):
                    yield from self._reconcile(seen, skipped, returned, number)
                return

    def _probe(self, last: Any, remaining: int, submit: Submit, workers: int) -> _Probes:
        """Ask for the id that ends each page-sized range after ``last``: ``workers`` probes now
        (while the caller has page 1), then one more for each range started, so that ranges and
        probes share the workers from the start."""
        after = position_filter(self.keys, (last,), self.query.filter or None)
        queries = (
            {"sort": [KEY], "select": [KEY], "limit": 1, "offset": k * self.page_size - 1, "filter": after}
            for k in range(1, -(-remaining // self.page_size))
        )
        return _Probes(submit, queries, workers)

    def _ranged_pages(
        self, last: Any, probes: _Probes, submit: Submit, workers: int, returned: int
    ) -> Generator[CataloguePage, None, tuple[Any, int, int] | None]:
        """The pages of consecutive id ranges after ``last``, fetched ``workers`` at a time, in order.

        Each range ends at a probed id and starts as soon as its probe is back. The ranges never
        overlap and cover every id after ``last``, so each type is in exactly one, whatever
        changes meanwhile. At most ``workers`` ranges wait for the caller, so memory stays flat.
        A range that grew past a page (inserts) is walked on, page by page.

        :returns: None when done; or, when the probes came back out of order (the catalogue moved
            a lot meanwhile), where to go on page by page: ``(last id, page number, returned)``.
        """
        user_filter = self.query.filter or None

        def query(start: Any, end: Any | None) -> dict[str, Any]:
            condition: dict[str, Any] = {KEY: {"$gt": start} if end is None else {"$gt": start, "$lte": end}}
            if user_filter:
                condition["$or"] = [user_filter]
            q: dict[str, Any] = {"sort": [KEY], "limit": self.page_size, "offset": 0, "filter": condition}
            if self.query.select:
                q["select"] = [*self.query.select, *self.added]
            return q

        start: Any = last  # where the next range starts; None once the open last range is out
        pending: deque[tuple[Future[Any], Any]] = deque()
        moved = False

        def fill() -> None:
            nonlocal start, moved
            while start is not None and not moved and len(pending) < workers:
                probe = next(probes, None)
                found = check_envelope(probe.result())[0] if probe is not None else []
                end = found[0].get(KEY) if found else None
                if end is not None and not (isinstance(end, str) and start < end):
                    moved = True  # stop here; what is pending still covers (last, start]
                    return
                pending.append((submit(query(start, end)), end))
                start = end

        number = 1
        fill()
        while pending:
            future, end = pending.popleft()
            fill()
            more = True
            while more:
                items, in_range, offset = check_envelope(future.result())
                check_offset(offset)
                del items[self.page_size :]
                number += 1
                if number > self.max_pages:
                    raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
                more = len(items) == self.page_size and (in_range is None or in_range > len(items))
                if more:  # this range grew: go on after its last item, before the next range
                    future = submit(query(items[-1].get(KEY), end))
                self._strip(items)
                returned += len(items)
                self.log.info("page %d: %d connection types so far", number, returned)
                yield CataloguePage(items=items, number=number, returned=returned, total=None)
        probes.cancel()
        return (start, number, returned) if moved else None

    def _strip(self, items: list[dict[str, Any]]) -> None:
        if self.added:
            for item in items:
                for name in self.added:
                    item.pop(name, None)

    def _reconcile(self, seen: set[Any], skipped: int, returned: int, number: int) -> Iterator[CataloguePage]:
        """After a sorted walk: return the matching types it never met (their sort value moved)."""
        ids = CatalogueWalk(
            query=RQLQuery(filter=self.query.filter, select=[KEY]),
            fetch=self.fetch, new_session=self.new_session,
            page_size=MAX_LIMIT, max_items=None, max_pages=self.max_pages, log=_QUIET,
        )  # fmt: skip
        missing = [i for page in ids._pages(_run_now(self.fetch)) for i in (x.get(KEY) for x in page.items)
                   if i not in seen]  # fmt: skip
        if skipped:
            self.log.warning("%d connection types came up twice during the sorted walk (their sort value "
                             "changed); each was returned once", skipped)  # fmt: skip
        if not missing:
            return
        self.log.warning(
            "%d connection types changed their sort value during the walk and were passed over; they "
            "are returned now, after the others, out of order (sort on id, the default, for an exact "
            "order under change)", len(missing),
        )  # fmt: skip
        for start in range(0, len(missing), _RECONCILE_CHUNK):
            chunk = missing[start : start + _RECONCILE_CHUNK]
            extra = {"$or": [self.query.filter]} if self.query.filter else {}
            condition = {"$or": [{KEY: i, **extra} for i in chunk]}
            query: dict[str, Any] = {"filter": condition, "sort": [KEY], "limit": len(chunk), "offset": 0}
            if self.query.select:
                query["select"] = [*self.query.select, *self.added]
            items, _, _ = check_envelope(self.fetch(query))
            items = [item for item in items if item.get(KEY) not in seen]
            seen.update(item.get(KEY) for item in items)
            self._strip(items)
            returned += len(items)
            number += 1
            yield CataloguePage(items=items, number=number, returned=returned, total=None)


class _Probes:
    """Probe futures in order, keeping ``ahead`` of them submitted."""

    def __init__(self, submit: Submit, queries: Iterator[dict[str, Any]], ahead: int) -> None:
        self._submit = submit
        self._queries = queries
        self._ahead: deque[Future[Any]] = deque()
        for _ in range(ahead):
            self._top_up()

    def _top_up(self) -> None:
        query = next(self._queries, None)
        if query is not None:
            self._ahead.append(self._submit(query))

    def __iter__(self) -> _Probes:
        return self

    def __next__(self) -> Future[Any]:
        if not self._ahead:
            raise StopIteration
        future = self._ahead.popleft()
        self._top_up()
        return future

    def cancel(self) -> None:
        for future in self._ahead:
            future.cancel()


class _Quiet:
    def info(self, *args: Any, **kwargs: Any) -> None:
        pass

    warning = info


_QUIET = _Quiet()


def _run_now(fetch: Fetch) -> Callable[[dict[str, Any]], Future[Any]]:
    """A submit that runs the fetch at once (the reconciling id walk needs no prefetch)."""

    def submit(query: dict[str, Any]) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fetch(query))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    return submit
