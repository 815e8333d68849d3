"""A hostile server and a careless user: the batch report is true in every outcome, parsing is
bounded, and the key is scrubbed in every form (one class of finding per section)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import requests_mock as rm
from airflow.providers.common.compat.sdk import AirflowTaskTimeout

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
    BlinkInputError,
    BlinkResponseError,
)
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from tests.conftest import set_connection
from tests.test_field_updates import TABLE_URL, FakeTI, entry, field_json

BASE = "https://blink.test/api/v1"
LIST_URL = f"{BASE}/connection_types"
KEY = "adv/KEY+0123456789abcdef"  # a '/' and a '+': JSON- and percent-escaping change it


@pytest.fixture
def adversary(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password=KEY)


def no_key(text: str) -> None:
    """Not the key, nor any 8-character piece of it, in any of its usual encodings."""
    from urllib.parse import quote

    for form in (KEY, json.dumps(KEY)[1:-1].replace("/", "\\/"), quote(KEY, safe="")):
        for start in range(len(form) - 8):
            assert form[start : start + 8] not in text, f"{form[start : start + 8]!r} leaked"


# -- 1. duplicates, in every input form ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"Severity": {"type": "text", "display_name": "first"}, "Severity": {"type": "text", "display_name": "second"}}',
        '[{"field": "Severity", "type": "text", "display_name": "a", "display_name": "b"}]',
    ],
)
def test_json_text_that_names_a_member_twice_is_refused_before_any_request(blink_conn: None, text: str) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"names '(Severity|display_name)' twice in one object"):
        BlinkHook().update_table_fields("ws-1", "Incidents", text)
    assert not m.called


# -- 2. the report is keyed by the declared names -----------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        {"id": "fld-1"},  # no name at all
        {"id": "fld-1", "name": "severity"},  # case-folded
        {"id": "fld-1", "name": "Cafe\u0301"},  # normalised differently
    ],
    ids=["id only", "case-folded", "other normal form"],
)
def test_the_report_is_keyed_by_the_declared_names_whatever_the_server_echoes(
    blink_conn: None, answer: dict[str, Any]
) -> None:
    fields = [entry("Severity"), entry("Café")]
    op = UpdateTableFieldsOperator(task_id="apply", ws_id="ws-1", table="Incidents", fields=fields)
    with rm.Mocker() as m:
        m.put(rm.ANY, json=answer)
        summary = op.execute({"ti": FakeTI()})  # succeeds: every field was applied
    assert summary["updated"] == ["Severity", "Café"]
    assert summary["failed"] == [] and summary["unknown"] == []


# -- 3. Retry-After pauses every worker, whichever attempt it comes on -------------------------


def test_a_retry_after_on_the_last_attempt_still_pauses_every_worker(make_hook: Any, sleeps: Any) -> None:
    hook = make_hook(retry_limit=1)
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=429, headers={"Retry-After": "7"}, json={})
        with pytest.raises(BlinkApiError):
            hook.list_connection_types()
    assert hook.transport.pause.remaining() == pytest.approx(7.0)  # the next call of any worker waits


# -- 4. any exception in a worker is that field's failure; parsing is bounded ------------------


DEEP = "[" * 100_000
NESTED = '{"status": 400, "message": "bad", "data": ' + "[" * 600 + "]" * 600 + "}"


@pytest.mark.parametrize("body", [DEEP, NESTED], ids=["[ x 100,000", "data nested 600 deep"])
def test_a_400_body_too_deep_to_parse_is_that_fields_typed_failure(blink_conn: None, body: str) -> None:
    op = UpdateTableFieldsOperator(task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a"), entry("b")])
    ti = FakeTI()
    with rm.Mocker() as m:
        m.put(f"{TABLE_URL}/a", status_code=400, text=body)
        m.put(f"{TABLE_URL}/b", json=field_json)
        with pytest.raises(BlinkApiError, match="1 of 2 field"):
            op.execute({"ti": ti})
    assert ti.pushed["return_value"]["updated"] == ["b"]
    assert [f["field"] for f in ti.pushed["return_value"]["failed"]] == ["a"]
    assert ti.pushed["return_value"]["failed"][0]["status"] == 400


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


def test_an_unexpected_exception_in_a_worker_is_that_fields_failure(blink_conn: None) -> None:
    class Faulty(requests.Session):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if url.endswith("/a"):
                raise RuntimeError("a library's surprise")
            return super().request(method, url, *args, **kwargs)

    hook = BlinkHook(session_factory=Faulty)
    with rm.Mocker() as m:
        m.put(rm.ANY, json=field_json)
        result = hook.update_table_fields("ws-1", "Incidents", [entry("a"), entry("b")])
    assert list(result.failed) == ["a"]
    assert isinstance(result.failed["a"], BlinkApiError)
    assert "RuntimeError" in str(result.failed["a"])
    assert [f.name for f in result.updated] == ["b"]


# -- 5. the XCom on every way out --------------------------------------------------------------


@pytest.mark.parametrize("interruption", [AirflowTaskTimeout, KeyboardInterrupt])
def test_the_xcom_is_pushed_when_the_batch_is_interrupted(blink_conn: None, interruption: type, tmp_path: Path) -> None:
    """As Airflow's execution_timeout (SIGALRM) or a stop (SIGINT) does: the signal's handler
    raises in the task's main thread while a field is in flight. The schema record gets the
    fields Blink confirmed, and only those."""
    release = threading.Event()
    in_flight = threading.Event()

    class Slow(requests.Session):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if url.endswith("/slow"):
                in_flight.set()
                os.kill(os.getpid(), signal.SIGUSR1)  # the interruption, delivered to the main thread
                release.wait(10)
                raise requests.ConnectionError("released after the test")  # never on to the network
            return super().request(method, url, *args, **kwargs)

    def interrupt(signum: int, frame: Any) -> None:
        raise interruption("interrupted")

    previous = signal.signal(signal.SIGUSR1, interrupt)
    names = ["a", "b", "slow", "c", "d", "e"]
    op = UpdateTableFieldsOperator(
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry(n) for n in names],
        max_concurrency=1,
        record_path=str(tmp_path / "record.json"),
        hook_params={"retry_limit": 1},
    )
    op.hook = BlinkHook(session_factory=Slow, retry_limit=1)  # the operator's hook, with the slow session
    ti = FakeTI()
    try:
        with rm.Mocker() as m:
            m.put(rm.ANY, json=field_json)
            with pytest.raises(interruption):
                op.execute({"ti": ti})
            assert in_flight.is_set()
    finally:
        release.set()
        signal.signal(signal.SIGUSR1, previous)
    summary = ti.pushed["return_value"]
    assert summary["updated"] == ["a", "b"]
    assert summary["unknown"] == ["slow"]
    assert [f["field"] for f in summary["failed"]] == ["c", "d", "e"]  # not sent
    assert all("not sent" in f["message"] for f in summary["failed"])
    assert summary["outcomes"] == {"a": "added", "b": "added", "slow": "unknown", **dict.fromkeys("cde", "failed")}
    assert set(json.loads((tmp_path / "record.json").read_text())["fields"]) == {"a", "b"}


# -- 6. a 2xx whose answer cannot be read was applied -------------------------------------------


def test_a_2xx_answer_that_cannot_be_read_is_reported_applied(blink_conn: None, provider_log: Any) -> None:
    op = UpdateTableFieldsOperator(task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a"), entry("b")])
    with rm.Mocker() as m:
        m.put(f"{TABLE_URL}/a", status_code=200, text="<html>OK</html>")
        m.put(f"{TABLE_URL}/b", json=field_json)
        summary = op.execute({"ti": FakeTI()})
    assert summary["updated"] == ["a", "b"] and summary["failed"] == []
    assert any("a: applied; answer unreadable" in line for line in provider_log())
    assert not any("failed with 200" in line for line in provider_log())


# -- 8 to 11. the key, scrubbed in every form ---------------------------------------------------


@pytest.mark.parametrize(
    ("location", "reason"),
    [(f"https://evil.test/{KEY}/x?k={KEY}", "Moved"), ("https://evil.test/x", f"Moved {KEY}")],
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
        json.dumps({"message": f"bad key {KEY}"}),  # json.dumps leaves '/' alone
        json.dumps({"message": f"bad key {KEY}"}).replace("/", "\\/"),  # JSON's optional escape
        json.dumps({"message": "bad key " + KEY}, ensure_ascii=True).replace("+", "\\u002b"),
        f"<p>bad key {KEY.replace('/', '%2F').replace('+', '%2B')}</p>",
        f"<p>bad key {KEY.replace('/', '%2f').replace('+', '%2b')}</p>",
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
        m.put(f"{TABLE_URL}/a", json={"id": "f", "name": "a", "indexes": {KEY: "not a list"}, "attributes": {KEY: 1}})
        m.put(f"{TABLE_URL}/b", json={"id": "f", "name": "b", "created_at": {KEY: 1}})
        for name in ("a", "b"):
            try:
                BlinkHook().update_table_field("ws-1", "Incidents", name, {"type": "text", "display_name": "A"})
            except BlinkResponseError as err:
                no_key(str(err))


def test_a_wrongly_typed_item_of_a_walk_is_a_response_error_that_never_shows_the_key(adversary: None) -> None:
    page = {"total": 2, "results": [{"id": "ct-1"}, {"id": "ct-2", "created_at": KEY, KEY: {"x": 1}}]}
    with rm.Mocker() as m:
        m.get(LIST_URL, json=page)
        with pytest.raises(BlinkResponseError, match=r"page 1, results\[1\]: created_at") as caught:
            list(BlinkHook().iter_connection_types())
    no_key(str(caught.value))
    assert "input_value" not in str(caught.value)


# -- 12 to 14. the sandbox ---------------------------------------------------------------------


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "blinkops_provider.sandbox.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_sandbox_on_every_interface_warns_before_it_prints_the_key() -> None:
    process = _serve("--host", "0.0.0.0", "--seed-connection-types", "3")
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("  API key:"):
                break
        warning = next(n for n, line in enumerate(lines) if line.startswith("WARNING: listening on 0.0.0.0"))
        assert warning < next(n for n, line in enumerate(lines) if line.startswith("  API key:"))
    finally:
        process.terminate()
        process.wait(10)


def test_sigterm_while_the_sandbox_starts_exits_0_with_its_store_whole(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.db"
    process = _serve("--db", str(db), "--seed-connection-types", "200000")
    for _ in range(2000):  # the store exists: seeding has begun (no sleep: poll the file system)
        if db.exists() or process.poll() is not None:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_the_request_log_caps_every_body(blink_sandbox: Any) -> None:
    url = f"{blink_sandbox.base_url}/workspace/ws-demo/table/Incidents/fields/Severity"
    headers = {"BLINK-API-KEY": blink_sandbox.api_key, "Content-Type": "application/json"}
    big = json.dumps({"type": "text", "display_name": "x" * 1_000_000})
    requests.put(url, data=big, headers=headers, timeout=30)
    requests.put(url, data="y" * 1_000_000, headers={**headers, "Content-Type": "text/plain"}, timeout=30)
    bodies = [entry["body"] for entry in blink_sandbox.requests if entry["method"] == "PUT"]
    assert len(bodies) == 2
    assert all(isinstance(body, str) and len(body) < 2100 for body in bodies)
