"""
Fault injection and the request log of the sandbox, as one ASGI middleware around the API.

Faults are drawn per API request (paths under ``/api/v1``), in arrival order: first from the
fixed ``sequence``, then by the rates, from a random generator seeded with ``seed``, so the same
settings and the same requests give the same faults.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from blinkops_sandbox._blink_api import API_PREFIX, TRANSIENT_STATUSES

FaultName = Literal["ok", "drop", "truncate", "non-json"]


def _retryable_status(status: int) -> int:
    if status not in TRANSIENT_STATUSES:
        raise ValueError(f"a fault status must be one of Blink's transient ones: {sorted(TRANSIENT_STATUSES)}")
    return status


FaultStatus = Annotated[int, AfterValidator(_retryable_status)]
"""A status of a fault that may pass (Blink's rate limit, its 5xx)."""
Fault = FaultStatus | FaultName

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class FaultConfig(BaseModel):
    """
    What the sandbox does wrong, and how often.

    :param latency_ms: added to every API request.
    :param error_rate: share of requests answered with one of ``error_statuses``.
    :param error_statuses: the statuses ``error_rate`` draws from.
    :param drop_rate: share of requests whose connection is closed before any response.
    :param truncate_rate: share of requests answered 200 with the JSON body cut in half (the
        request itself is carried out).
    :param non_json_rate: share of requests answered 200 with an HTML page, as a proxy might.
    :param sequence: faults for the next requests, in order, before the rates apply: a status
        (429, 500, 502, 503, 504) or ``ok``, ``drop``, ``truncate``, ``non-json``.
    :param retry_after: the ``Retry-After`` header of a 429 (seconds, or an HTTP date); None for none.
    :param seed: seeds the draws.
    :param fields_read_status: 404 or 405 answers every ``GET .../fields`` with it, as a Blink (or a
        proxy) that does not serve the read; None serves it.
    :param workflows_read_status: 403, 404 or 405 answers every ``GET .../playbooks`` with it (a key whose user may
        not read workflows, or a Blink that does not serve the read); None serves it.
    """

    model_config = ConfigDict(extra="forbid")

    latency_ms: float = Field(default=0, ge=0, le=600_000)
    error_rate: float = Field(default=0, ge=0, le=1)
    error_statuses: list[FaultStatus] = Field(default_factory=lambda: [503], min_length=1)  # type: ignore[arg-type]
    drop_rate: float = Field(default=0, ge=0, le=1)
    truncate_rate: float = Field(default=0, ge=0, le=1)
    non_json_rate: float = Field(default=0, ge=0, le=1)
    sequence: list[Fault] = Field(default_factory=list)
    retry_after: str | None = "1"
    seed: int = 0
    fields_read_status: Literal[404, 405] | None = None
    workflows_read_status: Literal[403, 404, 405] | None = None

    @model_validator(mode="after")
    def _rates_fit(self) -> FaultConfig:
        if self.error_rate + self.drop_rate + self.truncate_rate + self.non_json_rate > 1:
            raise ValueError("error_rate, drop_rate, truncate_rate and non_json_rate add up to more than 1")
        return self


class FaultInjector:
    """Decides the fault of each API request; reconfigurable while the server runs."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self._lock = threading.Lock()
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        self.configure(config or FaultConfig())

    def configure(self, config: FaultConfig) -> None:
        with self._lock:
            self.config = config
            self._rng = random.Random(config.seed)
            self._sequence: deque[Fault] = deque(config.sequence)

    def next_fault(self) -> Fault:
        with self._lock:
            if self._sequence:
                return self._sequence.popleft()
            config = self.config
            draw = self._rng.random()
            for rate, fault in (
                (config.error_rate, None),
                (config.drop_rate, "drop"),
                (config.truncate_rate, "truncate"),
                (config.non_json_rate, "non-json"),
            ):
                if draw < rate:
                    return self._rng.choice(config.error_statuses) if fault is None else fault  # type: ignore[return-value]
                draw -= rate
            return "ok"


class RequestLog:
    """
    The API requests the sandbox received (the newest ``size``), for tests to inspect.

    :ivar in_flight: API requests being answered now.
    :ivar peak_in_flight: the most answered at once since the log was last cleared.
    """

    def __init__(self, size: int = 10_000) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=size)
        self._lock = threading.Lock()
        self._seq = 0
        self.in_flight = 0
        self.peak_in_flight = 0

    def started(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def finished(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            entry["seq"] = self._seq
            self._entries.append(entry)
        return entry

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._entries]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.peak_in_flight = self.in_flight


_SECRET_HEADER = re.compile(rb"key|token|secret|auth|passw|cookie|session", re.IGNORECASE)
"""Header names whose values the request log masks, besides the key header itself."""


LOGGED_BODY_BYTES = 2000
"""The most of a request body the request log keeps, JSON or not (the log stays small)."""


def _describe_body(body: bytes) -> Any:
    """Return a request body as the log keeps it: parsed JSON when short, else its first bytes as text."""
    if not body:
        return None
    if len(body) > LOGGED_BODY_BYTES:
        return body[:LOGGED_BODY_BYTES].decode("utf-8", "replace") + f"... ({len(body)} bytes in all)"
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return body.decode("utf-8", "replace")


class FaultMiddleware:
    """Logs every API request and applies the injector's fault to it."""

    def __init__(
        self,
        app: Any,
        *,
        injector: FaultInjector,
        log: RequestLog,
        key_header: str,
        api_key: str,
        prefix: str = API_PREFIX,
    ) -> None:
        self.app: ASGIApp = app
        self.injector = injector
        self.log = log
        self.key_header = key_header.lower().encode()
        self.api_key = api_key.encode()
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        self.log.started()
        try:
            await self._answer(scope, receive, send)
        finally:
            self.log.finished()

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        entry = self.log.add(self._entry(scope, body))
        fault = self.injector.next_fault()
        entry["fault"] = None if fault == "ok" else fault
        latency = self.injector.config.latency_ms
        if latency:
            await self.injector.sleep(latency / 1000)
        if fault == "drop":
            await self._drop(send)
            return
        if isinstance(fault, int):
            entry["status"] = fault
            await self._error(send, fault)
            return
        if fault == "non-json":
            entry["status"] = 200
            await _respond(
                send, 200, b"<html><body><h1>Gateway</h1>upstream says hello</body></html>", b"text/html; charset=utf-8"
            )
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
                if fault == "truncate" and not 200 <= message["status"] < 300:
                    entry["fault"] = None  # an error answer is passed on whole
                start.update(message)
                if fault != "truncate":
                    await send(message)
            elif message["type"] == "http.response.body" and fault == "truncate":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    whole = b"".join(chunks)
                    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    ok = 200 <= start.get("status", 500) < 300
                    cut = whole[: len(whole) // 2] if ok else whole  # only a success is truncated
                    await send({**start, "headers": [*headers, (b"content-length", str(len(cut)).encode())]})
                    await send({"type": "http.response.body", "body": cut})
            else:
                await send(message)

        await self.app(scope, replay, capture)

    def _entry(self, scope: Scope, body: bytes) -> dict[str, Any]:
        headers: dict[str, str] = {}
        key_state = "missing"
        for name, value in scope.get("headers", []):
            if name.lower() == self.key_header:
                key_state = "valid" if value == self.api_key else "invalid"
            if name.lower() == self.key_header or _SECRET_HEADER.search(name) or self.api_key in value:
                value = b"***"  # whatever header carries a key (a custom name, a wrong key) stays masked
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        return {
            "time": time.time(),
            "method": scope["method"],
            "path": scope["path"],
            "raw_path": scope.get("raw_path", b"").decode("latin-1") or scope["path"],
            "query": scope.get("query_string", b"").decode("latin-1"),
            "headers": headers,
            "api_key": key_state,
            "body": _describe_body(body),
            "status": None,
            "fault": None,
        }

    async def _error(self, send: Send, status: int) -> None:
        wrapper = {
            "status": status,
            "message": f"{HTTPStatus(status).phrase} (injected by the sandbox)",
            "details": "a fault set with --error-rate, --fault-sequence or POST /_sandbox/faults",
            "identifier": "SANDBOX_FAULT",
            "data": None,
            "user_error": None,
        }
        extra = []
        if status == 429 and self.injector.config.retry_after is not None:
            extra.append((b"retry-after", self.injector.config.retry_after.encode()))
        await _respond(send, status, json.dumps(wrapper).encode(), b"application/json", extra)

    @staticmethod
    async def _drop(send: Send) -> None:
        """Close the connection without a byte of response (uvicorn's transport, found through send)."""
        cycle = getattr(send, "__self__", None)
        transport = getattr(cycle, "transport", None)
        if transport is None:
            raise RuntimeError("the sandbox can drop connections only when served by uvicorn")
        transport.close()
        if cycle is not None:
            cycle.disconnected = True  # uvicorn then sends nothing more for this request


async def _respond(
    send: Send, status: int, body: bytes, content_type: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
