"""
How the provider checks what a user gives it, in one place.

Every argument of a hook, operator, migration or trigger is checked here once, where it enters, before any request, and
a wrong one is a :class:`~blinkops_provider.exceptions.BlinkInputError` that says what was wrong and what is allowed.

How text a person reads shows a name or a value: on one line, with nothing in it able to start
another line, a heading, or a terminal escape sequence. One place for the plan, the fleet's review,
the reports, the catalogue's diff and the errors that show a wrong value.

How a Blink, a workspace and a table are named: one canonical form, used wherever the
provider names them (the request's URL, the ``blink://`` asset, the OpenLineage dataset, the
schema record's owner and its place in a records folder, and log messages).

- **A Blink's API** is reached at its base URL (:func:`build_base_url`): the connection's host,
  https unless it names a scheme, with ``/api/v1`` added once. A request's URL is the base URL
  followed by the endpoint's path, whose names are segments (below).

- **A Blink** is named by its host: lowercased (internationalised names in their ASCII form),
  IPv6 literals in brackets, and the port only when it is not the scheme's default (443 for
  https, 80 for http; in a ``blink://`` URI, 443). ``https://App.BlinkOps.com:443/api/v1``,
  ``app.blinkops.com`` and ``https://app.blinkops.com/`` are all ``app.blinkops.com``;
  ``http://[::1]:18080`` is ``[::1]:18080``.
- **A workspace or a table** is one path segment: its UTF-8 bytes percent-encoded with
  upper-case hex, every character but the unreserved ones (``A-Z a-z 0-9 - . _ ~``) encoded,
  ``/`` included, and the dot segments ``.`` and ``..`` written ``%2E`` and ``%2E%2E`` (so no URI
  resolver or file system reads them as "here" or "up"). Any spelling of a segment (``%2f`` or
  ``%2F``, ``%41`` or ``A``, a raw space or ``%20``, a raw ``Ü`` or ``%C3%9C``) comes to that form,
  and two different names never do.
- **A table reference** is ``<workspace>/<table>``, the two segments joined.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

from blinkops_provider._blink import API_PREFIX
from blinkops_provider._raising import configuration_error

if TYPE_CHECKING:
    from blinkops_provider.exceptions import BlinkConfigurationError
import math
from collections.abc import Iterable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from blinkops_provider._blink import MAX_LIMIT
from blinkops_provider._raising import input_error

SHOWN = 60
"""The most characters of one value a plan row, a diff line or an error shows (then ``…``)."""

CONTROLS = {c: f"\\u{c:04x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}
"""Every control character (C0, DEL, C1: line breaks, NUL, ESC of ANSI sequences), and the line
and paragraph separators, to their ``\\uXXXX`` escapes."""


def escaped(value: Any) -> str:
    """Return ``value`` as text with every control character written as its escape."""
    return str(value).translate(CONTROLS)


def one_line(text: Any) -> str:
    """
    Return a name as a log line or a Markdown table cell shows it.

    A backslash and ``|`` escaped, and every control character (line breaks of every kind, NUL, ANSI escapes) written as
    its escape.
    """
    return str(text).replace("\\", "\\\\").replace("|", "\\|").translate(CONTROLS)


def show(value: Any, limit: int = SHOWN) -> str:
    """
    Return a value as a person reads it in a plan, a diff or an error.

    A string in quotes, anything else as JSON (so ``1`` and ``"1"`` read differently), every control character escaped
    (JSON keeps U+2028 as it is), cut to ``limit`` characters with an ellipsis.
    """
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = escaped(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


SHOWN_PROBLEMS = 20
"""The most problems an error names one by one (the rest are counted), as the removal gate does."""


def first_problems(problems: list[str], sep: str = "; ", limit: int = SHOWN_PROBLEMS) -> str:
    """
    Return ``problems`` joined by ``sep``, the first ``limit`` named and the rest counted.

    So that an error about 10,000 entries stays a few lines long.
    """
    more = len(problems) - limit
    return sep.join(problems[:limit]) + (f"{sep}and {more} more problem(s) like them" if more > 0 else "")


def counted(count: int, noun: str) -> str:
    """Return ``count`` with ``noun`` as a person says it: "1 table", "0 tables", "2 tables"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


DEFAULT_BASE_URL = f"https://app.blinkops.com{API_PREFIX}"
"""Blink's SaaS API, when a connection names no host."""

_EXAMPLE = "use e.g. https://app.blinkops.com"

DEFAULT_PORTS = {"http": 80, "https": 443, "blink": 443}
"""The port a URL's scheme implies, left out of a Blink's name."""

_DOT_SEGMENTS = {".": "%2E", "..": "%2E%2E"}


def host_of(parts: SplitResult) -> str:
    """
    Return the canonical name of the host ``parts`` (a split URL) names: see the module's text.

    :raises ValueError: it carries a user or password (never echoed), has no host, has a port
        that is not a number from 1 to 65535, or a host with no ASCII form.
    """
    if "@" in parts.netloc:
        raise ValueError("carries credentials (user:password@)")
    if not parts.hostname:
        raise ValueError("has no host")
    port = _port(parts)
    host = _ascii(parts.hostname.rstrip(".") or parts.hostname)
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return host if port in (None, DEFAULT_PORTS.get(parts.scheme.lower())) else f"{host}:{port}"


def _port(parts: SplitResult) -> int | None:
    """
    Return the port a split URL names (None: none).

    :raises ValueError: not a number from 1 to 65535.
    """
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        raise ValueError("has an invalid port (give a number from 1 to 65535)")
    return port


def _ascii(host: str) -> str:
    """
    Return a host name in its ASCII form (IDNA for an internationalised one).

    :raises ValueError: it has none.
    """
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"has a host with no ASCII (IDNA) form: {host!r}") from None


def blink_host(base_url: str) -> str:
    """
    Return the canonical name of the Blink a Base URL (or a bare host, ``https`` assumed) reaches.

    :raises ValueError: as :func:`host_of`, the message naming the URL (credentials masked).
    """
    text = base_url.strip()
    parts = urlsplit(text if "://" in text else f"https://{text}")
    try:
        return host_of(parts)
    except ValueError as err:
        shown = "a Base URL" if "@" in parts.netloc else repr(base_url)
        raise ValueError(f"{shown} {err}") from None


def segment(name: str, what: str = "name") -> str:
    """
    Return a workspace or table name as one canonical path segment.

    :raises ValueError: the name is empty or cannot be written as UTF-8 (a lone surrogate).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"the {what} must be a non-empty string, got {name!r}")
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"the {what} {name!r} cannot be written as UTF-8 (character {err.start + 1} is a lone surrogate)"
        ) from None
    encoded = quote(raw, safe="")
    return _DOT_SEGMENTS.get(encoded, encoded)


def canonical_segment(text: str, what: str = "segment") -> str:
    """
    Return any spelling of a URI path segment in its canonical form.

    ``%2f`` -> ``%2F``, ``%41`` -> ``A``, a raw space -> ``%20``.

    :raises ValueError: it is empty, or holds a lone surrogate.
    """
    try:
        raw = unquote_to_bytes(text)
    except UnicodeEncodeError:
        raise ValueError(f"the {what} {text!r} cannot be written as UTF-8 (it holds a lone surrogate)") from None
    if not raw:
        raise ValueError(f"the {what} is empty")
    encoded = quote(raw, safe="")
    return _DOT_SEGMENTS.get(encoded, encoded)


def table_ref(ws_id: str, table: str) -> str:
    """Return ``<workspace>/<table>``, each a canonical segment: a table's name within its Blink."""
    return f"{segment(ws_id, 'workspace id')}/{segment(table, 'table name')}"


def build_base_url(host: str | None, port: int | None = None) -> str:
    """
    Return the API's base URL from a connection's host: https unless told, ``/api/v1`` added once.

    The Base URL (``host``) says where Blink is. The connection's Port field adds a port to a
    bare host (one that names no scheme and no port: ``blink://...@host:8443`` in the URI form);
    otherwise it must agree with the Base URL's port (443 for https, 80 for http when it names
    none), so that a Base URL edited in the form never leaves a Port that is silently ignored, or
    one that sends the key elsewhere: the form and the connection list show both.

    :raises BlinkConfigurationError: the host is not a usable URL (naming the field to fix, and
        never echoing a user name or password written into it), or the Port disagrees with it.
    """
    text = (host or "").strip()
    if not text:
        text = DEFAULT_BASE_URL.removesuffix(API_PREFIX)
    parts = _checked(text if "://" in text else f"https://{text}", _masked(text))
    netloc = parts.netloc if port is None else _with_port(parts, text, port)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{netloc}{path if path.endswith(API_PREFIX) else path + API_PREFIX}"


_DEFAULT_PORTS = {"https": 443, "http": 80}


def _with_port(parts: SplitResult, text: str, port: object) -> str:
    """Return the Base URL's host and port, given the connection's Port field (see :func:`build_base_url`)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise configuration_error(f"the connection's port must be from 1 to 65535, got {port!r}")
    if parts.port is None and "://" not in text:
        return f"{parts.netloc}:{port}"
    named = parts.port or _DEFAULT_PORTS[parts.scheme]
    if port != named:
        raise configuration_error(
            f"the connection's Base URL {_masked(text)!r} names port {named}, and its Port field says {port}: "
            f"they disagree. Clear the Port field (the Base URL's port is used), or set it to {named}"
        )
    return parts.netloc


def _checked(url: str, shown: str) -> SplitResult:
    """Return ``url``, split, once it is shown to be an http(s) base URL that names a Blink."""

    def refused(problem: str) -> BlinkConfigurationError:
        return configuration_error(f"the connection's host (Base URL) {shown!r} {problem}")

    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise refused(f"contains spaces or control characters; {_EXAMPLE}")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number up to 65535
    except ValueError as err:
        raise refused(f"is not a URL ({err}); {_EXAMPLE}") from None
    problem = _not_a_base_url(parts)
    if problem:
        raise refused(problem)
    try:
        host_of(parts)  # the name assets, lineage and records give this Blink: checked now, not after an apply
    except ValueError as err:
        raise refused(f"cannot name a Blink ({err}); {_EXAMPLE}") from None
    return parts


def _not_a_base_url(parts: SplitResult) -> str:
    """Return what makes a split URL unfit as a Base URL ("" when nothing)."""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"is not a base URL; {_EXAMPLE}"
    if "@" in parts.netloc:
        return (
            "carries a user name or password; remove it: the API key goes in the password field, and nothing "
            "else is sent"
        )
    return "must not carry '?' or '#' parts" if parts.query or parts.fragment else ""


def _masked(host: str) -> str:
    """Return a host as error messages may show it: any ``user:password@`` part masked."""
    scheme, sep, rest = host.partition("://")
    if not sep:
        scheme, rest = "", host
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}{authority}{slash}{path}"


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
