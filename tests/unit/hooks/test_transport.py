"""The request path (the hook's transport and responses modules): redirects, the key scrubbed in
every form, answers of the wrong shape or size, and transport errors that say what happened. The
key never leaves Blink's origin and never shows, even in part.

Reading an answer (the hook's responses module, read_answer) within the attempt's deadline: a body
trickled byte by byte is cut off at the deadline in every framing, by the elapsed-time check
after each socket read; answers in every framing are read intact.

Private imports, the exception: the scrubbing of the key out of runs of text (``without_key_runs``), the base URL's
canonical form and the largest body read are the transport's own units, each checked over many inputs that no
request through the hook could give one by one.
"""

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

from blinkops_provider import get_provider_info
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkResponseError,
    BlinkTransientError,
)
from blinkops_provider.hooks.blink import BlinkHook, Clock
from blinkops_provider.utils.names import build_base_url
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
    [
        "https://evil.example/collect?key=1#frag",
        "http://blink.test/api/v1/x?y=2",
        "https://blink.test:8443/api/v1/",
        "/api/v1/elsewhere?z=3",
        "https://user:pw@evil.example/",
    ],
)
def test_no_redirect_is_followed_and_the_key_goes_nowhere_else(
    hook: BlinkHook, status: int, endpoint: str, location: str
) -> None:
    with rm.Mocker() as m:
        m.register_uri(rm.ANY, rm.ANY, status_code=500)  # anything else asked for would show here
        m.register_uri(
            "GET" if endpoint == "list" else "PUT",
            LIST_URL if endpoint == "list" else FIELD_URL,
            status_code=status,
            headers={"Location": location},
        )
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
    [
        "https://user:s3cr3t-pa55@blink.test",
        "user:s3cr3t-pa55@blink.test",
        "https://s3cr3t-pa55@blink.test/api/v1",
        "http://user:s3cr3t-pa55@127.0.0.1:8080",
    ],
)
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
        ("blink.test:abc", None, "is not a URL"),
        ("blink.test:99999", None, "is not a URL"),
        ("https://blink.test:-1", None, "is not a URL"),
        ("blink .test", None, "spaces or control characters"),
        ("https://blink.test/ a", None, "spaces or control characters"),
        ("https://[::1", None, "is not a URL"),
        ("https://::1]", None, "is not a URL"),
        ("blink\x00.test", None, "spaces or control characters"),
        ("blink.test\n", None, None),
        ("ftp://blink.test", None, "is not a base URL"),
        ("https://blink.test?x=1", None, "must not carry"),
        ("blink.test", 70000, "port must be from 1 to 65535"),
    ],
)
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
    [
        ("sk-ключ-0123456789", "is not latin-1"),
        ("sk-\U0001f511-0123456789", "is not latin-1"),
        ("sk-0123\r\nX-Evil: 1", "control character"),
        ("sk-0123\n456789", "control character"),
        ("sk-0123\t456789", "control character"),
        ("sk-0123\x00456789", "control character"),
        ("sk-0123\x7f456789", "control character"),
    ],
)
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
    "body",
    [
        {},
        {"data": [{"id": "a"}]},
        {"results": None},
        {"results": "x"},
        {"results": [], "total": "3"},
        {"results": [], "limit": 1.5},
        {"results": [], "offset": -2},
        {"results": [1]},
        [],
    ],
)
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
)
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


# -- 9. hook_params, 10. bad input ----------------------------------------------------------------------


@pytest.mark.parametrize("params", [{"retries": 3}, {"timeout": 5, "verify": False}, "retry_limit=2"])
def test_unknown_hook_params_are_refused_when_the_dag_is_parsed(params: Any) -> None:
    from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

    with pytest.raises(BlinkInputError, match=r"hook_params: .*allowed: timeout, retry_limit, retry_delay"):
        ConnectionTypesToXComOperator(task_id="t", hook_params=params)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"sort": 5}, "sort must be a list"),
        ({"sort": True}, "sort must be a list"),
        ({"select": 7}, "select must be a list"),
        ({"select": {"name": 1}}, "select must be a list"),
        ({"sort": [3]}, "sort item"),
        ({"select": ["na\x00me"]}, "not a field name"),
        ({"select": ["name\n"]}, "not a field name"),
        ({"sort": ["name\n"]}, "sort item"),
        ({"select": ["\ud800"]}, "not a field name"),
        ({"filter": {"name": float("nan")}}, "not a number JSON can carry"),
        ({"filter": {"created_at": {"$gt": float("inf")}}}, "not a number JSON can carry"),
        ({"filter": {"$or": [{"created_at": float("-inf")}]}}, "not a number JSON can carry"),
        ({"filter": {"name": "a\ud800b"}}, "lone surrogate"),
        ({"filter": {"name": {"$like": "\udfff%"}}}, "lone surrogate"),
    ],
)
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


# -- the key in every form a hostile server may echo it; bodies too deep ------------------------


ADV_KEY = "adv/ADV_KEY+0123456789abcdef"  # a '/' and a '+': JSON- and percent-escaping change it
TABLE_URL = f"{BASE}/workspace/ws-1/table/Incidents/fields"


@pytest.fixture
def adversary(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password=ADV_KEY)


def no_key(text: str) -> None:
    """Not the key, nor any 8-character piece of it, in any of its usual encodings."""
    from urllib.parse import quote

    for form in (ADV_KEY, json.dumps(ADV_KEY)[1:-1].replace("/", "\\/"), quote(ADV_KEY, safe="")):
        for start in range(len(form) - 8):
            assert form[start : start + 8] not in text, f"{form[start : start + 8]!r} leaked"


DEEP = "[" * 100_000
NESTED = '{"status": 400, "message": "bad", "data": ' + "[" * 600 + "]" * 600 + "}"


def test_the_error_of_a_body_too_deep_is_typed_and_bounded(hook: BlinkHook) -> None:
    with rm.Mocker() as m:
        m.put(f"{TABLE_URL}/a", status_code=400, text=NESTED)
        with pytest.raises(BlinkBadRequestError) as caught:
            hook.update_table_field("ws-1", "Incidents", "a", {"type": "text", "display_name": "A"})
    assert len(str(caught.value)) < 600


@pytest.mark.parametrize("body", ['{"results": ' + "[" * 600 + "]" * 600 + "}", "[" * 100_000])
def test_a_listing_too_deep_to_parse_is_a_response_error(hook: BlinkHook, body: str) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, text=body)
        with pytest.raises(BlinkResponseError):
            list(hook.walk_connection_types())
        with pytest.raises(BlinkResponseError):
            hook.list_connection_types()


@pytest.mark.parametrize(
    ("location", "reason"),
    [(f"https://evil.test/{ADV_KEY}/x?k={ADV_KEY}", "Moved"), ("https://evil.test/x", f"Moved {ADV_KEY}")],
    ids=["in the Location path", "in the reason phrase"],
)
def test_a_redirect_message_never_shows_the_key(adversary: None, location: str, reason: str) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=302, reason=reason, headers={"Location": location})
        with pytest.raises(BlinkApiError) as caught:
            BlinkHook().list_connection_types()
    assert "no redirect is followed" in str(caught.value)
    no_key(str(caught.value))


@pytest.mark.parametrize(
    "echo",
    [
        json.dumps({"message": f"bad key {ADV_KEY}"}),  # json.dumps leaves '/' alone
        json.dumps({"message": f"bad key {ADV_KEY}"}).replace("/", "\\/"),  # JSON's optional escape
        json.dumps({"message": "bad key " + ADV_KEY}, ensure_ascii=True).replace("+", "\\u002b"),
        f"<p>bad key {ADV_KEY.replace('/', '%2F').replace('+', '%2B')}</p>",
        f"<p>bad key {ADV_KEY.replace('/', '%2f').replace('+', '%2b')}</p>",
    ],
    ids=["raw", "JSON-escaped slash", "unicode-escaped plus", "percent-encoded", "percent-encoded lower case"],
)
def test_a_key_echoed_in_any_encoding_never_shows(adversary: None, echo: str) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=400, text=echo)
        with pytest.raises(BlinkApiError) as caught:
            BlinkHook().list_connection_types()
    no_key(str(caught.value))
    no_key(repr(caught.value.__dict__))


def test_a_key_as_a_member_name_of_an_update_answer_never_shows(adversary: None) -> None:
    with rm.Mocker() as m:
        m.put(
            f"{TABLE_URL}/a",
            json={"id": "f", "name": "a", "indexes": {ADV_KEY: 1}, "attributes": {ADV_KEY: 1}},
        )
        m.put(f"{TABLE_URL}/b", json={"id": "f", "name": "b", "created_at": {ADV_KEY: 1}})
        for name in ("a", "b"):
            with pytest.raises(BlinkResponseError, match="is not a TableField") as caught:
                BlinkHook().update_table_field("ws-1", "Incidents", name, {"type": "text", "display_name": "A"})
            no_key(str(caught.value))
            no_key(repr(caught.value.__dict__))


def test_a_wrongly_typed_item_of_a_walk_is_a_response_error_that_never_shows_the_key(adversary: None) -> None:
    page = {"total": 2, "results": [{"id": "ct-1"}, {"id": "ct-2", "created_at": ADV_KEY, ADV_KEY: {"x": 1}}]}
    with rm.Mocker() as m:
        m.get(LIST_URL, json=page)
        with pytest.raises(BlinkResponseError, match=r"page 1, results\[1\]: created_at") as caught:
            list(BlinkHook().iter_connection_types())
    no_key(str(caught.value))
    assert "input_value" not in str(caught.value)


# -- a body is read within a bound on its decompressed size ----------------------------------------


def test_a_small_answer_that_inflates_without_end_is_refused_within_the_bound(hook: BlinkHook) -> None:
    """A gzip answer of about 128 KiB that inflates to 128 MiB: refused once 32 MiB are read, so
    refusing it never holds the whole inflated body."""
    import gzip
    import tracemalloc

    from blinkops_provider.utils.blink_api import MAX_BODY

    bomb = gzip.compress(b" " * (128 << 20), compresslevel=9)
    assert len(bomb) < 256 << 10
    with rm.Mocker() as m:
        m.get(LIST_URL, content=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
        tracemalloc.start()
        try:
            with pytest.raises(BlinkResponseError, match="larger than 32 MiB once decompressed"):
                hook.list_connection_types()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 2 * MAX_BODY, f"refusing it took {peak >> 20} MiB"


# -- messages that name the likely cause


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_could_not_reach_names_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    set_connection(monkeypatch, host=f"http://127.0.0.1:{port}")
    with pytest.raises(BlinkTransientError) as caught:
        BlinkHook(retry_limit=1).list_connection_types(limit=1)
    message = str(caught.value)
    assert f"could not reach 127.0.0.1:{port}" in message
    assert f"check its Base URL (host), now http://127.0.0.1:{port}/api/v1" in message


def test_tls_failure_on_a_host_without_scheme_suggests_http(
    monkeypatch: pytest.MonkeyPatch, blink_sandbox: Any
) -> None:
    host = blink_sandbox.url.removeprefix("http://")  # a plain-HTTP server, its Base URL typed without scheme
    set_connection(monkeypatch, host=host, password=blink_sandbox.api_key)
    with pytest.raises(BlinkConfigurationError) as caught:
        BlinkHook(retry_limit=1).list_connection_types(limit=1)
    assert f"set the connection's Base URL to http://{host}" in str(caught.value)


def test_tls_failure_on_a_host_with_https_keeps_the_certificate_hint(
    monkeypatch: pytest.MonkeyPatch, blink_sandbox: Any
) -> None:
    host = blink_sandbox.url.removeprefix("http://")
    set_connection(monkeypatch, host=f"https://{host}", password=blink_sandbox.api_key)
    with pytest.raises(BlinkConfigurationError) as caught:
        BlinkHook(retry_limit=1).list_connection_types(limit=1)
    assert "http://" not in str(caught.value).split("failed", 1)[1]
    assert "certificate" in str(caught.value)


@pytest.mark.parametrize(("start", "length"), [(0, 14), (5, 8), (9, 20), (0, len(API_KEY) - 1)])
def test_a_piece_of_the_key_that_blink_echoes_never_shows(hook: BlinkHook, start: int, length: int) -> None:
    """Any run of 8 or more consecutive characters of the key is removed from what the provider
    quotes of a server's answer (#35), in the exception text and the log alike."""
    piece = API_KEY[start : start + length]
    with rm.Mocker() as m:
        m.get(f"{BASE}/connection_types", status_code=400, json={"message": f"bad key {piece}..."})
        with pytest.raises(BlinkApiError) as caught:
            hook.list_connection_types()
    assert piece not in str(caught.value) and piece[:8] not in str(caught.value)
    assert "***" in str(caught.value)


def test_runs_of_the_key_shorter_than_8_characters_are_left_alone() -> None:
    from blinkops_provider.hooks._transport import without_key_runs

    assert without_key_runs("blink-t refused 0123456 it", API_KEY) == "blink-t refused 0123456 it"  # runs of 7
    assert without_key_runs("x0123456789aby", API_KEY) == "x***y"  # a run of 12, replaced whole


PAGE = {"limit": 1, "offset": 0, "total": 0, "results": []}


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        (None, None, "https://app.blinkops.com/api/v1"),
        ("", None, "https://app.blinkops.com/api/v1"),
        ("app.blinkops.com", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/api/v1", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/api/v1///", None, "https://app.blinkops.com/api/v1"),
        ("http://127.0.0.1:8080", None, "http://127.0.0.1:8080/api/v1"),
        ("127.0.0.1", 8080, "https://127.0.0.1:8080/api/v1"),
        ("http://127.0.0.1:9000", 9000, "http://127.0.0.1:9000/api/v1"),  # the Port agrees: the list shows it
        ("https://app.blinkops.com", 443, "https://app.blinkops.com/api/v1"),
        ("http://localhost", 80, "http://localhost/api/v1"),
        ("https://blink.corp.example/prefix", None, "https://blink.corp.example/prefix/api/v1"),
        (" https://app.dev.blinkops.com ", None, "https://app.dev.blinkops.com/api/v1"),
    ],
)
def test_base_url(host: str | None, port: int | None, expected: str) -> None:
    assert build_base_url(host, port) == expected


@pytest.mark.parametrize(
    ("host", "port", "named"),
    [
        ("http://127.0.0.1:9000", 8080, 9000),  # the Base URL edited, the Port left as it was
        ("https://app.blinkops.com", 43211, 443),  # from the sandbox to a tenant: never sent to :43211
        ("http://localhost", 43211, 80),
        ("blink.test:8443", 8080, 8443),
    ],
)
def test_a_port_that_disagrees_with_the_base_url_is_refused_naming_both(host: str, port: int, named: int) -> None:
    """#56 item 12: the Port is shown in the form and the connection list; one the Base URL
    contradicts is an error that says which to change, never silently ignored or used."""
    with pytest.raises(BlinkConfigurationError, match=rf"names port {named}, and its Port field says {port}") as err:
        build_base_url(host, port)
    assert "Clear the Port field" in str(err.value)


@pytest.mark.parametrize("host", ["ftp://blink.example", "https://", "https://x/api?x=1", "https://x/#frag"])
def test_unusable_hosts_are_refused(host: str) -> None:
    with pytest.raises(BlinkConfigurationError, match="host"):
        build_base_url(host)


def test_init_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_BLINK_DEFAULT", raising=False)
    hook = BlinkHook("does_not_exist")
    assert hook.blink_conn_id == "does_not_exist"
    assert "_settings" not in hook.__dict__
    assert "session" not in hook.__dict__


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retry_limit": 0}, "retry_limit"),
        ({"retry_limit": 1.5}, "retry_limit"),
        ({"retry_limit": True}, "retry_limit"),
        ({"retry_delay": -1}, "retry_delay"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": (1, -1)}, "timeout"),
    ],
)
def test_bad_hook_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BlinkHook(**kwargs)


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password="")
    with rm.Mocker() as m, pytest.raises(BlinkConfigurationError, match=r"no API key.*password"):
        BlinkHook().list_connection_types()
    assert not m.called


def test_requests_carry_key_header_user_agent_and_timeout(blink_conn: None) -> None:
    from blinkops_provider import __version__

    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook().list_connection_types(limit=1)
    request = m.request_history[0]
    assert request.headers["BLINK-API-KEY"] == API_KEY
    assert request.headers["User-Agent"] == f"airflow-provider-blinkops/{__version__}"
    assert request.headers["Accept"] == "application/json"
    assert request.timeout == (10.0, 60.0)
    assert request.verify is not False  # True, or the CA bundle of REQUESTS_CA_BUNDLE


def test_extras_set_header_name_tls_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"header_name": "X-Other-Key", "verify_ssl": "false", "timeout": "7.5"})
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook().list_connection_types(limit=1)
    request = m.request_history[0]
    assert request.headers["X-Other-Key"] == API_KEY
    assert "BLINK-API-KEY" not in request.headers
    assert request.verify is False
    assert request.timeout == 7.5


def test_airflow2_prefixed_extras_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"extra__blink__timeout": [3, 30]})
    assert BlinkHook().settings.timeout == (3.0, 30.0)


@pytest.mark.parametrize(
    ("text", "timeout"),
    [("30", 30.0), (" 7.5 ", 7.5), ("5, 120", (5.0, 120.0)), ("5,120", (5.0, 120.0)), ("[5, 120]", (5.0, 120.0))],
)
def test_the_timeout_field_takes_text_as_the_form_saves_it(
    monkeypatch: pytest.MonkeyPatch, text: str, timeout: object
) -> None:
    set_connection(monkeypatch, extra={"timeout": text})
    assert BlinkHook().settings.timeout == timeout


def test_the_timeout_field_is_text_in_both_forms() -> None:
    """One field takes a number or a pair: Airflow 3 renders the schema, Airflow 2 the widget."""
    (connection_type,) = get_provider_info()["connection-types"]
    field = connection_type["conn-fields"]["timeout"]
    assert field["schema"]["type"] == ["string", "null"]
    assert "5, 120" in field["description"]


def test_hook_timeout_wins_over_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"timeout": 5})
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook(timeout=(2, 20)).list_connection_types(limit=1)
    assert m.request_history[0].timeout == (2.0, 20.0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"verify_ssl": "maybe"}, "verify_ssl' must be true or false"),
        ({"timeout": "soon"}, "timeout' must be a positive number"),
        ({"timeout": "5, 120, 9"}, "or connect and read seconds such as '5, 120', got"),
        ({"timeout": "5, -1"}, "timeout' must be a positive number"),
        ({"header_name": "Bad Header:"}, "header_name' must be an HTTP header name"),
    ],
)
def test_bad_extras_are_config_errors(monkeypatch: pytest.MonkeyPatch, extra: dict, message: str) -> None:
    set_connection(monkeypatch, extra=extra)
    with pytest.raises(BlinkConfigurationError, match=message):
        BlinkHook().base_url  # noqa: B018


def test_settings_repr_hides_the_key(blink_conn: None) -> None:
    settings = BlinkHook().settings
    assert API_KEY not in repr(settings)
    assert settings.api_key == API_KEY


def test_key_is_handed_to_the_secret_masker(blink_conn: None, monkeypatch: pytest.MonkeyPatch) -> None:
    masked: list[str] = []
    monkeypatch.setattr("blinkops_provider.hooks.blink.mask_secret", masked.append)
    BlinkHook().base_url  # noqa: B018
    assert masked == [API_KEY]


def test_session_is_reused_and_close_releases_it(blink_conn: None) -> None:
    hook = BlinkHook()
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        first = hook.get_conn()
        hook.list_connection_types(limit=1)
        hook.list_connection_types(limit=1)
        assert hook.get_conn() is first
        hook.close()
        assert hook.get_conn() is not first


def test_provider_info_declares_the_connection_type() -> None:
    info = get_provider_info()
    (conn,) = info["connection-types"]
    assert conn["connection-type"] == BlinkHook.conn_type == "blink"
    assert conn["hook-class-name"] == "blinkops_provider.hooks.blink.BlinkHook"
    assert conn["hook-name"] == "Blink"
    behaviour = conn["ui-field-behaviour"]
    assert behaviour["relabeling"] == {
        "host": "Base URL",
        "password": "API key",
        "port": "Port (empty: the Base URL's)",
    }
    assert set(behaviour["hidden-fields"]) == {"login", "schema"}  # the Port is shown, so never stale unseen
    assert behaviour["placeholders"]["host"] == "https://app.blinkops.com"
    fields = conn["conn-fields"]
    assert fields["header_name"]["schema"]["default"] == "BLINK-API-KEY"
    assert fields["verify_ssl"]["schema"]["default"] is True
    assert "timeout" in fields


def test_the_providers_page_links_the_project_documentation() -> None:
    """Airflow's Providers page links the package to its Project-URL named Documentation."""
    from importlib.metadata import metadata

    urls = dict(entry.split(", ", 1) for entry in metadata("airflow-provider-blinkops").get_all("Project-URL") or [])
    assert urls["Documentation"].startswith("https://")
    from airflow.providers_manager import ProvidersManager

    info = ProvidersManager().providers["airflow-provider-blinkops"].data
    if "documentation-url" in info:  # Airflow 3 reads it into the provider info (3.1 keeps the space after the comma)
        assert info["documentation-url"].strip() == urls["Documentation"]
    else:  # Airflow 2.11 asks for it when the page is drawn
        from airflow.utils.docs import get_doc_url_for_provider

        assert get_doc_url_for_provider("airflow-provider-blinkops", "0.1.0") == urls["Documentation"]


def test_provider_is_registered_with_airflow() -> None:
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("blinkops")]
    assert entry.load()()["package-name"] == "airflow-provider-blinkops"


def test_airflow2_ui_hooks_match_the_provider_info() -> None:
    behaviour = BlinkHook.get_ui_field_behaviour()
    assert behaviour["relabeling"]["password"] == "API key"
    assert behaviour["hidden_fields"] == ["login", "schema"]


def test_airflow2_form_widgets() -> None:
    try:
        import flask_appbuilder  # noqa: F401
    except ImportError:
        # Airflow 3 without FAB: the providers manager catches this and reads the provider info.
        with pytest.raises(ImportError):
            BlinkHook.get_connection_form_widgets()
    else:
        widgets = BlinkHook.get_connection_form_widgets()
        assert set(widgets) == {"header_name", "verify_ssl", "timeout", "table_page"}


def test_uri_form_of_the_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_BLINK_DEFAULT", f"blink://:{API_KEY}@app.blinkops.com?timeout=30")
    settings = BlinkHook().settings
    assert (settings.base_url, settings.api_key, settings.timeout) == ("https://app.blinkops.com/api/v1", API_KEY, 30.0)


def test_no_conn_field_is_one_the_airflow_ui_masks() -> None:
    """Airflow's UI treats an extra whose name looks secret as a secret, and saves '***' from its form."""
    try:
        from airflow.sdk._shared.secrets_masker import should_hide_value_for_key  # Airflow 3
    except ImportError:
        from airflow.utils.log.secrets_masker import should_hide_value_for_key  # type: ignore[no-redef]  # Airflow 2

    from blinkops_provider import get_provider_info

    (connection_type,) = get_provider_info()["connection-types"]
    names = list(connection_type["conn-fields"])
    assert names == ["header_name", "verify_ssl", "timeout", "table_page"]
    assert [name for name in names if should_hide_value_for_key(name)] == []
    assert should_hide_value_for_key("api_key_header")  # why the extra was renamed


def test_the_table_page_is_the_hosts_root_unless_the_extra_names_a_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """#63 item 11: the "Blink table" link is built from the connection's host, never another."""
    set_connection(monkeypatch, host="https://blink.test/tenant")
    assert BlinkHook().table_page("ws-1", "Incidents") == "https://blink.test/tenant/"
    set_connection(monkeypatch, host="https://blink.test", extra={"table_page": "/t/{ws_id}/{table}"})
    assert BlinkHook().table_page("ws 1", "Q1/Q2 plans") == "https://blink.test/t/ws%201/Q1%2FQ2%20plans"


@pytest.mark.parametrize("page", ["https://evil.test/{table}", "//evil.test/{table}", "/t/{name}", "/t/{", "t/{table}"])
def test_a_table_page_that_is_not_a_path_on_the_host_is_refused(monkeypatch: pytest.MonkeyPatch, page: str) -> None:
    set_connection(monkeypatch, extra={"table_page": page})
    with pytest.raises(BlinkConfigurationError, match=r"extra 'table_page' must be a path on the connection's host"):
        BlinkHook().table_page("ws-1", "Incidents")


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
def serving(
    parts: list[bytes], pause: float, paced_by: threading.Semaphore | None = None
) -> Iterator[tuple[str, list[int]]]:
    """A one-connection-at-a-time server that sends ``parts`` with ``pause`` seconds between
    them; with its URL, how many parts it has sent. With ``paced_by``, each part after the first
    also waits for one release of it (at most ``pause``): the client's own clock readings pace the
    trickle, so a stalled client on a loaded machine cannot find many parts waiting at once."""
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
                for index, part in enumerate(parts):
                    if paced_by is not None and index:
                        paced_by.acquire(timeout=pause)
                    elif stop.wait(pause):
                        break
                    if stop.is_set():
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

    def __init__(self, step: float, readings: threading.Semaphore | None = None) -> None:
        self.now = 0.0
        self.step = step
        self.readings = readings

    def __call__(self) -> float:
        self.now += self.step
        if self.readings is not None:
            self.readings.release()
        return self.now


@pytest.mark.parametrize("framing", BODY_FRAMINGS)
def test_a_trickling_body_is_cut_off_at_the_attempt_deadline(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    """A server sending its body one byte at a time, in every framing: the attempt ends at its
    0.6 s deadline, as a timeout, on an injected clock (0.05 s a reading), long before the
    server has sent everything. The server sends a byte per reading of that clock (or every
    0.1 s): a client stalled by a loaded machine finds at most one byte waiting, not the rest."""
    parts = _framing(framing, trickle=True)
    readings = threading.Semaphore(0)
    with serving(parts, pause=0.1, paced_by=readings) as (url, sent):
        set_connection(monkeypatch, host=url, extra=json.dumps({"timeout": DEADLINE_TIMEOUT}))
        hook = BlinkHook(retry_limit=1, clock=Clock(monotonic=SteppingClock(0.05, readings)))
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
