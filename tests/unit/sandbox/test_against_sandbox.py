"""The hook and both operators against the sandbox over real HTTP (no requests-mock)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.exceptions import (
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkNotFoundError,
    BlinkResponseError,
    BlinkTransientError,
)
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.operators.tables import UpdateTableFieldOperator
from blinkops_sandbox import BlinkSandbox
from tests.conftest import Sleeps
from tests.unit.sandbox.reference import evaluate

SEVERITY = {
    "type": "single-select",
    "display_name": "Severity level",
    "attributes": {"options": ["Low", "High", "Critical"], "default_value": "High"},
}


@pytest.fixture
def hook(blink_sandbox: BlinkSandbox, sleeps: Sleeps) -> BlinkHook:
    return BlinkHook(retry_limit=3, retry_delay=0.25, clock=sleeps.as_clock())


def test_field_update_round_trip(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.store.clock = lambda: 1_800_000_000_000
    before = blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")
    field = hook.update_table_field("ws-demo", "Incidents", "Severity", SEVERITY)
    assert (field.name, field.type, field.display_name) == ("Severity", "single-select", "Severity level")
    assert field.attributes == SEVERITY["attributes"]
    assert field.updated_at == 1_800_000_000_000
    assert (field.created_at, field.created_by) == (before["created_at"], before["created_by"])
    assert (field.id, field.table_id, field.workspace_id) == (before["id"], before["table_id"], "ws-demo")
    stored = blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")
    assert stored["display_name"] == "Severity level"
    assert stored["attributes"] == SEVERITY["attributes"]
    (request,) = blink_sandbox.requests
    assert request["method"] == "PUT"
    assert request["body"] == SEVERITY
    assert request["headers"]["blink-api-key"] == "***"
    assert request["api_key"] == "valid"


def test_names_with_slashes_and_query_characters_stay_one_segment(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.store.add_table(
        "ws 1", "Q1/Q2 plans", [{"name": "a?b#c", "type": "text", "display_name": "A", "attributes": {}}]
    )
    field = hook.update_table_field("ws 1", "Q1/Q2 plans", "a?b#c", {"type": "text", "display_name": "Renamed"})
    assert field.display_name == "Renamed"
    assert blink_sandbox.requests[-1]["raw_path"] == "/api/v1/workspace/ws%201/table/Q1%2FQ2%20plans/fields/a%3Fb%23c"


def test_type_change_is_a_400_and_not_retried(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    with pytest.raises(BlinkBadRequestError) as err:
        hook.update_table_field("ws-demo", "Incidents", "Severity", {"type": "text", "display_name": "S"})
    assert err.value.identifier == "FIELD_TYPE_CHANGE"
    assert "changing the type is not allowed" in str(err.value)
    assert len(blink_sandbox.requests) == 1


def test_unknown_field_is_a_404_naming_it(hook: BlinkHook) -> None:
    with pytest.raises(BlinkNotFoundError, match="not found: field 'Nope' of table 'Incidents' in workspace 'ws-demo'"):
        hook.update_table_field("ws-demo", "Incidents", "Nope", {"type": "text", "display_name": "N"})


def test_wrong_key_is_a_401(blink_sandbox: BlinkSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = json.loads(blink_sandbox.connection_json())
    monkeypatch.setenv("AIRFLOW_CONN_BLINK_DEFAULT", json.dumps({**conn, "password": "wrong-key-123456"}))
    with pytest.raises(BlinkAuthError, match="401: invalid API key"):
        BlinkHook().list_connection_types(limit=1)
    assert blink_sandbox.requests[-1]["api_key"] == "invalid"
    ok, message = BlinkHook().test_connection()
    assert not ok
    assert "check its API key" in message


def test_test_connection_succeeds(blink_sandbox: BlinkSandbox) -> None:
    ok, message = BlinkHook().test_connection()
    assert ok
    assert message == f"Connected to {blink_sandbox.base_url}: 200 connection types visible."


def test_429_then_success_honours_retry_after(
    hook: BlinkHook, blink_sandbox: BlinkSandbox, sleeps: list[float]
) -> None:
    blink_sandbox.set_faults(sequence=[429, 429], retry_after="3")
    page = hook.list_connection_types(limit=5)
    assert len(page.results) == 5
    assert sleeps == [3.0, 3.0]
    assert [r["status"] for r in blink_sandbox.requests] == [429, 429, 200]


def test_5xx_until_retries_are_spent(hook: BlinkHook, blink_sandbox: BlinkSandbox, sleeps: list[float]) -> None:
    blink_sandbox.set_faults(error_rate=1.0, error_statuses=[500, 502, 503, 504], seed=7)
    with pytest.raises(BlinkTransientError) as err:
        hook.update_table_field("ws-demo", "Incidents", "Severity", SEVERITY)
    assert err.value.identifier == "SANDBOX_FAULT"
    assert len(blink_sandbox.requests) == 3
    assert len(sleeps) == 2
    # Nothing was applied: every attempt was answered by the fault before reaching the store.
    assert blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")["display_name"] == "Severity"


def test_dropped_connection_is_retried(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.set_faults(sequence=["drop", "drop"])
    assert hook.list_connection_types(limit=1).total == 200
    assert [r["fault"] for r in blink_sandbox.requests] == ["drop", "drop", None]


def test_dropped_connections_exhaust_into_a_transient_error(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.set_faults(drop_rate=1.0)
    with pytest.raises(
        BlinkTransientError, match=r"127\.0\.0\.1:\d+ closed the connection without a complete answer, after 3 attempt"
    ):
        hook.list_connection_types(limit=1)


@pytest.mark.parametrize(
    ("fault", "expected"), [("non-json", "is not JSON; content type text/html"), ("truncate", "is not JSON")]
)
def test_broken_200_bodies(hook: BlinkHook, blink_sandbox: BlinkSandbox, fault: str, expected: str) -> None:
    blink_sandbox.set_faults(sequence=[fault])
    with pytest.raises(BlinkResponseError, match=expected) as err:
        hook.list_connection_types(limit=3)
    assert err.value.status == 200
    assert blink_sandbox.api_key not in str(err.value)


def test_latency_is_injected_through_the_sandbox_clock(hook: BlinkHook, blink_sandbox: BlinkSandbox) -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    blink_sandbox.faults.sleep = record
    blink_sandbox.set_faults(latency_ms=250)
    hook.list_connection_types(limit=1)
    hook.list_connection_types(limit=1)
    assert waits == [0.25, 0.25]


@pytest.mark.blink_sandbox(connection_types=2500)
@pytest.mark.parametrize(
    ("filter_", "sort", "select"),
    [
        (None, None, None),
        ({"oauth_supported": False}, ["-name"], ["id", "name", "oauth_supported"]),
        (
            {"$or": [{"plugin_name": {"$like": "a%"}}, {"name": {"$like": "%-1_"}}]},
            ["plugin_name", "-created_at"],
            ["id", "plugin_name"],
        ),
    ],
)
def test_catalogue_of_2500_walked_in_pages(
    hook: BlinkHook, blink_sandbox: BlinkSandbox, filter_: Any, sort: Any, select: Any
) -> None:
    expected = evaluate(blink_sandbox.store.all_connection_types(), filter_, sort, select)
    assert len(expected) > 300  # more than one page of 256
    walked = [
        item.to_json_dict()
        for item in hook.iter_connection_types(filter=filter_, sort=sort, select=select, page_size=256)
    ]
    assert walked == expected
    pages = -(-len(expected) // 256) + (len(expected) % 256 == 0)  # a full last page is confirmed
    assert len(blink_sandbox.requests) == pages  # by id, a request a page; a sort is the client's (#37)


def test_update_operator_against_the_sandbox(blink_sandbox: BlinkSandbox) -> None:
    op = UpdateTableFieldOperator(
        task_id="due",
        ws_id="{{ params.ws }}",
        table="Incidents",
        field="Due",
        field_type="date",
        display_name="Due on",
        attributes={"include_time": False},
    )
    op.render_template_fields({"params": {"ws": "ws-demo"}})
    result = op.execute({})
    assert result["display_name"] == "Due on"
    assert result["attributes"] == {"include_time": False}
    assert json.loads(json.dumps(result)) == result
    assert blink_sandbox.store.get_field("ws-demo", "Incidents", "Due")["attributes"] == {"include_time": False}


def test_catalogue_operator_against_the_sandbox(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    op = ConnectionTypesToXComOperator(
        task_id="sync",
        filter={"oauth_supported": True},
        select=["id", "name"],
        page_size=50,
        output_path=str(tmp_path / "{{ ds }}.json"),
    )
    op.render_template_fields({"ds": "2026-11-22"})
    summary = op.execute({})
    expected = evaluate(blink_sandbox.store.all_connection_types(), {"oauth_supported": True}, None, ["id", "name"])
    assert summary == {
        "path": str(tmp_path / "2026-11-22.json"),
        "count": len(expected),
        "total": len(expected),
        "paging": "keyset",
    }
    assert json.loads((tmp_path / "2026-11-22.json").read_text()) == expected


@pytest.mark.blink_sandbox(connection_types=100_000)
def test_a_catalogue_of_100000_loads_and_pages(hook: BlinkHook) -> None:
    first = hook.list_connection_types(limit=1000, offset=0)
    last = hook.list_connection_types(limit=1000, offset=99_500)
    assert (first.total, len(first.results), len(last.results)) == (100_000, 1000, 500)
    assert last.results[-1].id == "ct-099999"
    assert hook.list_connection_types(limit=10, offset=100_000).results == []
