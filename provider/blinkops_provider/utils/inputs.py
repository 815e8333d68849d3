"""
How the provider checks what a user gives it, in one place.

Every argument of a hook, operator, migration or trigger is checked here once, where it enters, before any request, and
a wrong one is a :class:`~blinkops_provider.exceptions.BlinkInputError` that says what was wrong and what is allowed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from blinkops_provider.utils.blink_api import MAX_LIMIT
from blinkops_provider.utils.names import segment
from blinkops_provider.utils.raising import configuration_error, input_error
from blinkops_provider.utils.text import first_problems, show

ModelT = TypeVar("ModelT", bound=BaseModel)

Timeout = float | tuple[float, float]
"""Seconds for a request: one number for connecting and reading, or a ``(connect, read)`` pair."""

MAX_CONCURRENCY = 32
"""The most field updates a batch sends at once."""

DEFAULT_UPDATE_CONCURRENCY = 16
"""Field updates in flight at once, unless told (measured: see ``BlinkHook.update_table_fields``)."""

MAX_LOCK_WAIT = 3600.0
"""The longest an apply may wait for another apply's lock, in seconds."""

MAX_NESTING = 32
"""How deep an RQL filter's ``$or`` and ``$and`` may nest (a JSON text deeper than Python can read is refused too)."""

SHOWN_VALUE_CHARS = 40
"""How much of a wrong input value a message echoes."""


def validate_input(model: type[ModelT], data: Any, what: str) -> ModelT:
    """
    Validate user input into ``model``.

    :raises BlinkInputError: naming each wrong member, why, and what is allowed.
    """
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise input_error(f"invalid {what}: {describe_errors(err.errors())}") from None


def describe_errors(errors: Iterable[Mapping[str, Any]]) -> str:
    """
    Pydantic's error list of a user's input as one line: ``where.

    What is wrong (got <value>); ...``, each wrong value cut to :data:`SHOWN_VALUE_CHARS` characters (what a user typed,
    not a secret: responses are described without their values).
    """
    problems = []
    for error in errors:
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if "input" in error and error["input"] is not None and not isinstance(error["input"], (dict, list)):
            message = f"{message} (got {show(error['input'], SHOWN_VALUE_CHARS)})"
        problems.append(f"{where}: {message}" if where else message)
    return first_problems(problems)


def path_segment(value: object, what: str) -> str:
    """
    Return one percent-encoded path segment of a request (``/`` included), refusing empty names.

    :raises BlinkInputError: not a non-empty string, or a dot segment.
    """
    if not isinstance(value, str) or not value.strip():
        raise input_error(f"{what} must be a non-empty string, got {value!r}")
    if value in (".", ".."):
        raise input_error(f"{what} cannot be {value!r}: URL paths resolve it as a directory step")
    try:
        return segment(value, what)
    except ValueError as err:
        raise input_error(str(err)) from None


class RepeatedMember(ValueError):
    """A JSON object names a member twice (its name is the argument)."""


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """
    Return ``json.loads``'s ``object_pairs_hook`` for user input.

    An object whose members are all named once (``json.loads`` alone keeps only the last, silently).

    :raises RepeatedMember: a member named twice.
    """
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise RepeatedMember(name)
        members[name] = value
    return members


def check_concurrency(value: Any) -> None:
    """
    Check ``max_concurrency``.

    :raises BlinkInputError: ``max_concurrency`` is not an integer from 1 to 32.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise input_error(f"max_concurrency must be an integer from 1 to {MAX_CONCURRENCY}, got {value!r}")


def check_seconds(value: Any, what: str, *, low: float, high: float, low_open: bool = False) -> float:
    """
    Return ``value`` as a duration in seconds: a finite number from ``low`` (excluded when ``low_open``) to ``high``.

    :raises BlinkInputError: anything else, saying what is allowed.
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not number or value > high or value < low or (low_open and value == low):
        bound = f"more than {low:g}" if low_open else f"{low:g} or more"
        raise input_error(f"{what} must be a finite number of seconds, {bound} and at most {high:g}, got {value!r}")
    return float(value)


def check_lock_wait(value: Any, what: str = "lock_wait") -> float:
    """
    Return ``value`` as seconds to wait for a lock.

    :raises BlinkInputError: not a finite number from 0 to :data:`MAX_LOCK_WAIT`.
    """
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 <= value <= MAX_LOCK_WAIT:
        raise input_error(f"{what} must be a number of seconds from 0 to {MAX_LOCK_WAIT:g}, got {value!r}")
    return float(value)


def check_paging(page_size: Any, max_items: Any) -> None:
    """
    Check the paging arguments of a catalogue walk.

    :raises BlinkInputError: ``page_size`` is not 1 to 1000, or ``max_items`` not None or 0 or more.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_LIMIT:
        raise input_error(f"page_size must be an integer from 1 to {MAX_LIMIT}, got {page_size!r}")
    if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0):
        raise input_error(f"max_items must be None or an integer of 0 or more, got {max_items!r}")


def parse_json_object(value: Any, what: str) -> Any:
    """Turn a rendered template (a JSON string) into an object; leave other values alone."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except RecursionError:
            raise input_error(f"{what} nests too deeply to read ($or and $and: {MAX_NESTING} deep)") from None
        except ValueError as err:
            raise input_error(f"{what} is not valid JSON: {err}") from None
    return value


# -- a connection's settings (a BlinkConfigurationError: the connection is to fix, not the call) --


def check_api_key(key: str, who: str) -> None:
    """
    Refuse a key that cannot travel in an HTTP header, without echoing any of it.

    :raises BlinkConfigurationError: a character outside latin-1, or a control character.
    """
    for position, ch in enumerate(key, start=1):
        if ord(ch) > 255:
            problem = f"character {position} is not latin-1 (HTTP headers carry latin-1 only)"
        elif ord(ch) < 32 or ord(ch) == 127:
            problem = f"character {position} is a control character (a line break, tab, ...)"
        else:
            continue
        raise configuration_error(
            f"the API key of {who} cannot be sent in a header: {problem}; "
            f"paste the key again (the key has {len(key)} characters)"
        )


def as_bool(value: Any, what: str) -> bool:
    """Return a boolean from a connection extra (``true``/``false`` strings included)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise configuration_error(f"{what} must be true or false, got {value!r}")


def as_timeout(value: Any, what: str) -> Timeout:
    """
    Return a positive number of seconds, or a ``[connect, read]`` pair of them.

    Text is read too, as the connection form saves it: ``"30"``, ``"5, 120"`` or ``"[5, 120]"``.
    """
    try:
        value = _timeout_parts(value)
        if isinstance(value, (list, tuple)):
            connect, read = (float(v) for v in value)
            if connect > 0 and read > 0:
                return (connect, read)
        elif not isinstance(value, bool) and float(value) > 0:
            return float(value)
    except (TypeError, ValueError):
        pass
    raise configuration_error(
        f"{what} must be a positive number of seconds, or connect and read seconds such as '5, 120', got {value!r}"
    )


def _timeout_parts(value: Any) -> Any:
    """Return a timeout as text (``"30"``, ``"5, 120"``, ``"[5, 120]"``) in parts; anything else as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip().removeprefix("[").removesuffix("]")
    return [part.strip() for part in text.split(",")] if "," in text else text


def check_hook_options(timeout: Any, retry_limit: Any, retry_delay: Any) -> tuple[Timeout | None, int, float]:
    """
    Return a hook's ``timeout``, ``retry_limit`` and ``retry_delay``, checked.

    :raises BlinkInputError: a timeout that is not positive seconds (or a pair), attempts that
        are not an integer of 1 or more, or a negative delay.
    """
    if isinstance(retry_limit, bool) or not isinstance(retry_limit, int) or retry_limit < 1:
        raise input_error(f"retry_limit must be an integer of 1 or more (attempts), got {retry_limit!r}")
    if isinstance(retry_delay, bool) or not isinstance(retry_delay, (int, float)) or retry_delay < 0:
        raise input_error(f"retry_delay must be a number of seconds, 0 or more, got {retry_delay!r}")
    from blinkops_provider.exceptions import BlinkConfigurationError  # (a hook's: Airflow is there)

    try:
        return (None if timeout is None else as_timeout(timeout, "timeout")), retry_limit, float(retry_delay)
    except BlinkConfigurationError as err:
        raise input_error(str(err)) from None


def check_flag(value: Any, what: str) -> bool:
    """
    Check a flag.

    :raises BlinkInputError: ``value`` is not True or False.
    """
    if not isinstance(value, bool):
        raise input_error(f"{what} must be True or False, got {value!r}")
    return value


def rendered_flag(value: Any, what: str) -> bool:
    """
    Return a flag given as ``True``/``False``, or as the text a template renders of one.

    :raises BlinkInputError: anything else.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return check_flag(value, what)  # (which refuses it, saying what is allowed)
