"""Reading an answer (the hook's responses module, read_answer) within the attempt's deadline: a body
trickled byte by byte is cut off at the deadline in every framing, by the elapsed-time check
after each socket read; answers in every framing are read intact."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from blinkops_provider.exceptions import BlinkTransientError
from blinkops_provider.hooks._transport import Clock
from blinkops_provider.hooks.blink import BlinkHook
from tests.conftest import set_connection

BODY = b'{"results": [], "total": 0}'
DEADLINE_TIMEOUT = [0.3, 0.3]  # connect + read: a deadline of 0.6 s per attempt
ROOMY_TIMEOUT = [1.5, 1.5]
"""A deadline of 3 s: room for a loaded machine (pytest-xdist) where an answer must not be cut."""


def _bytes(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def _chunked(data: bytes) -> list[bytes]:
    return [b"1\r\n" + byte + b"\r\n" for byte in _bytes(data)] + [b"0\r\n\r\n"]


def _framing(name: str, trickle: bool) -> list[bytes]:
    """The parts a server sends, with a pause between parts (each byte, when trickling)."""
    body = gzip.compress(BODY) if name == "gzip" else BODY
    length = f"Content-Length: {len(body)}\r\n".encode()
    head = {
        "keep-alive": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + length,
        "Connection: close": b"HTTP/1.1 200 OK\r\nConnection: close\r\n",
        "close with length": b"HTTP/1.1 200 OK\r\nConnection: close\r\n" + length,
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n",
        "gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n",
        "status line": b"HTTP/1.1 200 OK\r\n" + length,
        "headers": b"HTTP/1.1 200 OK\r\nX-Padding: " + b"p" * 40 + b"\r\n" + length,
    }[name] + b"\r\n"
    if not trickle:
        return [head + (b"".join(_chunked(body)) if name == "chunked" else body)]
    if name == "status line":
        return _bytes(head + body)
    if name == "headers":
        status, rest = head.split(b"\r\n", 1)
        return [status + b"\r\n", *_bytes(rest + body)]
    return [head, *(_chunked(body) if name == "chunked" else _bytes(body))]


FRAMINGS = ["keep-alive", "Connection: close", "close with length", "chunked", "gzip", "status line", "headers"]
BODY_FRAMINGS = FRAMINGS[:5]  # a trickled status line or headers is bounded by the read timeout per byte only


@contextmanager
def serving(parts: list[bytes], pause: float) -> Iterator[tuple[str, list[int]]]:
    """A one-connection-at-a-time server that sends ``parts`` with ``pause`` seconds between
    them; with its URL, how many parts it has sent."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    sent = [0]

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                for part in parts:
                    if stop.wait(pause):
                        break
                    try:
                        connection.sendall(part)
                    except OSError:
                        break
                    sent[0] += 1

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", sent
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        listener.close()
        thread.join(5)


class SteppingClock:
    """Monotonic seconds that advance by ``step`` at every reading: the deadline passes after a
    known number of reads, whatever the machine's speed."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize("framing", BODY_FRAMINGS)
def test_a_trickling_body_is_cut_off_at_the_attempt_deadline(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    """A server sending its body one byte at a time, in every framing: the attempt ends at its
    0.6 s deadline, as a timeout, on an injected clock (0.05 s a reading), long before the
    server has sent everything."""
    parts = _framing(framing, trickle=True)
    with serving(parts, pause=0.002) as (url, sent):
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": DEADLINE_TIMEOUT}))
        hook = BlinkHook(retry_limit=1, clock=Clock(monotonic=SteppingClock(0.05)))
        started = time.monotonic()
        with pytest.raises(BlinkTransientError, match=r"the answer took longer than 0\.6 s\), after 1 attempt"):
            hook.list_connection_types(limit=1)
        assert time.monotonic() - started < 30  # a generous bound: it never waits for the whole trickle
    assert sent[0] < len(parts), f"{framing}: the whole answer was read"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_the_deadline_leaves_answers_in_every_framing_intact(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    with serving(_framing(framing, trickle=False), pause=0) as (url, _):
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": ROOMY_TIMEOUT}))
        page = BlinkHook(retry_limit=1).list_connection_types(limit=1)
    assert (page.results, page.total) == ([], 0)


def test_a_slow_answer_within_the_deadline_is_not_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes 50 ms apart for about 0.4 s in all: within the 3 s deadline, the answer is read."""
    parts = _framing("keep-alive", trickle=False)[0]
    with serving([parts[i : i + 12] for i in range(0, len(parts), 12)], pause=0.05) as (url, _):
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": ROOMY_TIMEOUT}))
        assert BlinkHook(retry_limit=1).list_connection_types(limit=1).total == 0
