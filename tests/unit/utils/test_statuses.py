"""The client's one status table (#49 item 4): the error each status raises, what the hook
retries, what fails a task at once; the request path and the retry policy follow it.

Private imports, the exception: the table itself is the unit under test (one status, one error class, retried or
permanent), and the retry policy's verdict on each is read where it is decided, on every Airflow line (the public
``BlinkRetryPolicy`` exists on Airflow 3.3 only).
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkBadRequestError,
    BlinkClientError,
    BlinkNotFoundError,
    BlinkTransientError,
)
from blinkops_provider.retry_policy import _permanent
from blinkops_provider.utils.blink_api import TRANSIENT_STATUSES
from blinkops_provider.utils.statuses import PERMANENT, RETRIED, STATUSES, error_class
from blinkops_sandbox import FaultConfig


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, BlinkBadRequestError),
        (401, BlinkAuthError),
        (403, BlinkAuthError),
        (404, BlinkNotFoundError),
        (409, BlinkClientError),
        (422, BlinkClientError),
        (429, BlinkTransientError),
        (503, BlinkTransientError),
        (501, BlinkApiError),
        (302, BlinkApiError),
    ],
)
def test_each_status_raises_its_error(status: int, expected: type[BlinkApiError]) -> None:
    assert error_class(status) is expected


def test_the_hook_retries_blinks_transient_statuses_only_and_none_is_both_retried_and_permanent() -> None:
    assert RETRIED == TRANSIENT_STATUSES == frozenset({429, 500, 502, 503, 504})
    assert frozenset({400, 401, 403, 404, 422}) == PERMANENT
    assert not RETRIED & PERMANENT


@pytest.mark.parametrize("status", sorted({*STATUSES, 409, 501}))
def test_the_task_fails_at_once_exactly_on_a_permanent_status(status: int) -> None:
    error = error_class(status)("refused", status=status)
    assert (_permanent(error) is not None) == (status in PERMANENT)


def test_the_sandbox_serves_as_faults_exactly_the_statuses_the_client_retries() -> None:
    for status in RETRIED:
        assert FaultConfig(error_statuses=[status]).error_statuses == [status]
    for status in (400, 404, 501):
        with pytest.raises(ValidationError, match="transient"):
            FaultConfig(error_statuses=[status])
