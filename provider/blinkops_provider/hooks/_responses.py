"""Blink's answers: read within a size bound, then turned into data, models or the provider's exceptions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import requests
import urllib3.exceptions
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from blinkops_provider._blink import MAX_BODY
from blinkops_provider._models import ErrorWrapper
from blinkops_provider._statuses import error_class as status_error
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkClientError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
    BlinkResponseError,
)

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
    """Read a streamed response's body, decompressed, within :data:`MAX_BODY`, calling ``check``
    after each read from the socket (the attempt's deadline: it raises once that has passed).
    Each read is one socket read (urllib3's documented ``read1``), bounded by the read timeout.

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
    """What one socket read gives of the body, decompressed; urllib3's errors as requests' own."""
    try:
        return bytes(response.raw.read1(_CHUNK, decode_content=True))
    except urllib3.exceptions.HTTPError as err:
        kind = next((theirs for ours, theirs in _READ_ERRORS if isinstance(err, ours)), requests.ConnectionError)
        raise kind(err) from None


def excerpt(answer: Answer, scrub: Scrub) -> str:
    """The first characters of a body for an error message: secrets removed first, then cut
    (cutting first could leave part of a key for the scrubber to miss). Only the body's head is
    decoded, long enough for any key that starts in the excerpt."""
    head = answer.body[: EXCERPT_CHARS * 4 + 4096].decode("utf-8", errors="replace")
    return scrub(head)[:EXCERPT_CHARS] or "<empty body>"


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


def _content_type(answer: Answer) -> str:
    return answer.headers.get("Content-Type") or "no content type"


def _unreadable(answer: Answer, problem: str, *, method: str, path: str, scrub: Scrub) -> BlinkResponseError:
    body = f"content type {_content_type(answer)}, body starts: {excerpt(answer, scrub)}"
    return BlinkResponseError(f"the response body {problem}; {body}", status=answer.status, method=method, path=path)


def parse_model(answer: Answer, model: type[ModelT], *, method: str, path: str, scrub: Scrub) -> ModelT:
    """The body of a 2xx response as ``model``.

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
    """The body of a 2xx response as plain Python data (dicts, lists, str, int, ...).

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
    """The exception for an error response, keeping what Blink's error wrapper said.

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


def parse_item(
    item: Mapping[str, Any], model: type[ModelT], where: str, *, what: str, path: str, scrub: Scrub
) -> ModelT:
    """One listed item as ``model``; a wrongly typed one is a :class:`BlinkResponseError` whose
    message names ``where``, never the value (which may be anything the server sent)."""
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
    """A 403 inside the block names the connection, the workspace and the role the key's user lacks there."""
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


@contextmanager
def served(method: str, route: str) -> Iterator[None]:
    """A 404 or 405 inside the block names the route: this Blink (or a proxy in front of it) may
    not serve it (Blink's table routes are not in its published reference), or what it names is
    not there."""
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
