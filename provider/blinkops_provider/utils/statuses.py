"""
The client's one table of Blink's statuses: the error each one raises, and whether a retry can help.

The request path (which answers are retried, which error a refusal raises), the task's retry policy (what fails at once)
and a batch's final error are derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkClientError,
    BlinkNotFoundError,
    BlinkTransientError,
)
from blinkops_provider.utils.blink_api import TRANSIENT_STATUSES


@dataclass(frozen=True)
class Status:
    """
    What an answer of one status means to the client.

    :ivar error: the exception class it raises (after the retries, for a retried one).
    :ivar retried: the hook asks again, within its ``retry_limit`` (a fault that may pass).
    :ivar permanent: no retry of the task can help: it fails at once.
    """

    error: type[BlinkApiError]
    retried: bool = False
    permanent: bool = False


STATUSES: dict[int, Status] = {
    400: Status(BlinkBadRequestError, permanent=True),
    401: Status(BlinkAuthError, permanent=True),
    403: Status(BlinkAuthError, permanent=True),
    404: Status(BlinkNotFoundError, permanent=True),
    422: Status(BlinkClientError, permanent=True),
    **{status: Status(BlinkTransientError, retried=True) for status in sorted(TRANSIENT_STATUSES)},
}
"""Every status the client treats on its own; any other 4xx is a :class:`BlinkClientError` and any
other status a :class:`BlinkApiError`, neither retried by the hook nor failed at once."""

RETRIED = frozenset(status for status, meaning in STATUSES.items() if meaning.retried)
"""The statuses the hook retries: Blink's transient ones (a rate limit, a 5xx that may pass)."""

PERMANENT = frozenset(status for status, meaning in STATUSES.items() if meaning.permanent)
"""The statuses no retry can fix."""


def error_class(status: int) -> type[BlinkApiError]:
    """Return the exception class of an answer of ``status`` that the hook does not (or no longer) retry."""
    if status in STATUSES:
        return STATUSES[status].error
    return BlinkClientError if 400 <= status < 500 else BlinkApiError
