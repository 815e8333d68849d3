"""A fake connection-type listing for requests-mock that evaluates RQL like the sandbox does.

It answers every query from a list of items with the brute-force evaluator of
``tests/sandbox/reference.py``, so keyset pages are right, and it can misbehave on demand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.sandbox.reference import evaluate


def sent_query(request: Any) -> dict[str, Any]:
    """The RQL object a request carried in ``q``."""
    (q,) = parse_qs(urlsplit(request.url).query)["q"]
    return json.loads(q)


class FakeListing:
    """``m.get(LIST_URL, json=FakeListing(items))``.

    :ivar before_request: ``{n: change}``: ``change(items)`` runs before the n-th request
        (1-based) is answered, to change the catalogue between pages.
    :ivar ignore_position: answer every request as if it had no filter (a server that ignores
        the walk's position).
    :ivar echo_offset: the offset to answer with instead of the one sent.
    :ivar ignore_limit: answer every matching item, whatever the limit.
    :ivar report_total: whether pages carry ``total``.
    :ivar total_override: totals to report, request by request, instead of the real ones.
    """

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.requests: list[dict[str, Any]] = []
        self.before_request: dict[int, Callable[[list[dict[str, Any]]], None]] = {}
        self.ignore_position = False
        self.echo_offset: int | None = None
        self.ignore_limit = False
        self.report_total = True
        self.total_override: list[int] = []
        self._lock = threading.Lock()  # one request at a time, as a database transaction would

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        with self._lock:
            return self._answer(request)

    def _answer(self, request: Any) -> dict[str, Any]:
        q = sent_query(request)
        self.requests.append(q)
        change = self.before_request.get(len(self.requests))
        if change is not None:
            change(self.items)
        flt = None if self.ignore_position else q.get("filter")
        matching = evaluate(self.items, flt, q.get("sort"), q.get("select"))
        offset = q.get("offset", 0)
        rows = matching[offset:] if self.ignore_limit else matching[offset : offset + q.get("limit", 100)]
        page: dict[str, Any] = {
            "limit": q.get("limit"),
            "offset": offset if self.echo_offset is None else self.echo_offset,
            "results": rows,
        }
        if self.report_total:
            page["total"] = self.total_override.pop(0) if self.total_override else len(matching)
        return page
