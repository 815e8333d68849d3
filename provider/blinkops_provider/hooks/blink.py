"""The hook that talks to Blink's REST API."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any, ClassVar, TypeVar

import requests
from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook, mask_secret
from pydantic import BaseModel, ValidationError

from blinkops_provider import DEFAULT_HEADER
from blinkops_provider.batch import FieldUpdates, check_concurrency, run_batch
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
    BlinkResponseError,
    BlinkTransientError,
)
from blinkops_provider.hooks import _walk
from blinkops_provider.hooks._connection import ConnectionSettings, Timeout, as_timeout
from blinkops_provider.hooks._responses import Answer, describe_invalid, parse_json, parse_model
from blinkops_provider.hooks._transport import Clock, Transport
from blinkops_provider.hooks._walk import KEYSET, OFFSET, CataloguePage
from blinkops_provider.models import (
    BlinkTable,
    ConnectionType,
    ConnectionTypePage,
    FieldList,
    FieldUpdate,
    TableField,
    TableList,
    scalar_fields,
    validate_field_updates,
    validate_input,
)
from blinkops_provider.names import build_base_url, segment
from blinkops_provider.rql import MAX_LIMIT, RQLQuery, check_field_types, check_paging

__all__ = [
    "KEYSET",
    "OFFSET",
    "BlinkHook",
    "CataloguePage",
    "Clock",
    "FieldUpdates",
    "build_base_url",
    "check_concurrency",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

DEFAULT_WALK_CONCURRENCY = 4
"""The default of ``max_concurrency`` for a walk, which no longer has an effect (one request at a time)."""


DEFAULT_UPDATE_CONCURRENCY = 16
"""Field updates in flight at once, unless told (measured: see :meth:`BlinkHook.update_table_fields`)."""


Filter = Mapping[str, Any] | str
"""An RQL filter, or its JSON text."""
Names = Sequence[str] | str
"""Field names, or one string of them (a JSON array or comma-separated)."""


def _once_each(names: Sequence[str], what: str, method: str, path: str) -> None:
    """:raises BlinkResponseError: an answer that names one table or field twice (never a
    silently doubled result)."""
    doubled = sorted(name for name, count in Counter(names).items() if count > 1)
    if doubled:
        raise BlinkResponseError(
            f"the answer names the {what}(s) {', '.join(map(repr, doubled[:10]))} more than once",
            status=200,
            method=method,
            path=path,
        )


def _segment(value: object, what: str) -> str:
    """One percent-encoded path segment ('/' included), refusing empty names."""
    if not isinstance(value, str) or not value.strip():
        raise BlinkInputError(f"{what} must be a non-empty string, got {value!r}")
    if value in (".", ".."):
        raise BlinkInputError(f"{what} cannot be {value!r}: URL paths resolve it as a directory step")
    try:
        return segment(value, what)
    except ValueError as err:
        raise BlinkInputError(str(err)) from None


_CONNECTION_TYPE_FIELDS = scalar_fields(ConnectionType)
"""The filterable fields of a connection type with their types (the API contract's)."""


def _rql(**members: Any) -> RQLQuery:
    """A connection-type query, checked before any request: RQL's rules, and the fields' types."""
    query = validate_input(RQLQuery, members, "RQL query")
    try:
        check_field_types(query.filter, _CONNECTION_TYPE_FIELDS)
    except ValueError as err:
        raise BlinkInputError(f"invalid RQL query: {err}") from None
    return query


class BlinkHook(BaseHook):
    """Calls Blink's REST API with an API key held in an Airflow connection.

    The connection (type ``blink``): host is the base URL (``https://app.blinkops.com`` when
    empty; ``/api/v1`` is added when missing), password is the API key, and the extras
    ``header_name`` (default ``BLINK-API-KEY``),
    ``verify_ssl`` (default true) and ``timeout`` (seconds) tune the requests. Nothing is read before the first call.

    :param blink_conn_id: the Airflow connection to use.
    :param timeout: seconds, or a ``(connect, read)`` pair, for every request; defaults to the
        connection's ``timeout`` extra, else 10 s to connect and 60 s to read. One attempt may
        take connect + read seconds in all (twice a single number): an answer that trickles in
        past that is cut off and counts as a timeout. No redirect is followed.
    :param retry_limit: attempts per call (1 means no retry) for 429, 5xx, connection errors and
        timeouts.
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
        if isinstance(retry_limit, bool) or not isinstance(retry_limit, int) or retry_limit < 1:
            raise BlinkInputError(f"retry_limit must be an integer of 1 or more (attempts), got {retry_limit!r}")
        if isinstance(retry_delay, bool) or not isinstance(retry_delay, (int, float)) or retry_delay < 0:
            raise BlinkInputError(f"retry_delay must be a number of seconds, 0 or more, got {retry_delay!r}")
        self.blink_conn_id = blink_conn_id
        try:
            self.timeout = None if timeout is None else as_timeout(timeout, "timeout")
        except BlinkConfigurationError as err:
            raise BlinkInputError(str(err)) from None
        self.retry_limit = retry_limit
        self.retry_delay = float(retry_delay)
        self.clock = clock or Clock()
        self.session_factory = session_factory
        self._testing_as: str | None = None  # how test_connection names the connection in messages

    # -- connection --------------------------------------------------------------------------

    @cached_property
    def settings(self) -> ConnectionSettings:
        """The connection as this hook reads it (base URL, header, TLS, timeout), on first use; the
        API key inside is never shown by its repr."""
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
    def transport(self) -> Transport:
        """The request path every call of this hook goes through (read from the connection on first use)."""
        return Transport(
            self.settings,
            retry_limit=self.retry_limit,
            retry_delay=self.retry_delay,
            log=self.log,
            clock=self.clock,
            session_factory=self.session_factory,
        )

    @property
    def rate_limited(self) -> int:
        """The rate-limit (429) answers this hook's calls met so far (0 before its first call)."""
        return self.transport.pause.rate_limited if "transport" in self.__dict__ else 0

    @property
    def base_url(self) -> str:
        """The API's base URL, ending in ``/api/v1``."""
        return self.settings.base_url

    @property
    def session(self) -> requests.Session:
        """The calling thread's HTTP session, which this hook's calls go through (each thread has its own)."""
        return self.transport.session()

    def get_conn(self) -> requests.Session:
        """The configured ``requests.Session`` (Airflow's usual hook entry point)."""
        return self.session

    def close(self) -> None:
        """Release the HTTP sessions' sockets; the hook opens new ones when used again."""
        if "transport" in self.__dict__:
            self.transport.close()

    def _request(
        self,
        method: str,
        path: str,
        model: type[ModelT],
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        subject: str | None = None,
    ) -> ModelT:
        """Send one API call on the request path and return its body as ``model``.

        :raises BlinkResponseError: when a 2xx body is not the expected JSON.
        """
        transport = self.transport
        answer = transport.send(method, path, params=params, json=json, subject=subject)
        return parse_model(answer, model, method=method, path=path, scrub=transport.scrub)

    # -- endpoints ------------------------------------------------------------------------

    @contextmanager
    def _in_workspace(self, ws_id: str) -> Iterator[None]:
        """A 403 inside the block names the workspace and the role the key's user lacks there."""
        try:
            yield
        except BlinkAuthError as err:
            if err.status != 403:
                raise
            raise err.restated(
                f"Blink refused the API key of the connection {self.blink_conn_id!r} in workspace {ws_id!r}: the key "
                "is valid, but its user has no workspace role there (a company role alone is not enough); give the "
                "user a role in that workspace (Contributor or above to write)"
            ) from None

    def update_table_field(
        self, ws_id: str, table: str, field: str, update: FieldUpdate | Mapping[str, Any]
    ) -> TableField:
        """Replace the settings of a table field (``PUT /workspace/{ws_id}/table/{table}/fields/{field}``).

        The body is sent as given, once the model accepts it: Blink replaces the whole field, so
        it resets every member and attribute the update leaves out (``required`` and
        ``is_unique`` among them) and refuses type changes. To change part of a field, send the
        merge with the field as Blink holds it (:meth:`get_table_fields`,
        :func:`~blinkops_provider.models.merge_field`), as the operators do.

        :param update: a :class:`FieldUpdate` or a mapping validated into one.
        :returns: the field as Blink stored it.
        :raises BlinkInputError: an empty name or an invalid update, before any request.
        :raises BlinkBadRequestError: Blink refused the update (400).
        :raises BlinkAuthError: the key was refused (401), or its user has no role in the workspace (403).
        :raises BlinkNotFoundError: no such workspace, table or field (404).
        """
        checked = validate_input(FieldUpdate, update, "field update")
        return self._put_field(ws_id, table, field, checked)

    def _put_field(self, ws_id: str, table: str, field: str, update: FieldUpdate) -> TableField:
        path = "/workspace/{}/table/{}/fields/{}".format(
            _segment(ws_id, "ws_id"), _segment(table, "table"), _segment(field, "field")
        )
        with self._in_workspace(ws_id):
            return self._request(
                "PUT",
                path,
                TableField,
                json=update.to_body(),
                subject=f"field {field!r} of table {table!r} in workspace {ws_id!r}",
            )

    def list_tables(self, ws_id: str) -> list[BlinkTable]:
        """The tables of a workspace (``GET /workspace/{ws_id}/tables``); ``name`` is what the
        field paths take.

        :raises BlinkReadUnavailableError: 404 or 405: no such workspace, or this Blink does not
            serve the read.
        :raises BlinkResponseError: the answer is not a list of tables, or names one twice.
        """
        path = f"/workspace/{_segment(ws_id, 'ws_id')}/tables"
        subject = f"the tables of workspace {ws_id!r}"
        with self._in_workspace(ws_id), self._readable(subject):
            tables = self._request("GET", path, TableList, subject=subject).results
        _once_each([table.name for table in tables], "table", "GET", path)
        return tables

    def get_table_fields(self, ws_id: str, table: str) -> list[TableField]:
        """The fields of a table as Blink holds them (``GET /workspace/{ws_id}/table/{table}/fields``),
        Blink's system fields included, every type and attribute kept.

        :raises BlinkNotFoundError: Blink's tables read says the workspace has no such table.
        :raises BlinkReadUnavailableError: 404 or 405 while the table is there (or its absence
            cannot be read): this Blink does not serve the read.
        :raises BlinkResponseError: the answer is not a list of fields, or names one twice.
        """
        path = "/workspace/{}/table/{}/fields".format(_segment(ws_id, "ws_id"), _segment(table, "table"))
        subject = f"the fields of table {table!r} in workspace {ws_id!r}"
        try:
            with self._in_workspace(ws_id), self._readable(subject):
                fields = self._request("GET", path, FieldList, subject=subject).results
        except BlinkReadUnavailableError as err:
            if err.status == 404 and self._missing_table(ws_id, table):
                raise BlinkNotFoundError(
                    f"no table {table!r} in workspace {ws_id!r} (Blink's tables read does not list it)",
                    status=404,
                    method="GET",
                    path=path,
                ) from None
            raise
        _once_each([field.name for field in fields if field.name is not None], "field", "GET", path)
        return fields

    def _missing_table(self, ws_id: str, table: str) -> bool:
        """Whether Blink's tables read shows that ``table`` is not in the workspace (False when it
        cannot be read)."""
        try:
            return table not in {entry.name for entry in self.list_tables(ws_id)}
        except BlinkReadUnavailableError:
            return False

    @staticmethod
    @contextmanager
    def _readable(subject: str) -> Iterator[None]:
        """A 404 or 405 inside the block is a :class:`BlinkReadUnavailableError`."""
        try:
            yield
        except BlinkClientError as err:
            if err.status not in (404, 405):
                raise
            raise err.restated(
                f"Blink answered {err.status} to the read of {subject}: this Blink (or a proxy in front of it) does "
                "not serve it, or the workspace does not exist",
                BlinkReadUnavailableError,
            ) from None

    def update_table_fields(
        self,
        ws_id: str,
        table: str,
        updates: Mapping[str, FieldUpdate | Mapping[str, Any]] | Sequence[Mapping[str, Any]] | str,
        *,
        max_concurrency: int = DEFAULT_UPDATE_CONCURRENCY,
        fail_fast: bool = False,
    ) -> FieldUpdates:
        """Send many field updates to one table, ``max_concurrency`` at a time, each as given (see
        :meth:`update_table_field`; a migration, with its plan, lock and record, is
        :func:`blinkops_provider.migrations.apply_schema`).

        Every update is checked before the first is sent; one that fails does not stop the others
        (unless ``fail_fast``: then no new update starts, and those in flight finish). Each worker
        has its own HTTP session; all share the hook's retry policy and one backoff, so a 429 or
        503 with ``Retry-After`` pauses every worker. Progress is logged as updates complete
        (``120/200 fields applied``).

        :param updates: ``{field name: update}``, or entries in the declared-schema format
            ``{"field": name, "type": ..., "display_name": ..., "attributes": {...}}``, or the
            JSON text of either.
        :param max_concurrency: updates in flight at once, 1 to 32. The default,
            :data:`DEFAULT_UPDATE_CONCURRENCY` (16), was measured: 200 updates at a 20 ms round
            trip run about 7x faster than one by one at 16, 4.5x to 6x at 8, about 3x at 4, and
            32 is no faster on the sandbox (README, Benchmarks).
            Lower it for a tenant with a tight rate limit.
        :returns: the updated fields and the failed ones, in the given order.
        :raises BlinkInputError: an invalid name, update, duplicate field or ``max_concurrency``,
            listing every problem, before any request.
        :raises BlinkConfigurationError: the connection cannot be used (before any request).

        An exception that interrupts the batch (a task timeout, a signal) carries what was known
        then: :meth:`FieldUpdates.carried_by <blinkops_provider.batch.FieldUpdates.carried_by>`
        (the operator pushes it to XCom).
        """
        _segment(ws_id, "ws_id")
        _segment(table, "table")
        check_concurrency(max_concurrency)
        batch = validate_field_updates(updates)
        self.transport  # noqa: B018 - a broken connection fails once, here, not once per field
        return run_batch(
            batch,
            lambda name, update: self._put_field(ws_id, table, name, update),
            max_concurrency=max_concurrency,
            fail_fast=fail_fast,
            log=self.log,
        )

    def list_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        limit: int = MAX_LIMIT,
        offset: int = 0,
    ) -> ConnectionTypePage:
        """One page of the connection-type catalogue (``GET /connection_types?q=<RQL>``).

        :raises BlinkInputError: an invalid RQL query, before any request.
        """
        query = _rql(filter=filter, sort=sort, select=select, limit=limit, offset=offset)
        return self._request(
            "GET",
            "/connection_types",
            ConnectionTypePage,
            params={"q": query.to_param()},
            subject="connection types",
        )

    def _list_page(self, query: Mapping[str, Any]) -> Answer:
        """One listing request for a checked RQL query dict (on the calling thread's session)."""
        q = json.dumps(query, separators=(",", ":"), ensure_ascii=False)
        return self.transport.send("GET", _walk.PATH, params={"q": q}, subject="connection types")

    def _parse_page(self, answer: Answer) -> Any:
        return parse_json(answer, method="GET", path=_walk.PATH, scrub=self.transport.scrub)

    def walk_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
        max_concurrency: int = DEFAULT_WALK_CONCURRENCY,
    ) -> Iterator[CataloguePage]:
        """Every page of the catalogue, exactly, with the items as plain dicts (no model per item).

        The fast way to read the whole catalogue: what the operators use. Each item is the JSON
        object Blink sent, unknown members included. The walk pages by id and is exact while the
        catalogue changes; a ``sort`` is applied by the client once every page is in (the result
        is then held in memory). See :mod:`blinkops_provider.hooks._walk` for how, and for its
        page checks.

        :param max_concurrency: accepted and checked (1 to 32) for compatibility; it has no
            effect on the walk, which sends one request at a time (Blink's catalogue is one page).
        :raises BlinkInputError: an invalid query, page size, ``max_items`` or ``max_concurrency``,
            before any request.
        :raises BlinkResponseError: a page that is not ``{"results": [object, ...], ...}``.
        :raises BlinkApiError: the server repeats a page, ignores paging or the id order, or the
            walk passes :attr:`max_pages`.
        """
        check_paging(page_size, max_items)
        check_concurrency(max_concurrency)
        query = _rql(filter=filter, sort=sort, select=select)  # checked once, before the first request
        walk = _walk.CatalogueWalk(
            query=query,
            fetch=self._list_page,
            parse=self._parse_page,
            page_size=page_size,
            max_items=max_items,
            max_pages=self.max_pages,
            log=self.log,
        )
        return walk.pages()

    def iter_connection_type_pages(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
    ) -> Iterator[ConnectionTypePage]:
        """Every page of the catalogue in order, as typed models (see :meth:`walk_connection_types`).

        A page's ``offset`` is its position in the walk, ``total`` the number of matching types
        the server reported at that page.
        """
        for page in self.walk_connection_types(
            filter=filter, sort=sort, select=select, page_size=page_size, max_items=max_items
        ):
            yield ConnectionTypePage(
                limit=page_size,
                offset=page.returned - len(page.items),
                total=page.total,
                results=[self._connection_type(item, page.number, n) for n, item in enumerate(page.items)],
            )

    def _connection_type(self, item: Mapping[str, Any], page: int, position: int) -> ConnectionType:
        """One listed item as a model; a wrongly typed one is a :class:`BlinkResponseError` whose
        message names where, never the value (which may be anything the server sent)."""
        try:
            return ConnectionType.model_validate(item)
        except ValidationError as err:
            problem = describe_invalid(err, self.transport.scrub)
            raise BlinkResponseError(
                f"the listing is not a page of connection types: page {page}, results[{position}]: {problem}",
                status=200,
                method="GET",
                path=_walk.PATH,
            ) from None

    def iter_connection_types(
        self,
        *,
        filter: Filter | None = None,
        sort: Names | None = None,
        select: Names | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
    ) -> Iterator[ConnectionType]:
        """Every connection type matching the query, in order, as typed models (see
        :meth:`walk_connection_types`, which skips the models)."""
        for page in self.iter_connection_type_pages(
            filter=filter, sort=sort, select=select, page_size=page_size, max_items=max_items
        ):
            yield from page.results

    def check_key(self) -> None:
        """Check, with one small listing, that Blink accepts the connection's API key (a plan
        sends nothing else, so without this a wrong key would be found only after review).

        :raises BlinkAuthError: Blink refused the key (401 or 403), naming what to fix.
        """
        try:
            self.list_connection_types(limit=1)
        except BlinkAuthError as err:
            raise BlinkAuthError(
                f"Blink refused the API key of the connection {self.blink_conn_id!r} ({err.status}); check its API "
                f"key (password) and its header name (extra header_name, now {self.settings.header!r})",
                status=err.status,
            ) from None

    # -- Airflow UI ---------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection with a one-item listing (the UI's Test button).

        The messages name the form's fields, not the connection id: Airflow tests a connection
        under a random temporary id, which would mean nothing to the user.
        """
        self._testing_as = "the connection"
        try:
            page = self.list_connection_types(limit=1)
        except BlinkConfigurationError as err:
            return False, str(err)
        except BlinkAuthError as err:
            return False, (
                f"{err}. Check the API key (password) and the header name (extra header_name, "
                f"now {self.settings.header!r})."
            )
        except BlinkTransientError as err:
            said = "base url (host)" in str(err).lower()  # the request path gave the advice already
            if err.status is None and not said:
                return False, f"{err}. Check the Base URL (host), now {self.base_url!r}."
            return False, str(err)
        except BlinkApiError as err:
            hint = f" Check the Base URL (host), now {self.base_url!r}." if err.status == 404 else ""
            return False, f"{err}.{hint}"
        total = page.total if page.total is not None else len(page.results)
        return True, f"Connected to {self.base_url}: {total} connection types visible."

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """How the Airflow 2 UI shows the connection form (Airflow 3 reads the provider info)."""
        from blinkops_provider import get_provider_info

        behaviour = get_provider_info()["connection-types"][0]["ui-field-behaviour"]
        return {
            "hidden_fields": behaviour["hidden-fields"],
            "relabeling": behaviour["relabeling"],
            "placeholders": behaviour["placeholders"],
        }

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The extra fields of the Airflow 2 connection form."""
        from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
        from flask_babel import lazy_gettext
        from wtforms import BooleanField, StringField
        from wtforms.validators import Optional

        from blinkops_provider import get_provider_info

        fields = get_provider_info()["connection-types"][0]["conn-fields"]

        def text(name: str) -> dict[str, Any]:
            return {"label": lazy_gettext(fields[name]["label"]), "description": fields[name].get("description", "")}

        return {
            "header_name": StringField(**text("header_name"), widget=BS3TextFieldWidget(), default=DEFAULT_HEADER),
            "verify_ssl": BooleanField(**text("verify_ssl"), default=True),
            "timeout": StringField(**text("timeout"), widget=BS3TextFieldWidget(), validators=[Optional()]),
        }
