"""Reading a ``blink`` Airflow connection into the settings every request uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider._blink import DEFAULT_HEADER
from blinkops_provider._inputs import Timeout, as_bool, as_timeout, check_api_key
from blinkops_provider._names import build_base_url
from blinkops_provider.exceptions import BlinkConfigurationError

DEFAULT_TIMEOUT = (10.0, 60.0)
"""Connect and read timeouts, in seconds, when neither the hook nor the connection sets one."""


HEADER_EXTRA = "header_name"
"""The extra that names the key's header. Not ``api_key_header``: Airflow's UI masks any extra
whose name contains ``api_key`` (or ``token``, ``secret``, ``password``, ``auth``) and saves
``***`` from the form."""


PAGE_EXTRA = "table_page"
"""The extra that says where Blink's UI shows a table: a path on the connection's host with
``{ws_id}`` and ``{table}`` in it (``/tables/{ws_id}/{table}``). Blink publishes no such address,
so without it the tasks' "Blink table" link opens Blink's UI at the host's root."""


def _page(given: Any) -> str:
    """The extra :data:`PAGE_EXTRA`, checked: a path (never another host) naming only ``{ws_id}``
    and ``{table}``; "" when not set.

    :raises BlinkConfigurationError: not such a path.
    """
    if given is None:
        return ""
    text = str(given).strip()
    try:
        text.format(ws_id="w", table="t")
        well_formed = True
    except (KeyError, IndexError, ValueError):
        well_formed = False
    if not well_formed or not text.startswith("/") or text.startswith("//") or not text.isprintable():
        raise BlinkConfigurationError(
            f"extra '{PAGE_EXTRA}' must be a path on the connection's host naming only {{ws_id}} and "
            f"{{table}}, such as /tables/{{ws_id}}/{{table}}, got {text!r}"
        )
    return text


def _header(name: Any) -> str:
    """The key's header name, from the extra :data:`HEADER_EXTRA`.

    :raises BlinkConfigurationError: not an HTTP header name.
    """
    header = str(name or DEFAULT_HEADER).strip()
    if not header.isascii() or any(c in header for c in " :\r\n\t") or not header.isprintable():
        raise BlinkConfigurationError(
            f"extra '{HEADER_EXTRA}' must be an HTTP header name such as {DEFAULT_HEADER}, got {header!r}"
        )
    return header


@dataclass(frozen=True)
class ConnectionSettings:
    """What a hook needs from its Airflow connection (the key is left out of its repr)."""

    base_url: str
    api_key: str = field(repr=False)
    header: str
    verify: bool
    timeout: Timeout
    scheme_assumed: bool = False
    """The connection's host named no scheme, so ``https://`` was assumed."""
    who: str = "the connection"
    """How messages name the connection (``the connection 'blink_default'``)."""
    table_page: str = ""
    """Where Blink's UI shows a table, the extra ``table_page`` ("" when not set)."""

    @property
    def deadline(self) -> float:
        """The most one attempt may take in all: the connect timeout plus the read timeout."""
        return sum(self.timeout) if isinstance(self.timeout, tuple) else 2 * self.timeout

    @classmethod
    def from_connection(cls, conn: Any, timeout: Timeout | None = None, who: str | None = None) -> ConnectionSettings:
        """Read and check a connection; ``timeout`` overrides the connection's own.

        ``who`` names the connection in messages (default: "the connection '<conn_id>'").

        :raises BlinkConfigurationError: no API key, or an unusable host or extra.
        """
        extra = conn.extra_dejson

        def option(name: str) -> Any:
            return _option(extra, name)

        who = who or f"the connection {conn.conn_id!r}"
        api_key = (conn.password or "").strip()
        if not api_key:
            raise BlinkConfigurationError(
                f"{who} has no API key: put it in the password field (labelled 'API key' in the UI)"
            )
        check_api_key(api_key, who)
        verify, conn_timeout = option("verify_ssl"), option("timeout")
        host = (conn.host or "").strip()
        return cls(
            base_url=build_base_url(conn.host, conn.port),
            scheme_assumed=bool(host) and "://" not in host,
            api_key=api_key,
            who=who,
            header=_header(option(HEADER_EXTRA)),
            verify=True if verify is None else as_bool(verify, "extra 'verify_ssl'"),
            timeout=timeout or _timeout(conn_timeout),
            table_page=_page(option(PAGE_EXTRA)),
        )


def _option(extra: Mapping[str, Any], name: str) -> Any:
    """An extra by its name (or Airflow 2's prefixed name); None when empty."""
    value = extra.get(name, extra.get(f"extra__blink__{name}"))
    return None if value in (None, "") else value


def _timeout(given: Any) -> Timeout:
    """The connection's ``timeout`` extra, checked; the default when it has none."""
    return DEFAULT_TIMEOUT if given is None else as_timeout(given, "extra 'timeout'")
