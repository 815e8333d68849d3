"""The table lock (blinkops_provider.migrations._lock): its properties one by one (#33).

Where a table's lock is kept (blinkops_provider.migrations._lock): mutual exclusion under
contention, proven by holders that record entry and exit, with threads and processes, on a local
folder and on S3 (moto) (#33).

The record of a migration (blinkops_provider.migrations._lock): a record of another Blink (#36). And an apply of a
table whose lock another apply holds: refused, or waiting when told to, with nothing sent.

A private import, the exception: the lock is held here by ``TableLock`` itself, as another apply would hold it,
with its clocks injected, and the stress tests enter and leave it from threads and processes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import math
import multiprocessing
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError, BlinkLockedError, BlinkStalePlanError
from blinkops_provider.migrations import SchemaRecord, apply_schema, force_unlock, held_locks, plan_schema, plan_xcom
from blinkops_provider.migrations._lock import Holder, LockInfo, TableLock, lock_file, record_location, unlock_command
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from tests.conftest import FakeTI, keys
from tests.fake_blink import field_json, without_table_reads
from tests.unit.migrations.test_apply import DECLARED, apply

ROUNDS = 200


def contend(records: str, journal: str, who: str, rounds: int, start: Any, wait: float, dead: str) -> None:
    """One contender: each round, at the barrier, try to take the lock (waiting ``wait`` s, polling
    without sleeping); the holder appends ``enter`` and ``exit`` lines to the journal (one
    ``O_APPEND`` write each, so the file's order is the order they happened in)."""
    import time

    holder = Holder(host=socket.gethostname(), pid=os.getpid(), label=who)
    out = os.open(journal, os.O_WRONLY | os.O_APPEND)
    try:
        for number in range(rounds):
            start.wait()
            if dead and who == "0":  # a lock of a process that is gone, for all to take over at once
                TableLock(
                    record_location(records, "ws", "t"),
                    records=records,
                    ws_id="ws",
                    table="t",
                    holder=Holder(host=holder.host, pid=int(dead)),
                ).acquire()
            start.wait()
            lock = TableLock(
                record_location(records, "ws", "t"),
                records=records,
                ws_id="ws",
                table="t",
                holder=holder,
                wait=wait,
                sleep=lambda s: None,
            )
            try:
                lock.acquire()
            except BlinkLockedError:
                continue
            os.write(out, f"{number} enter {who} {time.monotonic()}\n".encode())
            os.sched_yield()
            os.write(out, f"{number} exit {who} {time.monotonic()}\n".encode())
            lock.release()
    except BaseException:
        start.abort()  # a contender that fails frees the others
        raise
    finally:
        os.close(out)


def check_journal(journal: str, contenders: int, wait: float, rounds: int = ROUNDS) -> int:
    """No two holders at once; with a wait, every contender held the lock once a round. Returns
    how many times the lock was held."""
    inside: str | None = None
    held = 0
    for line in Path(journal).read_text().splitlines():
        _, kind, who, _ = line.split()
        if kind == "enter":
            assert inside is None, f"{who} entered while {inside} held the lock: {line}"
            inside, held = who, held + 1
        else:
            assert inside == who, f"{who} left a lock it did not hold: {line}"
            inside = None
    assert inside is None
    if wait:
        assert held == contenders * rounds
    return held


def run(kind: str, records: str, journal: str, contenders: int, rounds: int, wait: float, dead: str = "") -> None:
    """Contenders as threads, or as processes (forked; spawned for S3, whose client is not fork-safe)."""
    Path(journal).write_text("")
    if kind == "threads":
        start: Any = threading.Barrier(contenders)
        workers: list[Any] = [
            threading.Thread(target=contend, args=(records, journal, str(n), rounds, start, wait, dead))
            for n in range(contenders)
        ]
    else:
        context = multiprocessing.get_context("spawn" if records.startswith("s3://") else "fork")
        start = context.Barrier(contenders)
        workers = [
            context.Process(target=contend, args=(records, journal, str(n), rounds, start, wait, dead))
            for n in range(contenders)
        ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(getattr(worker, "exitcode", 0) in (0, None) for worker in workers)


def dead_pid_text() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return str(child.pid)


@pytest.mark.parametrize("kind", ["threads", "processes"])
@pytest.mark.parametrize("contenders", [2, 8])
@pytest.mark.parametrize("wait", [0.0, 60.0], ids=["refused", "waiting"])
def test_on_a_local_folder_applies_started_at_once_never_hold_the_lock_together(
    tmp_path: Path, kind: str, contenders: int, wait: float
) -> None:
    journal = str(tmp_path / "journal")
    run(kind, f"{tmp_path}/records/", journal, contenders, ROUNDS, wait)
    held = check_journal(journal, contenders, wait)
    assert held >= ROUNDS  # every round, someone held it
    assert not list((tmp_path / "records").rglob("*.lock"))  # and let it go


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_on_a_local_folder_a_dead_holders_lock_is_taken_over_by_one_at_a_time(tmp_path: Path, kind: str) -> None:
    journal = str(tmp_path / "journal")
    run(kind, f"{tmp_path}/records/", journal, 8, ROUNDS, 60.0, dead=dead_pid_text())
    check_journal(journal, 8, 60.0)


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_on_s3_applies_started_at_once_never_hold_the_lock_together(
    bucket: tuple[Any, str], tmp_path: Path, kind: str
) -> None:
    records = f"s3://aws_default@{bucket[1]}/records/"
    journal = str(tmp_path / "journal")
    contenders = 4 if kind == "threads" else 2  # each spawned process imports Airflow: a few seconds
    run(kind, records, journal, contenders, 10, 60.0)
    check_journal(journal, contenders, 60.0, rounds=10)


def test_on_s3_a_conditional_remove_leaves_a_lock_that_replaced_the_one_read(bucket: tuple[Any, str]) -> None:
    store = lock_file(f"s3://aws_default@{bucket[1]}/records/ws/t.json")
    assert store.create(b'{"id": "first"}') and not store.create(b'{"id": "second"}')
    read = store.read()
    assert read is not None and read[0] == b'{"id": "first"}'
    assert store.remove(read[1]) and store.read() is None
    assert store.create(b'{"id": "third"}')
    assert not store.remove(read[1])  # the first one's version: the third stays
    assert store.read() is not None and store.read()[0] == b'{"id": "third"}'  # type: ignore[index]


def test_on_a_local_folder_a_conditional_remove_leaves_a_lock_that_replaced_the_one_read(tmp_path: Path) -> None:
    store = lock_file(f"{tmp_path}/ws/t.json")
    remove: Callable[[str], bool] = store.remove
    assert store.create(b'{"id": "first"}') and not store.create(b'{"id": "second"}')
    read = store.read()
    assert read is not None and remove(read[1]) and store.read() is None
    assert store.create(b'{"id": "third"}') and not remove(read[1])
    assert store.read() is not None


def test_on_s3_a_lock_replaced_between_the_reads_head_and_get_is_read_again(bucket: tuple[Any, str]) -> None:
    """#43 item 2: s3fs raises FileExpired when the lock's ETag changed between its HEAD and its GET
    (released and taken again meanwhile): a lost race, read again, never a configuration error."""
    from s3fs.utils import FileExpired

    store = lock_file(f"s3://aws_default@{bucket[1]}/records/ws/t.json")
    assert store.create(b'{"id": "first"}')
    real_open, expired = store.fs.open, [2]

    def open_replaced_twice(path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if expired[0]:
            expired[0] -= 1
            raise FileExpired(filename=path, e_tag='"old"')
        return real_open(path, mode, **kwargs)

    store.fs.open = open_replaced_twice
    try:
        read = store.read()
    finally:
        store.fs.open = real_open
    assert read is not None and read[0] == b'{"id": "first"}' and expired == [0]


@pytest.mark.parametrize("kind", ["threads", "processes"])
@pytest.mark.parametrize("store", ["folder", "s3"])
def test_eight_waiting_applies_each_get_their_turn_within_lock_wait(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, store: str
) -> None:
    """#43 item 1: eight applies a round wait for one table with lock_wait=60, polling without
    sleeping; each holder is brief. Every apply holds the lock once a round within its wait, and
    the journal shows no two holders at once. (How soon a waiter takes over after a release, with
    the lock's own poll schedule in real time, is measured by benchmarks/lock_handover.py.)"""
    records = f"{tmp_path}/records/"
    if store == "s3":
        records = f"s3://aws_default@{request.getfixturevalue('bucket')[1]}/records/"
    contenders, rounds = 8, (20 if store == "folder" else 6) if kind == "threads" else 4
    journal = str(tmp_path / "journal")
    run(kind, records, journal, contenders, rounds, 60.0)
    assert check_journal(journal, contenders, 60.0, rounds=rounds) == contenders * rounds


def handover_gaps(journal: str) -> list[float]:
    """The lock's seconds from each release to the next holder's entry, within a round."""
    lines = [line.split() for line in Path(journal).read_text().splitlines()]
    return [
        float(entered[3]) - float(left[3])
        for left, entered in itertools.pairwise(lines)
        if left[1] == "exit" and entered[1] == "enter" and left[0] == entered[0]
    ]


def test_a_lock_whose_body_cannot_be_written_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#43 item 6: a body the disk refuses halfway (no room left) leaves nothing behind."""
    import errno

    from blinkops_provider.exceptions import BlinkConfigurationError

    def half_then_full(self: Path, data: bytes) -> int:
        with open(self, "wb") as out:
            out.write(data[:3])
        raise OSError(errno.ENOSPC, "No space left on device")

    store = lock_file(f"{tmp_path}/ws/t.json")
    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    with pytest.raises(BlinkConfigurationError, match="No space left on device"):
        store.create(b'{"id": "x"}')
    assert list((tmp_path / "ws").iterdir()) == []


pytestmark = pytest.mark.usefixtures("blink_without_table_reads")


SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


def task(try_number: int = 1, map_index: int = -1, host: str | None = None, pid: int | None = None) -> Holder:
    return Holder(
        host=host or socket.gethostname(),
        pid=os.getpid() if pid is None else pid,
        dag_id="migrate",
        run_id="manual__1",
        task_id="apply",
        map_index=map_index,
        try_number=try_number,
    )


def lock(records: Path | str, holder: Holder, **kwargs: Any) -> TableLock:
    """ws-1/Incidents' lock beside its record under ``records`` (no real sleep unless given one)."""
    kwargs.setdefault("sleep", lambda s: None)
    return TableLock(
        record_location(str(records), "ws-1", "Incidents"),
        records=str(records),
        ws_id="ws-1",
        table="Incidents",
        holder=holder,
        **kwargs,
    )


@pytest.fixture
def records(tmp_path: Path) -> str:
    return f"{tmp_path}/records/"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# -- one holder, and a body with every lock ---------------------------------------------------


def test_a_lock_never_exists_without_its_body(records: str) -> None:
    """A reader that reads the lock file all the time while holders come and go finds either no
    lock or a whole one, never an empty or partial body."""
    path = Path(records) / "ws-1" / "Incidents.json.lock"
    seen, stop = [], threading.Event()

    def reader() -> None:
        while not stop.is_set():
            with contextlib.suppress(FileNotFoundError):
                seen.append(json.loads(path.read_bytes())["id"])

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(300):
            with lock(records, task()):
                pass
    finally:
        stop.set()
        thread.join()
    assert all(len(lock_id) == 16 for lock_id in seen)


def test_a_second_holder_is_refused_at_once_naming_the_holder_in_full_and_the_unlock_command(records: str) -> None:
    other = task(try_number=2, map_index=3, host="worker-2", pid=4242)
    with lock(records, other) as held, pytest.raises(BlinkLockedError) as refused:
        lock(records, task(host="worker-1")).acquire()
    text = str(refused.value)
    assert "being applied by migrate/manual__1/apply[3] (try 2) on worker-2 (pid 4242)" in text
    assert f"lock {held.id}" in text and "nothing was sent" in text
    assert f"blink-schema unlock -- {records} ws-1/Incidents {held.id}" in text


def test_a_live_holder_keeps_its_lock_however_long_it_runs(records: str) -> None:
    """No lease: a year later, by any clock, the lock is still its holder's."""
    far = [0.0]
    with lock(records, task(host="worker-2")):
        far[0] = 365 * 86400.0
        with pytest.raises(BlinkLockedError):
            lock(records, task(host="worker-1"), monotonic=lambda: far[0]).acquire()


def test_a_waiter_polls_often_with_jitter_and_says_whom_it_waits_for(records: str, caplog: Any) -> None:
    clock, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    with lock(records, task(host="worker-2")):
        waiter = lock(records, task(), wait=120, sleep=sleep, monotonic=lambda: clock[0])
        with caplog.at_level("INFO"), pytest.raises(BlinkLockedError, match=r"waited 120 s"):
            waiter.acquire()
    assert sum(slept) == pytest.approx(120)
    assert 0.05 <= slept[0] <= 0.15 and max(slept) <= 3.0  # from 0.1 s, never more than 2 s (+50% jitter)
    assert len(set(slept[-10:])) == 10  # jittered: no two waits alike
    assert len(slept) > 55  # polls often: at least about every 2 s over the two minutes
    waits = [r.getMessage() for r in caplog.records if "Waiting up to" in r.getMessage()]
    assert len(waits) == 1 and "held by migrate/manual__1/apply (try 1) on worker-2" in waits[0]


def test_the_waits_restart_short_when_another_apply_takes_the_lock(records: str) -> None:
    """A waiter that waited long for one holder does not sleep long past the next one's release."""
    clock, slept = [0.0], []
    first = lock(records, task(host="worker-2", try_number=1))
    first.acquire()

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds
        if len(slept) == 20:  # the first holder is done; another apply takes the table at once
            first.release()
            lock(records, task(host="worker-3", map_index=5)).acquire()

    waiter = lock(records, task(), wait=60, sleep=sleep, monotonic=lambda: clock[0])
    with pytest.raises(BlinkLockedError):
        waiter.acquire()
    assert slept[19] > 1.0 and slept[20] <= 0.15  # back to 0.1 s (with jitter) for the new holder


def test_a_dangling_link_at_the_locks_path_is_refused_within_the_wait_not_spun_on(tmp_path: Path) -> None:
    records = f"{tmp_path}/records/"
    (tmp_path / "records" / "ws-1").mkdir(parents=True)
    (tmp_path / "records" / "ws-1" / "Incidents.json.lock").symlink_to(tmp_path / "nowhere")
    clock, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    for wait in (0, 5):
        waiter = lock(records, task(), wait=wait, sleep=sleep, monotonic=lambda: clock[0])
        with pytest.raises(BlinkLockedError, match="cannot be created and reads as missing"):
            waiter.acquire()
    assert sum(slept) == pytest.approx(5)


@pytest.mark.parametrize("started", [12345, "", None, "not-a-time"])
def test_a_live_holder_on_this_host_is_not_taken_over_whatever_its_recorded_start(records: str, started: Any) -> None:
    import os

    body = {"host": socket.gethostname(), "pid": os.getpid(), "started": started, "label": "me, alive"}
    info = LockInfo.read(json.dumps({"id": "x", "holder": body}).encode(), "v", "here")
    assert info.holder.why_gone(task()) == ""  # this process runs: nothing shows it gone


@pytest.mark.parametrize(
    "holder",
    [{"pid": 2**80, "host": socket.gethostname()}, {"map_index": "three", "pid": 1}, {"pid": -1, "try_number": "2"}],
)
def test_a_malformed_holder_is_described_and_never_taken_over(holder: dict[str, Any]) -> None:
    info = LockInfo.read(json.dumps({"id": "x", "ws_id": "", "holder": holder}).encode(), "v", "here")
    assert info.holder.why_gone(task()) == "" and info.ws_id == "?"
    assert "held by" in info.describe()


def test_the_printed_unlock_command_works_for_a_workspace_that_starts_with_a_dash(tmp_path: Path) -> None:
    from blinkops_provider.cli.main import main

    records = f"{tmp_path}/records/"
    held = TableLock(record_location(records, "-ws", "T"), records=records, ws_id="-ws", table="T", holder=task())
    held.acquire()
    command = unlock_command(records, "-ws", "T", held.id)
    assert main(shlex.split(command)[1:]) == 0
    assert held_locks(records) == []


@pytest.mark.parametrize("records", ["", "/no/such/folder/"])
def test_listing_the_locks_of_nothing_says_so_and_exits_1(records: str, capsys: Any) -> None:
    from blinkops_provider.cli.main import main

    assert main(["locks", records]) == 1
    assert "blink-schema: " in capsys.readouterr().err


def test_a_lock_gone_when_read_is_created_again_and_nothing_is_removed() -> None:
    class Vanishing:
        where, creates, removed = "mem://lock", 0, []

        def create(self, body: bytes) -> bool:
            self.creates += 1
            return self.creates > 1  # the first create meets a lock that is gone by the read

        def read(self) -> tuple[bytes, str] | None:
            return None

        def remove(self, version: str) -> bool:
            self.removed.append(version)
            return True

    store = Vanishing()
    TableLock(
        record_location("/r/", "ws-1", "Incidents"),
        records="/r/",
        ws_id="ws-1",
        table="Incidents",
        holder=task(),
        file=store,
    ).acquire()
    assert store.creates == 2 and store.removed == []


def test_release_after_a_takeover_leaves_the_new_holders_lock(records: str) -> None:
    first = lock(records, task(host="worker-1"))
    first.acquire()
    force_unlock(records, "ws-1", "Incidents", first.id)
    with lock(records, task(host="worker-2")) as second:
        first.release()
        assert [info.id for info in held_locks(records)] == [second.id]


# -- dead holders -----------------------------------------------------------------------------


def test_an_earlier_try_of_the_same_task_instance_is_taken_over(records: str, caplog: Any) -> None:
    stale = lock(records, task(try_number=1, host="worker-2", pid=4242))
    stale.acquire()
    with caplog.at_level("WARNING"), lock(records, task(try_number=2)) as mine:
        assert [info.id for info in held_locks(records)] == [mine.id]
    assert any(stale.id in r.getMessage() and "try 1 of this task instance" in r.getMessage() for r in caplog.records)


def test_another_map_index_or_a_later_try_is_not_taken_over(records: str) -> None:
    with (
        lock(records, task(try_number=1, map_index=0, host="worker-2")),
        pytest.raises(BlinkLockedError, match=r"apply\[0\] \(try 1\)"),
    ):
        lock(records, task(try_number=2, map_index=1)).acquire()
    with lock(records, task(try_number=3, host="worker-2")), pytest.raises(BlinkLockedError):
        lock(records, task(try_number=2)).acquire()


def test_a_holder_process_of_this_host_that_no_longer_runs_is_taken_over(records: str, caplog: Any) -> None:
    stale = lock(records, task(pid=dead_pid()))
    stale.acquire()
    with caplog.at_level("WARNING"), lock(records, Holder.current()) as mine:
        assert [info.id for info in held_locks(records)] == [mine.id]
    assert any("no longer runs on this host" in r.getMessage() for r in caplog.records)


def test_a_holder_on_another_host_is_not_judged_and_is_released_by_its_id(records: str) -> None:
    gone = lock(records, task(host="worker-2", pid=dead_pid()))
    gone.acquire()
    with pytest.raises(BlinkLockedError):
        lock(records, Holder.current()).acquire()
    with pytest.raises(BlinkInputError, match="not 0123456789abcdef: nothing released"):
        force_unlock(records, "ws-1", "Incidents", "0123456789abcdef")
    assert force_unlock(records, "ws-1", "Incidents", gone.id).id == gone.id
    with lock(records, Holder.current()):
        pass
    assert held_locks(records) == []


# -- one record, one lock ----------------------------------------------------------------------


def test_two_spellings_of_one_record_share_one_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "records" / "Incidents.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "Incidents-link.json"
    link.symlink_to(real)
    monkeypatch.chdir(tmp_path)
    with lock(real, task(host="worker-2")):
        for spelling in (str(link), f"file://{real}", "records/Incidents.json", "Incidents-link.json"):
            with pytest.raises(BlinkLockedError):
                TableLock(
                    record_location(spelling, "ws-1", "Incidents"),
                    records=spelling,
                    ws_id="ws-1",
                    table="Incidents",
                    holder=task(),
                ).acquire()


# -- typed failures and lock_wait -----------------------------------------------------------------


def test_a_lock_location_that_cannot_be_written_is_a_configuration_error_naming_it() -> None:
    with pytest.raises(BlinkConfigurationError, match=r"/blink/records/ws-1/Incidents.json.lock' cannot be written"):
        lock("/proc/self/blink/records/", task()).acquire()


def test_an_unreadable_record_is_a_configuration_error_naming_it(hook: Any) -> None:
    with pytest.raises(BlinkConfigurationError, match=r"'/proc/self/mem' cannot be read"):
        plan_schema(hook, "ws-1", "Incidents", SCHEMA, record_path="/proc/self/mem")


@pytest.mark.parametrize("wait", [math.nan, math.inf, -1, 3601, "5", True, None])
def test_lock_wait_is_checked_wherever_it_is_accepted(hook: Any, records: str, wait: Any) -> None:
    expected = r"lock_wait must be a number of seconds from 0 to 3600"
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=expected):
            apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records, lock_wait=wait)
        with pytest.raises(BlinkInputError, match=expected):
            UpdateTableFieldsOperator(task_id="t", ws_id="w", table="t", fields=SCHEMA, lock_wait=wait)
    assert m.call_count == 0


# -- the apply under the lock -------------------------------------------------------------------


def test_a_plan_made_stale_by_the_apply_waited_for_says_to_plan_and_review_again(make_hook: Any, records: str) -> None:
    first_hook = make_hook()
    approved = plan_xcom(plan_schema(first_hook, "ws-1", "Incidents", SCHEMA, record_path=records))
    first = lock(records, task(host="worker-2"))
    first.acquire()

    def first_apply_finishes(seconds: float) -> None:  # the waiter's first wait: the first apply records and releases
        first.release()
        with rm.Mocker() as m:
            without_table_reads(m)
            m.put(rm.ANY, json=field_json)
            apply_schema(first_hook, "ws-1", "Incidents", SCHEMA, record_path=records)

    waiter = make_hook(clock=first_hook.clock.__class__(sleep=first_apply_finishes))
    with rm.Mocker() as m:
        without_table_reads(m)
        with pytest.raises(BlinkStalePlanError, match="Nothing was sent: plan again and review the new plan"):
            apply_schema(waiter, "ws-1", "Incidents", SCHEMA, record_path=records, plan=approved, lock_wait=60)
    assert {call.method for call in m.request_history} == {"GET"}  # the plan's reads, nothing sent


NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


pytestmark = pytest.mark.usefixtures("blink_without_table_reads")


def test_a_record_of_another_blink_says_which_and_what_to_do(tmp_path: Path) -> None:
    """As when make airflow-ui's sandbox came back on another port: the record names the Blink it
    was written for, and the way out is the connection or moving the record aside, not another
    record_path."""
    where = tmp_path / "records" / "ws-demo" / "Incidents.json"
    SchemaRecord(where, blink="http://127.0.0.1:44201", ws_id="ws-demo", table="Incidents").write({}, now=NOW)
    with pytest.raises(BlinkInputError) as refused:
        SchemaRecord(where, blink="http://127.0.0.1:45929", ws_id="ws-demo", table="Incidents").read()
    text = str(refused.value)
    assert str(where) in text and "names the Blink at 127.0.0.1:44201" in text
    assert "the connection's Blink is 127.0.0.1:45929" in text
    assert "Point the connection back at 127.0.0.1:44201" in text and "move the record aside" in text
    assert "give each table its own record_path" not in text


@pytest.mark.parametrize(
    ("executor", "location", "refused"),
    [
        ("CeleryExecutor", "/tmp/blink_schema_records/ws/t.json", True),
        ("CeleryExecutor", "/var/tmp/records/ws/t.json", True),
        ("LocalExecutor,KubernetesExecutor", "/tmp/records/ws/t.json", True),
        ("my_alias:my.company.CeleryExecutor", "file:///tmp/r/ws/t.json", True),
        ("LocalExecutor", "/tmp/records/ws/t.json", False),  # one machine: its /tmp is shared by every task
        ("CeleryExecutor", "/srv/shared/records/ws/t.json", False),  # not scratch: a shared mount, perhaps
        ("CeleryExecutor", "s3://aws_default@bucket/records/ws/t.json", False),
    ],
)
def test_a_worker_local_record_is_refused_under_an_executor_of_several_machines(
    executor: str, location: str, refused: bool
) -> None:
    """#34: no silent /tmp: with the Variable unset, each Celery worker would keep its own record
    and lock, and nothing would keep two applies apart."""
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.migrations._lock import check_shared

    if refused:
        with pytest.raises(BlinkConfigurationError, match=r"on this worker's own temporary disk.*s3://aws_default@"):
            check_shared(location, executor)
    else:
        check_shared(location, executor)


def test_the_plan_reads_the_executor_from_airflows_configuration(
    hook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.migrations import plan_schema

    schema = [{"field": "Title", "type": "text", "display_name": "Title"}]
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    with pytest.raises(BlinkConfigurationError, match="CeleryExecutor"):
        plan_schema(hook, "ws-1", "Incidents", schema, record_path="/tmp/blink_schema_records/")
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    assert plan_schema(hook, "ws-1", "Incidents", schema, record_path=f"{tmp_path}/").counts["add"] == 1


# -- an apply of a locked table (the lock held by another apply) -------------------------------------------


def locked(record: Path | str, owner: str, table: str = "Incidents", **clock: Any) -> Any:
    """The table's lock, held by another apply named ``owner``."""
    return TableLock(
        record_location(str(record), "ws-1", table),
        records=str(record),
        ws_id="ws-1",
        table=table,
        holder=Holder.current(label=owner),
        **clock,
    )


def test_a_second_apply_of_a_locked_table_fails_naming_the_holder_with_nothing_sent(hook: Any, record: Path) -> None:
    taken = dt.datetime.now(dt.UTC).replace(microsecond=0)  # the hook tells the lease's time by the real clock
    with locked(record, "dag/run-1/apply (try 1)", now=lambda: taken, sleep=lambda s: None):
        with (
            rm.Mocker() as m,
            pytest.raises(BlinkLockedError, match=r"being applied by dag/run-1/apply \(try 1\)") as e,
        ):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=str(record))
        assert m.call_count == 0
    assert f"since {taken.isoformat()}" in str(e.value)
    result, sent = apply(hook, DECLARED, record)  # released: the next apply goes through
    assert result.ok and len(sent) == 3 and not Path(f"{record}.lock").exists()


def test_an_apply_waits_for_the_lock_when_told_to(make_hook: Any, record: Path, sleeps: Any) -> None:
    lock = locked(record, "other", now=lambda: NOW, sleep=lambda s: None)
    lock.__enter__()

    def release_after_two_waits(seconds: float) -> None:
        sleeps(seconds)
        if len(sleeps) == 2:
            lock.__exit__(None, None, None)

    clock = sleeps.as_clock(sleep=release_after_two_waits, now=lambda: NOW + dt.timedelta(seconds=sleeps.clock - 1000))
    hook = make_hook(clock=clock)
    result, sent = apply(hook, DECLARED, record, lock_wait=30)
    assert result.ok and len(sent) == 3 and len(sleeps) == 2  # it waited twice, then applied
    assert 0.05 <= sleeps[0] <= 0.15 and sleeps[1] <= 0.225  # from 0.1 s, growing by half (with jitter)


def test_on_s3_a_locked_table_refuses_a_second_apply(hook: Any, s3_record: str, bucket: tuple[Any, str]) -> None:
    client, name = bucket
    with locked(s3_record, "the other run"):
        assert keys(client, name) == ["records/ws-1/Incidents.json.lock"]
        with rm.Mocker(real_http=True) as m, pytest.raises(BlinkLockedError, match="being applied by the other run"):
            apply_schema(hook, "ws-1", "Incidents", DECLARED, record_path=s3_record)
        assert not [call for call in m.request_history if "blink.test" in call.url]
    assert keys(client, name) == []  # released


def test_a_locked_apply_pushes_the_whole_refusal_with_its_unlock_command(blink_conn: None, record: Path) -> None:
    """A fleet's summary shows each apply's error: the lock's refusal keeps its unlock command,
    however long the names in it are."""
    table = "Quarterly vendor risk assessments " * 6  # about 200 characters, encoded in the command
    with locked(record, "dag/run-1/apply (try 1)", table, sleep=lambda s: None), rm.Mocker() as m:
        ti = FakeTI()
        with pytest.raises(BlinkLockedError) as refused:
            UpdateTableFieldsOperator(
                task_id="apply", ws_id="ws-1", table=table, fields=DECLARED, record_path=str(record)
            ).execute({"ti": ti})
        assert m.call_count == 0
    pushed = ti.pushed["return_value"]
    assert pushed["outcome"] == "failed" and pushed["updated"] == []
    assert pushed["error"] == f"BlinkLockedError: {refused.value}" and "blink-schema unlock " in pushed["error"]
