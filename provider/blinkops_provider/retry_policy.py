"""What Airflow retries when a Blink task fails: :class:`BlinkRetryPolicy`, for the
``retry_policy`` of Airflow 3.3 and later (AIP-105).

Two layers retry. Within one try, the hook retries each request (429, 5xx, connection errors and
timeouts; ``retry_limit``, backoff, ``Retry-After``: :mod:`blinkops_provider.hooks._retry`). When
those retries run out, or a request fails for good, the task fails, and this policy tells Airflow
what to do with the task:

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
from typing import Any

from blinkops_provider.exceptions import (
    BlinkAuthError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkTransientError,
)
from blinkops_provider.hooks._retry import MAX_WAIT

__all__ = ["BlinkRetryPolicy", "default_retry_policy"]

PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 422})
"""Statuses no retry can fix: the task fails at once."""

try:  # Airflow 3.3+ (task SDK 1.3): pluggable retry policies
    from airflow.sdk import RetryDecision, RetryPolicy

    HAS_RETRY_POLICY = True
except ImportError:  # older Airflow: a stand-in base, so the class still imports (and is unused)
    HAS_RETRY_POLICY = False
    RetryPolicy = object  # type: ignore[assignment,misc]
    RetryDecision = None  # type: ignore[assignment,misc]


class BlinkRetryPolicy(RetryPolicy):  # type: ignore[misc,valid-type]
    """Airflow's retry decision for a failed Blink task (see the module's text).

    :param max_retry_after: the longest ``Retry-After`` honoured, in seconds (default: the hook's
        own cap, 120).
    """

    def __init__(self, *, max_retry_after: float = MAX_WAIT) -> None:
        if isinstance(max_retry_after, bool) or not isinstance(max_retry_after, (int, float)) or max_retry_after <= 0:
            raise BlinkInputError(f"max_retry_after must be a positive number of seconds, got {max_retry_after!r}")
        self.max_retry_after = float(max_retry_after)

    def evaluate(self, exception: BaseException, try_number: int, max_tries: int, context: Any = None) -> RetryDecision:
        """The decision for ``exception``: fail, retry after a delay, or Airflow's default."""
        if isinstance(exception, BlinkAuthError):
            return RetryDecision.fail(
                f"Blink refused the API key ({exception.status}): check the connection's API key (password) and "
                "its header name (extra header_name); no retry helps"
            )
        if isinstance(exception, BlinkClientError) and (
            exception.status in PERMANENT_STATUSES or exception.status is None
        ):
            return RetryDecision.fail(f"Blink refused the request ({exception.status or 'refused'}): no retry helps")
        if isinstance(exception, (BlinkInputError, BlinkConfigurationError)):
            return RetryDecision.fail(f"{type(exception).__name__}: fix the input or the connection; no retry helps")
        if isinstance(exception, BlinkTransientError) and exception.status == 429:
            if exception.retry_after is not None:
                wait = min(max(exception.retry_after, 0.0), self.max_retry_after)
                return RetryDecision.retry(
                    dt.timedelta(seconds=wait), f"Blink's rate limit: retrying after its Retry-After, {wait:g} s"
                )
            return RetryDecision.default()
        if isinstance(exception, BlinkLockedError):
            return RetryDecision.retry(None, "another apply holds the table's lock: retrying after retry_delay")
        return RetryDecision.default()  # a 5xx, a connection error, a batch that failed only transiently

    def serialize(self) -> dict[str, Any]:
        """A JSON-ready form (Airflow stores only that a policy is set, and parses the DAG again)."""
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
    """The policy the operators take unless given one: :class:`BlinkRetryPolicy` on Airflow
    3.3 and later, None (no ``retry_policy`` argument) before."""
    return BlinkRetryPolicy() if HAS_RETRY_POLICY else None
