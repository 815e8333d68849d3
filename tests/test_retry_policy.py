"""BlinkRetryPolicy: what Airflow 3.3+ does with a failed Blink task (retry_policy, AIP-105)."""

from __future__ import annotations

from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkClientError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
    BlinkNotFoundError,
    BlinkTransientError,
)
from blinkops_provider.retry_policy import HAS_RETRY_POLICY, BlinkRetryPolicy, default_retry_policy

pytestmark = pytest.mark.skipif(not HAS_RETRY_POLICY, reason="retry_policy needs Airflow 3.3 or later")


def decide(error: BaseException, **policy: Any) -> tuple[str, float | None, str | None]:
    decision = BlinkRetryPolicy(**policy).evaluate(error, try_number=1, max_tries=3, context=None)
    delay = decision.retry_delay.total_seconds() if decision.retry_delay is not None else None
    return decision.action.value, delay, decision.reason


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


def test_a_refused_key_says_what_to_fix_and_the_cap_is_configurable() -> None:
    assert "check the connection's API key" in str(decide(BlinkAuthError("no", status=401))[2])
    assert decide(BlinkTransientError("slow down", status=429, retry_after=90.0), max_retry_after=30)[1] == 30.0
    with pytest.raises(BlinkInputError, match="max_retry_after must be a positive number"):
        BlinkRetryPolicy(max_retry_after=0)


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


def test_the_final_rate_limit_error_names_the_attempts_and_blinks_wait(make_hook: Any) -> None:
    hook = make_hook(retry_limit=3, retry_delay=0.5)
    with rm.Mocker() as m:
        m.get(rm.ANY, status_code=429, headers={"Retry-After": "2"}, json={"message": "rate limited"})
        with pytest.raises(BlinkTransientError) as caught:
            hook.list_connection_types(limit=1)
    assert caught.value.retry_after == 2.0 and caught.value.status == 429
    assert "gave up after 3 attempt(s); Blink asked to wait 2 s" in str(caught.value)
    assert decide(caught.value)[:2] == ("retry", 2.0)
