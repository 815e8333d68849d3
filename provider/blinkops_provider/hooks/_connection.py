"""Reading a ``blink`` Airflow connection into the settings every request uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blinkops_provider import DEFAULT_HEADER
from blinkops_provider.exceptions import BlinkConfigurationError
from blinkops_provider.names import build_base_url

DEFAULT_TIMEOUT = (10.0, 60.0)
"""Connect and read timeouts, in seconds, when neither the hook nor the connection sets one."""

Timeout = float | tuple[float, float]


HEADER_EXTRA = "header_name"
"""The extra that names the key's header. Not ``api_key_header``: Airflow's UI masks any extra
whose name contains ``api_key`` (or ``token``, ``secret``, ``password``, ``auth``) and saves
``***`` from the form."""

OLD_HEADER_EXTRA = "api_key_header"
"""The extra's name during development, before 0.1.0: refused, naming the new one."""


def check_api_key(key: str, who: str) -> None:
    """Refuse a key that cannot travel in an HTTP header, without echoing any of it.

    :raises BlinkConfigurationError: a character outside latin-1, or a control character.
    """
    for position, ch in enumerate(key, start=1):
        if ord(ch) > 255:
            problem = f"character {position} is not latin-1 (HTTP headers carry latin-1 only)"
        elif ord(ch) < 32 or ord(ch) == 127:
            problem = f"character {position} is a control character (a line break, tab, ...)"
        else:
            continue
        raise BlinkConfigurationError(
            f"the API key of {who} cannot be sent in a header: {problem}; "
            f"paste the key again (the key has {len(key)} characters)"
        )


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
    """A positive number of seconds, or a ``[connect, read]`` pair of them.

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
    raise BlinkConfigurationError(
        f"{what} must be a positive number of seconds, or connect and read seconds such as '5, 120', got {value!r}"
    )


def _timeout_parts(value: Any) -> Any:
    """A timeout as text (``"30"``, ``"5, 120"``, ``"[5, 120]"``) in parts; anything else as it is."""
    if not isinstance(value, str):
        return value
    text = value.strip().removeprefix("[").removesuffix("]")
    return [part.strip() for part in text.split(",")] if "," in text else text


def _header(name: Any, old_name: Any, who: str) -> str:
    """The key's header name, from the extra :data:`HEADER_EXTRA` (``old_name``: the extra's
    name before 0.1.0, refused).

    :raises BlinkConfigurationError: not an HTTP header name, or only the old extra is set.
    """
    if name is None and old_name is not None:
        raise BlinkConfigurationError(
            f"{who} has the extra '{OLD_HEADER_EXTRA}', renamed '{HEADER_EXTRA}' before 0.1.0 (Airflow's UI masks "
            "extras named with 'api_key'): rename it"
        )
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
            value = extra.get(name, extra.get(f"extra__blink__{name}"))
            return None if value in (None, "") else value

        who = who or f"the connection {conn.conn_id!r}"
        api_key = (conn.password or "").strip()
        if not api_key:
            raise BlinkConfigurationError(
                f"{who} has no API key: put it in the password field (labelled 'API key' in the UI)"
            )
        check_api_key(api_key, who)
        header = _header(option(HEADER_EXTRA), option(OLD_HEADER_EXTRA), who)
        verify = option("verify_ssl")
        conn_timeout = option("timeout")
        return cls(
            base_url=build_base_url(conn.host, conn.port),
            scheme_assumed=bool((conn.host or "").strip()) and "://" not in (conn.host or ""),
            api_key=api_key,
            header=header,
            verify=True if verify is None else as_bool(verify, "extra 'verify_ssl'"),
            timeout=timeout
            or (DEFAULT_TIMEOUT if conn_timeout is None else as_timeout(conn_timeout, "extra 'timeout'")),
        )
