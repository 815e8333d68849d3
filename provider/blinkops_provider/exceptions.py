"""
Exceptions raised by the Blink provider.

The hierarchy says what Airflow does with a failure:

* :class:`BlinkInputError` (bad input, found before any request) is a ``ValueError`` and an
  ``AirflowFailException``.
* :class:`BlinkClientError` and its subclasses (400, 401/403, 404, other 4xx) are also
  ``AirflowFailException``: the task fails at once and Airflow does not retry it, because
  sending the same request again cannot succeed.
* :class:`BlinkTransientError` (429, 5xx, connection errors, timeouts, after the hook's own
  retries are spent) and :class:`BlinkResponseError` (a 2xx whose body is not the expected
  JSON) are plain ``AirflowException``: the task's own ``retries`` apply.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

__all__ = [
    "BlinkApiError",
    "BlinkAuthError",
    "BlinkBadRequestError",
    "BlinkClientError",
    "BlinkConfigurationError",
    "BlinkInputError",
    "BlinkLockedError",
    "BlinkNotFoundError",
    "BlinkReadUnavailableError",
    "BlinkResponseError",
    "BlinkStalePlanError",
    "BlinkTransientError",
    "BlinkUnsupportedServerError",
]


class BlinkConfigurationError(AirflowFailException):
    """
    The Airflow connection, or a location the provider keeps state in (a schema record's).

    Cannot be used as it is (no API key, a malformed base URL, a record path under a file, ...): an
    ``AirflowFailException``, so the task fails without a retry (none can fix it).
    """


class BlinkInputError(ValueError, AirflowFailException):
    """
    Bad input (a field update, an RQL query, a name), caught before any request is sent.

    A ``ValueError``, and an ``AirflowFailException``: retrying the task cannot fix it.
    """


class BlinkApiError(AirflowException):
    """
    A call to the Blink API failed.

    Carries what the error wrapper of the response said (every member may be absent) and which
    request failed: its method and its path below the base URL, never the API key and never the
    query string (an RQL filter may hold values the user did not mean to log).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        details: str | None = None,
        identifier: str | None = None,
        data: Any = None,
        user_error: Any = None,
        method: str | None = None,
        path: str | None = None,
        retry_after: float | None = None,
        attempts: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.details = details
        self.identifier = identifier
        self.data = data
        self.user_error = user_error
        self.method = method
        self.path = path
        self.retry_after = retry_after
        """Seconds Blink asked to wait (its last ``Retry-After``), when it said."""
        self.attempts = attempts
        """How many attempts the hook made before giving up, for an error it retried."""
        self.hint = hint
        """What to check when the failure points at the connection rather than the call."""
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.message
        if self.details and self.details != self.message:
            text = f"{text} ({self.details})"
        if self.status is not None:
            text = f"{self.status}: {text}"
        if self.method and self.path:
            text = f"{self.method} {self.path} -> {text}"
        if self.attempts is not None:
            asked = f"; Blink asked to wait {self.retry_after:g} s" if self.retry_after is not None else ""
            text = f"{text} (gave up after {self.attempts} attempt(s){asked})"
        return f"{text}; {self.hint}" if self.hint else text

    def restated(self, message: str, cls: type[BlinkApiError] | None = None, **changes: Any) -> BlinkApiError:
        """
        Return this failure told another way.

        ``message``, as ``cls`` (by default this class), with every other member (status, method, path, hint, ...) kept
        unless ``changes`` sets it.
        """
        return (cls or type(self))(message, **{**self._members(), **changes})

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments do not survive the default pickling of exceptions.
        return (_rebuild, (type(self), self.message, self._members()))

    def _members(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "details": self.details,
            "identifier": self.identifier,
            "data": self.data,
            "user_error": self.user_error,
            "method": self.method,
            "path": self.path,
            "retry_after": self.retry_after,
            "attempts": self.attempts,
            "hint": self.hint,
        }


def _rebuild(cls: type[BlinkApiError], message: str, members: dict[str, Any]) -> BlinkApiError:
    return cls(message, **members)


class BlinkTransientError(BlinkApiError):
    """A fault that may pass (429, 5xx, connection error, timeout) outlived the hook's retries."""


class BlinkResponseError(BlinkApiError):
    """A 2xx response whose body is not the JSON the endpoint documents."""


class BlinkUnsupportedServerError(BlinkApiError, AirflowFailException):
    """
    A 2xx answer shows that the server does not do what the call needs.

    In a way no retry changes (a catalogue that ignores RQL conditions when a filter is given, or that honours neither
    the walk's keyset condition nor offsets): the task fails at once, without a retry.
    """


class BlinkClientError(BlinkApiError, AirflowFailException):
    """A 4xx response: the request itself is wrong, so the task fails without a retry."""


class BlinkBadRequestError(BlinkClientError):
    """400: Blink refused the request (invalid body, a type change, a broken RQL query, ...)."""


class BlinkAuthError(BlinkClientError):
    """
    401 or 403.

    The API key is missing or wrong (401), or valid but its user lacks the workspace role this call needs (403).
    """

    def refusal(self) -> str:
        """
        Return what Blink refused, in a sentence.

        The key (401), or, for a 403, that the key is valid but lacks the workspace role, naming the workspace and the
        role where the call knew them.
        """
        if self.status != 403:
            return f"Blink refused the API key ({self.status})"
        if "workspace role" in self.message:
            return f"Blink refused the call (403): {self.message}"
        return (
            "Blink refused the call (403): the API key is valid, but its user lacks the workspace role this call "
            "needs (Contributor or above to write)"
        )


class BlinkNotFoundError(BlinkClientError):
    """404: the workspace, table, field or listing named in the request does not exist."""


class BlinkReadUnavailableError(BlinkClientError):
    """
    A table read that Blink does not serve: a 404 or 405 while the table is there (or not told missing).

    From ``GET .../tables`` or ``GET .../fields``: this Blink (or a proxy in front of it) does not
    serve the read. Not a :class:`BlinkNotFoundError`, so a caller can fall back, and say so.
    """


class BlinkStalePlanError(BlinkInputError):
    """
    The approved plan is not what would be applied now (the record or the schema changed since).

    Nothing is sent, and the task fails without a retry.
    """


class BlinkLockedError(AirflowException):
    """
    Another apply of the same table holds its lock: nothing is sent.

    Airflow's retries apply (the other apply will be done by then).
    """
