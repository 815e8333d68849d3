"""
How the connection-type catalogue is walked, page by page, and how each page is checked.

**By id.** Every request sorts on ``id``, sends ``offset`` 0 and asks for the types after the last
id returned (``{"id": {"$gt": last}}``, ANDed with the user's filter): every type that exists for
the whole walk comes exactly once. A user ``sort`` is applied by the client once every page is in
(:func:`~blinkops_provider.rql.sort_items`): the walk then holds the result in memory.

**By offset when the server does not honour the id condition** (it answers another offset,
refuses the condition, or sends a page not after the last id or not in id order): plain
``limit``/``offset`` pages from where the walk is, with one warning. Each page is put in id order,
the ids already returned (kept in a set: the catalogue is small) are dropped, and the count is
checked against ``total`` at the end. With a user filter, a server seen to ignore the condition fails instead.
The set holds at most :data:`KEPT_IDS` ids: a walk by id past that many keeps none (its memory
stays flat however large the catalogue), and a server that stops honouring the condition after
that fails instead of risking doubles.

**Every page is checked** before it is yielded: the envelope, the offset and limit answered, ids
unique, order and position, and the end (docs/operators/connection_types.md lists the checks).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
    BlinkInputError,
    BlinkResponseError,
    BlinkUnsupportedServerError,
)
from blinkops_provider.hooks._transport import Answer, parse_json
from blinkops_provider.rql import KEY, MAX_Q_CHARS, RQLQuery, encoded_length, sort_items, sort_value

KEYSET, OFFSET = "keyset", "offset"
KEPT_IDS = 50_000  # ids kept for an offset fallback (Blink's catalogue has a few hundred types)
PATH = "/connection_types"


@dataclass
class CataloguePage:
    """
    One page of a walk.

    ``items`` as Blink sent them (plain JSON objects); its ``number`` (1 first); how many items the walk has
    ``returned``, this page's included; the ``total`` of matching types the server reported at this page (None: none);
    ``paging``, ``"keyset"`` (by id, exact under change) or ``"offset"``.
    """

    items: list[dict[str, Any]]
    number: int
    returned: int
    total: int | None
    paging: str = KEYSET


class _Fallback(Exception):
    """The server does not honour the id condition: ``(reason, ignores_rql)`` (then a filter is not trusted)."""


_NEITHER = "it honours neither the keyset condition nor offsets, so the catalogue cannot be walked"
_UNTOLD = "a walk cannot tell which types it returned"
_FALLING_BACK = (
    "the server does not honour the walk's keyset condition (%s): paging by offset from here, dropping types "
    "already returned; exactness while the catalogue changes is not guaranteed on this server"
)


def _error(message: str) -> BlinkApiError:
    return BlinkApiError(message, method="GET", path=PATH)


def _unsupported(message: str) -> BlinkUnsupportedServerError:
    """Return what the server does, seen in its answers, that no retry changes: the task fails at once."""
    return BlinkUnsupportedServerError(message, method="GET", path=PATH)


class Envelope(NamedTuple):
    """A checked listing page: its items and what it says of itself."""

    items: list[dict[str, Any]]
    total: int | None
    limit: int | None
    offset: int | None


def check_envelope(data: Any) -> Envelope:
    """
    Return a listing body, after checking its shape.

    :raises BlinkResponseError: not ``{"results": [object, ...], ...}`` with integer (or absent)
        ``total``, ``limit`` and ``offset``.
    """
    problem = _envelope_problem(data)
    if problem:
        message = f"the listing is not a page of connection types: {problem}"
        raise BlinkResponseError(message, status=200, method="GET", path=PATH)
    return Envelope(data["results"], data.get("total"), data.get("limit"), data.get("offset"))


def _envelope_problem(data: Any) -> str:
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        return f"the body is a JSON {type(data).__name__}, not an object"
    if not isinstance(results, list):
        return "it has no 'results' array" if results is None else "'results' is not an array"
    for name in ("total", "limit", "offset"):
        if not _is_count(data.get(name)):
            return f"{name!r} is {data[name]!r}, not an integer of 0 or more"
    odd = next((n for n, item in enumerate(results) if type(item) is not dict), None)
    return "" if odd is None else f"results[{odd}] is a JSON {type(results[odd]).__name__}, not an object"


def _is_count(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


def check_ids(items: list[dict[str, Any]], number: int) -> list[Any]:
    """Return the ids of a page, refusing one without a scalar id, or an id twice."""
    ids = [item.get(KEY) for item in items]
    if any(i is None or isinstance(i, (dict, list, bool)) for i in ids):
        raise _error(f"the server sent an item without a scalar id in page {number}; {_UNTOLD}")
    if len(set(ids)) != len(ids):
        twice = next(i for n, i in enumerate(ids) if i in ids[:n])
        raise _error(f"the server sent id {twice!r} twice in page {number}; {_UNTOLD}")
    return ids


def _before(a: Any, b: Any) -> bool | None:
    """Return whether id ``a`` sorts before id ``b``; None when it cannot be told (types or collations differ)."""
    if isinstance(a, str) and isinstance(b, str):
        folded = (a.casefold(), b.casefold())
        return None if folded[0] != folded[1] and (folded[0] < folded[1]) != (a < b) else a < b
    if type(a) in (int, float) and type(b) in (int, float):
        return bool(a < b)
    return None


def _rising(ids: list[Any], after: Any, number: int) -> None:
    """Raise what is wrong with the order of page ``number``'s ids (after ``after``, if given)."""
    for position, (previous, i) in enumerate(zip([after, *ids], ids, strict=False)):
        if previous is not None and _before(previous, i) is False:
            if position == 0:  # the page ignored the position: the server ignores the condition
                raise _Fallback(f"page {number} starts with {i!r}, which is not after the walk's position", True)
            raise _Fallback(f"page {number} is not in the requested order at {i!r}", False)


@dataclass
class CatalogueWalk:
    """
    One walk.

    The user's query (validated), ``send`` (the hook's request path, :meth:`Transport.send
    <blinkops_provider.hooks._transport.Transport.send>`) and ``scrub`` (what takes the key out of a text);
    :meth:`pages` walks.
    """

    query: RQLQuery
    send: Callable[..., Answer]
    scrub: Callable[[str], str]
    page_size: int
    max_items: int | None
    max_pages: int
    log: logging.Logger | Any
    mode: str = field(init=False, default=KEYSET)
    last: Any = field(init=False, default=None)  # the last id returned
    offset: int = field(init=False, default=0)  # by offset: where the next page starts
    served: int = field(init=False, default=0)  # the server's largest page
    number: int = field(init=False, default=0)
    returned: int = field(init=False, default=0)
    left: int | None = field(init=False, default=None)  # what the server said it still had
    requests: int = field(init=False, default=0)
    seen: set[Any] = field(init=False, default_factory=set)  # every id returned, while at most KEPT_IDS
    forgot: bool = field(init=False, default=False)  # more than KEPT_IDS returned by id: none kept

    def __post_init__(self) -> None:
        self.served = self.page_size
        wanted = dict.fromkeys([*(key.lstrip("+-") for key in self.query.sort or ()), KEY])
        self.added = [name for name in wanted if self.query.select and name not in self.query.select]
        if (length := encoded_length(self._query(self.page_size))) > MAX_Q_CHARS:
            too_long = f"({length} characters encoded, at most {MAX_Q_CHARS}); shorten the filter"
            raise BlinkInputError(f"the RQL query is too long for a URL {too_long}")

    def pages(self) -> Iterator[CataloguePage]:
        """Yield every page, checked before it is yielded; with a user ``sort``, all of them, sorted."""
        if not self.query.sort:
            yield from self._walk(self.max_items)
            return
        items = [item for page in self._walk(None) for item in page.items]
        sort_items(items, self.query.sort)
        self._strip(items)
        del items[len(items) if self.max_items is None else self.max_items :]
        for start in range(0, len(items), self.page_size):
            chunk = items[start : start + self.page_size]
            yield CataloguePage(chunk, start // self.page_size + 1, start + len(chunk), len(items), self.mode)

    def _query(self, limit: int) -> dict[str, Any]:
        flt = self.query.filter or None
        if self.mode == KEYSET and self.last is not None:
            position = {KEY: {"$gt": self.last}}
            flt = {"$and": [flt, position]} if flt else position
        query: dict[str, Any] = {"sort": [KEY], "limit": limit, "offset": self.offset if self.mode == OFFSET else 0}
        if flt:
            query["filter"] = flt
        if self.query.select:
            query["select"] = [*self.query.select, *self.added]
        return query

    def _walk(self, max_items: int | None) -> Iterator[CataloguePage]:
        while max_items is None or self.returned < max_items:
            limit = min(self.page_size, self.served, (max_items or math.inf) - self.returned)
            try:
                page, ends = self._checked(self._query(int(limit)), int(limit))
            except _Fallback as fallback:
                self._fall_back(fallback)
                continue
            if page is not None:
                yield page
            if ends:
                return

    def _fall_back(self, fallback: _Fallback) -> None:
        reason, ignores_rql = fallback.args
        if ignores_rql and self.query.filter:
            raise _unsupported(
                f"the server does not honour RQL conditions ({reason}), so the filter cannot be "
                "trusted either; walk without a filter, or ask Blink which members it filters on"
            )
        if self.forgot:
            kept = f"the walk keeps the ids it returned only up to {KEPT_IDS:,}, so it cannot go on by offset"
            raise _error(
                f"the server stopped honouring the id condition after {self.returned:,} connection types "
                f"({reason}); {kept} without risking doubles; run the task again"
            )
        self.log.warning(_FALLING_BACK, reason)
        self.mode, self.offset, self.left = OFFSET, self.returned, None

    def _answer(self, query: dict[str, Any]) -> Envelope:
        self.requests += 1
        if self.requests > self.max_pages:
            raise _error(f"stopped after {self.max_pages} pages; the listing never reached its end")
        try:
            q = json.dumps(query, separators=(",", ":"), ensure_ascii=False)
            answer = self.send("GET", PATH, params={"q": q}, subject="connection types")
            page = check_envelope(parse_json(answer, method="GET", path=PATH, scrub=self.scrub))
        except BlinkBadRequestError as err:
            if self.mode == KEYSET and self.last is not None:
                raise _Fallback(f"it refused the id condition: {err}", False) from None
            raise
        if page.offset not in (None, query["offset"]) and self.mode == KEYSET:
            raise _Fallback(f"it answered offset {page.offset} when asked for 0", True)
        if page.offset not in (None, query["offset"]):
            raise _unsupported(
                f"the server answered offset {page.offset} when asked for offset {query['offset']}; {_NEITHER}"
            )
        return page

    def _checked(self, query: dict[str, Any], limit: int) -> tuple[CataloguePage | None, bool]:
        """Return the next page, checked, and whether it ends the walk (None: nothing more to yield)."""
        page, number = self._answer(query), self.number + 1
        if page.limit is not None and 0 < page.limit < limit:
            self.served = page.limit  # the server's largest page
        del page.items[limit:]  # a server that ignores limit must not break max_items
        items = self._ordered(page.items, check_ids(page.items, number), number)
        total = page.total
        if total is not None and total < query["offset"] + len(page.items):
            self.log.warning("page %d: the server reports a total of %d, fewer than sent; ignored", number, total)
            total = None
        left = None if total is None else total - query["offset"] - len(page.items)
        ends = self._ends(page.items, left, limit, number)
        if page.items:
            self._advance(page, items, left)
        if ends:
            self._check_complete(total)
        if not page.items:
            return None, True
        shown = None if left is None else self.returned + left
        self._log_page(shown)
        return CataloguePage(items, number, self.returned, shown, self.mode), ends

    def _advance(self, page: Envelope, items: list[dict[str, Any]], left: int | None) -> None:
        """Move past a checked page whose new items are ``items``."""
        if self.mode == KEYSET and None not in (self.left, page.total) and page.total != self.left:
            changed = "the catalogue changed during the walk: the server reports %d connection types still to come"
            self.log.info(changed + ", %d were expected", page.total, self.left)
        self.offset += len(page.items)
        self.number, self.returned, self.left = self.number + 1, self.returned + len(items), left
        self.last = items[-1][KEY] if items else self.last
        if not self.query.sort:
            self._strip(items)

    def _strip(self, items: list[dict[str, Any]]) -> None:
        """Drop the members the walk asked for beyond the user's select (the id, the sort keys)."""
        for item in items if self.added else ():
            for name in self.added:
                item.pop(name, None)

    def _ordered(self, items: list[dict[str, Any]], ids: list[Any], number: int) -> list[dict[str, Any]]:
        """Return the page's new items, in id order after the last id returned (by offset: sorted and cut)."""
        if self.mode == KEYSET:
            _rising(ids, self.last, number)
            if not self.forgot:
                self.seen.update(ids)
                self.forgot = len(self.seen) > KEPT_IDS
                self.seen = set() if self.forgot else self.seen  # memory flat past KEPT_IDS
            return items
        order = sorted(range(len(ids)), key=lambda n: sort_value(ids[n]))
        fresh = [n for n in order if ids[n] not in self.seen]  # exactly the ids not yet returned
        if items and not fresh:
            again = f"only types already returned on page {number} (offset {self.offset})"
            raise _error(f"the server sent {again}; {_NEITHER}")
        self.seen.update(ids[n] for n in fresh)
        return [items[n] for n in fresh]  # in id order within the page

    def _ends(self, items: list[dict[str, Any]], left: int | None, limit: int, number: int) -> bool:
        """
        Return whether this page ends the walk.

        Only a short page that ``total`` agrees with does (a full page is confirmed by one more request).
        """
        more = left is not None and left > 0
        if more and not items:
            raise _error(f"the server sent an empty page {number} but reports {left} more connection types")
        if more and len(items) < min(limit, self.served):
            self.served = len(items)  # a page cut short without saying so: the server's largest
        return not items or len(items) < min(limit, self.served)

    def _check_complete(self, total: int | None) -> None:
        """After an offset walk: fewer distinct types than the server reported is an error."""
        if self.mode == OFFSET and self.max_items is None and total is not None and self.returned < total:
            why = "the catalogue changed during the walk, or the server's order is not stable from page to page"
            passed = f"the server reports {total}: {total - self.returned} were passed over ({why}); run the task again"
            raise _error(f"the offset walk returned {self.returned} distinct connection types, but {passed}")

    def _log_page(self, total: int | None) -> None:
        pages, shown = ("?", "?") if total is None else (max(self.number, math.ceil(total / self.page_size)), total)
        self.log.info("page %d/%s: %d of %s connection types", self.number, pages, self.returned, shown)
