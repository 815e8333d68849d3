"""How a Blink, a workspace and a table are named: one canonical form, used wherever the
provider names them (the ``blink://`` asset, the OpenLineage dataset, the schema record's owner
and its place in a records folder, and log messages).

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

from urllib.parse import SplitResult, quote, unquote_to_bytes, urlsplit

__all__ = ["blink_host", "canonical_segment", "host_of", "segment", "table_ref"]

DEFAULT_PORTS = {"http": 80, "https": 443, "blink": 443}
"""The port a URL's scheme implies, left out of a Blink's name."""

_DOT_SEGMENTS = {".": "%2E", "..": "%2E%2E"}


def host_of(parts: SplitResult) -> str:
    """The canonical name of the host ``parts`` (a split URL) names: see the module's text.

    :raises ValueError: it carries a user or password (never echoed), has no host, has a port
        that is not a number from 1 to 65535, or a host with no ASCII form.
    """
    if "@" in parts.netloc:
        raise ValueError("carries credentials (user:password@)")
    if not parts.hostname:
        raise ValueError("has no host")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        raise ValueError("has an invalid port (give a number from 1 to 65535)")
    host = parts.hostname.rstrip(".") or parts.hostname
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"has a host with no ASCII (IDNA) form: {host!r}") from None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return host if port in (None, DEFAULT_PORTS.get(parts.scheme.lower())) else f"{host}:{port}"


def blink_host(base_url: str) -> str:
    """The canonical name of the Blink a Base URL (or a bare host, ``https`` assumed) reaches.

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
    """A workspace or table name as one canonical path segment.

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
    """Any spelling of a URI path segment in the canonical form (``%2f`` -> ``%2F``, ``%41`` -> ``A``,
    a raw space -> ``%20``).

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
    """``<workspace>/<table>``, each a canonical segment: a table's name within its Blink."""
    return f"{segment(ws_id, 'workspace id')}/{segment(table, 'table name')}"
