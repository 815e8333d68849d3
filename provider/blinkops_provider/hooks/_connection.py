"""Reading a ``blink`` Airflow connection into the settings every request uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from blinkops_provider.exceptions import BlinkConfigurationError

DEFAULT_BASE_URL = "https://app.blinkops.com/api/v1"
API_PREFIX = "/api/v1"
DEFAULT_HEADER = "BLINK-API-KEY"
DEFAULT_TIMEOUT = (10.0, 60.0)
"""Connect and read timeouts, in seconds, when neither the hook nor the connection sets one."""

Timeout = float | tuple[float, float]


def build_base_url(host: str | None, port: int | None = None) -> str:
    """The API's base URL from a connection's host: https unless told, ``/api/v1`` added once.

    :raises BlinkConfigurationError: the host is not a usable URL.
    """
    text = (host or "").strip()
    if not text:
        return DEFAULT_BASE_URL
    if "://" not in text:
        text = f"https://{text}"
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BlinkConfigurationError(
            f"the connection's host {host!r} is not a base URL; use e.g. https://app.blinkops.com"
        )
    if parts.query or parts.fragment:
        raise BlinkConfigurationError(f"the connection's host {host!r} must not carry '?' or '#' parts")
    netloc = parts.netloc
    if port and parts.port is None:
        netloc = f"{netloc}:{port}"
    path = parts.path.rstrip("/")
    if not path.endswith(API_PREFIX):
        path += API_PREFIX
    return f"{parts.scheme}://{netloc}{path}"


def as_bool(value: Any, what: str) -> bool:
    """A boolean from a connection extra (``true``/``false`` strings included)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise BlinkConfigurationError(f"{what} must be true or false, got {value!r}")


def as_timeout(value: Any, what: str) -> Timeout:
    """A positive number of seconds, or a ``[connect, read]`` pair of them."""
    try:
        if isinstance(value, (list, tuple)):
            connect, read = (float(v) for v in value)
            if connect > 0 and read > 0:
                return (connect, read)
        elif not isinstance(value, bool) and float(value) > 0:
            return float(value)
    except (TypeError, ValueError):
        pass
    raise BlinkConfigurationError(
        f"{what} must be a positive number of seconds or a [connect, read] pair, got {value!r}"
    )


@dataclass(frozen=True)
class ConnectionSettings:
    """What a hook needs from its Airflow connection (the key is left out of its repr)."""

    base_url: str
    api_key: str = field(repr=False)
    header: str
    verify: bool
    timeout: Timeout

    @classmethod
    def from_connection(cls, conn: Any, timeout: Timeout | None = None) -> ConnectionSettings:
        """Read and check a connection; ``timeout`` overrides the connection's own.

        :raises BlinkConfigurationError: no API key, or an unusable host or extra.
        """
        extra = conn.extra_dejson

        def option(name: str) -> Any:
            value = extra.get(name, extra.get(f"extra__blink__{name}"))
            return None if value in (None, "") else value

        api_key = (conn.password or "").strip()
        if not api_key:
            raise BlinkConfigurationError(
                f"the connection {conn.conn_id!r} has no API key: put it in the password field "
                "(labelled 'API key' in the UI)"
            )
        header = str(option("api_key_header") or DEFAULT_HEADER).strip()
        if any(c in header for c in " :\r\n\t"):
            raise BlinkConfigurationError(
                f"extra 'api_key_header' must be an HTTP header name such as {DEFAULT_HEADER}, got {header!r}"
            )
        verify = option("verify_ssl")
        conn_timeout = option("timeout")
        return cls(
            base_url=build_base_url(conn.host, conn.port),
            api_key=api_key,
            header=header,
            verify=True if verify is None else as_bool(verify, "extra 'verify_ssl'"),
            timeout=timeout
            or (DEFAULT_TIMEOUT if conn_timeout is None else as_timeout(conn_timeout, "extra 'timeout'")),
        )
