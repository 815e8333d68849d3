"""Hostile servers, hostile configuration and fuzzed input: every class of defect the adversarial
review found, table-driven. The key never leaves Blink's origin, never shows (even in part), and
every failure is typed and says what happened."""

from __future__ import annotations

import gzip
import json
import pickle
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkResponseError,
    BlinkTransientError,
)
from blinkops_provider.hooks.blink import BlinkHook
from tests.conftest import API_KEY, set_connection

BASE = "https://blink.test/api/v1"
LIST_URL = f"{BASE}/connection_types"
FIELD_URL = f"{BASE}/workspace/ws-1/table/T/fields/F"
UPDATE = {"type": "text", "display_name": "F"}


def parts_of(secret: str, size: int = 6) -> list[str]:
    """Every run of ``size`` characters of a secret: none may show."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_no_secret(text: str, secret: str = API_KEY) -> None:
    leaked = [part for part in parts_of(secret) if part in text]
    assert not leaked, f"part of the secret shows: {leaked[0]!r}"


def call(hook: BlinkHook, endpoint: str) -> Any:
    if endpoint == "list":
        return hook.list_connection_types(limit=1)
    return hook.update_table_field("ws-1", "T", "F", UPDATE)


# -- 1. redirects ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("endpoint", ["list", "update"])
@pytest.mark.parametrize(
    "location",
    ["https://evil.example/collect?key=1#frag", "http://blink.test/api/v1/x?y=2", "https://blink.test:8443/api/v1/",
     "/api/v1/elsewhere?z=3", "https://user:pw@evil.example/"],
)  # fmt: skip
def test_no_redirect_is_followed_and_the_key_goes_nowhere_else(
    hook: BlinkHook, status: int, endpoint: str, location: str
) -> None:
    with rm.Mocker() as m:
        m.register_uri(rm.ANY, rm.ANY, status_code=500)  # anything else asked for would show here
        m.register_uri("GET" if endpoint == "list" else "PUT", LIST_URL if endpoint == "list" else FIELD_URL,
                       status_code=status, headers={"Location": location})  # fmt: skip
        with pytest.raises(BlinkApiError) as caught:
            call(hook, endpoint)
        assert m.call_count == 1  # neither followed nor retried
        assert m.request_history[0].headers["BLINK-API-KEY"] == API_KEY  # sent to the base URL only
    message = str(caught.value)
    assert caught.value.status == status
    assert f"answered {status}" in message and "no redirect is followed" in message
    assert "?" not in message.split("pointing to", 1)[1].split(";")[0]  # the target, without its query
    assert "pw" not in message and "key=1" not in message


# -- 2. scrub first, then cut ------------------------------------------------------------------


@pytest.mark.parametrize("position", [0, 150, 190, 195, 199, 200, 205, 400])
@pytest.mark.parametrize("shape", ["text", "wrapper-message", "wrapper-data", "wrapper-user-error"])
def test_a_key_echoed_anywhere_in_an_error_body_never_shows(hook: BlinkHook, position: int, shape: str) -> None:
    text = "x" * position + API_KEY + "y" * 50
    body: dict[str, Any] = {
        "text": {"text": text},
        "wrapper-message": {"json": {"status": 400, "message": text, "details": text}},
        "wrapper-data": {"json": {"status": 400, "message": "bad", "data": {"echo": [text, {text: 1}]}}},
        "wrapper-user-error": {"json": {"status": 400, "message": "bad", "user_error": {"hint": text}}},
    }[shape]
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=400, **body)
        with pytest.raises(BlinkApiError) as caught:
            hook.list_connection_types(limit=1)
    error = caught.value
    for shown in (str(error), repr(error), json.dumps(error.data), json.dumps(error.user_error), str(error.details)):
        assert_no_secret(shown)
    assert_no_secret(pickle.dumps(error).decode("latin-1"))
    assert_no_secret(str(pickle.loads(pickle.dumps(error))))


@pytest.mark.parametrize("position", [0, 190, 196, 199])
def test_a_key_in_a_2xx_body_of_the_wrong_shape_never_shows(hook: BlinkHook, position: int) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, text="<" + "x" * position + API_KEY)
        with pytest.raises(BlinkResponseError) as caught:
            hook.list_connection_types(limit=1)
    assert_no_secret(str(caught.value))


# -- 3. credentials in the base URL, 9. unusable hosts --------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["https://user:s3cr3t-pa55@blink.test", "user:s3cr3t-pa55@blink.test", "https://s3cr3t-pa55@blink.test/api/v1",
     "http://user:s3cr3t-pa55@127.0.0.1:8080"],
)  # fmt: skip
def test_credentials_in_the_base_url_are_refused_without_showing_them(
    monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    set_connection(monkeypatch, host=host)
    hook = BlinkHook()
    with rm.Mocker() as m:
        with pytest.raises(BlinkConfigurationError, match="carries a user name or password") as caught:
            hook.list_connection_types(limit=1)
        ok, message = hook.test_connection()
        assert not m.called
    assert not ok
    for shown in (str(caught.value), message):
        assert "s3cr3t" not in shown
        assert "Base URL" in shown


@pytest.mark.parametrize(
    ("host", "port", "problem"),
    [
        ("blink.test:abc", None, "is not a URL"), ("blink.test:99999", None, "is not a URL"),
        ("https://blink.test:-1", None, "is not a URL"), ("blink .test", None, "spaces or control characters"),
        ("https://blink.test/ a", None, "spaces or control characters"), ("https://[::1", None, "is not a URL"),
        ("https://::1]", None, "is not a URL"), ("blink\x00.test", None, "spaces or control characters"),
        ("blink.test\n", None, None), ("ftp://blink.test", None, "is not a base URL"),
        ("https://blink.test?x=1", None, "must not carry"), ("blink.test", 70000, "port must be from 1 to 65535"),
    ],
)  # fmt: skip
def test_an_unusable_host_is_a_configuration_error_naming_the_field(
    monkeypatch: pytest.MonkeyPatch, host: str, port: int | None, problem: str | None
) -> None:
    set_connection(monkeypatch, host=host, **({"port": port} if port else {}))
    hook = BlinkHook()
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": []})
        if problem is None:  # surrounding white space is trimmed: a usable host
            hook.list_connection_types(limit=1)
            return
        with pytest.raises(BlinkConfigurationError, match=problem) as caught:
            hook.list_connection_types(limit=1)
        assert not m.called
    assert "host (Base URL)" in str(caught.value) or "port" in str(caught.value)


# -- 4. keys that cannot travel in a header -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "problem"),
    [("sk-ключ-0123456789", "is not latin-1"), ("sk-\U0001f511-0123456789", "is not latin-1"),
     ("sk-0123\r\nX-Evil: 1", "control character"), ("sk-0123\n456789", "control character"),
     ("sk-0123\t456789", "control character"), ("sk-0123\x00456789", "control character"),
     ("sk-0123\x7f456789", "control character")],
)  # fmt: skip
def test_a_key_that_cannot_travel_in_a_header_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, key: str, problem: str
) -> None:
    set_connection(monkeypatch, password=key)
    with rm.Mocker() as m:
        with pytest.raises(BlinkConfigurationError, match=problem) as caught:
            BlinkHook().list_connection_types(limit=1)
        assert not m.called
    for shown in (str(caught.value), repr(caught.value)):
        assert_no_secret(shown, key.strip())


# -- 6. a 2xx body of the wrong shape ------------------------------------------------------------------


@pytest.mark.parametrize(
    "body", [{}, {"data": [{"id": "a"}]}, {"results": None}, {"results": "x"}, {"results": [], "total": "3"},
             {"results": [], "limit": 1.5}, {"results": [], "offset": -2}, {"results": [1]}, []],
)  # fmt: skip
def test_a_listing_of_the_wrong_shape_is_a_response_error(hook: BlinkHook, body: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json=body)
        with pytest.raises(BlinkResponseError):
            hook.list_connection_types(limit=1)
        with pytest.raises(BlinkResponseError):
            list(hook.walk_connection_types())


@pytest.mark.parametrize("body", [{}, {"display_name": "F"}, [], {"type": "text"}])
def test_an_update_answer_that_names_no_field_is_a_response_error(hook: BlinkHook, body: Any) -> None:
    with rm.Mocker() as m:
        m.put(FIELD_URL, json=body)
        with pytest.raises(BlinkResponseError, match="TableField"):
            hook.update_table_field("ws-1", "T", "F", UPDATE)


def test_response_models_still_keep_unknown_members_and_tolerate_missing_ones(hook: BlinkHook) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json={"results": [{"id": "a", "new_member": {"x": 1}}]})
        m.put(FIELD_URL, json={"name": "F", "future": True})
        page = hook.list_connection_types(limit=1)
        field = hook.update_table_field("ws-1", "T", "F", UPDATE)
    assert page.results[0].to_json_dict() == {"id": "a", "new_member": {"x": 1}}
    assert field.to_json_dict() == {"name": "F", "future": True}


# -- 7. transport errors say what happened ------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "error", "text", "attempts"),
    [
        (requests.exceptions.ConnectTimeout, BlinkTransientError, "timed out connecting to blink.test", 3),
        (requests.exceptions.ReadTimeout, BlinkTransientError, "timed out waiting for blink.test", 3),
        (requests.exceptions.ConnectionError, BlinkTransientError, "could not reach blink.test", 3),
        (requests.exceptions.ChunkedEncodingError, BlinkTransientError, "broke during the response", 3),
        (requests.exceptions.ContentDecodingError, BlinkApiError, "could not decode the response body", 1),
        (requests.exceptions.TooManyRedirects, BlinkApiError, "failed (TooManyRedirects)", 1),
        (requests.exceptions.InvalidHeader, BlinkApiError, "failed (InvalidHeader)", 1),
        (requests.exceptions.SSLError, BlinkConfigurationError, "TLS with https://blink.test failed", 1),
    ],
)  # fmt: skip
def test_transport_errors_name_the_cause_and_the_real_number_of_attempts(
    hook: BlinkHook, exc: type[Exception], error: type[Exception], text: str, attempts: int
) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, exc=exc)
        with pytest.raises(error) as caught:
            hook.list_connection_types(limit=1)
        assert m.call_count == attempts
    message = str(caught.value)
    assert text in message
    assert f"after {attempts} attempt(s)" in message
    if error is not BlinkTransientError or "could not reach" not in text:
        assert "could not reach" not in message
    if exc is requests.exceptions.SSLError:
        assert "verify_ssl" in message


# -- 8. one attempt has a deadline -----------------------------------------------------------------------


BODY = b'{"results": [], "total": 0}'
DEADLINE_TIMEOUT = [0.3, 0.3]  # connect + read: a deadline of 0.6 s per attempt


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


@contextmanager
def serving(parts: list[bytes], pause: float) -> Iterator[str]:
    """A one-connection-at-a-time server that sends ``parts`` with ``pause`` seconds between them."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

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

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_trickling_answer_is_cut_off_at_the_attempt_deadline(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    """A server sending one byte every 50 ms (for several seconds) in every framing and phase:
    the attempt ends within 0.2 s past its 0.6 s deadline, as a timeout."""
    with serving(_framing(framing, trickle=True), pause=0.05) as url:
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": DEADLINE_TIMEOUT}))
        hook = BlinkHook(retry_limit=1)
        started = time.monotonic()
        with pytest.raises(BlinkTransientError, match=r"the answer took longer than 0\.6 s\), after 1 attempt"):
            hook.list_connection_types(limit=1)
        elapsed = time.monotonic() - started
    assert 0.55 <= elapsed <= 0.8, f"{framing}: the attempt took {elapsed:.2f} s"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_the_deadline_leaves_answers_in_every_framing_intact(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    with serving(_framing(framing, trickle=False), pause=0) as url:
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": DEADLINE_TIMEOUT}))
        page = BlinkHook(retry_limit=1).list_connection_types(limit=1)
    assert (page.results, page.total) == ([], 0)


def test_a_slow_answer_within_the_deadline_is_not_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes 50 ms apart for about 0.4 s in all: within the 0.6 s deadline, the answer is read."""
    parts = _framing("keep-alive", trickle=False)[0]
    with serving([parts[i : i + 12] for i in range(0, len(parts), 12)], pause=0.05) as url:
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": DEADLINE_TIMEOUT}))
        assert BlinkHook(retry_limit=1).list_connection_types(limit=1).total == 0


# -- 9. hook_params, 10. bad input ----------------------------------------------------------------------


@pytest.mark.parametrize("params", [{"retries": 3}, {"timeout": 5, "verify": False}, "retry_limit=2"])
def test_unknown_hook_params_are_refused_when_the_dag_is_parsed(params: Any) -> None:
    from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

    with pytest.raises(BlinkInputError, match=r"hook_params: .*allowed: timeout, retry_limit, retry_delay"):
        ConnectionTypesToXComOperator(task_id="t", hook_params=params)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"sort": 5}, "sort must be a list"), ({"sort": True}, "sort must be a list"),
        ({"select": 7}, "select must be a list"), ({"select": {"name": 1}}, "select must be a list"),
        ({"sort": [3]}, "sort item"), ({"select": ["na\x00me"]}, "not a field name"),
        ({"select": ["name\n"]}, "not a field name"), ({"sort": ["name\n"]}, "sort item"),
        ({"select": ["\ud800"]}, "not a field name"),
        ({"filter": {"name": float("nan")}}, "not a number JSON can carry"),
        ({"filter": {"created_at": {"$gt": float("inf")}}}, "not a number JSON can carry"),
        ({"filter": {"$or": [{"created_at": float("-inf")}]}}, "not a number JSON can carry"),
        ({"filter": {"name": "a\ud800b"}}, "lone surrogate"),
        ({"filter": {"name": {"$like": "\udfff%"}}}, "lone surrogate"),
    ],
)  # fmt: skip
def test_bad_query_input_is_refused_before_any_request(hook: BlinkHook, kwargs: dict, problem: str) -> None:
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=problem):
            hook.list_connection_types(**kwargs)
        with pytest.raises(BlinkInputError, match=problem):
            hook.walk_connection_types(**kwargs)
        assert not m.called


@pytest.mark.parametrize(
    ("ws_id", "table", "field"), [("\ud800", "T", "F"), ("w", "a\udfffb", "F"), ("w", "T", "\ud83d")]
)
def test_names_with_lone_surrogates_are_refused_before_any_request(
    hook: BlinkHook, ws_id: str, table: str, field: str
) -> None:
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match="lone surrogate"):
            hook.update_table_field(ws_id, table, field, UPDATE)
        assert not m.called
