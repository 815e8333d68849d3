"""
What is retried, in one place: each request, within a try, and the task, by Airflow.

**Each request** (``RetryAfterOrBackoff``, ``is_retryable``). The hook retries 429, 500,
502, 503 and 504 answers, connection errors (refused, reset, dropped before or during the answer)
and timeouts, up to its ``retry_limit``. Nothing else: a 4xx other than 429 will not change by
asking again, other 5xx say the server cannot do what was asked, and a TLS failure is
configuration, not luck. A ``Retry-After`` header (seconds or an HTTP date) sets the wait, up to
``MAX_WAIT``, and pauses every thread of the hook (``SharedPause``); otherwise the wait
backs off exponentially, with jitter, from the hook's ``retry_delay``. The header is read once,
when the answer arrives (``RetryableResponse``).

**The task** (:class:`BlinkRetryPolicy`, for the ``retry_policy`` of Airflow 3.3 and later,
AIP-105). When those retries run out, or a request fails for good, the task fails, and this
policy tells Airflow what to do with it:

- a refused key (401, 403), a bad request (400), a missing workspace, table or listing (404), an
  unprocessable body (422), bad input and an unusable connection fail at once (no retry helps);
- a rate limit (429) retries after what Blink's last ``Retry-After`` said (at most
  ``max_retry_after`` seconds), not after the task's ``retry_delay``;
- another apply holding the table's lock retries with the task's ``retry_delay``;
- everything else (a 5xx, a connection error, a batch whose failures were all transient) uses the
  task's own retry settings (``retries``, ``retry_delay``).

The policy can end retries early or set their delay; it never adds tries beyond ``retries``. The
operators use it by default where Airflow has ``retry_policy`` (3.3 and later); on older Airflow
nothing changes.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Iterable
from email.utils import parsedate_to_datetime
from typing import Any

import requests
from tenacity import RetryCallState
from tenacity.wait import wait_base, wait_exponential, wait_random
from urllib3.exceptions import NewConnectionError, ProtocolError
from urllib3.util.retry import Retry

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkTransientError,
    BlinkUnsupportedServerError,
)
from blinkops_provider.utils.inputs import check_seconds
from blinkops_provider.utils.statuses import PERMANENT

__all__ = ["BlinkRetryPolicy"]

MAX_WAIT = 120.0
"""The longest single wait, in seconds, whatever ``Retry-After`` or the backoff asks for."""


def parse_retry_after(value: str | None, now: dt.datetime) -> float | None:
    """
    Return seconds to wait from a ``Retry-After`` value.

    Or None if unusable (negative, fractional, junk: the caller then backs off as it would without one). Delay-seconds
    are read by urllib3's ``Retry.parse_retry_after``; an HTTP date is measured from ``now``, the injected clock (which
    urllib3's parser, reading the system clock, cannot take).
    """
    text = (value or "").strip()
    if text.isdecimal() and text.isascii():
        return float(Retry.DEFAULT.parse_retry_after(text))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, (when.replace(tzinfo=when.tzinfo or dt.UTC) - now).total_seconds())


class RetryableResponse(Exception):
    """
    An answer of a status the hook retries (``_statuses.RETRIED``), raised so that tenacity retries it.

    :ivar answer: what the server sent.
    :ivar retry_after: the seconds its ``Retry-After`` asked for (None: none, or unusable).
    """

    def __init__(self, answer: Any, retry_after: float | None) -> None:
        super().__init__(f"HTTP {answer.status}")
        self.answer = answer
        self.retry_after = retry_after


def is_retryable(exc: BaseException) -> bool:
    """Return whether a failed attempt is worth another one."""
    if isinstance(exc, requests.exceptions.SSLError):
        return False
    return isinstance(
        exc, (RetryableResponse, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
    )


def is_retryable_unapplied(exc: BaseException) -> bool:
    """
    Return whether a failed attempt of a request that is not idempotent is worth another one.

    A ``POST`` creates a field or a table: it is retried only when Blink cannot have acted on it,
    a 429 (refused before it was read) or a connection that was never made. A 5xx or a lost answer
    may mean it was applied, and a second one would create a second field: the migration's next
    plan reads Blink and finds what was made, so the task fails instead.
    """
    if isinstance(exc, RetryableResponse):
        return bool(exc.answer.status == 429)
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    if isinstance(exc, requests.ConnectionError) and not isinstance(exc, requests.exceptions.SSLError):
        reason = getattr(exc.args[0], "reason", None) if exc.args else None
        return isinstance(reason, NewConnectionError)
    return False


class RetryAfterOrBackoff(wait_base):
    """Wait what ``Retry-After`` said (capped), else back off exponentially with jitter."""

    def __init__(self, initial: float, max_wait: float = MAX_WAIT) -> None:
        self.max_wait = max_wait
        self.backoff = wait_exponential(multiplier=initial, max=max_wait) + wait_random(0, initial)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, RetryableResponse) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_wait)
        return min(float(self.backoff(retry_state)), self.max_wait)


class SharedPause:
    """
    One backoff for every thread of a hook: a ``Retry-After`` seen by one pauses them all.

    A thread that is told to wait (429 or 503 with ``Retry-After``) extends the pause; every
    thread waits out what is left of it before each attempt, so a rate-limited tenant is not
    hammered by the others meanwhile. Requests already in flight are not recalled.

    :param clock: monotonic seconds (tests inject one).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._until = 0.0
        self._lock = threading.Lock()
        self.rate_limited = 0
        """The rate-limit (429) answers the hook's threads met, each waited out or retried."""

    def count_rate_limit(self) -> None:
        """Count one rate-limit (429) answer."""
        with self._lock:
            self.rate_limited += 1

    def extend(self, seconds: float) -> None:
        """Pause every thread for ``seconds`` from now (never shortens a longer pause)."""
        with self._lock:
            self._until = max(self._until, self.clock() + seconds)

    def remaining(self) -> float:
        """Return seconds left of the pause, 0 when there is none."""
        with self._lock:
            return max(0.0, self._until - self.clock())


try:  # Airflow 3.3+ (task SDK 1.3): pluggable retry policies
    from airflow.sdk import RetryDecision, RetryPolicy

    HAS_RETRY_POLICY = True
except ImportError:  # older Airflow: a stand-in base, so the class still imports (and is unused)
    HAS_RETRY_POLICY = False
    RetryPolicy = object  # type: ignore[assignment,misc]
    RetryDecision = None  # type: ignore[assignment,misc]


def _provider_error(exception: BaseException) -> BaseException:
    """Return the first of the provider's errors along ``exception``'s cause chain (itself if none is)."""
    seen: set[int] = set()
    current: BaseException | None = exception
    while current is not None and id(current) not in seen:
        if isinstance(current, (BlinkApiError, BlinkInputError, BlinkConfigurationError, BlinkLockedError)):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return exception


def _permanent(exception: BaseException) -> str | None:
    """Return why no retry can help ``exception`` (None: one may)."""
    if isinstance(exception, BlinkAuthError) and exception.status == 403:
        return f"{exception.refusal()}; no retry helps"
    if isinstance(exception, BlinkAuthError):
        return (
            f"{exception.refusal()}: check the connection's API key (password) and its header name "
            "(extra header_name); no retry helps"
        )
    if isinstance(exception, BlinkClientError) and exception.status in {*PERMANENT, None}:
        return f"Blink refused the request ({exception.status or 'refused'}): no retry helps"
    if isinstance(exception, (BlinkInputError, BlinkConfigurationError)):
        return f"{type(exception).__name__}: fix the input or the connection; no retry helps"
    if isinstance(exception, BlinkUnsupportedServerError):
        return "the server does not do what the call needs: no retry helps"
    return None


class BlinkRetryPolicy(RetryPolicy):  # type: ignore[misc,valid-type]
    """
    Airflow's retry decision for a failed Blink task (see the module's text).

    :param max_retry_after: the longest ``Retry-After`` honoured, in seconds (default: the hook's
        own cap, 120).
    """

    def __init__(self, *, max_retry_after: float = MAX_WAIT) -> None:
        self.max_retry_after = check_seconds(max_retry_after, "max_retry_after", low=0, high=86400, low_open=True)

    def evaluate(self, exception: BaseException, try_number: int, max_tries: int, context: Any = None) -> RetryDecision:
        """
        Return the decision for ``exception``: fail, retry after a delay, or Airflow's default.

        An exception raised from a provider's error (task code that wraps one: ``raise TaskError(...)
        from err``) is decided as that error.
        """
        exception = _provider_error(exception)
        permanent = _permanent(exception)
        if permanent:
            return RetryDecision.fail(permanent)
        if isinstance(exception, BlinkTransientError) and exception.status == 429:
            asked = exception.retry_after
            if isinstance(asked, (int, float)) and math.isfinite(asked) and asked >= 0:  # else: retry_delay
                wait = min(float(asked), self.max_retry_after)
                return RetryDecision.retry(
                    dt.timedelta(seconds=wait), f"Blink's rate limit: retrying after its Retry-After, {wait:g} s"
                )
            return RetryDecision.default()
        if isinstance(exception, BlinkLockedError):
            return RetryDecision.retry(None, "another apply holds the table's lock: retrying after retry_delay")
        return RetryDecision.default()  # a 5xx, a connection error, a batch that failed only transiently

    def serialize(self) -> dict[str, Any]:
        """Return a JSON-ready form (Airflow stores only that a policy is set, and parses the DAG again)."""
        return {"__type": "BlinkRetryPolicy", "max_retry_after": self.max_retry_after}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> BlinkRetryPolicy:
        return cls(max_retry_after=float(data.get("max_retry_after", MAX_WAIT)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlinkRetryPolicy) and other.max_retry_after == self.max_retry_after

    def __hash__(self) -> int:
        return hash(("BlinkRetryPolicy", self.max_retry_after))

    def __repr__(self) -> str:
        return f"BlinkRetryPolicy(max_retry_after={self.max_retry_after:g})"


def default_retry_policy() -> BlinkRetryPolicy | None:
    """
    Return the policy the operators take unless given one.

    :class:`BlinkRetryPolicy` on Airflow 3.3 and later, None (no ``retry_policy`` argument) before.
    """
    return BlinkRetryPolicy() if HAS_RETRY_POLICY else None


# -- how a failed attempt is told: what it was, and whether anything answered at all --


class AttemptTimedOut(requests.exceptions.ReadTimeout):
    """An attempt's answer took longer than its deadline (retried like any timeout)."""


def _dropped_mid_answer(exc: requests.ConnectionError) -> bool:
    """
    Return whether a connection error is the server dropping the connection mid-answer.

    That is a ``ProtocolError``, or a reset under urllib3's ``MaxRetryError``, not a failure to connect.
    """
    reason = exc.args[0] if exc.args else None
    cause = getattr(reason, "reason", None) or reason
    return isinstance(cause, ProtocolError) or (
        isinstance(cause, ConnectionError) and not isinstance(cause, NewConnectionError)
    )


_ACCOUNTS: tuple[tuple[type[BaseException], str], ...] = (
    (requests.exceptions.ConnectTimeout, "timed out connecting to {host}"),
    (requests.exceptions.ReadTimeout, "timed out waiting for {host} (no answer within the read timeout)"),
    (requests.exceptions.ChunkedEncodingError, "the connection to {host} broke during the response"),
    (requests.exceptions.ContentDecodingError, "could not decode the response body from {host} (its Content-Encoding)"),
    (requests.exceptions.SSLError, "TLS with {host} failed"),
)
"""What a failed attempt of each type says (most specific first)."""


def describe_failure(exc: BaseException | None, host: str) -> str:
    """Return a one-line account of a failed attempt that names no URL, query or key (by its type)."""
    if isinstance(exc, RetryableResponse):
        return f"HTTP {exc.answer.status}"
    if isinstance(exc, AttemptTimedOut):
        return f"timed out waiting for {host} ({exc})"
    for kind, account in _ACCOUNTS:
        if isinstance(exc, kind):
            return account.format(host=host)
    if isinstance(exc, requests.ConnectionError):
        if _dropped_mid_answer(exc):
            return f"{host} closed the connection without a complete answer"
        return f"could not reach {host} ({type(exc).__name__})"
    if isinstance(exc, requests.RequestException):
        return f"the request to {host} failed ({type(exc).__name__})"
    return type(exc).__name__


def batch_error(message: str, errors: Iterable[BlinkApiError]) -> BlinkApiError:
    """
    Return the error that ends a field-update batch whose ``errors`` are its fields' failures.

    Of the class that tells whether a retry helps: a refused key (:class:`BlinkAuthError`) or another 4xx
    (:class:`BlinkClientError`) fails without one; a batch rate-limited to the end is a 429 with Blink's longest wait
    (the task's policy honours it); any other, Airflow's retries.
    """
    errors = list(errors)
    auth = next((error for error in errors if isinstance(error, BlinkAuthError)), None)
    if auth is not None:
        return BlinkAuthError(f"{auth.refusal()}; {message}", status=auth.status, hint=auth.hint)
    if any(isinstance(error, BlinkClientError) for error in errors):
        return BlinkClientError(message)
    if errors and all(isinstance(error, BlinkTransientError) and error.status == 429 for error in errors):
        return _rate_limited(f"{message}; Blink's rate limit", errors)
    return BlinkApiError(message)


def _rate_limited(message: str, errors: list[BlinkApiError]) -> BlinkTransientError:
    """Return a 429 with the longest wait Blink asked for, and the most attempts any field made."""
    waits = [error.retry_after for error in errors if error.retry_after is not None]
    attempts = max((error.attempts or 0) for error in errors) or None
    return BlinkTransientError(message, status=429, retry_after=max(waits) if waits else None, attempts=attempts)
