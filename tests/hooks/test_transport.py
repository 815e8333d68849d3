"""The request path (the hook's transport and responses modules): redirects, the key scrubbed in
every form, answers of the wrong shape or size, and transport errors that say what happened. The
key never leaves Blink's origin and never shows, even in part."""

from __future__ import annotations

import json
import pickle
import socket
from typing import Any

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
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

    from blinkops_provider._blink import MAX_BODY

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
