"""Turning Blink's HTTP responses into models or into the provider's exceptions."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import requests
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkClientError,
    BlinkNotFoundError,
    BlinkResponseError,
)
from blinkops_provider.models import ErrorWrapper

ModelT = TypeVar("ModelT", bound=BaseModel)

EXCERPT_CHARS = 200
"""How much of an unexpected body an error message quotes."""

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects a body may have: pydantic-core's limit, which every
body is parsed with. A deeper body is a :class:`BlinkResponseError`, never a ``RecursionError``."""

MAX_ERROR_BODY = 1 << 20
"""The largest error body (in bytes) read for Blink's error wrapper; a larger one is only quoted."""

Scrub = Callable[[str], str]


def excerpt(response: requests.Response, scrub: Scrub) -> str:
    """The first characters of a body for an error message: secrets removed first, then cut
    (cutting first could leave part of a key for the scrubber to miss)."""
    text = scrub(response.text)[:EXCERPT_CHARS] if response.content else ""
    return text or "<empty body>"


def scrub_deep(value: Any, scrub: Scrub, depth: int = 0) -> Any:
    """``value`` with every string in it (keys of objects included) passed through ``scrub``;
    what nests deeper than :data:`MAX_DEPTH` is replaced by a placeholder."""
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
    """A validation error as one line, without the input, its locations and messages scrubbed
    (a member name of a body may be anything the server sent, a key included)."""
    problems = []
    for error in err.errors(include_url=False, include_input=False, include_context=False)[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        problems.append(scrub(f"{where}: {error['msg']}"))
    return "; ".join(problems)


def _content_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type") or "no content type"


def parse_model(response: requests.Response, model: type[ModelT], *, method: str, path: str, scrub: Scrub) -> ModelT:
    """The body of a 2xx response as ``model``.

    :raises BlinkResponseError: the body is not JSON, or not of the expected shape.
    """
    try:
        # One pass in pydantic-core: parsing and validating together, without Python dicts between.
        return model.model_validate_json(response.content or b"")
    except ValidationError as err:
        first = err.errors(include_url=False, include_input=False)[0]
        if first["type"] == "json_invalid":
            problem = "is not JSON"
        else:
            problem = f"is not a {model.__name__} ({describe_invalid(err, scrub)})"
    except RecursionError:
        problem = f"nests deeper than {MAX_DEPTH} levels"
    raise BlinkResponseError(
        f"the response body {problem}; content type {_content_type(response)}, body starts: {excerpt(response, scrub)}",
        status=response.status_code,
        method=method,
        path=path,
    )


_pausing = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a page is parsed, or while a whole walk is
    consumed (``ConnectionTypesToXComOperator.execute``).

    A page of 1,000 connection types is some 100,000 new objects; each few hundred of them
    trigger a collection that also scans every object Airflow has loaded. Parsed JSON holds no
    reference cycles, so those scans free nothing: measured, they made parsing 4x slower, and
    the collections that the next page's allocations set off, while the previous page is being
    written, cost another 15 to 20% of a 20,000-type sync. Pauses nest and are shared between
    threads: the last one out restores the collector as it was.
    """
    global _pauses, _resume
    with _pausing:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pausing:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def parse_json(response: requests.Response, *, method: str, path: str, scrub: Scrub) -> Any:
    """The body of a 2xx response as plain Python data (dicts, lists, str, int, ...).

    Parsed by pydantic-core in one pass, with no model built: for hot paths that check the shape
    themselves (see :mod:`blinkops_provider.hooks._walk`).

    :raises BlinkResponseError: the body is not JSON.
    """
    try:
        with collector_paused():
            return from_json(response.content or b"")
    except ValueError:
        problem = "is not JSON"
    except RecursionError:
        problem = f"nests deeper than {MAX_DEPTH} levels"
    raise BlinkResponseError(
        f"the response body {problem}; content type {_content_type(response)}, body starts: {excerpt(response, scrub)}",
        status=response.status_code,
        method=method,
        path=path,
    )


def _error_wrapper(response: requests.Response) -> ErrorWrapper | None:
    if len(response.content) > MAX_ERROR_BODY:
        return None
    try:
        data = from_json(response.content or b"")  # bounded: MAX_DEPTH levels at most
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return ErrorWrapper.model_validate(data)
    except ValidationError:
        return None


def _error_class(status: int) -> type[BlinkApiError]:
    if status == 400:
        return BlinkBadRequestError
    if status in (401, 403):
        return BlinkAuthError
    if status == 404:
        return BlinkNotFoundError
    if 400 <= status < 500:
        return BlinkClientError
    return BlinkApiError


def error_from_response(
    response: requests.Response,
    *,
    method: str,
    path: str,
    scrub: Scrub,
    subject: str | None = None,
    error_class: type[BlinkApiError] | None = None,
) -> BlinkApiError:
    """The exception for an error response, keeping what Blink's error wrapper said.

    :param subject: what the request was about ("field 'Severity' of table 'Incidents' ..."),
        named in the message of a 404.
    :param error_class: the class to use instead of the one the status calls for.
    """
    status = response.status_code
    wrapper = _error_wrapper(response)

    def clean(value: Any) -> Any:
        return scrub_deep(value, scrub)

    if wrapper is not None and (wrapper.message or wrapper.details):
        message = clean(wrapper.message or wrapper.details)
        details = clean(wrapper.details)
    else:
        message = clean(response.reason or "error")
        details = f"content type {_content_type(response)}, body starts: {excerpt(response, scrub)}"
    if status == 404 and subject:
        message, details = f"not found: {subject}", message
    cls = error_class or _error_class(status)
    return cls(
        message,
        status=status,
        details=details,
        identifier=clean(wrapper.identifier) if wrapper else None,
        data=clean(wrapper.data) if wrapper else None,
        user_error=clean(wrapper.user_error) if wrapper else None,
        method=method,
        path=path,
    )
