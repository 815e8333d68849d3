"""Airflow's private human-in-the-loop API behind one compatibility module (blinkops_provider.operators._hitl, #73
item 8): on every supported Airflow line these tests run (``compat``), and each fails when Airflow moves or reshapes
what the table review uses: the request's write, the wait for the answer, and the answer's members.

On Airflow 2.11 there is no human-in-the-loop API: the test says so (the review is then not offered; the task groups'
tests hold that).

A private import: the module under test is the compatibility module itself.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import airflow
import pytest

MAJOR_MINOR = tuple(int(part) for part in airflow.__version__.split(".")[:2])
HAS_HITL = MAJOR_MINOR >= (3, 1)


class Comms:
    """The task's channel to its supervisor, recording what is sent on it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, msg: Any) -> None:
        self.sent.append(msg)


def test_the_review_request_is_written_as_airflow_records_it(monkeypatch: pytest.MonkeyPatch) -> None:
    if not HAS_HITL:
        with pytest.raises(ImportError):
            import airflow.sdk.execution_time.hitl  # noqa: F401
        return
    from airflow.sdk.execution_time import task_runner

    from blinkops_provider.operators._hitl import ask_review

    comms = Comms()
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", comms, raising=False)
    ti_id = uuid.uuid4()
    ask_review(
        ti_id=ti_id,
        subject="Apply?",
        body="**Plan**",
        options=["Approve", "Reject"],
        assigned_users=[{"id": 7, "name": "a"}],
    )
    [msg] = comms.sent
    assert (msg.ti_id, msg.subject, msg.body, list(msg.options)) == (ti_id, "Apply?", "**Plan**", ["Approve", "Reject"])
    assert [(user.id, user.name) for user in msg.assigned_users] == [("7", "a")]
    assert msg.multiple is False and not msg.defaults


def _waiting_task() -> Any:
    from airflow.providers.common.compat.sdk import BaseOperator

    return BaseOperator(task_id="apply")


def test_the_task_waits_for_the_answer_as_its_airflow_line_parks_it() -> None:
    if not HAS_HITL:
        with pytest.raises(ImportError):
            from airflow.providers.standard.triggers.hitl import HITLTrigger
        return
    from blinkops_provider.operators._hitl import await_answer

    ti_id, timeout = uuid.uuid4(), dt.timedelta(hours=2)
    if MAJOR_MINOR >= (3, 3):  # parked awaiting input, without a trigger
        from airflow.sdk.exceptions import TaskAwaitingInput as Parked
    else:  # deferred to the answer's trigger
        from airflow.providers.common.compat.sdk import TaskDeferred as Parked  # type: ignore[assignment]
    with pytest.raises(Parked) as parked:
        await_answer(
            _waiting_task(),
            ti_id=ti_id,
            options=["Approve", "Reject"],
            timeout=timeout,
            method_name="execute_complete",
            kwargs={"shown": "abc"},
        )
    waiting: Any = parked.value
    assert (waiting.method_name, waiting.kwargs) == ("execute_complete", {"shown": "abc"})
    if MAJOR_MINOR >= (3, 3):
        assert waiting.timeout == timeout
    else:
        from airflow.providers.standard.triggers.hitl import HITLTrigger

        assert isinstance(waiting.trigger, HITLTrigger)
        _, given = waiting.trigger.serialize()
        assert given["ti_id"] == ti_id and list(given["options"]) == ["Approve", "Reject"]


def test_the_answer_airflow_resumes_the_task_with_holds_what_the_review_reads() -> None:
    from blinkops_provider.operators._hitl import ANSWER_KEYS

    if not HAS_HITL:
        with pytest.raises(ImportError):
            from airflow.providers.standard.triggers.hitl import HITLTriggerEventSuccessPayload
        return
    from airflow.providers.standard.triggers.hitl import HITLTriggerEventSuccessPayload

    assert set(ANSWER_KEYS) <= set(HITLTriggerEventSuccessPayload.__annotations__)
    if MAJOR_MINOR >= (3, 3):  # parked without a trigger: the core builds the same answer from its record
        from airflow.models.hitl import HITLDetail

        answered = HITLDetail(
            ti_id=str(uuid.uuid4()),
            options=["Approve", "Reject"],
            subject="Apply?",
            chosen_options=["Approve"],
            responded_at=dt.datetime(2026, 11, 29, tzinfo=dt.UTC),
            responded_by={"id": "7", "name": "a"},
        )
        payload = answered.as_resume_event_payload()
        assert set(ANSWER_KEYS) <= set(payload) and payload["chosen_options"] == ["Approve"]
