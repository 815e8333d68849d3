"""What is retried: the retry and error truth table of the request path, and BlinkRetryPolicy, what
Airflow 3.3+ does with a failed Blink task (retry_policy, AIP-105)."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import pytest
import requests
import requests_mock as rm
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkNotFoundError,
    BlinkResponseError,
    BlinkTransientError,
    BlinkUnsupportedServerError,
)
from blinkops_provider.hooks.blink import BlinkHook, Clock
from blinkops_provider.retry_policy import (
    HAS_RETRY_POLICY,
    MAX_WAIT,
    BlinkRetryPolicy,
    default_retry_policy,
    parse_retry_after,
)

BASE = "https://blink.test/api/v1"

URL = "https://blink.test/api/v1/connection_types"
PAGE = {"limit": 1, "offset": 0, "total": 1, "results": [{"id": "ct-1"}]}
OK = {"json": PAGE, "status_code": 200}


def status(code: int, **extra: Any) -> dict[str, Any]:
    return {"status_code": code, "json": {"status": code, "message": f"m{code}"}, **extra}


def fail(exc: type[Exception]) -> dict[str, Any]:
    return {"exc": exc}


# (responses in order, expected outcome, requests sent, fails the task without Airflow retry)
TRUTH_TABLE = [
    pytest.param([OK], None, 1, None, id="200"),
    pytest.param([status(400)], BlinkBadRequestError, 1, True, id="400"),
    pytest.param([status(401)], BlinkAuthError, 1, True, id="401"),
    pytest.param([status(403)], BlinkAuthError, 1, True, id="403"),
    pytest.param([status(404)], BlinkNotFoundError, 1, True, id="404"),
    pytest.param([status(405)], BlinkClientError, 1, True, id="405"),
    pytest.param([status(409)], BlinkClientError, 1, True, id="409"),
    pytest.param([status(422)], BlinkClientError, 1, True, id="422"),
    pytest.param([status(429)] * 3, BlinkTransientError, 3, False, id="429-exhausted"),
    pytest.param([status(500)] * 3, BlinkTransientError, 3, False, id="500-exhausted"),
    pytest.param([status(502)] * 3, BlinkTransientError, 3, False, id="502-exhausted"),
    pytest.param([status(503)] * 3, BlinkTransientError, 3, False, id="503-exhausted"),
    pytest.param([status(504)] * 3, BlinkTransientError, 3, False, id="504-exhausted"),
    pytest.param([status(501)], BlinkApiError, 1, False, id="501-not-retried"),
    pytest.param([status(505)], BlinkApiError, 1, False, id="505-not-retried"),
    pytest.param([status(503), OK], None, 2, None, id="503-then-200"),
    pytest.param([status(429), status(500), OK], None, 3, None, id="429-500-then-200"),
    pytest.param([fail(requests.ConnectionError)] * 3, BlinkTransientError, 3, False, id="connection-error"),
    pytest.param([fail(requests.ConnectTimeout)] * 3, BlinkTransientError, 3, False, id="connect-timeout"),
    pytest.param([fail(requests.ReadTimeout)] * 3, BlinkTransientError, 3, False, id="read-timeout"),
    pytest.param(
        [fail(requests.exceptions.ChunkedEncodingError)] * 3, BlinkTransientError, 3, False, id="dropped-mid-body"
    ),
    pytest.param([fail(requests.ConnectionError), OK], None, 2, None, id="connection-error-then-200"),
    pytest.param([fail(requests.exceptions.TooManyRedirects)], BlinkApiError, 1, False, id="redirect-loop"),
    pytest.param([{"status_code": 200, "text": "<html>proxy</html>"}], BlinkResponseError, 1, False, id="200-html"),
]


@pytest.mark.parametrize(("responses", "expected", "sent", "fails_task"), TRUTH_TABLE)
def test_truth_table(
    make_hook: Any,
    sleeps: list[float],
    responses: list[dict[str, Any]],
    expected: type[Exception] | None,
    sent: int,
    fails_task: bool | None,
) -> None:
    hook = make_hook(retry_limit=3, retry_delay=1.0)
    with rm.Mocker() as m:
        m.get(URL, responses)
        if expected is None:
            assert hook.list_connection_types().total == 1
        else:
            with pytest.raises(expected) as err:
                hook.list_connection_types()
            assert type(err.value) is expected
            assert isinstance(err.value, AirflowException)
            assert isinstance(err.value, AirflowFailException) is fails_task
        assert m.call_count == sent
    assert len(sleeps) == sent - 1 if expected is None or expected is BlinkTransientError else not sleeps


def test_retry_limit_one_means_one_attempt(make_hook: Any, sleeps: list[float]) -> None:
    with rm.Mocker() as m:
        m.get(URL, [status(503), OK])
        with pytest.raises(BlinkTransientError):
            make_hook(retry_limit=1).list_connection_types()
        assert m.call_count == 1
    assert sleeps == []


def test_backoff_is_exponential_with_jitter(make_hook: Any, sleeps: list[float]) -> None:
    with rm.Mocker() as m:
        m.get(URL, [status(500)] * 4)
        with pytest.raises(BlinkTransientError):
            make_hook(retry_limit=4, retry_delay=0.5).list_connection_types()
    assert len(sleeps) == 3
    for attempt, wait in enumerate(sleeps):
        base = 0.5 * 2**attempt
        assert base <= wait <= base + 0.5


def test_zero_delay_retries_at_once(make_hook: Any, sleeps: list[float]) -> None:
    with rm.Mocker() as m:
        m.get(URL, [status(502), OK])
        make_hook(retry_delay=0).list_connection_types()
    assert sleeps == [0]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("7", 7.0),
        ("0", 0.0),
        ("100000", MAX_WAIT),
        ("Sun, 22 Nov 2026 12:00:30 GMT", 30.0),
        ("Sun, 22 Nov 2026 11:59:00 GMT", 0.0),
    ],
)
def test_retry_after_is_honoured(make_hook: Any, sleeps: list[float], header: str, expected: float) -> None:
    noon = dt.datetime(2026, 11, 22, 12, 0, 0, tzinfo=dt.UTC)
    hook = make_hook(retry_delay=1.0, clock=sleeps.as_clock(now=lambda: noon))
    with rm.Mocker() as m:
        m.get(URL, [status(429, headers={"Retry-After": header}), OK])
        hook.list_connection_types()
    assert sleeps == [expected]


def test_unusable_retry_after_falls_back_to_backoff(make_hook: Any, sleeps: list[float]) -> None:
    with rm.Mocker() as m:
        m.get(URL, [status(503, headers={"Retry-After": "soon"}), OK])
        make_hook(retry_delay=1.0).list_connection_types()
    assert 1.0 <= sleeps[0] <= 2.0


@pytest.mark.parametrize("value", [None, "", "nan", "not a date", "-30", "2.5", "+5", "٣"])
def test_parse_retry_after_rejects_nonsense(value: str | None) -> None:
    """A negative, fractional or non-ASCII delay is unusable (RFC 9110: 1*DIGIT, as urllib3 reads it)."""
    assert parse_retry_after(value, dt.datetime.now(dt.UTC)) is None


def test_each_retry_logs_one_warning(make_hook: Any, provider_log: Any) -> None:
    with rm.Mocker() as m:
        m.get(URL, [status(503), status(429, headers={"Retry-After": "4"}), OK])
        make_hook(retry_delay=1.0).list_connection_types()
    lines = [line for line in provider_log() if "retrying in" in line]
    assert len(lines) == 2
    assert "HTTP 503" in lines[0] and "attempt 1 of 3" in lines[0]
    assert "HTTP 429" in lines[1] and "attempt 2 of 3" in lines[1] and "retrying in 4.0 s" in lines[1]


def test_exhausted_transient_error_keeps_the_last_body(make_hook: Any) -> None:
    body = {"status": 503, "message": "maintenance", "details": "back at 3", "identifier": "MAINT"}
    with rm.Mocker() as m:
        m.get(URL, status_code=503, json=body)
        with pytest.raises(BlinkTransientError) as err:
            make_hook().list_connection_types()
    assert (err.value.status, err.value.message, err.value.identifier) == (503, "maintenance", "MAINT")
    assert str(err.value) == "GET /connection_types -> 503: maintenance (back at 3) (gave up after 3 attempt(s))"


def test_bad_request_keeps_the_whole_error_wrapper(make_hook: Any) -> None:
    body = {
        "status": 400,
        "message": "changing the type is not allowed",
        "details": "field Severity is risk-level",
        "identifier": "FIELD_TYPE_CHANGE",
        "data": {"field": "Severity"},
        "user_error": {"hint": "keep the type"},
    }
    url = "https://blink.test/api/v1/workspace/ws-1/table/Incidents/fields/Severity"
    with rm.Mocker() as m:
        m.put(url, status_code=400, json=body)
        with pytest.raises(BlinkBadRequestError) as err:
            make_hook().update_table_field("ws-1", "Incidents", "Severity", {"type": "text", "display_name": "S"})
    exc = err.value
    assert str(exc) == (
        "PUT /workspace/ws-1/table/Incidents/fields/Severity -> 400: changing the type is not allowed "
        "(field Severity is risk-level)"
    )
    assert (exc.status, exc.identifier, exc.data, exc.user_error) == (
        400,
        "FIELD_TYPE_CHANGE",
        {"field": "Severity"},
        {"hint": "keep the type"},
    )
    assert (exc.method, exc.path) == ("PUT", "/workspace/ws-1/table/Incidents/fields/Severity")


def test_not_found_names_what_was_not_found(make_hook: Any) -> None:
    url = "https://blink.test/api/v1/workspace/ws-1/table/Incidents/fields/Sevrity"
    with rm.Mocker() as m:
        m.put(url, status_code=404, json={"status": 404, "message": "record not found"})
        with pytest.raises(BlinkNotFoundError) as err:
            make_hook().update_table_field("ws-1", "Incidents", "Sevrity", {"type": "text", "display_name": "S"})
    assert "not found: field 'Sevrity' of table 'Incidents' in workspace 'ws-1' (record not found)" in str(err.value)


def test_error_without_wrapper_quotes_the_body(make_hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(
            URL,
            status_code=401,
            reason="Unauthorized",
            text="<html>login</html>",
            headers={"Content-Type": "text/html"},
        )
        with pytest.raises(BlinkAuthError) as err:
            make_hook().list_connection_types()
    assert str(err.value) == (
        "GET /connection_types -> 401: Unauthorized (content type text/html, body starts: <html>login</html>); "
        "Blink refused the API key of the connection 'blink_default': check its API key (password) and its "
        "header name (extra header_name, now 'BLINK-API-KEY')"
    )


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        (
            {"text": "<!doctype html><p>Bad gateway" + "x" * 500, "headers": {"Content-Type": "text/html"}},
            "is not JSON; content type text/html",
        ),
        ({"text": ""}, "is not JSON; content type no content type, body starts: <empty body>"),
        ({"text": '{"limit": 1, "results": [{"id": '}, "is not JSON"),
        ({"json": {"results": {"id": "x"}}}, "is not a ConnectionTypePage (results: Input should be a valid array)"),
        ({"json": [1, 2]}, "is not a ConnectionTypePage"),
        ({"json": {"total": "many"}}, "is not a ConnectionTypePage (total: "),
    ],
)
def test_unexpected_2xx_bodies(make_hook: Any, kwargs: dict[str, Any], problem: str) -> None:
    with rm.Mocker() as m:
        m.get(URL, status_code=200, **kwargs)
        with pytest.raises(BlinkResponseError) as err:
            make_hook().list_connection_types()
    text = str(err.value)
    assert text.startswith("GET /connection_types -> 200: the response body ")
    assert problem in text
    assert len(text) < 420  # the body is quoted to 200 characters, not whole


def test_errors_survive_pickling() -> None:
    exc = BlinkBadRequestError("m", status=400, details="d", identifier="I", method="PUT", path="/p")
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is BlinkBadRequestError
    assert str(copy) == str(exc) == "PUT /p -> 400: m (d)"
    assert copy.identifier == "I"


# -- one backoff for every worker ---------------------------------------------------------------


def _walk_page() -> dict[str, Any]:
    return {"limit": 1, "offset": 0, "total": 1, "results": [{"id": "a"}]}


@pytest.mark.parametrize(
    ("status", "headers", "shared"),
    [
        (429, {"Retry-After": "7"}, True),
        (503, {"Retry-After": "7"}, True),
        (503, {}, False),  # a plain backoff is the failing worker's own
        (500, {}, False),
    ],
)
def test_a_retry_after_pauses_every_worker_of_the_hook(
    make_hook: Any, status: int, headers: dict, shared: bool
) -> None:
    import threading

    clock = [100.0]
    waits: list[tuple[str, float]] = []

    def sleep(seconds: float) -> None:
        waits.append((threading.current_thread().name, seconds))
        if threading.current_thread().name == "A" and len(waits) == 1:
            # While worker A waits out its failure, worker B starts a call of its own.
            b = threading.Thread(target=lambda: hook.list_connection_types(limit=1), name="B")
            b.start()
            b.join(10)
        clock[0] += seconds

    hook = make_hook(retry_delay=0.5, clock=Clock(sleep=sleep, monotonic=lambda: clock[0]))
    with rm.Mocker() as m:
        m.get(
            f"{BASE}/connection_types",
            [{"status_code": status, "headers": headers, "json": {}}, {"json": _walk_page()}, {"json": _walk_page()}],
        )
        a = threading.Thread(target=lambda: hook.list_connection_types(limit=1), name="A")
        a.start()
        a.join(10)
        assert m.call_count == 3
    assert waits[0][0] == "A"
    if shared:
        assert waits == [("A", 7.0), ("B", 7.0)]
    else:
        assert [name for name, _ in waits] == ["A"]


needs_policy = pytest.mark.skipif(not HAS_RETRY_POLICY, reason="retry_policy needs Airflow 3.3 or later")


def decide(error: BaseException, **policy: Any) -> tuple[str, float | None, str | None]:
    decision = BlinkRetryPolicy(**policy).evaluate(error, try_number=1, max_tries=3, context=None)
    delay = decision.retry_delay.total_seconds() if decision.retry_delay is not None else None
    return decision.action.value, delay, decision.reason


@needs_policy
@pytest.mark.parametrize(
    ("error", "action", "delay"),
    [
        (BlinkAuthError("no", status=401), "fail", None),
        (BlinkAuthError("no", status=403), "fail", None),
        (BlinkBadRequestError("no", status=400), "fail", None),
        (BlinkNotFoundError("no", status=404), "fail", None),
        (BlinkClientError("no", status=422), "fail", None),
        (BlinkClientError("1 of 2 field(s) not applied"), "fail", None),  # a batch with a permanent failure
        (BlinkInputError("bad entry"), "fail", None),
        (BlinkConfigurationError("no key"), "fail", None),
        (BlinkUnsupportedServerError("the server does not honour RQL conditions"), "fail", None),
        (BlinkTransientError("rate limited", status=429, retry_after=2.0), "retry", 2.0),
        (BlinkTransientError("rate limited", status=429, retry_after=900.0), "retry", 120.0),  # capped
        (BlinkTransientError("rate limited", status=429), "default", None),  # no Retry-After: retry_delay
        (BlinkTransientError("unavailable", status=503, retry_after=5.0), "default", None),
        (BlinkTransientError("could not reach blink.test"), "default", None),
        (BlinkApiError("2 of 2 field(s) not applied"), "default", None),  # a batch that failed transiently
        (BlinkLockedError("being applied by another run"), "retry", None),
        (RuntimeError("anything else"), "default", None),
    ],
)
def test_each_failure_gets_its_decision(error: BaseException, action: str, delay: float | None) -> None:
    assert decide(error)[:2] == (action, delay)


@needs_policy
def test_a_refused_key_says_what_to_fix_and_the_cap_is_configurable() -> None:
    assert "check the connection's API key" in str(decide(BlinkAuthError("no", status=401))[2])
    assert decide(BlinkTransientError("slow down", status=429, retry_after=90.0), max_retry_after=30)[1] == 30.0
    with pytest.raises(BlinkInputError, match="max_retry_after must be a finite number of seconds, more than 0"):
        BlinkRetryPolicy(max_retry_after=0)


@needs_policy
def test_the_operators_take_it_by_default_and_a_dag_serialises_with_it() -> None:
    from airflow.providers.common.compat.sdk import DAG

    from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
    from blinkops_provider.operators.tables import UpdateTableFieldOperator, UpdateTableFieldsOperator

    with DAG("retry_policy_dag", schedule=None) as dag:
        sync = ConnectionTypesToXComOperator(task_id="sync")
        one = UpdateTableFieldOperator(
            task_id="one", ws_id="w", table="t", field="f", field_type="text", display_name="F"
        )
        many = UpdateTableFieldsOperator(task_id="many", ws_id="w", table="t", fields=[], retry_policy=None)
    assert sync.retry_policy == one.retry_policy == default_retry_policy() == BlinkRetryPolicy()
    assert many.retry_policy is None  # turned off by the author
    from airflow.serialization.serialized_objects import DagSerialization

    serialized = DagSerialization.to_dict(dag)
    tasks = {task["__var"]["task_id"]: task["__var"] for task in serialized["dag"]["tasks"]}
    assert tasks["sync"].get("has_retry_policy") is True and not tasks["many"].get("has_retry_policy")
    assert BlinkRetryPolicy.deserialize(BlinkRetryPolicy(max_retry_after=7).serialize()) == BlinkRetryPolicy(
        max_retry_after=7
    )


@needs_policy
def test_the_final_rate_limit_error_names_the_attempts_and_blinks_wait(make_hook: Any) -> None:
    hook = make_hook(retry_limit=3, retry_delay=0.5)
    with rm.Mocker() as m:
        m.get(rm.ANY, status_code=429, headers={"Retry-After": "2"}, json={"message": "rate limited"})
        with pytest.raises(BlinkTransientError) as caught:
            hook.list_connection_types(limit=1)
    assert caught.value.retry_after == 2.0 and caught.value.status == 429
    assert "gave up after 3 attempt(s); Blink asked to wait 2 s" in str(caught.value)
    assert decide(caught.value)[:2] == ("retry", 2.0)


@needs_policy
def test_a_record_location_that_cannot_be_written_fails_at_once(blink_conn: None) -> None:
    from blinkops_provider.migrations import apply_schema

    declared = [{"field": "A", "type": "text", "display_name": "A"}]
    with rm.Mocker() as m, pytest.raises(BlinkConfigurationError) as unusable:
        apply_schema(BlinkHook(), "ws", "t", declared, record_path="/proc/self/blink/records/")
    assert not m.called  # refused at the lock, before any request
    assert decide(unusable.value)[0] == "fail"


# -- hardening (#35) ------------------------------------------------------------------------------------


@needs_policy
@pytest.mark.parametrize("asked", [-30.0, float("nan"), float("inf")])
def test_an_unusable_retry_after_falls_back_to_the_tasks_own_retry_settings(asked: float) -> None:
    assert decide(BlinkTransientError("rate limited", status=429, retry_after=asked))[0] == "default"


@needs_policy
def test_a_provider_error_wrapped_by_task_code_is_judged_by_its_cause() -> None:
    class TaskError(Exception):
        pass

    def wrapped(inner: BaseException, explicit: bool) -> BaseException:
        try:
            try:
                raise inner
            except type(inner) as err:
                if explicit:
                    raise TaskError("the sync failed") from err
                raise RuntimeError("while syncing")  # noqa: B904 - implicit chaining (__context__) is followed too
        except (TaskError, RuntimeError) as outer:
            return outer
        raise AssertionError("not raised")

    assert decide(wrapped(BlinkAuthError("no", status=401), explicit=True))[0] == "fail"
    assert decide(wrapped(BlinkTransientError("slow", status=429, retry_after=7.0), explicit=False))[:2] == (
        "retry",
        7.0,
    )


def test_a_connection_that_does_not_exist_fails_at_once_naming_it() -> None:
    hook = BlinkHook("no_such_blink")
    with (
        rm.Mocker() as m,
        pytest.raises(BlinkConfigurationError, match="the connection 'no_such_blink' does not exist") as e,
    ):
        hook.list_connection_types()
    assert m.call_count == 0
    if HAS_RETRY_POLICY:  # and the retry policy fails the task at once on it
        assert decide(e.value)[0] == "fail"


@needs_policy
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0, -5, "30", True])
def test_max_retry_after_must_be_a_finite_positive_duration(value: Any) -> None:
    with pytest.raises(BlinkInputError, match="max_retry_after must be a finite number of seconds"):
        BlinkRetryPolicy(max_retry_after=value)
