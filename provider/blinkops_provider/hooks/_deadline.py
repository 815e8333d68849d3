"""How one attempt is bounded in time, headers and body alike.

The read timeout bounds each wait for a byte, not the whole answer: a server that trickles its
status line, headers or body byte by byte keeps a call alive as long as it likes. So each attempt
runs under a watchdog: when the attempt's time is up, it shuts down the socket the attempt is
using, the blocked read fails at once, and the attempt counts as a timeout (retried like one).

The socket is found through the connection pools of the hook's HTTP sessions
(:class:`DeadlineAdapter`), which note, per thread, the connection an attempt is using.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

Watchdog = Callable[[float, Callable[[], None]], Any]
"""Makes a started-later timer: ``threading.Timer`` (tests inject one they fire themselves)."""

_attempt = threading.local()


class _NotingPool:
    """Notes the connection a request of this thread goes out on."""

    def _make_request(self, conn: Any, *args: Any, **kwargs: Any) -> Any:
        slot = getattr(_attempt, "slot", None)
        if slot is not None:
            slot["connection"] = conn
        return super()._make_request(conn, *args, **kwargs)  # type: ignore[misc]


class _HTTPPool(_NotingPool, HTTPConnectionPool):
    pass


class _HTTPSPool(_NotingPool, HTTPSConnectionPool):
    pass


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """``requests``' adapter, with pools that let :func:`deadline` find an attempt's socket."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        """The same pools behind a proxy (``HTTPS_PROXY``), so the deadline reaches them too."""
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager


def mount(session: requests.Session) -> None:
    """Give a session the pools :func:`deadline` needs."""
    for prefix in ("https://", "http://"):
        session.mount(prefix, DeadlineAdapter())


@contextmanager
def deadline(seconds: float, watchdog: Watchdog) -> Iterator[threading.Event]:
    """Run one attempt (request and body read) within ``seconds``.

    Yields an event that is set when the time ran out; the caller then treats whatever the
    attempt raised, or returned, as a timeout.
    """
    fired = threading.Event()
    slot: dict[str, Any] = {}

    def cut_off() -> None:
        fired.set()
        sock = getattr(slot.get("connection"), "sock", None)
        if sock is not None:
            with suppress(OSError):  # already closed: nothing left to cut off
                sock.shutdown(socket.SHUT_RDWR)

    _attempt.slot = slot
    timer = watchdog(seconds, cut_off)
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()
        _attempt.slot = None
