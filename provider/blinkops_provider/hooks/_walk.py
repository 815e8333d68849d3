"""How the connection-type catalogue is walked, page by page, and how each page is checked.

**Two ways to page.** The walk starts with *keyset* paging, which is exact while the catalogue
changes, and falls back to *offset* paging on a server that does not honour it.

* **Keyset** (``paging: "keyset"``). Every request sorts on the user's sort keys and then on
  ``id`` (unique, never changed), sends ``offset`` 0, and asks through RQL for the items *after*
  the last one returned, ANDed with the user's filter::

      {"$and": [<user filter>, (k1 > v1) or (k1 = v1 and k2 > v2) or ... or (... and id > last_id)]}

  ``$lt`` replaces ``$gt`` for a descending key; a boolean key uses ``$eq`` with the other value.
  Without a user ``sort`` (the default) the position is the ``id`` alone, which no update changes:
  every type that exists for the whole walk is returned exactly once. With a user ``sort``, an
  update may move a type across the position: the walk drops a type it meets again, and at the
  end lists the matching ids once and returns any it passed over, after the others, with a warning.
* **Offset** (``paging: "offset"``). The spec leaves open which members RQL may filter on. When
  the answers show that the server ignores the keyset condition (a page repeats ids already
  returned, holds items before the position, or is out of the requested order), or refuses the
  ``id`` condition with a 400, the walk starts again with plain ``limit``/``offset`` pages, drops
  the ids it has already returned, and logs one warning that exactness under concurrent change is
  not guaranteed on this server, and why. A server that honours neither fails with a clear error.
  When a user filter was given and the server was seen to ignore RQL conditions, the walk fails
  instead: the filter could not be trusted either.

**Page checks, in every mode** (before a page is yielded):

* the envelope: a JSON object whose ``results`` is a list of objects, and whose ``total``,
  ``limit`` and ``offset`` are integers when present (:func:`check_envelope`);
* the ``offset`` answered is the one asked; the ``limit`` answered is not above the one asked
  (a smaller one is the server's maximum page, and is used from then on);
* no id twice in a page; no id returned twice across pages;
* the items are in the requested order, and (keyset) after the position (:func:`check_order`);
  string values are compared by code point and case-insensitively, and only a pair out of order
  both ways counts, so a server's case-insensitive collation is not mistaken for disorder;
* a short page ends the walk only when the envelope agrees: a page cut to the server's own
  maximum, or a ``total`` that says more are to come, means the walk goes on; an empty page while
  ``total`` says more is an error; at the end of an offset walk, fewer distinct types than the
  reported ``total`` is an error (types were passed over), never a silently short result;
* at most ``max_pages`` pages; every request's ``q`` stays under :data:`MAX_Q_CHARS` characters
  once URL-encoded (the ids a sorted walk fetches at the end are sent in chunks that fit).

**Speed.** Items stay the plain dicts pydantic-core parsed them into: no model is built per item.
The next page is requested, by a worker thread with its own HTTP session, while the caller still
processes the current one. An id-ordered walk (no user ``sort``, no ``max_items``) with
``max_concurrency`` above 1 goes on, once page 2 has shown that the server honours the keyset
condition, in consecutive id *ranges* of about a page each, several asked for at once: one-item
probes at an offset find where each range ends, each range is walked and checked like any keyset
walk, and the ranges are yielded in order (:meth:`CatalogueWalk._ranged`). Blink's real catalogue
is a few hundred types, one page, so the ranges only serve large catalogues.
"""

from __future__ import annotations

import json
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from itertools import chain, pairwise
from typing import Any
from urllib.parse import quote

import requests

from blinkops_provider.exceptions import BlinkApiError, BlinkBadRequestError, BlinkInputError, BlinkResponseError
from blinkops_provider.hooks._workers import WorkerPool
from blinkops_provider.rql import MAX_LIMIT, RQLQuery

__all__ = ["KEY", "KEYSET", "OFFSET", "CataloguePage", "CatalogueWalk"]

KEY = "id"
"""The unique, unchanging member every walk sorts on last."""
KEYSET = "keyset"
OFFSET = "offset"

PATH = "/connection_types"
MAX_Q_CHARS = 3000
"""The longest URL-encoded ``q`` a walk sends: with the base URL, requests stay under 4 KB."""

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
    :ivar paging: how the walk pages: ``"keyset"`` (exact under change) or ``"offset"``.
    """

    items: list[dict[str, Any]]
    number: int
    returned: int
    total: int | None
    paging: str = KEYSET


@dataclass
class _SortKey:
    name: str
    descending: bool


class _Fallback(Exception):
    """The server does not honour the keyset condition; ``ignores_rql``: it answered as if the
    condition (or the sort) was not there, rather than refusing it."""

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


def _less(x: Any, y: Any) -> bool | None:
    """Whether ``x`` sorts before ``y``; None when it cannot be told (types, or collations differ)."""
    if isinstance(x, str) and isinstance(y, str):
        by_code, folded = x < y, (x.casefold(), y.casefold())
        if folded[0] != folded[1] and (folded[0] < folded[1]) != by_code:
            return None  # code-point and case-insensitive order disagree: either may be the server's
        return by_code
    if type(x) in (int, float, bool) and type(y) in (int, float, bool):
        return bool(x < y)
    return None


def precedes(a: tuple[Any, ...], b: tuple[Any, ...], keys: list[_SortKey]) -> bool | None:
    """Whether sort values ``a`` come strictly before ``b`` in the order of ``keys`` (False when
    equal); None when it cannot be told."""
    for key, x, y in zip(keys, a, b, strict=True):
        if x == y and type(x) is type(y):
            continue
        less = _less(x, y)
        if less is None:
            less_back = _less(y, x)
            if less_back is None:
                return None
            less = not less_back
        return less != key.descending
    return False


def check_order(
    items: list[dict[str, Any]], keys: list[_SortKey], after: tuple[Any, ...] | None, number: int
) -> str | None:
    """What is wrong with a page's order, or None: each item after the one before it, and the
    first one after ``after`` (the walk's position, when the page was asked for what follows it)."""
    if _rises_by_code_point(items, keys, after):
        return None  # then no pair is out of order both ways (the common case, checked at C speed)
    return _out_of_order(items, keys, after, number)


def _out_of_order(
    items: list[dict[str, Any]], keys: list[_SortKey], after: tuple[Any, ...] | None, number: int
) -> str | None:
    previous = after
    for position, item in enumerate(items):
        values = tuple(item.get(k.name) for k in keys)
        if previous is not None and precedes(previous, values, keys) is False:
            if position == 0:
                return f"page {number} starts with {item.get(KEY)!r}, which is not after the walk's position"
            return f"page {number} is not in the requested order at {item.get(KEY)!r}"
        previous = values
    return None


def _rises_by_code_point(items: list[dict[str, Any]], keys: list[_SortKey], after: tuple[Any, ...] | None) -> bool:
    """Whether the page's sort values (``after`` first) are strings that rise strictly by code
    point on ascending keys: :func:`precedes` then never finds a pair out of order."""
    if any(key.descending for key in keys):
        return False
    head = [] if after is None else [after]
    if len(keys) == 1:  # the id-ordered walk: scalars, no tuple per item
        name = keys[0].name
        values: list[Any] = [row[0] for row in head] + [item.get(name) for item in items]
        flat: Iterable[Any] = values
    else:
        values = head + [tuple(item.get(key.name) for key in keys) for item in items]
        flat = chain.from_iterable(values)
    return set(map(type, flat)) <= {str} and all(a < b for a, b in pairwise(values))


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


def position_filter(keys: list[_SortKey], values: tuple[Any, ...]) -> Any:
    """The RQL filter of 'after ``values`` in the order of ``keys``'; None when nothing can be."""
    disjuncts = []
    for index, key in enumerate(keys):
        after = _after(key, values[index])
        if after is None:
            continue
        condition: dict[str, Any] = {k.name: {"$eq": v} for k, v in zip(keys[:index], values[:index], strict=True)}
        condition[key.name] = after
        disjuncts.append(condition)
    if not disjuncts:
        return None
    return disjuncts[0] if len(disjuncts) == 1 else {"$or": disjuncts}


def both(first: Any, second: Any) -> Any:
    """Two RQL filters ANDed (either may be None or empty)."""
    if not first:
        return second
    if not second:
        return first
    return {"$and": [first, second]}


def encoded_length(query: Mapping[str, Any]) -> int:
    """The length of ``q`` in a URL, as the hook sends it."""
    return len(quote(json.dumps(query, separators=(",", ":"), ensure_ascii=False), safe=""))


_BY_ID = [_SortKey(KEY, False)]


@dataclass
class _State:
    """What a walk has returned so far, across a fallback."""

    seen: set[Any] = field(default_factory=set)
    high: Any = None  # an id-ordered keyset walk keeps no ids: it has returned every id up to this one
    returned: int = 0
    number: int = 0
    skipped: int = 0
    total: int | None = None
    expected: int | None = None  # what the server should report next, if nothing changes

    def returned_already(self, i: Any) -> bool:
        """Whether the walk has returned the type with id ``i``."""
        return i in self.seen or (self.high is not None and precedes((self.high,), (i,), _BY_ID) is False)


@dataclass
class CatalogueWalk:
    """One walk over the catalogue: the validated query, and the pages it yields.

    :param query: the user's filter, sort and select (already validated).
    :param fetch: sends a query dict (on the given session, the hook's when None) and returns
        the parsed body: the hook's request path.
    :param new_session: makes an HTTP session for the worker thread.
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
    paging: str = field(init=False, default=KEYSET)

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
        self._served = self.page_size  # the server's own maximum page, once it shows one
        first = self.request(KEYSET, None, 0, self.page_size)
        if first is not None and encoded_length(first) > MAX_Q_CHARS:
            raise BlinkInputError(
                f"the RQL query is too long for a URL ({encoded_length(first)} characters encoded, at most "
                f"{MAX_Q_CHARS}); shorten the filter"
            )

    @property
    def sorted_by_user(self) -> bool:
        """Whether the position includes values an update can change (any key but ``id``)."""
        return len(self.keys) > 1

    def request(
        self, mode: str, after: tuple[Any, ...] | None, offset: int, limit: int, upto: Any = None
    ) -> dict[str, Any] | None:
        """The RQL query of a page: keyset after ``after`` (the first page when None) and up to the
        id ``upto`` (included) when given, or at ``offset``; None when no item can follow."""
        flt = self.query.filter or None
        if after is not None:
            position = position_filter(self.keys, after)
            if position is None:
                return None
            if upto is not None:
                position = {KEY: {**position[KEY], "$lte": upto}}
            flt = both(flt, position)
        query: dict[str, Any] = {"sort": [f"-{k.name}" if k.descending else k.name for k in self.keys]}
        query["limit"] = limit
        query["offset"] = offset
        if flt:
            query["filter"] = flt
        if self.query.select:
            query["select"] = [*self.query.select, *self.added]
        return query

    def pages(self) -> Iterator[CataloguePage]:
        """Every page, in order, fetched by worker threads while the caller has the last one."""
        workers = 1 if self.sorted_by_user or self.max_items is not None else self.max_concurrency
        with WorkerPool(workers, self.new_session, "blink-walk") as pool:
            yield from self._pages(lambda query: pool.submit(self.fetch, query), workers)

    def _limit(self, returned: int) -> int:
        size = min(self.page_size, self._served)
        return size if self.max_items is None else min(size, self.max_items - returned)

    def _pages(self, submit: Submit, workers: int = 1) -> Iterator[CataloguePage]:
        state = _State()
        try:
            yield from self._walk(KEYSET, submit, state, workers=workers)
            return
        except _Fallback as fallback:
            state.number -= 1  # the page that showed it is not returned
            if fallback.ignores_rql and self.query.filter:
                raise _error(
                    f"the server does not honour RQL conditions ({fallback.reason}), so the filter cannot be "
                    "trusted either; walk without a filter, or ask Blink which members it filters on"
                ) from None
            reason = fallback.reason
        self.paging = OFFSET
        self.log.warning(
            "the server does not honour the walk's keyset condition (%s): paging by offset from here, "
            "dropping types already returned; exactness while the catalogue changes is not guaranteed "
            "on this server",
            reason,
        )
        yield from self._walk(OFFSET, submit, state)

    def _walk(
        self,
        mode: str,
        submit: Submit,
        state: _State,
        *,
        after: tuple[Any, ...] | None = None,
        upto: Any = None,
        pending: Future[Any] | None = None,
        workers: int = 1,
    ) -> Iterator[CataloguePage]:
        """The pages of one walk, every page checked before it is yielded.

        :param after: keyset: start after this position (the start otherwise).
        :param upto: keyset: end at this id, included (an id range of the ranged walk).
        :param pending: the first page, already asked for.
        :param workers: more than 1: after page 1, the rest is fetched in id ranges (:meth:`_ranged`).
        """
        keyset = mode == KEYSET
        check_sort = keyset or bool(self.query.sort)
        probes: _Probes | None = None
        offset = 0 if keyset else state.returned  # the items returned so far were the first, in this order
        limit = self._limit(state.returned)
        if pending is None:
            query = self.request(mode, after, offset, limit, upto)
            if limit <= 0 or query is None:
                return
            pending = submit(query)
        while pending is not None:
            state.number += 1
            if state.number > self.max_pages:
                raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
            try:
                page = check_envelope(pending.result())
            except BlinkBadRequestError as err:
                if keyset and after is not None:
                    raise _Fallback(f"it refused the id condition: {err}", ignores_rql=False) from None
                raise
            pending = None
            items = page.items
            if page.offset is not None and page.offset != (0 if keyset else offset):
                if keyset:
                    raise _Fallback(f"it answered offset {page.offset} when asked for 0", ignores_rql=True)
                raise _error(
                    f"the server answered offset {page.offset} when asked for offset {offset}; it honours "
                    "neither the keyset condition nor offsets, so the catalogue cannot be walked"
                )
            if page.limit is not None and 0 < page.limit < limit:
                self._served = page.limit  # the server's maximum page
            if len(items) > limit:  # a server that ignores limit must not break max_items
                del items[limit:]
            ids = check_ids(items, state.number)
            problem = check_order(items, self.keys, after, state.number) if check_sort else None
            if problem is None and upto is not None and items and precedes((upto,), (ids[-1],), self.keys) is True:
                problem = f"page {state.number} ends with {ids[-1]!r}, past the range it asked for"
            if problem is not None:
                if keyset:
                    raise _Fallback(problem, ignores_rql=True)
                raise _error(f"the server does not sort as asked ({problem}); walk without sort")
            # An id-ordered keyset page is after the position (checked above): nothing in it came before.
            track = not keyset or self.sorted_by_user
            fresh = [not state.returned_already(i) for i in ids] if track else [True] * len(ids)
            new = [item for item, keep in zip(items, fresh, strict=True) if keep]
            if len(new) < len(items):
                again = next(i for i, keep in zip(ids, fresh, strict=True) if not keep)
                if keyset and not self.sorted_by_user:
                    raise _Fallback(f"page {state.number} repeats id {again!r}, already returned", ignores_rql=True)
                if not keyset and not new:
                    raise _error(
                        f"the server sent only types already returned on page {state.number} (offset {offset}); "
                        "it honours neither the keyset condition nor offsets, so the catalogue cannot be walked"
                    )
                state.skipped += len(items) - len(new)
            done, reported = self._done(items, page, limit, 0 if keyset else offset, state.number)
            if upto is not None:  # a range reports its own count, not the catalogue's
                state.expected = None if state.expected is None else state.expected - len(items)
            else:
                if keyset and None not in (reported, state.expected) and reported != state.expected:
                    self.log.info(
                        "the catalogue changed during the walk: the server reports %d connection types still "
                        "to come, %d were expected",
                        reported,
                        state.expected,
                    )
                state.expected = None if reported is None else reported - len(items)
                state.total = reported if reported is None or not keyset else state.returned + reported
            ranged = None
            if not done and probes is not None and state.number == 2:
                # Page 2 showed the server honours the keyset condition: the rest comes in id
                # ranges, several at once, their ends already being probed.
                ranged = check_position(items[-1], self.keys, 2)
            elif not done:
                if state.number >= self.max_pages:
                    raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
                if keyset:
                    after = check_position(items[-1], self.keys, state.number)
                offset += 0 if keyset else len(items)
                limit = self._limit(state.returned + len(new))
                query = self.request(mode, after, offset, limit, upto) if limit > 0 else None
                if query is not None:
                    pending = submit(query)  # overlaps the caller's work on this page
                if workers > 1 and state.number == 1 and reported is not None and after is not None:
                    # While page 2 is on its way: where each page-sized range after it ends.
                    probes = self._probes(after[0], reported - len(items), submit, workers)
            if track:
                state.seen.update(ids)
            elif ids:
                state.high = ids[-1]  # memory stays flat, whatever the catalogue's size
            state.returned += len(new)
            self._strip(new)
            self._log_page(state)
            yield CataloguePage(items=new, number=state.number, returned=state.returned, total=state.total, paging=mode)
            if ranged is not None and probes is not None:
                yield from self._ranged(ranged, probes, submit, state, workers)
        if not keyset:
            self._check_complete(state)
        elif self.sorted_by_user and (self.max_items is None or state.returned < self.max_items):
            yield from self._reconcile(state)

    def _log_page(self, state: _State) -> None:
        total = state.total
        pages = "?" if total is None else max(state.number, math.ceil(total / self.page_size))
        shown = "?" if total is None else total
        self.log.info("page %d/%s: %d of %s connection types", state.number, pages, state.returned, shown)

    def _probes(self, last: Any, remaining: int, submit: Submit, workers: int) -> _Probes:
        """Ask for the id that ends each page-sized range after page 2 (one-item pages at an
        offset after ``last``, page 1's last id): ``workers`` at once, then one more as each range
        starts."""
        after = both(self.query.filter, position_filter(self.keys, (last,)))
        queries = (
            {"sort": [KEY], "select": [KEY], "limit": 1, "offset": k * self.page_size - 1, "filter": after}
            for k in range(2, -(-remaining // self.page_size))
        )
        return _Probes(submit, queries, workers)

    def _ranged(
        self, last: tuple[Any, ...], probes: _Probes, submit: Submit, state: _State, workers: int
    ) -> Iterator[CataloguePage]:
        """The rest of an unsorted walk as consecutive id ranges ``(start, end]``, ``workers`` of
        them asked for at once and yielded in order, each walked and checked like any keyset walk
        (a range that grew is walked on). The ranges never overlap and cover every id after
        ``last``, so each type is in exactly one, whatever changes meanwhile. A probe that is not
        after the one before (the catalogue moved) ends the ranges: the walk goes on page by page."""
        start: Any = last[0]
        ranges: deque[tuple[Any, Any, Future[Any]]] = deque()
        moved = False
        while True:
            while start is not None and not moved and len(ranges) < workers:
                probe = next(probes, None)
                found = check_envelope(probe.result()).items if probe is not None else []
                end = found[0].get(KEY) if found else None
                if end is not None and precedes((start,), (end,), self.keys) is not True:
                    self.log.info("the catalogue moved while it was split into ranges; walking on page by page")
                    moved = True
                    probes.cancel()
                    break
                query = self.request(KEYSET, (start,), 0, self.page_size, end)
                assert query is not None
                ranges.append((start, end, submit(query)))
                start = end
            if not ranges:
                break
            begin, end, first = ranges.popleft()
            yield from self._walk(KEYSET, submit, state, after=(begin,), upto=end, pending=first)
        if moved:  # the ranges asked for cover up to start: page by page from there
            yield from self._walk(KEYSET, submit, state, after=(start,))

    def _done(
        self, items: list[dict[str, Any]], page: Envelope, limit: int, offset: int, number: int
    ) -> tuple[bool, int | None]:
        """Whether this page ends the walk (only when the envelope agrees), and the ``total`` it
        reported when that is believable (keyset: those still to come, this page's included)."""
        end = offset + len(items)  # keyset (offset 0): the page's own count; offset: the position after it
        total = page.total
        if total is not None and total < end:
            self.log.warning(
                "page %d: the server reports a total of %d, fewer than it has sent; not relying on it", number, total
            )
            total = None
        if not items:
            if total is not None and total > offset:
                raise _error(
                    f"the server sent an empty page {number} but reports {total - offset} more connection types"
                )
            return True, total
        if self.max_items is not None and limit < min(self.page_size, self._served):
            return True, total  # the last request, cut to max_items
        capped = self._served < self.page_size
        if capped and len(items) >= min(limit, self._served):
            return False, total  # pages cut to the server's own maximum: only an empty page ends the walk
        if total is not None and total > end:
            if len(items) < limit:
                self._served = len(items)  # a page cut short without saying so: the server's maximum
            return False, total
        if total is None:
            return len(items) < limit, None  # nothing else to go on: a short page is the end
        return True, total

    def _check_complete(self, state: _State) -> None:
        """After an offset walk: fewer distinct types than the server reported is an error."""
        if self.max_items is None and state.total is not None and state.returned < state.total:
            raise _error(
                f"the offset walk returned {state.returned} distinct connection types, but the server reports "
                f"{state.total}: {state.total - state.returned} were passed over (the catalogue changed during "
                "the walk, or the server's order is not stable from page to page); run the task again"
            )

    def _strip(self, items: list[dict[str, Any]]) -> None:
        if self.added:
            for item in items:
                for name in self.added:
                    item.pop(name, None)

    def _reconcile(self, state: _State) -> Iterator[CataloguePage]:
        """After a sorted walk: return the matching types it never met (their sort value moved)."""
        ids = CatalogueWalk(
            query=RQLQuery(filter=self.query.filter, select=[KEY]),
            fetch=self.fetch,
            new_session=self.new_session,
            page_size=MAX_LIMIT,
            max_items=None,
            max_pages=self.max_pages,
            log=_QUIET,
        )
        listed = [item.get(KEY) for page in ids._pages(_run_now(self.fetch)) for item in page.items]
        missing = [i for i in listed if i not in state.seen]
        if state.skipped:
            self.log.warning(
                "%d connection types came up twice during the sorted walk (their sort value changed); "
                "each was returned once",
                state.skipped,
            )
        if not missing:
            return
        self.log.warning(
            "%d connection types changed their sort value during the walk and were passed over; they "
            "are returned now, after the others, out of order (sort on id, the default, for an exact "
            "order under change)",
            len(missing),
        )
        for chunk in self._chunks(missing):
            query = self.request(KEYSET, None, 0, len(chunk))
            assert query is not None
            query["sort"] = [KEY]
            query["filter"] = both(self.query.filter, {"$or": [{KEY: i} for i in chunk]})
            items = [item for item in check_envelope(self.fetch(query)).items if item.get(KEY) not in state.seen]
            state.seen.update(item.get(KEY) for item in items)
            self._strip(items)
            state.returned += len(items)
            state.number += 1
            yield CataloguePage(items=items, number=state.number, returned=state.returned, total=None)

    def _chunks(self, ids: list[Any]) -> Iterator[list[Any]]:
        """``ids`` in runs whose listing query stays within :data:`MAX_Q_CHARS` once encoded."""
        base = self.request(KEYSET, None, 0, MAX_LIMIT) or {}
        budget = MAX_Q_CHARS - encoded_length(base) - 40  # the $and/$or around the ids
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


class _Probes:
    """Probe futures in order, keeping ``ahead`` of them asked for."""

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
