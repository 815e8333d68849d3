"""The retry policy of every Blink API call, in one place.

What is retried: 429, 500, 502, 503 and 504 responses, connection errors (refused, reset,
dropped before or during the response) and timeouts. Nothing else: a 4xx other than 429 will
not change by asking again, other 5xx say the server cannot do what was asked, and a TLS
failure is configuration, not luck.

How long the hook waits: a ``Retry-After`` header (seconds or an HTTP date) wins, up to
``MAX_WAIT``; otherwise exponential backoff with jitter starting at the hook's ``retry_delay``.
The header is read once, when the answer arrives (:class:`RetryableResponse`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import requests
from tenacity import RetryCallState
from tenacity.wait import wait_base, wait_exponential, wait_random

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses the hook retries before giving up with ``BlinkTransientError``."""

MAX_WAIT = 120.0
"""The longest single wait, in seconds, whatever ``Retry-After`` or the backoff asks for."""


def parse_retry_after(value: str | None, now: dt.datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or HTTP date), or None if unusable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        seconds = (when - now).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class RetryableResponse(Exception):
    """An answer with a status of :data:`RETRYABLE_STATUSES`, raised so that tenacity retries it.

    :ivar answer: what the server sent.
    :ivar retry_after: the seconds its ``Retry-After`` asked for (None: none, or unusable).
    """

    def __init__(self, answer: Any, retry_after: float | None) -> None:
        super().__init__(f"HTTP {answer.status}")
        self.answer = answer
        self.retry_after = retry_after


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed attempt is worth another one."""
    if isinstance(exc, requests.exceptions.SSLError):
        return False
    return isinstance(
        exc, (RetryableResponse, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
    )


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
    """One backoff for every thread of a hook: a ``Retry-After`` seen by one pauses them all.

    A thread that is told to wait (429 or 503 with ``Retry-After``) extends the pause; every
    thread waits out what is left of it before each attempt, so a rate-limited tenant is not
    hammered by the others meanwhile. Requests already in flight are not recalled.

    :param clock: monotonic seconds (tests inject one).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._until = 0.0
        self._lock = threading.Lock()

    def extend(self, seconds: float) -> None:
        """Pause every thread for ``seconds`` from now (never shortens a longer pause)."""
        with self._lock:
            self._until = max(self._until, self.clock() + seconds)

    def remaining(self) -> float:
        """Seconds left of the pause, 0 when there is none."""
        with self._lock:
            return max(0.0, self._until - self.clock())
