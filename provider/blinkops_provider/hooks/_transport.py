"""The one request path: every Blink API call goes through :meth:`Transport.send`.

It owns, in this order for each call:

* the **URL** (the connection's base URL plus the path) and the **headers** (the key header);
* the **session**: each thread has its own (``requests.Session`` is not safe to share between
  threads using it at once), made on its first call and closed by :meth:`Transport.close`;
* the **shared pause**: every attempt first waits out a ``Retry-After`` another worker was told;
* the **deadline** of each attempt: urllib3's connect and read timeouts bound each socket
  operation, and the elapsed time is checked after each read of the body (a status line or
  headers trickled byte by byte are bounded by the read timeout per byte only), and the **size
  bound** of each body (:func:`~blinkops_provider.hooks._responses.read_answer`);
* the **retry policy** (:mod:`~blinkops_provider.retry_policy`: what is retried, how long to wait);
* the **redirect refusal**: no redirect is followed, so the key goes to the base URL's origin only;
* the **error mapping**: a failed call becomes one of the provider's exceptions, classified by the
  exception's type, with a message that names no URL, query or key.

Its collaborators are constructor arguments: a :class:`Clock` (sleep, monotonic time, wall time)
and a session factory, so tests inject fakes rather than patching attributes.

How the API key is kept out of everything the provider says: an answer may echo the key whole,
escaped or in pieces, and what the provider quotes of it (messages, logs, XCom) is scrubbed first.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from blinkops_provider import __version__
from blinkops_provider._statuses import RETRIED
from blinkops_provider.exceptions import BlinkApiError, BlinkConfigurationError, BlinkTransientError
from blinkops_provider.hooks._connection import ConnectionSettings
from blinkops_provider.hooks._responses import Answer, error_from_response, read_answer
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


def key_forms(key: str) -> tuple[str, ...]:
    """The forms a key may come back in, longest first: raw, JSON-escaped (``/`` as ``\\/`` too,
    non-ASCII as ``\\uXXXX``), percent-encoded (either case, ``+`` for spaces), and HTML-escaped."""
    forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1], html.escape(key)}
    forms |= {form.replace("/", "\\/") for form in list(forms)}
    for encoded in (quote(key, safe=""), quote_plus(key, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    return tuple(sorted((form for form in forms if form), key=len, reverse=True))


KEY_RUN = 8
"""The shortest piece of the key that is removed from what the provider quotes of an answer."""


def without_key_runs(text: str, key: str) -> str:
    """``text`` with every run of :data:`KEY_RUN` or more consecutive characters of ``key``
    replaced by ``***`` (each run as long as it goes on matching the key)."""
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
    """How far ``text`` from ``i`` goes on matching ``key`` from ``k``."""
    n = 0
    while i + n < len(text) and k + n < len(key) and text[i + n] == key[k + n]:
        n += 1
    return n


class KeyScrubber:
    """``scrubber(text)``: ``text`` with the API key replaced by ``***`` in every form a server may
    echo it (:func:`key_forms`), and any run of :data:`KEY_RUN` or more consecutive characters of
    it (a piece Blink quotes)."""

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
    """How the request path waits and tells time: the real clocks unless a test injects fakes.

    :ivar sleep: waits between attempts (and out a shared pause).
    :ivar monotonic: seconds for the shared pause and the attempt deadline.
    :ivar now: the wall-clock time, to read a ``Retry-After`` given as an HTTP date.
    """

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    now: Callable[[], dt.datetime] = field(default=_utcnow)


def _without_query(location: str | None) -> str:
    """A redirect's target as a message may show it: no query, fragment or user info."""
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
    """An error of the socket as requests' own (requests' exceptions are OSErrors already)."""
    return exc if isinstance(exc, requests.RequestException) else requests.ConnectionError(exc)


class Transport:
    """Sends the calls of one hook to Blink: see the module's description.

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
        """The calling thread's HTTP session, with the key header."""
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
        """Send one API call with the retry policy, on the calling thread's session, and return
        its 2xx answer.

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
            for attempt in retrying:  # (each attempt in this frame: the request path is one frame deep)
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
        """The retry policy of one call (a POST only when it provably did not arrive)."""
        return Retrying(
            stop=stop_after_attempt(self.retry_limit),
            wait=RetryAfterOrBackoff(initial=self.retry_delay),
            retry=retry_if_exception(is_retryable if method != "POST" else is_retryable_unapplied),
            sleep=self.clock.sleep,
            before_sleep=lambda state: self._log_retry(method, path, state),
            reraise=True,
        )

    def _redirect(self, answer: Answer, method: str, path: str) -> BlinkApiError:
        """The error of a 3xx: no redirect is followed, so the key never leaves the Base URL's origin."""
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
        """What to check in the connection, for a failure that points at it rather than at the call:
        a refused key (401, 403), or a 404 (or no answer) before Blink has ever answered."""
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
        """The provider's error for a call whose last attempt raised ``exc``."""
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
        """An attempt's answer, its body read within the attempt's deadline.

        :raises RetryableResponse: a status that is retried (after noting its ``Retry-After`` as a
            pause for every thread, whichever attempt this was)."""
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
