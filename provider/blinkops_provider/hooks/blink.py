"""
The hook that talks to Blink's REST API.

The connection, the base URL, one request path (one retry policy, the key scrubbed from every error) and one method per
endpoint, a table's records among them: read by a walk that checks every page, and written one by one.

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

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

import requests
from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook, mask_secret
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import from_json

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
    BlinkResponseError,
)
from blinkops_provider.hooks import _walk
from blinkops_provider.hooks._batch import FieldUpdates, run_batch
from blinkops_provider.hooks._transport import (
    Answer,
    Clock,
    ConnectionSettings,
    Transport,
    in_workspace,
    once_each,
    parse_item,
    parse_json,
    parse_model,
    served,
)
from blinkops_provider.hooks._transport import readable as _readable
from blinkops_provider.hooks._walk import CataloguePage
from blinkops_provider.models import (
    BlinkTable,
    ConnectionType,
    ConnectionTypePage,
    CreatedTable,
    FieldBatch,
    FieldList,
    FieldUpdate,
    NewTable,
    TableField,
    TableList,
    TableRead,
    TableUpdate,
    Workflow,
    validate_field_updates,
)
from blinkops_provider.rql import connection_type_query
from blinkops_provider.utils.blink_api import API_PREFIX, MAX_LIMIT
from blinkops_provider.utils.inputs import (
    DEFAULT_UPDATE_CONCURRENCY,
    Timeout,
    check_concurrency,
    check_hook_options,
    check_paging,
    path_segment,
    validate_input,
)

DEFAULT_PAGE_SIZE = 500
"""Rows per page of a walk (Blink's largest page is 1000)."""

WORKFLOW_PAGE_SIZE = 100
"""Workflows per page of the workflows read: each carries its whole definition, so pages are smaller than rows'."""


class RecordPage(BaseModel):
    """One answer of TableFindRecord."""

    model_config = ConfigDict(extra="allow")

    results: list[dict[str, Any]]
    total: int | None = Field(default=None, ge=0)
    limit: int | None = Field(default=None, ge=0)
    offset: int | None = Field(default=None, ge=0)


def table_route(ws_id: str, table: str) -> str:
    return "/workspace/{}/table/{}".format(path_segment(ws_id, "ws_id"), path_segment(table, "table"))


def records_subject(ws_id: str, table: str) -> str:
    """Return what a records read is about, as its errors name it."""
    return f"the records of table {table!r} in workspace {ws_id!r}"


def record_route(ws_id: str, table: str, record_id: Any) -> str:
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)):
        raise BlinkInputError(f"record_id must be a record's id (text), got {type(record_id).__name__}")
    return f"{table_route(ws_id, table)}/{path_segment(str(record_id), 'record_id')}"


def check_where(where: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """
    Return a filter as Blink's query object takes it (``{}``: every row).

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


RECORD_ORDER = ("+id",)
"""The order every read of the rows asks for: by id. Paging by offset needs an order that a write does not change, and
Blink publishes no default order."""


def records_query(where: Mapping[str, Any], limit: int, offset: int) -> dict[str, str]:
    """Return the ``q`` parameter of one page."""
    body: dict[str, Any] = {"limit": limit, "offset": offset, "sort": list(RECORD_ORDER)}
    if where:
        body["filter"] = where
    return {"q": json.dumps(body, separators=(",", ":"), ensure_ascii=False)}


class RecordWalk:
    """
    The checks of a walk of every record matching a filter, page by page (the module says which).

    The hook sends each page and hands it to :meth:`checked`, then asks :meth:`ended`.

    :param route: the route read (named in errors).
    :param item: what one result is, as errors name it (``row``, or ``workflow`` in the workflows read).
    :param whole: what the walk lists, as errors name it.
    """

    def __init__(self, route: str, page_size: int, max_pages: int, item: str = "row", whole: str = "the table") -> None:
        self.route, self.page_size, self.max_pages = route, page_size, max_pages
        self.item, self.whole = item, whole
        self.total: int | None = None
        self.returned = 0
        self._last: set[Any] = set()

    def error(self, problem: str) -> BlinkResponseError:
        return BlinkResponseError(
            f"the {'records' if self.item == 'row' else self.item + 's'} read of {self.route} went wrong: {problem}. "
            "Nothing was counted or written from it",
            status=200,
            method="GET",
            path=self.route,
        )

    def checked(self, page: RecordPage, number: int) -> RecordPage:
        """Return the page, checked; its rows counted as returned."""
        self._check_paging(page, number)
        self._check_ids(page, number)
        self.returned += len(page.results)
        return page

    def _check_paging(self, page: RecordPage, number: int) -> None:
        """Check the limit and offset answered, the rows no more than asked, and the same ``total``."""
        asked = (self.page_size, self.returned)
        if (page.limit not in (None, asked[0])) or (page.offset not in (None, asked[1])):
            raise self.error(f"page {number} answered limit {page.limit} offset {page.offset}, asked {asked}")
        if len(page.results) > self.page_size:
            raise self.error(
                f"page {number} holds {len(page.results)} {self.item}s, more than the {self.page_size} asked"
            )
        if number == 1:
            self.total = page.total
        elif page.total != self.total:
            raise self.error(
                f"{self.whole} changed while it was read: {self.total} {self.item}s matched at the first page, "
                f"{page.total} at page {number} (a walk by offset would skip or double rows)"
            )

    def _check_ids(self, page: RecordPage, number: int) -> None:
        """Every row has an id, none twice in the page or in the page before."""
        ids = [row.get("id") for row in page.results]
        if any(isinstance(i, bool) or not isinstance(i, (str, int)) or i == "" for i in ids):
            raise self.error(f"page {number} holds a {self.item} without an id")
        seen = set(ids)
        if len(seen) != len(ids) or seen & self._last:
            raise self.error(f"page {number} repeats a {self.item} (a doubled walk)")
        self._last = seen

    def ended(self, page: RecordPage) -> bool:
        """Return whether the walk has every row (after :meth:`checked` of its last page)."""
        if self.total is None:
            return len(page.results) < self.page_size
        if self.returned > self.total:
            raise self.error(f"it returned {self.returned} {self.item}s where Blink said {self.total} (a doubled walk)")
        if self.returned == self.total:
            return True
        if len(page.results) < self.page_size:
            raise self.error(f"it ended at {self.returned} {self.item}s where Blink said {self.total} (a short walk)")
        return False


def counted_total(page: RecordPage, route: str, where: Mapping[str, Any] | None = None) -> int | None:
    """
    Return the exact count a one-row page gives (its ``total``, checked against the page), or None.

    :param where: the filter asked: a row answered that does not match it means the filter was not applied (a proxy
        that drops it, say), so the ``total`` is not the count asked for.
    """
    if page.total is None:
        return None
    problem = ""
    if len(page.results) != min(1, page.total):
        problem = f"said {page.total} rows but answered {len(page.results)} for a page of one"
    elif where and any(matches_filter(row, where) is False for row in page.results):
        problem = (
            f"answered a row that does not match the filter {json.dumps(where, ensure_ascii=False):.200} (the filter "
            f"was not applied), so its total {page.total} is not the count asked for"
        )
    if problem:
        raise BlinkResponseError(
            f"the records read of {route} {problem}. Nothing was counted", status=200, method="GET", path=route
        )
    return page.total


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda held, given: held == given,
    "$neq": lambda held, given: held != given,
    "$gt": lambda held, given: held > given,
    "$gte": lambda held, given: held >= given,
    "$lt": lambda held, given: held < given,
    "$lte": lambda held, given: held <= given,
}


def matches_filter(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool | None:
    """
    Return whether a row answered matches Blink's filter: True, False, or None when it cannot be told here.

    Equals and the comparisons of numbers, text and booleans are told; ``$like``, values of other kinds and
    operators Blink does not publish are not (None: never taken for a mismatch).
    """
    verdicts: list[bool | None] = []
    for key, condition in where.items():
        if key in ("$or", "$and") and isinstance(condition, list):
            inner = [matches_filter(row, part) if isinstance(part, Mapping) else None for part in condition]
            verdicts.append(_combined(inner, any_of=key == "$or"))
            continue
        predicates = condition if isinstance(condition, Mapping) else {"$eq": condition}
        verdicts += [_compared(row.get(key), operator, given) for operator, given in predicates.items()]
    return _combined(verdicts, any_of=False)


def _combined(verdicts: list[bool | None], *, any_of: bool) -> bool | None:
    """Return ``verdicts`` ORed (``any_of``) or ANDed, None where an unknown one could decide."""
    decided = [verdict for verdict in verdicts if verdict is not None]
    if any_of:
        return True if any(decided) else (None if len(decided) < len(verdicts) or not verdicts else False)
    return False if not all(decided) else (None if len(decided) < len(verdicts) else True)


def _compared(held: Any, operator: str, given: Any) -> bool | None:
    """Return one predicate of a row's value: None when it cannot be told (an unknown operator, mixed kinds)."""
    compare = _COMPARE.get(operator)
    scalars = (str, int, float, bool)
    if compare is None or not isinstance(given, scalars) or not isinstance(held, (*scalars, type(None))):
        return None
    if held is None:
        return operator == "$neq"  # (an empty value matches no comparison, as in SQL, but "not equal")
    if isinstance(held, str) != isinstance(given, str) or isinstance(held, bool) != isinstance(given, bool):
        return None  # (a number held as text, say: Blink may compare them its own way)
    try:
        return bool(compare(held, given))
    except TypeError:
        return None


def checked_record(answer: Any, record_id: Any, method: str, route: str) -> dict[str, Any]:
    """Return a record answered for ``record_id``: a JSON object whose ``id`` is that id."""
    if not isinstance(answer, dict) or str(answer.get("id")) != str(record_id):
        said = "not a JSON object" if not isinstance(answer, dict) else "another record's id, or none"
        raise BlinkResponseError(
            f"the answer for record {record_id!r} is {said} (unknown: this may not be Blink's answer)",
            status=200,
            method=method,
            path=route,
        )
    return answer


SYSTEM_MEMBERS = ("id", "created_at", "created_by", "updated_at", "updated_by")
"""Blink's own members of a record: Blink sets them, a write leaves them out."""


def record_body(record: Any) -> dict[str, Any]:
    """
    Return a record's body as a write sends it: the table's fields only, every value JSON.

    :raises BlinkInputError: not an object of field names, or a value JSON cannot carry (NaN, an infinity, a set, an
        object), before any request.
    """
    if not isinstance(record, Mapping) or not all(isinstance(key, str) for key in record):
        raise BlinkInputError(f"record must be an object of field names and values, got {type(record).__name__}")
    body = {key: value for key, value in record.items() if key not in SYSTEM_MEMBERS}
    for key, value in body.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise BlinkInputError(
                f"record value of {key!r} is not a JSON value ({type(value).__name__} {value!r:.40}): a record's "
                "values are text, numbers (finite), booleans, lists and objects of them, or null"
            ) from None
    return body


def accepted_record(answer: Answer, record_id: Any) -> dict[str, Any]:
    """
    Return what a record write's 2xx said: the record when it is that record, else ``{}`` (accepted, not read).

    Blink publishes the answer as a string (``"ok"``); any body of a 2xx is taken as "accepted", never as an error.
    """
    try:
        said = from_json(answer.body or b"")
    except (ValueError, RecursionError):
        return {}
    if isinstance(said, dict) and str(said.get("id")) == str(record_id):
        return said
    return {}


__all__ = ["BlinkHook", "CataloguePage", "Clock", "ConnectionSettings", "FieldUpdates"]

ModelT = TypeVar("ModelT", bound=BaseModel)

Filter = Mapping[str, Any] | str
"""An RQL filter, or its JSON text."""
Names = Sequence[str] | str
"""Field names, or one string of them (a JSON array or comma-separated)."""


def _check_whole_table(members: Mapping[str, Any], count: int, what: str) -> None:
    """
    Check that a fields read is the whole table.

    Blink's own tool reads a table's fields in one call, so a partial answer must not be read as the whole table.

    :raises BlinkResponseError: an answer that says it is one page of more (a ``total`` above what it holds, a
        ``next``, ``has_more``).
    """
    total = members.get("total")
    counted = isinstance(total, int) and not isinstance(total, bool) and total > count
    more = [f"total {total}"] if counted else []
    more += [f"{key} {members[key]!r}" for key in ("next", "next_page", "has_more", "cursor") if members.get(key)]
    if more:
        raise BlinkResponseError(
            f"the answer to the read of {what} holds {count} fields but says it is partial ({', '.join(more)}): "
            "a table's fields are read in one call, so the plan would be made against part of the table. "
            "Nothing was sent"
        )


ItemT = TypeVar("ItemT")


def _the_one_found(found: list[ItemT], said: str, status: int, method: str, path: str) -> ItemT:
    """
    Return the one thing a read after a write found.

    :raises BlinkResponseError: ``said``, when the read found none or several: what was written
        cannot be told.
    """
    if len(found) != 1:
        raise BlinkResponseError(f"{said}: what it wrote cannot be told", status=status, method=method, path=path)
    return found[0]


def _named_object(answer: Any, member: str) -> dict[str, Any] | None:
    """Return the object an answer names (``{member: {...}}`` or the object itself), when it has a ``name``."""
    if isinstance(answer, dict) and isinstance(answer.get(member), dict):
        answer = answer[member]
    return answer if isinstance(answer, dict) and isinstance(answer.get("name"), str) and answer["name"] else None


class BlinkHook(BaseHook):
    """
    Calls Blink's REST API with an API key held in an Airflow connection.

    The connection (type ``blink``): host is the base URL (``https://app.blinkops.com`` when
    empty; ``/api/v1`` is added when missing), password is the API key, and the extras
    ``header_name`` (default ``BLINK-API-KEY``), ``verify_ssl`` (default true) and ``timeout``
    (seconds) tune the requests. Nothing is read before the first call.

    :param blink_conn_id: the Airflow connection to use.
    :param timeout: seconds, or a ``(connect, read)`` pair, for every request; defaults to the
        connection's ``timeout`` extra, else 10 s to connect and 60 s to read. One attempt may
        take connect + read seconds in all (twice a single number). No redirect is followed.
    :param retry_limit: attempts per call (1: no retry) for 429, 5xx, connection errors and timeouts.
    :param retry_delay: first backoff wait in seconds, doubled per attempt, with jitter;
        a ``Retry-After`` header overrides it.
    """

    conn_name_attr = "blink_conn_id"
    default_conn_name = "blink_default"
    conn_type = "blink"
    hook_name = "Blink"

    max_pages: ClassVar[int] = 100_000
    """A listing walk stops with an error after this many pages, whatever the server says."""

    def __init__(
        self,
        blink_conn_id: str = default_conn_name,
        *,
        timeout: Timeout | None = None,
        retry_limit: int = 3,
        retry_delay: float = 1.0,
        clock: Clock | None = None,
        session_factory: Callable[[], requests.Session] = requests.Session,
    ) -> None:
        super().__init__()
        self.timeout, self.retry_limit, self.retry_delay = check_hook_options(timeout, retry_limit, retry_delay)
        self.blink_conn_id = blink_conn_id
        self.clock = clock or Clock()
        self.session_factory = session_factory
        self._testing_as: str | None = None  # how test_connection names the connection in messages

    # -- connection --------------------------------------------------------------------------

    @cached_property
    def settings(self) -> ConnectionSettings:
        """The connection as this hook reads it, on first use (its repr never shows the API key)."""
        who = self._testing_as
        try:
            connection = self.get_connection(self.blink_conn_id)
        except AirflowNotFoundException:
            raise BlinkConfigurationError(
                f"the connection {self.blink_conn_id!r} does not exist; create it (type blink: the Base URL as "
                "host, the API key as password) or give blink_conn_id the id of one that does"
            ) from None
        settings = ConnectionSettings.from_connection(connection, self.timeout, who)
        mask_secret(settings.api_key)
        return settings

    @cached_property
    def _transport(self) -> Transport:
        """The request path every call of this hook goes through (read from the connection on first use)."""
        return Transport(
            self.settings,
            retry_limit=self.retry_limit,
            retry_delay=self.retry_delay,
            log=self.log,
            clock=self.clock,
            session_factory=self.session_factory,
        )

    def _connected(self) -> Transport:
        """Return the request path, made from the connection now if it is not yet (a broken one fails here)."""
        return self._transport

    @property
    def rate_limited(self) -> int:
        """The rate-limit (429) answers this hook's calls met so far (0 before its first call)."""
        return self._transport.pause.rate_limited if "_transport" in self.__dict__ else 0

    @property
    def base_url(self) -> str:
        """The API's base URL, ending in ``/api/v1``."""
        return self.settings.base_url

    def table_page(self, ws_id: str, table: str) -> str:
        """
        Return where Blink's UI shows the table.

        The connection's extra ``table_page`` on the base URL's host (names percent-encoded), or Blink's UI at that
        host's root when it has none (Blink publishes no address for a table's page). No request is sent.
        """
        origin = self.base_url.removesuffix(API_PREFIX)
        page = self.settings.table_page
        if not page:
            return f"{origin}/"
        return origin + page.format(ws_id=quote(str(ws_id), safe=""), table=quote(str(table), safe=""))

    def get_conn(self) -> requests.Session:
        """Return the calling thread's HTTP session, which this hook's calls go through (each thread has its own)."""
        return self._transport.session()

    def close(self) -> None:
        """Release the HTTP sessions' sockets; the hook opens new ones when used again."""
        if "_transport" in self.__dict__:
            self._transport.close()

    def _parsed(self, answer: Answer, model: type[ModelT], method: str, path: str) -> ModelT:
        """
        Return an answer's body as ``model`` (else a :class:`~blinkops_provider.exceptions.BlinkResponseError`).

        Each endpoint sends on the request path itself (:meth:`Transport.send`), then parses here.
        """
        return parse_model(answer, model, method=method, path=path, scrub=self._transport.scrub)

    # -- endpoints ------------------------------------------------------------------------

    def update_table_field(
        self, ws_id: str, table: str, field: str, update: FieldUpdate | Mapping[str, Any]
    ) -> TableField:
        """
        Replace the settings of a table field (``PUT /workspace/{ws_id}/table/{table}/fields/{field}``).

        The body is sent as given: Blink replaces the whole field, so it resets every member and
        attribute the update leaves out (``required`` and ``is_unique`` among them) and refuses
        type changes. The operators send the declaration merged with the field as Blink holds it
        (the migrations make that body).

        :returns: the field as Blink stored it.
        :raises BlinkInputError: an empty name or an invalid update, before any request.
        :raises BlinkBadRequestError: Blink refused the update (400);
            :class:`~blinkops_provider.exceptions.BlinkAuthError` the key (401), or its user has no
            role in the workspace (403); :class:`~blinkops_provider.exceptions.BlinkNotFoundError`
            no such field (404).
        """
        checked = validate_input(FieldUpdate, update, "field update")
        return self._put_field(ws_id, table, field, checked)

    def _put_field(self, ws_id: str, table: str, field: str, update: FieldUpdate) -> TableField:
        path = "/workspace/{}/table/{}/fields/{}".format(
            path_segment(ws_id, "ws_id"), path_segment(table, "table"), path_segment(field, "field")
        )
        with in_workspace(self.blink_conn_id, ws_id):
            answer = self._transport.send(
                "PUT", path, json=update.to_body(), subject=f"field {field!r} of table {table!r} in workspace {ws_id!r}"
            )
        return self._parsed(answer, TableField, "PUT", path)

    def list_tables(self, ws_id: str) -> list[BlinkTable]:
        """
        Return the tables of a workspace (``GET /workspace/{ws_id}/tables``); ``name`` is what the field paths take.

        :raises BlinkReadUnavailableError: 404 or 405: no such workspace, or this Blink does not
            serve the read.
        :raises BlinkResponseError: the answer is not a list of tables, or names one twice.
        """
        path = f"/workspace/{path_segment(ws_id, 'ws_id')}/tables"
        subject = f"the tables of workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), _readable(subject):
            answer = self._transport.send("GET", path, subject=subject)
        tables = self._parsed(answer, TableList, "GET", path).results
        once_each([table.name for table in tables], "table", method="GET", path=path)
        return tables

    def get_table_fields(self, ws_id: str, table: str) -> list[TableField]:
        """
        Return the fields of a table as Blink holds them (``GET /workspace/{ws_id}/table/{table}/fields``).

        Blink's system fields included, every type and attribute kept.

        :raises BlinkNotFoundError: Blink's tables read says the workspace has no such table.
        :raises BlinkReadUnavailableError: 404 or 405 while the table is there (or its absence
            cannot be read): this Blink does not serve the read.
        :raises BlinkResponseError: the answer is not a list of fields, or names one twice.
        """
        path = "/workspace/{}/table/{}/fields".format(path_segment(ws_id, "ws_id"), path_segment(table, "table"))
        subject = f"the fields of table {table!r} in workspace {ws_id!r}"
        try:
            with in_workspace(self.blink_conn_id, ws_id), _readable(subject):
                fields = self._parsed(self._transport.send("GET", path, subject=subject), FieldList, "GET", path)
        except BlinkReadUnavailableError as err:
            if err.status != 404 or not self._missing_table(ws_id, table):
                raise
            missing = f"no table {table!r} in workspace {ws_id!r} (Blink's tables read does not list it)"
            raise err.restated(missing, BlinkNotFoundError, details=None, hint=None) from None
        _check_whole_table(fields.model_extra or {}, len(fields.results), f"{subject} (GET {path})")
        once_each([field.name for field in fields.results if field.name is not None], "field", method="GET", path=path)
        return fields.results

    def _missing_table(self, ws_id: str, table: str) -> bool:
        """Return whether Blink's tables read shows ``table`` is not in the workspace (False: unread)."""
        try:
            return table not in {entry.name for entry in self.list_tables(ws_id)}
        except BlinkReadUnavailableError:
            return False

    def read_table(self, ws_id: str, table: str, *, tables: bool = True) -> TableRead:
        """
        Return a table as Blink holds it, in one round trip.

        Its fields (:meth:`get_table_fields`, on the calling thread, whose connection is kept for the
        calls after) and, with ``tables``, the workspace's tables (:meth:`list_tables`, on a thread of
        its own), the two reads sent at once.

        A read Blink does not serve (404 or 405) is not an error here: :class:`~blinkops_provider.models.TableRead` says
        which read was not served, and whether the table is missing.

        :raises BlinkResponseError: an answer that is not Blink's (as the two reads say).
        """
        self._connected()  # (before two threads use it)
        with ThreadPoolExecutor(1, thread_name_prefix="blink-reads") as pool:  # (no thread unless tables)
            listed = pool.submit(self._tables_or_none, ws_id) if tables else None
            try:
                read = TableRead(fields=self.get_table_fields(ws_id, table))
            except BlinkNotFoundError:
                read = TableRead(missing=True)
            except BlinkReadUnavailableError as err:
                read = TableRead(unread=str(err.status))
            return dataclasses.replace(read, tables=listed.result() if listed is not None else None)

    def _tables_or_none(self, ws_id: str) -> list[BlinkTable] | None:
        """Return the workspace's tables, or None when Blink does not serve the read."""
        try:
            return self.list_tables(ws_id)
        except BlinkReadUnavailableError:
            return None

    def update_table_fields(
        self,
        ws_id: str,
        table: str,
        updates: Mapping[str, FieldUpdate | Mapping[str, Any]] | Sequence[Mapping[str, Any]] | FieldBatch | str,
        *,
        max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
        fail_fast: bool = False,
    ) -> FieldUpdates:
        """
        Send many field updates to one table, ``max_concurrency`` at a time.

        Each as given (see :meth:`update_table_field`; a migration, with its plan, lock and record, is
        :func:`blinkops_provider.migrations.apply_schema`).

        Every update is checked before the first is sent; one that fails does not stop the others
        (unless ``fail_fast``: no new update starts then). The workers share the hook's retry
        policy and one backoff: a ``Retry-After`` pauses every worker.

        :param updates: ``{field name: update}``, or declared-schema entries ``{"field": name,
            "type": ..., "display_name": ..., "attributes": {...}}``, or the JSON text of either.
        :param max_concurrency: updates in flight at once, 1 to 32 (16 was measured best: README,
            Benchmarks). Lower it for a tenant with a tight rate limit.
        :returns: the updated fields and the failed ones, in the given order; an exception that
            interrupts the batch carries what was known then
            (as ``exc.field_updates``).
        :raises BlinkInputError: an invalid name, update, duplicate field or ``max_concurrency``,
            listing every problem, before any request.
        """
        path_segment(ws_id, "ws_id")
        path_segment(table, "table")
        check_concurrency(max_concurrency)
        batch = validate_field_updates(updates)
        self._connected()  # (a broken connection fails once, here, not once per field)
        return run_batch(
            batch,
            lambda name, update: self._put_field(ws_id, table, name, update),
            max_concurrency=max_concurrency,
            fail_fast=fail_fast,
            log=self.log,
        )

    def create_table_field(
        self, ws_id: str, table: str, body: FieldUpdate | Mapping[str, Any], *, read_unnamed: bool = True
    ) -> TableField | None:
        """
        Add a field to a table (``POST /workspace/{ws_id}/table/{table}/fields``).

        The body is ``{display_name, description, type, attributes}``, with no name: Blink derives
        the new field's ``name`` from its display name, by a rule of its own. The field is
        returned with that name, taken from Blink's answer or, when the answer does not give it,
        from one read of the table's fields (the one field shown as ``display_name``); with
        ``read_unnamed=False``, None then (a caller adding many fields reads the table once for
        all of them). Only a refused connection or a 429 is retried: a second POST after a lost
        answer could add a second field.

        :raises BlinkInputError: an empty name, or a body without ``type`` and ``display_name``,
            before any request.
        :raises BlinkBadRequestError: Blink refused the field (400), e.g. a select without options.
        :raises BlinkNotFoundError: 404 or 405: no such table, or this Blink does not serve the route.
        :raises BlinkResponseError: the answer does not name the field, and the fields read shows
            no single field with its display name.
        """
        update = validate_input(FieldUpdate, body, "new field")
        if update.type is None or update.display_name is None:
            raise BlinkInputError("invalid new field: type and display_name are required (Blink derives the name)")
        route = "/workspace/{}/table/{}/fields".format(path_segment(ws_id, "ws_id"), path_segment(table, "table"))
        subject = f"a new field {update.display_name!r} of table {table!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("POST", route):
            answer = self._transport.send("POST", route, json=update.to_body(), subject=subject)
        made = _named_object(self._write_answer_json(answer, "POST", route), "field")
        if made is not None:
            return TableField.model_validate(made)
        if not read_unnamed:
            return None
        shown = [field for field in self.get_table_fields(ws_id, table) if field.display_name == update.display_name]
        said = f"Blink added {subject} (a 2xx) without naming it, and its fields read shows {len(shown)} shown so"
        return _the_one_found(shown, said, answer.status, "POST", route)

    def delete_table_field(self, ws_id: str, table: str, field: str) -> None:
        """
        Remove a field and its values in every row of the table.

        Irreversibly (``DELETE /workspace/{ws_id}/table/{table}/fields/{field}``). Blink refuses it for its own
        ``system`` and ``protected`` fields. A migration removes a field only when the removal was approved in review or
        acknowledged (:func:`blinkops_provider.migrations.apply_schema`).

        :raises BlinkBadRequestError: Blink refused the removal (400).
        :raises BlinkNotFoundError: 404 or 405: no such field, or this Blink does not serve the route.
        """
        route = "/workspace/{}/table/{}/fields/{}".format(
            path_segment(ws_id, "ws_id"), path_segment(table, "table"), path_segment(field, "field")
        )
        subject = f"field {field!r} of table {table!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("DELETE", route):
            self._transport.send("DELETE", route, subject=subject)

    def create_table(self, ws_id: str, body: NewTable | Mapping[str, Any]) -> BlinkTable:
        """
        Create a table with its fields (``POST /workspace/{ws_id}/table``).

        The body is ``{display_name, description, options, fields}``: Blink derives the table's
        ``name`` (and its fields' names) from the display names. The answer is ``{"table": {...}}``;
        when it does not name the table, one read of the workspace's tables finds it by its
        display name. Only a refused connection or a 429 is retried.

        :raises BlinkInputError: an invalid body, before any request.
        :raises BlinkBadRequestError: Blink refused the table (400).
        :raises BlinkNotFoundError: 404 or 405: no such workspace, or this Blink does not serve the route.
        """
        new = validate_input(NewTable, body, "new table")
        route = f"/workspace/{path_segment(ws_id, 'ws_id')}/table"
        subject = f"a new table {new.display_name!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("POST", route):
            answer = self._transport.send("POST", route, json=new.to_body(), subject=subject)
        made = _named_object(self._write_answer_json(answer, "POST", route), "table")
        if made is not None:
            return CreatedTable.model_validate({"table": made}).table
        return self._table_shown_as(ws_id, new.display_name, answer.status, route)

    def update_table(self, ws_id: str, table: str, body: TableUpdate | Mapping[str, Any]) -> BlinkTable:
        """
        Edit a table's display name and description (``PUT /workspace/{ws_id}/table/{table}``).

        The body is ``{display_name, description, settings}``. Blink's own tool sends ``settings``
        back as Blink holds them (``GET .../tables``): so does a migration.

        :returns: the table as Blink answered it, or as its tables read then lists it.
        :raises BlinkInputError: an invalid body, before any request.
        :raises BlinkResponseError: the answer is not Blink's and the tables read does not show the
            change (``unknown``: a proxy's page answered, say).
        :raises BlinkNotFoundError: 404 or 405: no such table, or this Blink does not serve the route.
        """
        update = validate_input(TableUpdate, body, "table update")
        route = "/workspace/{}/table/{}".format(path_segment(ws_id, "ws_id"), path_segment(table, "table"))
        subject = f"table {table!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("PUT", route):
            answer = self._transport.send("PUT", route, json=update.to_body(), subject=subject)
        made = _named_object(self._write_answer_json(answer, "PUT", route), "table")
        if made is not None:
            return CreatedTable.model_validate({"table": made}).table
        shown = (update.display_name, update.description or "")
        listed = [
            entry
            for entry in self.list_tables(ws_id)
            if entry.name == table and (entry.display_name, entry.description or "") == shown
        ]
        said = (
            f"{subject} answered a 2xx that is not Blink's answer, and its tables read lists {len(listed)} named so "
            f"with the display name and description sent (unknown: the change may not have reached Blink)"
        )
        return _the_one_found(listed, said, answer.status, "PUT", route)

    def _write_answer_json(self, answer: Any, method: str, route: str) -> Any:
        """
        Return a write's 2xx answer as JSON.

        Or None when it is empty or not JSON (Blink's own tool does not read it: what was written is then found by a
        read).
        """
        try:
            return (
                parse_json(answer, method=method, path=route, scrub=self._transport.scrub)
                if answer.body.strip()
                else None
            )
        except BlinkResponseError:
            return None

    def _table_shown_as(self, ws_id: str, display_name: str, status: int, route: str) -> BlinkTable:
        """Return the one table of ``ws_id`` shown as ``display_name`` (after a POST whose answer did not name it)."""
        shown = [entry for entry in self.list_tables(ws_id) if entry.display_name == display_name]
        said = f"Blink created table {display_name!r} (a 2xx) without naming it, and its tables read shows {len(shown)}"
        return _the_one_found(shown, f"{said} shown so", status, "POST", route)

    def list_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        limit: int = MAX_LIMIT,
        offset: int = 0,
    ) -> ConnectionTypePage:
        """
        Return one page of the connection-type catalogue (``GET /connection_types?q=<RQL>``).

        :raises BlinkInputError: an invalid RQL query, before any request.
        """
        query = connection_type_query(filter=filter, sort=sort, select=select, limit=limit, offset=offset)
        answer = self._transport.send(
            "GET", "/connection_types", params={"q": query.to_param()}, subject="connection types"
        )
        return self._parsed(answer, ConnectionTypePage, "GET", "/connection_types")

    def walk_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
    ) -> Iterator[CataloguePage]:
        """
        Return every page of the catalogue, exactly, with the items as plain dicts (no model per item).

        What the operators use. Each item is the JSON object Blink sent, unknown members
        included. The walk pages by id and is exact while the catalogue changes; a ``sort`` is
        applied by the client once every page is in; every page is checked against what was asked
        (see the docs' Troubleshooting page for what a failed check says). A server that stops
        honouring the id condition is walked on by offset, the ids already returned dropped: the walk
        keeps up to 50,000 of them; past that it keeps none (its memory stays flat), and such a
        server then fails the walk instead of risking doubles.

        :raises BlinkInputError: an invalid query, page size or ``max_items``, before any request.
        :raises BlinkResponseError: a page that is not ``{"results": [object, ...], ...}``.
        :raises BlinkApiError: the server repeats a page, ignores paging or the id order, or the
            walk passes :attr:`max_pages`.
        """
        check_paging(page_size, max_items)
        query = connection_type_query(filter=filter, sort=sort, select=select)  # checked once, before any request
        walk = _walk.CatalogueWalk(
            query=query,
            send=self._transport.send,
            scrub=self._transport.scrub,
            page_size=page_size,
            max_items=max_items,
            max_pages=self.max_pages,
            log=self.log,
        )
        return walk.pages()

    def iter_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
    ) -> Iterator[ConnectionType]:
        """
        Yield every connection type matching the query, in order.

        As typed models (see :meth:`walk_connection_types`, which skips the models).

        :raises BlinkResponseError: an item that is not a connection type, naming its page and position.
        """
        scrub = self._transport.scrub
        pages = self.walk_connection_types(
            filter=filter, sort=sort, select=select, page_size=page_size, max_items=max_items
        )
        for page in pages:
            for n, item in enumerate(page.items):
                where = f"page {page.number}, results[{n}]"
                yield parse_item(item, ConnectionType, where, what="connection types", path=_walk.PATH, scrub=scrub)

    # -- table records -------------------------------------------------------------------

    def iter_records(
        self,
        ws_id: str,
        table: str,
        *,
        where: Mapping[str, Any] | str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Iterator[dict[str, Any]]:
        """
        Return every record of a table matching ``where``.

        As Blink sends it (a JSON object: ``id``, Blink's ``created_*``/``updated_*`` members and one member per field
        that holds a value), read page by page (``GET /workspace/{ws_id}/table/{table}?q=...``, ``limit``/``offset``).

        Each page is checked against what was asked, and the walk's end against Blink's
        ``total``: a short or doubled walk, or a table whose row count changes during the walk,
        is an error, never a silently wrong list. Memory stays flat however many rows there are.

        :param where: Blink's filter, e.g. ``{"Severity": "High"}`` or ``{"Impact": {"$gt": 5}}``
            (``$or``/``$and`` as in RQL); None for every row.
        :param page_size: rows per request, 1 to 1000.
        :raises BlinkInputError: a ``where`` that is not a JSON object, or a wrong page size, before any request.
        :raises BlinkReadUnavailableError: 404 or 405: no such table, or this Blink does not serve the read.
        :raises BlinkResponseError: a page that is not Blink's answer, or a short or doubled walk.
        """
        condition = check_where(where)
        size = check_page_size(page_size)
        return self._walk_records(ws_id, table, condition, size)  # (checked now, before the first page is asked)

    def _walk_records(self, ws_id: str, table: str, where: Mapping[str, Any], size: int) -> Iterator[dict[str, Any]]:
        """Yield the pages of :meth:`iter_records`, each sent from here and checked by a :class:`RecordWalk`."""
        route, subject = table_route(ws_id, table), records_subject(ws_id, table)
        walk = RecordWalk(route, size, self.max_pages)
        for number in range(1, self.max_pages + 1):
            with in_workspace(self.blink_conn_id, ws_id), _readable(subject):
                answer = self._transport.send(
                    "GET", route, params=records_query(where, size, walk.returned), subject=subject
                )
            page = walk.checked(self._parsed(answer, RecordPage, "GET", route), number)
            yield from page.results
            if walk.ended(page):
                return
        raise walk.error(f"it did not end within {self.max_pages} pages")

    # -- workflows ------------------------------------------------------------------------

    def iter_workflows(self, ws_id: str, *, page_size: int = WORKFLOW_PAGE_SIZE) -> Iterator[Workflow]:
        """
        Return every workflow of a workspace (Blink's playbooks), each with its definition.

        Read page by page (``GET /workspace/{ws_id}/playbooks?q={"limit","offset"}``, PlaybookFindByFilter) through
        the one request path; each page is checked against what was asked and the walk's end against Blink's
        ``total``, like the records read: a short or doubled walk, or a list that changes during the walk, is an
        error, never a silently wrong list. One page is held at a time, so memory stays flat.

        :param page_size: workflows per request, 1 to 1000.
        :raises BlinkInputError: a wrong page size, before any request.
        :raises BlinkReadUnavailableError: 404 or 405: this Blink (or a proxy) does not serve the read.
        :raises BlinkAuthError: 403: the key's user may not read the workspace's workflows.
        :raises BlinkResponseError: a page that is not Blink's answer, an item that is not a workflow, or a short or
            doubled walk.
        """
        size = check_page_size(page_size)
        return self._walk_workflows(ws_id, size)  # (checked now, before the first page is asked)

    def _walk_workflows(self, ws_id: str, size: int) -> Iterator[Workflow]:
        route = "/workspace/{}/playbooks".format(path_segment(ws_id, "ws_id"))
        subject = f"the workflows of workspace {ws_id!r}"
        walk = RecordWalk(route, size, self.max_pages, item="workflow", whole="the list of workflows")
        scrub = self._transport.scrub
        for number in range(1, self.max_pages + 1):
            query = json.dumps({"limit": size, "offset": walk.returned}, separators=(",", ":"))
            with in_workspace(self.blink_conn_id, ws_id), _readable(subject):
                answer = self._transport.send("GET", route, params={"q": query}, subject=subject)
            page = walk.checked(self._parsed(answer, RecordPage, "GET", route), number)
            for n, item in enumerate(page.results):
                where = f"page {number}, results[{n}]"
                yield parse_item(item, Workflow, where, what="workflows", path=route, scrub=scrub)
            if walk.ended(page):
                return
        raise walk.error(f"it did not end within {self.max_pages} pages")

    def count_records(self, ws_id: str, table: str, where: Mapping[str, Any] | str | None = None) -> int:
        """
        Return how many records of a table match ``where``, exactly.

        Blink's ``total`` for one page of one row (one request), or, when Blink gives no ``total``, a count of every
        matching row (:meth:`iter_records`).

        :raises BlinkInputError: a ``where`` that is not a JSON object, before any request.
        :raises BlinkReadUnavailableError: 404 or 405: no such table, or this Blink does not serve the read.
        """
        condition = check_where(where)
        route, subject = table_route(ws_id, table), records_subject(ws_id, table)
        with in_workspace(self.blink_conn_id, ws_id), _readable(subject):
            answer = self._transport.send("GET", route, params=records_query(condition, 1, 0), subject=subject)
        counted = counted_total(self._parsed(answer, RecordPage, "GET", route), route, condition)
        if counted is not None:
            return counted
        return sum(1 for _ in self.iter_records(ws_id, table, where=condition))

    def get_record(self, ws_id: str, table: str, record_id: str) -> dict[str, Any]:
        """
        Return one record (``GET /workspace/{ws_id}/table/{table}/{record_id}``), checked to be the one asked for.

        :raises BlinkNotFoundError: no such record (or table).
        :raises BlinkResponseError: the answer is not that record.
        """
        route = record_route(ws_id, table, record_id)
        subject = f"record {record_id!r} of table {table!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("GET", route):
            answer = self._transport.send("GET", route, subject=subject)
        said = parse_json(answer, method="GET", path=route, scrub=self._transport.scrub)
        return checked_record(said, record_id, "GET", route)

    def update_record(self, ws_id: str, table: str, record_id: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """
        Replace a record (``PUT /workspace/{ws_id}/table/{table}/{record_id}``) with ``record``, sent whole.

        Blink empties every field the body leaves out, so send the record as just read (:meth:`get_record`), changed
        where meant. Blink's update has no version check: a change made between that read and this write is overwritten.
        Blink's own members (``id``, ``created_at``/``created_by``, ``updated_at``/``updated_by``) are Blink's to set:
        they are left out of the body sent.

        Blink's published answer to the update is a string (``"ok"``): it says the write was accepted, not what was
        stored. So a 2xx is never read as the stored record: confirm what was stored by reading it
        (:meth:`get_record`, or the next walk of the rows).

        :returns: the record as Blink answered it when the answer is that record (the sandbox's older answer), else
            ``{}`` (Blink's published answer: accepted, not yet read).
        :raises BlinkInputError: ``record`` is not an object of JSON values (NaN, infinities, sets, objects that are not
            JSON), before any request.
        :raises BlinkBadRequestError: Blink refused it (400): a required field empty, a unique
            value taken, an option not offered.
        """
        body = record_body(record)
        route = record_route(ws_id, table, record_id)
        subject = f"record {record_id!r} of table {table!r} in workspace {ws_id!r}"
        with in_workspace(self.blink_conn_id, ws_id), served("PUT", route):
            answer = self._transport.send("PUT", route, json=body, subject=subject)
        return accepted_record(answer, record_id)

    def check_key(self) -> None:
        """
        Check, with one small listing.

        That Blink accepts the connection's API key (a plan sends nothing else, so without this a wrong key would be
        found only after review).

        :raises BlinkAuthError: Blink refused the key (401 or 403), naming the connection and what to fix.
        """
        self.list_connection_types(limit=1)

    # -- Airflow UI ---------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """
        Check the connection with a one-item listing (the UI's Test button).

        The messages name the form's fields, not the connection id: Airflow tests a connection
        under a random temporary id, which would mean nothing to the user.
        """
        self._testing_as = "the connection"
        try:
            page = self.list_connection_types(limit=1)
        except (BlinkConfigurationError, BlinkApiError) as err:
            return False, str(err)  # (the request path's advice included)
        total = page.total if page.total is not None else len(page.results)
        return True, f"Connected to {self.base_url}: {total} connection types visible."

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Return how the Airflow 2 UI shows the connection form (Airflow 3 reads the provider info)."""
        from blinkops_provider.hooks._connection_form import ui_field_behaviour

        return ui_field_behaviour()

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """Return the extra fields of the Airflow 2 connection form."""
        from blinkops_provider.hooks._connection_form import connection_form_widgets

        return connection_form_widgets()
