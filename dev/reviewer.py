"""A person's answer to a review (Airflow 3.1+'s human-in-the-loop), written the way Airflow records
one: the handler of Airflow's own REST call (``PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id}/
taskInstances/{task_id}/{map_index}/hitlDetails``), called in-process on the metadata DB. The
review's task then reads the answer exactly as it reads a person's from Required Actions (who,
when, which option); no task is marked successful in its place.

Used by the end-to-end tests (``dag.test()`` waits for the answer) and by ``make demo`` and
``make celery-demo`` (``airflow dags test`` and the scheduler wait for it in other processes).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

WAITING = ("awaiting_input", "deferred")
"""The states of a review task that waits for its answer (3.3+; before, deferred to its trigger).
An answer given before the task is in one of them (it is still writing its request) would resume
nothing: a person sees the request only then, too."""


def waiting_reviews(session: Any) -> list[tuple[str, str, str, int]]:
    """``(dag_id, run_id, task_id, map_index)`` of each review that waits for an answer."""
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    rows = session.execute(
        select(TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index)
        .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
        .where(HITLDetail.response_received.is_(False), TaskInstance.state.in_(WAITING))
    )
    return [tuple(row) for row in rows]  # type: ignore[misc]


def answer(
    dag_id: str, run_id: str, task_id: str, map_index: int, *, option: str, user: str, session: Any, commit: bool = True
) -> None:
    """Answer one review with ``option`` as ``user``, through the REST API's own handler (committed
    unless ``commit`` is False: the caller's transaction then goes on)."""
    from airflow.api_fastapi.app import get_auth_manager, init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.datamodels.hitl import UpdateHITLDetailPayload
    from airflow.api_fastapi.core_api.routes.public.hitl import update_hitl_detail

    try:
        get_auth_manager()  # (the handler asks it whether the user may answer a review with assigned users)
    except RuntimeError:  # not made yet in this process, as the API server makes it when it starts
        init_auth_manager()

    update_hitl_detail(
        dag_id=dag_id,
        dag_run_id=run_id,
        task_id=task_id,
        update_hitl_detail_payload=UpdateHITLDetailPayload(chosen_options=[option], params_input={}),
        user=SimpleAuthManagerUser(username=user, role="ADMIN"),
        session=session,
        map_index=map_index,
    )
    if commit:
        session.commit()


STRANDED_AFTER = 3.0
"""Seconds after which an answered review whose task still waits is resumed again (see
:func:`resume_stranded`)."""


def resume_stranded(session: Any, now: Any) -> int:
    """Resume each review answered over :data:`STRANDED_AFTER` seconds ago whose task still waits
    for input, as Airflow's answer handler resumes one (``handle_event_submit`` with the answer).

    ``dag.test()`` runs a task in-process and then stores the state it saw, and SQLite takes no
    row lock: an answer that lands between the task parking itself and that write is overwritten,
    and the run would wait for ever (a CI run under load met it). A person's answer in Required
    Actions is the same call, so the task resumes with that answer, unchanged."""
    import datetime as dt

    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import handle_event_submit
    from airflow.triggers.base import TriggerEvent
    from sqlalchemy import select

    before = now - dt.timedelta(seconds=STRANDED_AFTER)
    rows = session.execute(
        select(TaskInstance, HITLDetail)
        .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
        .where(HITLDetail.responded_at.is_not(None), HITLDetail.responded_at < before)
        .where(TaskInstance.state == "awaiting_input")
    ).all()
    for ti, detail in rows:
        handle_event_submit(TriggerEvent(detail.as_resume_event_payload()), task_instance=ti, session=session)
    session.commit()
    return len(rows)


def time_out(session: Any, run_id: str, task_id: str, map_index: int) -> None:
    """A review nobody answered, ended as Airflow's scheduler ends one whose ``response_timeout``
    passed without an answer or defaults: resumed with its timeout event."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import handle_event_submit
    from airflow.triggers.base import TriggerEvent

    ti = session.query(TaskInstance).filter_by(run_id=run_id, task_id=task_id, map_index=map_index).one()
    event = {"error": "The Human-in-the-loop response timeout has passed without a response.", "error_type": "timeout"}
    handle_event_submit(TriggerEvent(event), task_instance=ti, session=session)
    session.commit()


Act = Callable[[Any, str, str, str, int], None]
"""What a reviewer does with one waiting review: ``act(session, dag_id, run_id, task_id, map_index)``."""


def answer_waiting(*, option: str = "Approve", user: str = "reviewer") -> list[str]:
    """Answer every review waiting now, and resume any answered one left waiting; the task ids answered."""

    def act(session: Any, dag_id: str, run_id: str, task_id: str, map_index: int) -> None:
        answer(dag_id, run_id, task_id, map_index, option=option, user=user, session=session)

    return act_on_waiting(act)


def act_on_waiting(act: Act) -> list[str]:
    """``act`` on every review waiting now, and resume any answered one left waiting; the task ids acted on."""
    import datetime as dt

    from airflow.utils.session import create_session

    done = []
    with create_session() as session:
        for dag_id, run_id, task_id, map_index in waiting_reviews(session):
            act(session, dag_id, run_id, task_id, map_index)
            done.append(task_id)
        resume_stranded(session, dt.datetime.now(dt.UTC))
    return done


@contextmanager
def reviewing(*, option: str = "Approve", user: str = "reviewer", every: float = 0.2) -> Iterator[list[str]]:
    """While the block runs, a thread answers each review that waits (``every`` seconds between
    looks, on an event that the block's end sets); yields the task ids answered so far. Where
    Airflow has no review step (before 3.1), nothing."""

    def act(session: Any, dag_id: str, run_id: str, task_id: str, map_index: int) -> None:
        answer(dag_id, run_id, task_id, map_index, option=option, user=user, session=session)

    with reviewing_with(act, every=every) as answered:
        yield answered


@contextmanager
def reviewing_with(act: Act, *, every: float = 0.2) -> Iterator[list[str]]:
    """While the block runs, a thread does ``act`` with each review that waits (``every`` seconds
    between looks, on an event that the block's end sets); yields the task ids acted on so far.
    Where Airflow has no review step (before 3.1), nothing."""
    if importlib.util.find_spec("airflow.models.hitl") is None:  # Airflow before 3.1: no review to answer
        yield []
        return
    answered: list[str] = act_on_waiting(act)  # (imports Airflow's models here, not in the thread)
    stop = threading.Event()
    errors: list[BaseException] = []
    failed: list[BaseException] = []

    def loop() -> None:
        from sqlalchemy.exc import OperationalError

        while not stop.wait(every):
            try:
                answered.extend(act_on_waiting(act))
            except OperationalError as err:  # a locked SQLite DB: looked at again next time
                errors.append(err)
            except Exception as err:  # a mistake of the test's own: end the run's waiting reviews, say it
                failed.append(err)
                act_on_waiting(lambda session, _, run_id, task_id, index: time_out(session, run_id, task_id, index))
                return

    thread = threading.Thread(target=loop, name="reviewer", daemon=True)
    thread.start()
    try:
        yield answered
    finally:
        stop.set()
        thread.join(timeout=30)
    if failed:
        raise AssertionError(f"the reviewer failed (the waiting reviews were timed out): {failed[0]!r}") from failed[0]
    if errors and not answered:
        raise AssertionError(f"no review was answered; the reviewer met: {errors[-1]!r}") from errors[-1]
