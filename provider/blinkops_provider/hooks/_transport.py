"""
The one request path: every Blink API call goes through :meth:`Transport.send`.

It owns, in this order for each call:

* the **URL** (the connection's base URL plus the path) and the **headers** (the key header);
* the **session**: each thread has its own (``requests.Session`` is not safe to share between
  threads using it at once), made on its first call and closed by :meth:`Transport.close`;
* the **shared pause**: every attempt first waits out a ``Retry-After`` another worker was told;
* the **deadline** of each attempt: urllib3's connect and read timeouts bound each socket
  operation, and the elapsed time is checked after each read of the body (a status line or
  headers trickled byte by byte are bounded by the read timeout per byte only), and the **size
  bound** of each body (:func:`~blinkops_provider.hooks._transport.read_answer`);
* the **retry policy** (:mod:`~blinkops_provider.retry_policy`: what is retried, how long to wait);
* the **redirect refusal**: no redirect is followed, so the key goes to the base URL's origin only;
* the **error mapping**: a failed call becomes one of the provider's exceptions, classified by the
  exception's type, with a message that names no URL, query or key.

What it is given, and what it gives back, are here too: the ``blink`` Airflow connection read into
the settings every request uses (:class:`ConnectionSettings`), and Blink's answers read within a
size bound, then turned into data, models or the provider's exceptions, with the API key scrubbed
from anything quoted of them (an answer may echo the key whole, escaped or in pieces). Its
collaborators are constructor arguments: a :class:`Clock` (sleep, monotonic time, wall time) and a
session factory, so tests inject fakes rather than patching attributes.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import logging
import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, urlsplit

import requests
import urllib3.exceptions
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from blinkops_provider import __version__
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
    BlinkResponseError,
    BlinkTransientError,
)
from blinkops_provider.models import ErrorWrapper
from blinkops_provider.retry_policy import (
    MAX_WAIT,
    AttemptTimedOut,
    RetryableResponse,
    RetryAfterOrBackoff,
    SharedPause,
    describe_failure,
    is_retryable,
    is_retryable_unapplied,
    parse_retry_after,
)
from blinkops_provider.utils.blink_api import DEFAULT_HEADER, MAX_BODY
from blinkops_provider.utils.inputs import Timeout, as_bool, as_timeout, check_api_key
from blinkops_provider.utils.names import build_base_url
from blinkops_provider.utils.statuses import RETRIED
from blinkops_provider.utils.statuses import error_class as status_error

DEFAULT_TIMEOUT = (10.0, 60.0)
"""Connect and read timeouts, in seconds, when neither the hook nor the connection sets one."""


HEADER_EXTRA = "header_name"
"""The extra that names the key's header. Not ``api_key_header``: Airflow's UI masks any extra
whose name contains ``api_key`` (or ``token``, ``secret``, ``password``, ``auth``) and saves
``***`` from the form."""


PAGE_EXTRA = "table_page"
"""The extra that says where Blink's UI shows a table: a path on the connection's host with
``{ws_id}`` and ``{table}`` in it (``/tables/{ws_id}/{table}``). Blink publishes no such address,
so without it the tasks' "Blink table" link opens Blink's UI at the host's root."""


def _page(given: Any) -> str:
    """
    Return the extra :data:`PAGE_EXTRA`, checked.

    A path (never another host) naming only ``{ws_id}`` and ``{table}``; "" when not set.

    :raises BlinkConfigurationError: not such a path.
    """
    if given is None:
        return ""
    text = str(given).strip()
    try:
        text.format(ws_id="w", table="t")
        well_formed = True
    except (KeyError, IndexError, ValueError):
        well_formed = False
    if not well_formed or not text.startswith("/") or text.startswith("//") or not text.isprintable():
        raise BlinkConfigurationError(
            f"extra '{PAGE_EXTRA}' must be a path on the connection's host naming only {{ws_id}} and "
            f"{{table}}, such as /tables/{{ws_id}}/{{table}}, got {text!r}"
        )
    return text


def _header(name: Any) -> str:
    """
    Return the key's header name, from the extra :data:`HEADER_EXTRA`.

    :raises BlinkConfigurationError: not an HTTP header name.
    """
    header = str(name or DEFAULT_HEADER).strip()
    if not header.isascii() or any(c in header for c in " :\r\n\t") or not header.isprintable():
        raise BlinkConfigurationError(
            f"extra '{HEADER_EXTRA}' must be an HTTP header name such as {DEFAULT_HEADER}, got {header!r}"
        )
    return header


@dataclass(frozen=True)
class ConnectionSettings:
    """What a hook needs from its Airflow connection (the key is left out of its repr)."""

    base_url: str
    api_key: str = field(repr=False)
    header: str
    verify: bool
    timeout: Timeout
    scheme_assumed: bool = False
    """The connection's host named no scheme, so ``https://`` was assumed."""
    who: str = "the connection"
    """How messages name the connection (``the connection 'blink_default'``)."""
    table_page: str = ""
    """Where Blink's UI shows a table, the extra ``table_page`` ("" when not set)."""

    @property
    def deadline(self) -> float:
        """The most one attempt may take in all: the connect timeout plus the read timeout."""
        return sum(self.timeout) if isinstance(self.timeout, tuple) else 2 * self.timeout

    @classmethod
    def from_connection(cls, conn: Any, timeout: Timeout | None = None, who: str | None = None) -> ConnectionSettings:
        """
        Read and check a connection; ``timeout`` overrides the connection's own.

        ``who`` names the connection in messages (default: "the connection '<conn_id>'").

        :raises BlinkConfigurationError: no API key, or an unusable host or extra.
        """
        extra = conn.extra_dejson

        def option(name: str) -> Any:
            return _option(extra, name)

        who = who or f"the connection {conn.conn_id!r}"
        api_key = (conn.password or "").strip()
        if not api_key:
            raise BlinkConfigurationError(
                f"{who} has no API key: put it in the password field (labelled 'API key' in the UI)"
            )
        check_api_key(api_key, who)
        verify, conn_timeout = option("verify_ssl"), option("timeout")
        host = (conn.host or "").strip()
        return cls(
            base_url=build_base_url(conn.host, conn.port),
            scheme_assumed=bool(host) and "://" not in host,
            api_key=api_key,
            who=who,
            header=_header(option(HEADER_EXTRA)),
            verify=True if verify is None else as_bool(verify, "extra 'verify_ssl'"),
            timeout=timeout or _timeout(conn_timeout),
            table_page=_page(option(PAGE_EXTRA)),
        )


def _option(extra: Mapping[str, Any], name: str) -> Any:
    """Return an extra by its name (or Airflow 2's prefixed name); None when empty."""
    value = extra.get(name, extra.get(f"extra__blink__{name}"))
    return None if value in (None, "") else value


def _timeout(given: Any) -> Timeout:
    """Return the connection's ``timeout`` extra, checked; the default when it has none."""
    return DEFAULT_TIMEOUT if given is None else as_timeout(given, "extra 'timeout'")


ModelT = TypeVar("ModelT", bound=BaseModel)

EXCERPT_CHARS = 200
"""How much of an unexpected body an error message quotes."""

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects a body may have: pydantic-core's limit, which every
body is parsed with. A deeper body is a :class:`BlinkResponseError`, never a ``RecursionError``."""

MAX_ERROR_BODY = 1 << 20
"""The largest error body (in bytes) read for Blink's error wrapper; a larger one is only quoted."""

_CHUNK = 256 << 10

Scrub = Callable[[str], str]


@dataclass(frozen=True)
class Answer:
    """What the server sent: status, reason, headers and the body (decompressed, read whole)."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes


def read_answer(response: requests.Response, *, method: str, path: str, check: Callable[[], None]) -> Answer:
    """
    Read a streamed response's body, decompressed, within :data:`MAX_BODY`.

    Calling ``check`` after each read from the socket (the attempt's deadline: it raises once that has passed). Each
    read is one socket read (urllib3's documented ``read1``), bounded by the read timeout.

    :raises BlinkResponseError: the body is larger (the connection is closed at once).
    """
    chunks, size = [], 0
    while chunk := _read1(response):
        size += len(chunk)
        if size > MAX_BODY:
            response.close()
            raise BlinkResponseError(
                f"the answer is larger than {MAX_BODY >> 20} MiB once decompressed; refused, without reading the rest",
                status=response.status_code,
                method=method,
                path=path,
            )
        chunks.append(chunk)
        check()
    return Answer(response.status_code, response.reason or "", response.headers, b"".join(chunks))


_READ_ERRORS = (
    (urllib3.exceptions.ReadTimeoutError, requests.exceptions.ReadTimeout),
    (urllib3.exceptions.DecodeError, requests.exceptions.ContentDecodingError),
    (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError),
)


def _read1(response: requests.Response) -> bytes:
    """Return what one socket read gives of the body, decompressed; urllib3's errors as requests' own."""
    try:
        return bytes(response.raw.read1(_CHUNK, decode_content=True))
    except urllib3.exceptions.HTTPError as err:
        kind = next((theirs for ours, theirs in _READ_ERRORS if isinstance(err, ours)), requests.ConnectionError)
        raise kind(err) from None


def excerpt(answer: Answer, scrub: Scrub) -> str:
    """
    Return the first characters of a body for an error message.

    Secrets removed first, then cut (cutting first could leave part of a key for the scrubber to miss). Only the body's
    head is decoded, long enough for any key that starts in the excerpt.
    """
    head = answer.body[: EXCERPT_CHARS * 4 + 4096].decode("utf-8", errors="replace")
    return scrub(head)[:EXCERPT_CHARS] or "<empty body>"


def scrub_deep(value: Any, scrub: Scrub, depth: int = 0) -> Any:
    """
    Return ``value`` with every string in it (keys of objects included) passed through ``scrub``.

    What nests deeper than :data:`MAX_DEPTH` is replaced by a placeholder.
    """
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, (list, dict)) and depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, list):
        return [scrub_deep(item, scrub, depth + 1) for item in value]
    if isinstance(value, dict):
        return {scrub_deep(key, scrub, depth + 1): scrub_deep(item, scrub, depth + 1) for key, item in value.items()}
    return value


def describe_invalid(err: ValidationError, scrub: Scrub) -> str:
    """
    Return a validation error as one line, without the input.

    Its locations and messages scrubbed (a member name of a body may be anything the server sent, a key included).
    """
    problems = []
    for error in err.errors(include_url=False, include_input=False, include_context=False)[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        problems.append(scrub(f"{where}: {error['msg']}"))
    return "; ".join(problems)


def _content_type(answer: Answer) -> str:
    return answer.headers.get("Content-Type") or "no content type"


def _unreadable(answer: Answer, problem: str, *, method: str, path: str, scrub: Scrub) -> BlinkResponseError:
    body = f"content type {_content_type(answer)}, body starts: {excerpt(answer, scrub)}"
    return BlinkResponseError(f"the response body {problem}; {body}", status=answer.status, method=method, path=path)


def parse_model(answer: Answer, model: type[ModelT], *, method: str, path: str, scrub: Scrub) -> ModelT:
    """
    Return the body of a 2xx response as ``model``.

    :raises BlinkResponseError: the body is not JSON, or not of the expected shape.
    """
    try:
        # One pass in pydantic-core: parsing and validating together, without Python dicts between.
        return model.model_validate_json(answer.body or b"")
    except ValidationError as err:
        first = err.errors(include_url=False, include_input=False)[0]
        if first["type"] == "json_invalid":
            problem = "is not JSON"
        else:
            problem = f"is not a {model.__name__} ({describe_invalid(err, scrub)})"
    except RecursionError:
        problem = f"nests deeper than {MAX_DEPTH} levels"
    raise _unreadable(answer, problem, method=method, path=path, scrub=scrub)


def parse_json(answer: Answer, *, method: str, path: str, scrub: Scrub) -> Any:
    """
    Return the body of a 2xx response as plain Python data (dicts, lists, str, int, ...).

    Parsed by pydantic-core in one pass, with no model built: for hot paths that check the shape
    themselves (see :mod:`blinkops_provider.hooks._walk`).

    :raises BlinkResponseError: the body is not JSON.
    """
    try:
        return from_json(answer.body or b"")
    except ValueError:
        problem = "is not JSON"
    except RecursionError:
        problem = f"nests deeper than {MAX_DEPTH} levels"
    raise _unreadable(answer, problem, method=method, path=path, scrub=scrub)


def _error_wrapper(answer: Answer) -> ErrorWrapper | None:
    if len(answer.body) > MAX_ERROR_BODY:
        return None
    try:
        data = from_json(answer.body or b"")  # bounded: MAX_DEPTH levels at most
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return ErrorWrapper.model_validate(data)
    except ValidationError:
        return None


def error_from_response(
    answer: Answer,
    *,
    method: str,
    path: str,
    scrub: Scrub,
    subject: str | None = None,
    error_class: type[BlinkApiError] | None = None,
) -> BlinkApiError:
    """
    Return the exception for an error response, keeping what Blink's error wrapper said.

    :param subject: what the request was about ("field 'Severity' of table 'Incidents' ..."),
        named in the message of a 404.
    :param error_class: the class to use instead of the one the status calls for.
    """
    status = answer.status
    wrapper = _error_wrapper(answer)
    said = (
        {} if wrapper is None else scrub_deep(wrapper.model_dump(include={"identifier", "data", "user_error"}), scrub)
    )
    if wrapper is not None and (wrapper.message or wrapper.details):
        message = scrub_deep(wrapper.message or wrapper.details, scrub)
        details = scrub_deep(wrapper.details, scrub)
    else:
        message = scrub_deep(answer.reason or "error", scrub)
        details = f"content type {_content_type(answer)}, body starts: {excerpt(answer, scrub)}"
    if status == 404 and subject:
        message, details = f"not found: {subject}", message
    cls = error_class or status_error(status)
    return cls(message, status=status, details=details, method=method, path=path, **said)


def once_each(names: Sequence[str], what: str, *, method: str, path: str) -> None:
    """
    Check that an answer names each table or field once.

    :raises BlinkResponseError: an answer that names one twice (never a silently doubled result).
    """
    doubled = sorted(name for name, count in Counter(names).items() if count > 1)
    if doubled:
        raise BlinkResponseError(
            f"the answer names the {what}(s) {', '.join(map(repr, doubled[:10]))} more than once",
            status=200,
            method=method,
            path=path,
        )


def parse_item(
    item: Mapping[str, Any], model: type[ModelT], where: str, *, what: str, path: str, scrub: Scrub
) -> ModelT:
    """
    Return one listed item as ``model``.

    A wrongly typed one is a :class:`BlinkResponseError` whose message names ``where``, never the value (which may be
    anything the server sent).
    """
    try:
        return model.model_validate(item)
    except ValidationError as err:
        problem = describe_invalid(err, scrub)
        raise BlinkResponseError(
            f"the listing is not a page of {what}: {where}: {problem}",
            status=200,
            method="GET",
            path=path,
        ) from None


@contextmanager
def in_workspace(conn_id: str, ws_id: str) -> Iterator[None]:
    """Yield a 403 inside the block names the connection, the workspace and the role the key's user lacks there."""
    try:
        yield
    except BlinkAuthError as err:
        if err.status != 403:
            raise
        raise err.restated(
            f"the API key of the connection {conn_id!r} is valid, but its user has no workspace role in workspace "
            f"{ws_id!r} (Viewer to read; Contributor or above to write; a company role such as Builder alone is not "
            "enough): give the user the role in that workspace",
            hint=None,
        ) from None


@contextmanager
def readable(subject: str) -> Iterator[None]:
    """Yield a 404 or 405 inside the block is a :class:`BlinkReadUnavailableError`."""
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


@contextmanager
def served(method: str, route: str) -> Iterator[None]:
    """
    Yield a 404 or 405 inside the block names the route.

    This Blink (or a proxy in front of it) may not serve it (Blink's table routes are not in its published reference),
    or what it names is not there.
    """
    try:
        yield
    except BlinkClientError as err:
        if err.status not in (404, 405):
            raise
        why = (
            "does not serve this route"
            if err.status == 405
            else "does not serve this route, or what it names is not there"
        )
        raise err.restated(
            f"Blink answered {err.status} to {method} {route}: this Blink (or a proxy in front of it) {why} "
            f"({err.message})",
            BlinkNotFoundError,
        ) from None


def key_forms(key: str) -> tuple[str, ...]:
    r"""
    Return the forms a key may come back in, longest first.

    Raw, JSON-escaped (``/`` as ``\\/`` too, non-ASCII as ``\\uXXXX``), percent-encoded (either case, ``+`` for spaces),
    and HTML-escaped.
    """
    forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1], html.escape(key)}
    forms |= {form.replace("/", "\\/") for form in list(forms)}
    for encoded in (quote(key, safe=""), quote_plus(key, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    return tuple(sorted((form for form in forms if form), key=len, reverse=True))


KEY_RUN = 8
"""The shortest piece of the key that is removed from what the provider quotes of an answer."""


def without_key_runs(text: str, key: str) -> str:
    """
    Return ``text`` with every run of :data:`KEY_RUN` or more characters of ``key`` as ``***``.

    Each run is as long as it goes on matching the key.
    """
    if len(key) < KEY_RUN or len(text) < KEY_RUN:
        return text
    starts: dict[str, list[int]] = {}
    for k in range(len(key) - KEY_RUN + 1):
        starts.setdefault(key[k : k + KEY_RUN], []).append(k)
    out, i = [], 0
    while i < len(text):
        longest = max((_run(text, i, key, k) for k in starts.get(text[i : i + KEY_RUN], ())), default=0)
        out.append("***" if longest else text[i])
        i += longest or 1
    return "".join(out)


def _run(text: str, i: int, key: str, k: int) -> int:
    """Return how far ``text`` from ``i`` goes on matching ``key`` from ``k``."""
    n = 0
    while i + n < len(text) and k + n < len(key) and text[i + n] == key[k + n]:
        n += 1
    return n


class KeyScrubber:
    """
    ``scrubber(text)``.

    ``text`` with the API key replaced by ``***`` in every form a server may echo it (:func:`key_forms`), and any run of
    :data:`KEY_RUN` or more consecutive characters of it (a piece Blink quotes).
    """

    def __init__(self, key: str) -> None:
        self._key = key
        self._forms = key_forms(key)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, "***")
        return without_key_runs(text, self._key)

    def __repr__(self) -> str:
        return "KeyScrubber(***)"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Clock:
    """
    How the request path waits and tells time: the real clocks unless a test injects fakes.

    :ivar sleep: waits between attempts (and out a shared pause).
    :ivar monotonic: seconds for the shared pause and the attempt deadline.
    :ivar now: the wall-clock time, to read a ``Retry-After`` given as an HTTP date.
    """

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    now: Callable[[], dt.datetime] = field(default=_utcnow)


def _without_query(location: str | None) -> str:
    """Return a redirect's target as a message may show it: no query, fragment or user info."""
    if not location:
        return "nowhere (no Location header)"
    try:
        parts = urlsplit(location)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "an unusable Location"
    return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else parts.path or "/"


def _as_request_error(exc: OSError) -> requests.RequestException:
    """Return an error of the socket as requests' own (requests' exceptions are OSErrors already)."""
    return exc if isinstance(exc, requests.RequestException) else requests.ConnectionError(exc)


class Transport:
    """
    Sends the calls of one hook to Blink: see the module's description.

    :param settings: the connection's settings (base URL, key, header, TLS, timeouts).
    :param retry_limit: attempts per call (1: no retry).
    :param retry_delay: the first backoff wait, in seconds.
    :param log: where retries are logged (the hook's logger).
    :param clock: how to wait and tell time.
    :param session_factory: makes the HTTP sessions (``requests.Session`` unless a test injects one).
    """

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        retry_limit: int,
        retry_delay: float,
        log: logging.Logger | Any,
        clock: Clock | None = None,
        session_factory: Callable[[], requests.Session] = requests.Session,
    ) -> None:
        self.settings = settings
        self.retry_limit = retry_limit
        self.retry_delay = retry_delay
        self.log = log
        self.clock = clock or Clock()
        self.session_factory = session_factory
        self.pause = SharedPause(clock=self.clock.monotonic)
        parts = urlsplit(settings.base_url)
        self.host = parts.netloc
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.answered = False
        """Whether Blink has answered one of this transport's calls (with anything but a 404)."""
        self._local = threading.local()
        self._sessions: weakref.WeakSet[requests.Session] = weakref.WeakSet()  # a thread's goes with it

    def session(self) -> requests.Session:
        """Return the calling thread's HTTP session, with the key header."""
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self.session_factory()
            session.headers.update(
                {
                    self.settings.header: self.settings.api_key,
                    "Accept": "application/json",
                    "User-Agent": f"airflow-provider-blinkops/{__version__}",
                }
            )
            self._sessions.add(session)
        return session

    def close(self) -> None:
        """Close every thread's session; a thread that calls again gets a new one."""
        for session in list(self._sessions):
            session.close()
        self._sessions = weakref.WeakSet()
        self._local = threading.local()

    @cached_property
    def scrub(self) -> KeyScrubber:
        """Takes the API key out of a text (:class:`KeyScrubber`)."""
        return KeyScrubber(self.settings.api_key)

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        subject: str | None = None,
    ) -> Answer:
        """
        Send one API call with the retry policy, on the calling thread's session, and return its 2xx answer.

        :param path: below the base URL, already percent-encoded.
        :param subject: what the call is about, named when Blink answers 404.
        :raises BlinkClientError: on a 4xx other than 429 (never retried).
        :raises BlinkTransientError: when 429, 5xx, connection errors or timeouts outlast the
            retries (naming the attempts, and the wait the server last asked for).
        :raises BlinkConfigurationError: TLS failed (a certificate or CA bundle to fix).
        :raises BlinkResponseError: the body is larger than ``MAX_BODY`` once decompressed.
        :raises BlinkApiError: a redirect, or any other failure.
        """
        retrying = self._retrying(method, path)
        try:
            for attempt in retrying:
                with attempt:
                    started = self._waited()
                    # verify is passed per request: a session-level False loses to REQUESTS_CA_BUNDLE.
                    # No redirect is followed: requests would resend the key header to any host, and
                    # turn a PUT into a GET (302/303) or drop its body (301).
                    try:
                        response = self.session().request(
                            method,
                            self.settings.base_url + path,
                            params=params,
                            json=json,
                            timeout=self.settings.timeout,
                            verify=self.settings.verify,
                            allow_redirects=False,
                            stream=True,
                        )
                    except OSError as exc:  # (requests' exceptions are OSErrors too)
                        raise _as_request_error(exc) from None
                    answer = self._answer(response, method, path, started)
        except RetryableResponse as exc:
            error = error_from_response(
                exc.answer, method=method, path=path, scrub=self.scrub, subject=subject, error_class=BlinkTransientError
            )
            error.attempts = retrying.statistics.get("attempt_number", 1)
            error.retry_after = exc.retry_after
            raise error from None
        except requests.RequestException as exc:
            raise self._failure(exc, method, path, retrying.statistics.get("attempt_number", 1)) from None
        self.answered = self.answered or answer.status != 404
        if 300 <= answer.status < 400:
            raise self._redirect(answer, method, path)
        if answer.status >= 400:
            error = error_from_response(answer, method=method, path=path, scrub=self.scrub, subject=subject)
            raise error.restated(error.message, hint=self.advice(answer.status))
        return answer

    def _retrying(self, method: str, path: str) -> Retrying:
        """Return the retry policy of one call (a POST only when it provably did not arrive)."""
        return Retrying(
            stop=stop_after_attempt(self.retry_limit),
            wait=RetryAfterOrBackoff(initial=self.retry_delay),
            retry=retry_if_exception(is_retryable if method != "POST" else is_retryable_unapplied),
            sleep=self.clock.sleep,
            before_sleep=lambda state: self._log_retry(method, path, state),
            reraise=True,
        )

    def _redirect(self, answer: Answer, method: str, path: str) -> BlinkApiError:
        """Return the error of a 3xx: no redirect is followed, so the key never leaves the Base URL's origin."""
        status = self.scrub(f"{answer.status} {answer.reason}".rstrip())
        return BlinkApiError(
            f"the server answered {status} pointing to "
            f"{self.scrub(_without_query(answer.headers.get('Location')))}; no redirect is followed, "
            f"so the API key goes to {self.origin} only: set the connection's Base URL to where the "
            "API really is",
            status=answer.status,
            method=method,
            path=path,
        )

    def advice(self, status: int | None) -> str | None:
        """
        Return what to check in the connection, for a failure that points at it rather than at the call.

        A refused key (401, 403), or a 404 (or no answer) before Blink has ever answered.
        """
        if status in (401, 403):
            return (
                f"Blink refused the API key of {self.settings.who}: check its API key (password) and its header "
                f"name (extra header_name, now {self.settings.header!r})"
            )
        if status in (None, 404) and not self.answered:
            url = self.settings.base_url
            return f"no request on {self.settings.who} has been answered yet: check its Base URL (host), now {url}"
        return None

    def _failure(self, exc: requests.RequestException, method: str, path: str, attempts: int) -> Exception:
        """Return the provider's error for a call whose last attempt raised ``exc``."""
        if isinstance(exc, requests.exceptions.SSLError):
            if self.settings.scheme_assumed:
                hint = (
                    f"the Base URL names no scheme, so https:// was assumed: if the server speaks plain "
                    f"HTTP, set the connection's Base URL to http://{self.host}; otherwise check the "
                    "server's certificate or the connection's extra verify_ssl"
                )
            else:
                hint = (
                    "check the server's certificate, the CA bundle (REQUESTS_CA_BUNDLE), or the "
                    "connection's extra verify_ssl"
                )
            return BlinkConfigurationError(
                f"TLS with {self.origin} failed ({type(exc).__name__}), after {attempts} attempt(s): {hint}"
            )
        account = describe_failure(exc, self.host)
        cls = BlinkTransientError if is_retryable(exc) else BlinkApiError
        return cls(f"{account}, after {attempts} attempt(s)", method=method, path=path, hint=self.advice(None))

    def _waited(self) -> float:
        """Wait out a pause another thread was told (``Retry-After``); the attempt's start."""
        wait = self.pause.remaining()
        if wait > 0:
            self.clock.sleep(wait)
        return self.clock.monotonic()

    def _answer(self, response: requests.Response, method: str, path: str, started: float) -> Answer:
        """
        Return an attempt's answer, its body read within the attempt's deadline.

        :raises RetryableResponse: a status that is retried (after noting its ``Retry-After`` as a
            pause for every thread, whichever attempt this was).
        """
        seconds = self.settings.deadline

        def check() -> None:
            if self.clock.monotonic() - started > seconds:
                raise AttemptTimedOut(f"the answer took longer than {seconds:g} s")

        try:
            with response:
                check()
                answer = read_answer(response, method=method, path=path, check=check)
        except OSError as exc:
            raise _as_request_error(exc) from None
        if answer.status in RETRIED:
            if answer.status == 429:
                self.pause.count_rate_limit()
            asked = parse_retry_after(answer.headers.get("Retry-After"), self.clock.now())
            if asked is not None:
                self.pause.extend(min(asked, MAX_WAIT))
            raise RetryableResponse(answer, asked)
        return answer

    def _log_retry(self, method: str, path: str, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        self.log.warning(
            "Blink %s %s failed (%s), attempt %d of %d; retrying in %.1f s",
            method,
            path,
            describe_failure(exc, self.host),
            state.attempt_number,
            self.retry_limit,
            wait,
        )
