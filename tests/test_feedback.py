"""Run feedback that points at the cause: a refused key stops a batch, and messages name what to fix."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError, BlinkTransientError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.models import validate_field_updates
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from tests.conftest import set_connection
from tests.test_field_updates import FakeTI, entry

# -- a refused key stops the batch ----------------------------------------------------------


@pytest.mark.parametrize(("status", "workers"), [(401, 1), (403, 1), (401, 4)])
def test_a_refused_key_stops_the_batch(blink_conn: None, provider_log: Any, status: int, workers: int) -> None:
    names = [f"f{i}" for i in range(10)]
    op = UpdateTableFieldsOperator(
        task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry(n) for n in names], max_concurrency=workers
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        m.put(rm.ANY, status_code=status, json={"status": status, "message": "invalid API key"})
        with pytest.raises(Exception, match="10 of 10 field"):
            op.execute({"ti": ti})
        sent = m.call_count
    assert sent == workers  # the first answer stops sending; those already in flight are accounted for
    failed = ti.pushed["return_value"]["failed"]
    assert [f["field"] for f in failed] == names
    assert sum(f["status"] == status for f in failed) == sent
    assert all(f["message"] == f"not sent: Blink refused the API key ({status})" for f in failed[sent:])
    hints = [line for line in provider_log() if "check the connection's API key" in line]
    assert len(hints) == 1
    assert "header name" in hints[0]


# -- messages that name the likely cause -------------------------------------------------------


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
    assert f"check the connection's Base URL (host), now http://127.0.0.1:{port}/api/v1" in message


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


# -- validation errors echo the value, bounded, one line per field -----------------------------


def test_validation_errors_echo_the_value_cut_short_one_line_per_field() -> None:
    fields = [
        {"field": "Severity", "type": "single_select", "display_name": "Severity"},
        {"field": "Notes", "type": "text", "display_name": "N" * 500, "attributes": {"default_value": 5}},
        entry("Fine"),
    ]
    with pytest.raises(BlinkInputError) as caught:
        validate_field_updates(fields)
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 of 3 field update(s) are invalid, so none was sent:"
    assert lines[1].startswith("  - entry 1 ('Severity'): type:") and "(got 'single_select')" in lines[1]
    assert lines[2].startswith("  - entry 2 ('Notes'):")
    assert all(len(line) < 400 for line in lines)
    assert "N" * 60 not in str(caught.value)
