"""
How a Blink, a workspace and a table are named: one canonical form, used wherever the provider names them.

The request's URL, the ``blink://`` asset, the OpenLineage dataset, the schema record's owner and its place in a
records folder, and log messages all use these forms.

- **A Blink's API** is reached at its base URL (:func:`build_base_url`): the connection's host, https unless it names a
  scheme, with ``/api/v1`` added once. A request's URL is the base URL followed by the endpoint's path, whose names are
  segments (below).
- **A Blink** is named by its host: lowercased (internationalised names in their ASCII form), IPv6 literals in
  brackets, and the port only when it is not the scheme's default (443 for https, 80 for http; in a ``blink://`` URI,
  443). ``https://App.BlinkOps.com:443/api/v1``, ``app.blinkops.com`` and ``https://app.blinkops.com/`` are all
  ``app.blinkops.com``; ``http://[::1]:18080`` is ``[::1]:18080``.
- **A workspace or a table** is one path segment: its UTF-8 bytes percent-encoded with upper-case hex, every character
  but the unreserved ones (``A-Z a-z 0-9 - . _ ~``) encoded, ``/`` included, and the dot segments ``.`` and ``..``
  written ``%2E`` and ``%2E%2E`` (so no URI resolver or file system reads them as "here" or "up"). Any spelling of a
  segment (``%2f`` or ``%2F``, ``%41`` or ``A``, a raw space or ``%20``, a raw ``Ü`` or ``%C3%9C``) comes to that form,
  and two different names never do.
- **A table reference** is ``<workspace>/<table>``, the two segments joined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

from blinkops_provider.utils.blink_api import API_PREFIX
from blinkops_provider.utils.raising import configuration_error

if TYPE_CHECKING:
    from blinkops_provider.exceptions import BlinkConfigurationError

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


def _with_port(parts: SplitResult, text: str, port: object) -> str:
    """Return the Base URL's host and port, given the connection's Port field (see :func:`build_base_url`)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise configuration_error(f"the connection's port must be from 1 to 65535, got {port!r}")
    if parts.port is None and "://" not in text:
        return f"{parts.netloc}:{port}"
    named = parts.port or DEFAULT_PORTS[parts.scheme]
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
