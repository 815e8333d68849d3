"""Batch field updates: BlinkHook.update_table_fields and UpdateTableFieldsOperator."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
import requests_mock as rm
from airflow.providers.common.compat.sdk import AirflowFailException, AirflowTaskTimeout

from blinkops_provider.exceptions import BlinkApiError, BlinkClientError, BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook, Clock
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from tests.conftest import FakeTI
from tests.fake_blink import field_json, without_table_reads

BASE = "https://blink.test/api/v1"
TABLE_URL = f"{BASE}/workspace/ws-1/table/Incidents/fields"


def entry(name: str, **extra: Any) -> dict[str, Any]:
    return {"field": name, "type": "text", "display_name": name.title(), **extra}


def update(name: str) -> dict[str, Any]:
    return {"type": "text", "display_name": name.title()}


def writes(m: Any) -> int:
    """The requests that were not the plan's reads."""
    return sum(request.method != "GET" for request in m.request_history)


# -- checked before anything is sent -------------------------------------------------------


def test_every_problem_is_reported_together_and_nothing_is_sent(blink_conn: None) -> None:
    fields = [
        entry("title"),
        entry("impact", attributes={"opitons": ["a"]}),  # a typo
        {"field": "due", "type": "calendar", "display_name": "Due"},  # no such type
        entry("title"),  # twice
        {"type": "text", "display_name": "No name"},
        {"field": "owner", "type": "reference"},  # display_name missing
        "not an object",
    ]
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=fields)
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        with pytest.raises(BlinkInputError) as caught:
            op.execute({"ti": FakeTI()})
        assert not m.called
    message = str(caught.value)
    assert message.startswith("6 of 7 field update(s) are invalid, so none was sent")
    for part in (
        "entry 2 ('impact'): attributes: unknown member 'opitons' in FieldAttributes; allowed: default_value",
        "entry 3 ('due'): type: unknown field type 'calendar'; allowed: text, long-text",
        "entry 4 ('title'): field 'title' is declared twice (entries 1 and 4)",
        "entry 5: 'field' must be a field name, got None",
        "entry 6 ('owner'): display_name required",
        "entry 7: must be an object",
    ):
        assert part in message


def test_fields_may_be_the_json_a_template_renders(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="{{ params.ws }}",
        table="Incidents",
        fields='[{"field": "{{ params.f }}", "type": "text", "display_name": "Title"}]',
    )
    op.render_template_fields({"params": {"ws": "ws-1", "f": "title"}})
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(f"{TABLE_URL}/title", json=field_json)
        assert op.execute({"ti": FakeTI()}) == {
            "ws_id": "ws-1",
            "table": "Incidents",
            "updated": ["title"],
            "failed": [],
            "unknown": [],
            "outcomes": {"title": "applied"},
            "names": {},  # Blink's names of the fields this apply added (#56 item 4): none here
            "outcome": "applied",  # for a fleet's summary (#34)
            "rate_limited": 0,
        }


def test_operator_contract() -> None:
    import inspect

    signature = inspect.signature(UpdateTableFieldsOperator.__init__)
    # record_path, only_changed and plan_only came with the plan, plan and lock_wait with its identity and
    # lock: keyword-only, so no caller breaks
    declared = "ws_id table fields max_concurrency fail_fast record_path only_changed plan_only plan lock_wait"
    declared += " replace"  # replace (#42): send declarations as given, not merged with Blink's fields
    declared += " acknowledge_risks create_table"  # #48: removals behind a flag, a table created
    declared += " review_task_id"  # #55: the approval, read from Airflow's record of the review
    declared += " fail_on_refusal blink_conn_id"  # #72: a plan task whose plan refuses an entry fails
    declared += " hook_params workflow_usage"  # #75: a change that breaks an active workflow, reviewed or refused
    assert list(signature.parameters)[1:] == [*declared.split(), "kwargs"]
    assert signature.parameters["workflow_usage"].default == "review"
    assert signature.parameters["acknowledge_risks"].default is False
    assert signature.parameters["create_table"].default is False
    assert signature.parameters["max_concurrency"].default == 16
    assert signature.parameters["fail_fast"].default is False
    assert UpdateTableFieldsOperator.template_fields == (
        "ws_id",
        "table",
        "fields",
        "record_path",
        "plan",
        "acknowledge_risks",
    )
    assert UpdateTableFieldsOperator.template_fields_renderers == {"fields": "json", "plan": "json"}
    with pytest.raises(BlinkInputError, match="max_concurrency must be an integer from 1 to 32"):
        UpdateTableFieldsOperator(replace=True, task_id="t", ws_id="w", table="t", fields=[], max_concurrency=0)


# -- concurrency -------------------------------------------------------------------------------


@pytest.mark.blink_sandbox(connection_types=0)
def test_at_most_max_concurrency_updates_are_in_flight(blink_sandbox: Any) -> None:
    import asyncio

    from blinkops_provider.hooks.blink import BlinkHook

    fields = [{"name": f"f{i}", "type": "text", "display_name": f"F{i}", "attributes": {}} for i in range(12)]
    blink_sandbox.store.add_table("ws-9", "Wide", fields)
    release: dict[str, asyncio.Event] = {}

    async def hold(seconds: float) -> None:  # the server keeps each update until three are in flight
        event = release.setdefault("event", asyncio.Event())
        if blink_sandbox.log.in_flight >= 3:
            event.set()
        await asyncio.wait_for(event.wait(), 10)

    blink_sandbox.faults.sleep = hold
    blink_sandbox.set_faults(latency_ms=1)
    updates = [entry(f"f{i}", display_name=f"Field {i}") for i in range(12)]
    result = BlinkHook().update_table_fields("ws-9", "Wide", updates, max_concurrency=3)
    assert result.ok
    assert blink_sandbox.log.peak_in_flight == 3
    assert [field.display_name for field in result.updated] == [f"Field {i}" for i in range(12)]
    user_fields = [f for f in blink_sandbox.store.fields("ws-9", "Wide") if not f["attributes"].get("system")]
    assert [f["display_name"] for f in user_fields] == [f"Field {i}" for i in range(12)]


def test_every_worker_has_a_session_of_its_own(make_hook: Any) -> None:
    """Each worker thread sends on a session no other thread uses; the caller's sends nothing."""
    users: dict[int, set[int]] = {}

    def tracked() -> Any:
        session = requests.Session()
        send = session.send

        def spy(*args: Any, **kwargs: Any) -> Any:
            users.setdefault(id(session), set()).add(threading.get_ident())
            return send(*args, **kwargs)

        session.send = spy  # type: ignore[method-assign]
        return session

    hook = make_hook(session_factory=tracked)
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=field_json)
        hook.update_table_fields("ws-1", "Incidents", [entry(f"f{i}") for i in range(12)], max_concurrency=4)
        assert writes(m) == 12
    threads = [thread for used in users.values() for thread in used]
    assert 1 <= len(users) <= 4
    assert len(threads) == len(set(threads)) == len(users)  # one thread per session, one session per thread
    assert threading.get_ident() not in threads


def test_a_retry_after_pauses_every_worker(make_hook: Any) -> None:
    """A batch worker told to wait (429 with Retry-After) pauses the hook's other workers: a call
    that starts while it waits waits too. (No callback blocks: requests-mock serialises requests.)"""
    clock = [0.0]
    slept: list[tuple[str, float]] = []

    def sleep(seconds: float) -> None:
        slept.append((threading.current_thread().name, seconds))
        if len(slept) == 1:  # the batch worker that got the 429: another worker starts meanwhile
            other = threading.Thread(
                target=lambda: hook.update_table_field("ws-1", "Incidents", "b", update("b")), name="other"
            )
            other.start()
            other.join(10)
        clock[0] += seconds

    hook = make_hook(clock=Clock(sleep=sleep, monotonic=lambda: clock[0]))
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(
            f"{TABLE_URL}/a", [{"status_code": 429, "headers": {"Retry-After": "7"}, "json": {}}, {"json": field_json}]
        )
        m.put(f"{TABLE_URL}/b", json=field_json)
        result = hook.update_table_fields("ws-1", "Incidents", [entry("a")], max_concurrency=2)
        assert writes(m) == 3
    assert result.ok
    assert [seconds for _, seconds in slept] == [7.0, 7.0]  # the other worker waited for the Retry-After too
    assert hook.rate_limited == 1  # the 429 is counted once, for a fleet's summary
    assert slept[0][0].startswith("blink-fields") and slept[1][0] == "other"


# -- failures -------------------------------------------------------------------------------


def test_partial_failure_applies_the_rest_and_reports_each_field(blink_conn: None, provider_log: Any) -> None:
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry("a"), entry("b"), entry("c"), entry("d")],
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=field_json)
        m.put(f"{TABLE_URL}/b", status_code=400, json={"status": 400, "message": "changing the type is not allowed"})
        m.put(f"{TABLE_URL}/c", status_code=404, json={"status": 404, "message": "field 'c' not found"})
        with pytest.raises(BlinkClientError) as caught:
            op.execute({"ti": ti})
        assert writes(m) == 4  # a 4xx is not retried
    assert isinstance(caught.value, AirflowFailException)  # every failure was a 4xx: no task retry
    assert (
        "2 of 4 field(s) not applied: 'b' (400: changing the type is not allowed), 'c' (404: not found: field 'c'"
        in str(caught.value)
    )  # why each failed (#44 item 9)
    assert ti.pushed["return_value"] == {
        "ws_id": "ws-1",
        "table": "Incidents",
        "updated": ["a", "d"],
        "failed": [
            {"field": "b", "status": 400, "message": "changing the type is not allowed"},
            {
                "field": "c",
                "status": 404,
                "message": "not found: field 'c' of table 'Incidents' in workspace 'ws-1' (field 'c' not found)",
            },
        ],
        "unknown": [],
        "outcomes": {"a": "applied", "b": "failed", "c": "failed", "d": "applied"},
        "names": {},
        "outcome": "failed",
        "rate_limited": 0,
        "error": "BlinkClientError: " + str(caught.value),
    }
    import re

    lines = provider_log()
    per_field = [m.group(1) for line in lines if (m := re.search(r"\s([abcd]): (applied|failed)", line))]
    assert per_field == ["a", "b", "c", "d"]  # one line per field, in the declared order
    progress = [line for line in lines if re.search(r"\d+/\d+ fields applied", line)]
    assert len(progress) == 1 and "2/4 fields applied, 2 failed" in progress[0]  # under 20 fields: its end only (#36)


@pytest.mark.parametrize(("first", "retried"), [(503, True), (400, False)])
def test_only_a_batch_that_failed_transiently_leaves_airflow_retries_in_play(
    blink_conn: None, first: int, retried: bool
) -> None:
    """A 503 alone: the task may be retried. Any 4xx among the failures: a retry would fail on it
    again, so the task fails at once (an AirflowFailException)."""
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry("a"), entry("b")],
        hook_params={"retry_limit": 1},
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(f"{TABLE_URL}/a", status_code=first, json={"message": "no"})
        m.put(f"{TABLE_URL}/b", status_code=503)
        with pytest.raises(BlinkApiError) as caught:
            op.execute({"ti": FakeTI()})
    assert isinstance(caught.value, AirflowFailException) is not retried


def test_fail_fast_starts_nothing_new_after_a_failure(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry("a"), entry("b"), entry("c")],
        max_concurrency=1,
        fail_fast=True,
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=field_json)  # requests-mock tries the latest registration first
        m.put(f"{TABLE_URL}/a", status_code=400, json={"message": "no"})
        with pytest.raises(BlinkClientError, match="3 of 3 field"):
            op.execute({"ti": ti})
        assert writes(m) == 1
    assert [f["field"] for f in ti.pushed["return_value"]["failed"]] == ["a", "b", "c"]
    assert ti.pushed["return_value"]["failed"][1] == {
        "field": "b",
        "status": None,
        "message": "not sent: fail_fast stopped the batch",
    }


def test_no_secret_in_any_per_field_message(blink_conn: None) -> None:
    from tests.conftest import API_KEY

    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a")])
    ti = FakeTI()
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(f"{TABLE_URL}/a", status_code=400, json={"message": f"bad key {API_KEY}", "details": API_KEY})
        with pytest.raises(BlinkClientError):
            op.execute({"ti": ti})
    assert API_KEY not in str(ti.pushed)


# -- the report on every way out, whatever the server sends ------------------------------------


DEEP = "[" * 100_000
NESTED = '{"status": 400, "message": "bad", "data": ' + "[" * 600 + "]" * 600 + "}"


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
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=fields)
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=answer)
        summary = op.execute({"ti": FakeTI()})  # succeeds: every field was applied
    assert summary["updated"] == ["Severity", "Café"]
    assert summary["failed"] == [] and summary["unknown"] == []


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
        replace=True,
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
            without_table_reads(m)  # replace=True without a record: sent as given
            without_table_reads(m)
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


# -- 6. a 2xx whose answer is not Blink's is unknown (#56 item 5) ---------------------------------


def a_and_b(status: int, text: str, failure: str) -> FakeTI:
    """Fields a and b applied as given: a answered ``status`` with ``text``, b as Blink answers; the
    task fails with ``failure``. The task instance, with what the task pushed."""
    op = UpdateTableFieldsOperator(
        replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a"), entry("b")]
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(f"{TABLE_URL}/a", status_code=status, text=text)
        m.put(f"{TABLE_URL}/b", json=field_json)
        with pytest.raises(BlinkApiError, match=failure):
            op.execute({"ti": ti})
    return ti


def test_a_2xx_answer_that_cannot_be_read_is_unknown_and_fails_the_batch(blink_conn: None, provider_log: Any) -> None:
    ti = a_and_b(200, "<html>OK</html>", r"1 of 2 field\(s\) not applied: 'a' \(unknown: 200: ")
    summary = ti.pushed["return_value"]
    assert summary["updated"] == ["b"] and summary["unknown"] == ["a"] and summary["failed"] == []
    lines = provider_log()
    assert any("a: unknown: sent, but the response body is not JSON" in line for line in lines)
    assert any("1/2 fields applied, 1 unknown" in line for line in lines)
    assert not any("failed with 200" in line for line in lines)


@pytest.mark.parametrize("body", [DEEP, NESTED], ids=["[ x 100,000", "data nested 600 deep"])
def test_a_400_body_too_deep_to_parse_is_that_fields_typed_failure(blink_conn: None, body: str) -> None:
    ti = a_and_b(400, body, "1 of 2 field")
    assert ti.pushed["return_value"]["updated"] == ["b"]
    assert [f["field"] for f in ti.pushed["return_value"]["failed"]] == ["a"]
    assert ti.pushed["return_value"]["failed"][0]["status"] == 400


def test_an_unexpected_exception_in_a_worker_is_that_fields_failure(blink_conn: None) -> None:
    class Faulty(requests.Session):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if url.endswith("/a"):
                raise RuntimeError("a library's surprise")
            return super().request(method, url, *args, **kwargs)

    hook = BlinkHook(session_factory=Faulty)
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=field_json)
        result = hook.update_table_fields("ws-1", "Incidents", [entry("a"), entry("b")])
    assert list(result.failed) == ["a"]
    assert isinstance(result.failed["a"], BlinkApiError)
    assert "RuntimeError" in str(result.failed["a"])
    assert [f.name for f in result.updated] == ["b"]


@pytest.mark.parametrize(("status", "workers"), [(401, 1), (403, 1), (401, 4)])
def test_a_refused_key_stops_the_batch(blink_conn: None, provider_log: Any, status: int, workers: int) -> None:
    names = [f"f{i}" for i in range(10)]
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry(n) for n in names],
        max_concurrency=workers,
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, status_code=status, json={"status": status, "message": "invalid API key"})
        with pytest.raises(Exception, match="10 of 10 field") as caught:
            op.execute({"ti": ti})
        sent = writes(m)
    assert sent == workers  # the first answer stops sending; those already in flight are accounted for
    failed = ti.pushed["return_value"]["failed"]
    assert [f["field"] for f in failed] == names
    assert sum(f["status"] == status for f in failed) == sent
    said = "Blink refused the API key (401)" if status == 401 else "the key lacks the workspace role (403)"
    assert all(f["message"] == f"not sent: {said}" for f in failed[sent:])
    hints = [line for line in provider_log() if "check the connection's API key" in line]
    assert len(hints) == (1 if status == 401 else 0)
    assert all("header name" in hint for hint in hints)
    if status == 403:  # #50 item 3: the task's error itself says the key is valid, the workspace and the role
        error = str(caught.value)
        assert "is valid, but its user has no workspace role in workspace 'ws-1'" in error and "Contributor" in error
        assert "Blink refused the API key" not in error


def test_a_batch_logs_its_progress_at_most_every_tenth(blink_conn: None, provider_log: Any) -> None:
    """Progress lines of a batch: about every 10% from 20 fields up, never one per field (#36)."""
    import requests_mock as rm

    from blinkops_provider.hooks.blink import BlinkHook

    updates = {f"f{i}": {"type": "text", "display_name": f"F{i}"} for i in range(95)}
    with rm.Mocker() as m:
        without_table_reads(m)  # replace=True without a record: sent as given
        m.put(rm.ANY, json=lambda request, context: {"id": "x", "name": request.path.rsplit("/", 1)[-1]})
        assert BlinkHook().update_table_fields("ws-1", "t", updates, max_concurrency=4).ok
    progress = [line for line in provider_log() if "fields applied" in line]
    assert 5 <= len(progress) <= 11 and "95/95 fields applied" in progress[-1]
