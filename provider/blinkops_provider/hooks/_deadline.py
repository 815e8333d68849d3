"""How one attempt is bounded in time: status line, headers and body alike, in every framing.

The read timeout bounds each wait for a byte, not the whole answer: a server that trickles its
status line, headers or body byte by byte keeps a call alive as long as it likes. So every read
an attempt makes from its socket is given, as its socket timeout, the smaller of the read timeout
and what is left of the attempt's deadline; once the deadline has passed, the next read fails at
once. A trickle therefore ends within one read of the deadline, without a watchdog thread.

How the reads are reached. Two of the three steps rest on behaviour no library documents, which
``tests/test_deadline.py`` checks against the installed versions, so an upgrade that removes it
fails loudly there rather than leaving answers unbounded:

* documented: :class:`DeadlineAdapter` overrides ``requests``' adapter hook
  ``get_connection_with_tls_context`` and sets the pool's ``ConnectionCls`` (a documented
  attribute of urllib3's ``HTTPConnectionPool``) to its own connection classes;
* undocumented: those classes set ``response_class``, the class ``http.client.HTTPConnection``
  builds its response with, to :class:`_BoundedResponse`; urllib3 2.x builds its responses
  through ``HTTPConnection.getresponse``, which uses it;
* undocumented: ``http.client.HTTPResponse(sock)`` reads everything it parses, and urllib3 the
  body after it, through ``sock.makefile("rb")``: :class:`_BoundedResponse` hands it a file whose
  reads are bounded.

Keep-alive, ``Connection: close`` (the file holds the socket open, as ``makefile`` does), chunked
and compressed bodies are all read through that file. Not covered: the TCP connect (bounded by
the connect timeout), the TLS handshake and sending the request (each read or write bounded by
the timeouts, not by the deadline); Airflow's ``execution_timeout`` bounds the task as a whole.
"""

from __future__ import annotations

import http.client
import io
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool

__all__ = ["Attempt", "DeadlineAdapter", "bounded"]

_current = threading.local()


class Attempt:
    """One attempt's deadline, and whether a read was cut off by it.

    :param seconds: how long the attempt may take in all.
    :param clock: monotonic seconds.
    """

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.ends_at = clock() + seconds
        self.expired = False

    def remaining(self) -> float:
        return self.ends_at - self.clock()


@contextmanager
def bounded(seconds: float, clock: Callable[[], float]) -> Iterator[Attempt]:
    """Bound the reads of the responses this thread opens meanwhile by ``seconds`` in all."""
    attempt = Attempt(seconds, clock)
    _current.attempt = attempt
    try:
        yield attempt
    finally:
        _current.attempt = None


class _BoundedReader(io.RawIOBase):
    """A socket's reads, each bounded by what is left of the attempt's deadline."""

    def __init__(self, sock: socket.socket, attempt: Attempt) -> None:
        super().__init__()
        self._sock = sock
        self._file = sock.makefile("rb", buffering=0)  # holds the socket open, as http.client expects
        self._attempt = attempt

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._attempt.remaining()
        if remaining <= 0:
            self._attempt.expired = True
            raise TimeoutError(f"the attempt's deadline of {self._attempt.seconds:g} s passed")
        wait = self._sock.gettimeout()
        cut = wait is None or remaining < wait
        self._sock.settimeout(remaining if cut else wait)
        try:
            return self._file.readinto(buffer)
        except TimeoutError:
            self._attempt.expired = self._attempt.expired or cut
            raise
        finally:
            self._sock.settimeout(wait)

    def close(self) -> None:
        self._file.close()
        super().close()


class _BoundedSocket:
    """What ``http.client.HTTPResponse`` asks of its socket: ``makefile("rb")``, bounded."""

    def __init__(self, sock: socket.socket, attempt: Attempt) -> None:
        self._sock = sock
        self._attempt = attempt

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_BoundedReader(self._sock, self._attempt))


class _BoundedResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading through a bounded file when an attempt is running."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        attempt = getattr(_current, "attempt", None)
        super().__init__(sock if attempt is None else _BoundedSocket(sock, attempt), *args, **kwargs)  # type: ignore[arg-type]


class _BoundedHTTPConnection(HTTPConnection):
    response_class = _BoundedResponse


class _BoundedHTTPSConnection(HTTPSConnection):
    response_class = _BoundedResponse


class DeadlineAdapter(HTTPAdapter):
    """``requests``' adapter, whose connections read their answers within the attempt's deadline
    (direct or through a proxy: every pool is handed out here)."""

    def get_connection_with_tls_context(self, *args: Any, **kwargs: Any) -> HTTPConnectionPool:
        pool = super().get_connection_with_tls_context(*args, **kwargs)
        assert isinstance(pool, HTTPConnectionPool)  # what urllib3's pool managers hand out
        if issubclass(pool.ConnectionCls, HTTPSConnection):
            pool.ConnectionCls = _BoundedHTTPSConnection
        else:
            pool.ConnectionCls = _BoundedHTTPConnection
        return pool
