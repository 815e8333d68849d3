"""``blink-schema locks`` and ``unlock`` (blinkops_provider.cli.locks, #33): a lock left by a killed apply is listed,
released by its id with the command the refusal prints, and the next apply succeeds; each mistake one line, exit 1
(one exit status rule, #73)."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.exceptions import BlinkLockedError
from blinkops_provider.migrations import apply_schema
from tests.fake_blink import without_table_reads

LOCKS = pytest.mark.usefixtures("blink_without_table_reads")
"""The locks' tests: Blink does not serve the table reads (the plan falls back to the record)."""


SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]

KILLED_APPLY = """
import os, signal, sys
from blinkops_provider.migrations._lock import Holder, TableLock, record_location

holder = Holder(host="worker-2", pid=os.getpid(), dag_id="migrate", run_id="manual__1", task_id="apply",
                map_index=-1, try_number=1)
TableLock(record_location(sys.argv[1], "ws-1", "Incidents"), records=sys.argv[1], ws_id="ws-1", table="Incidents", holder=holder).acquire()
os.kill(os.getpid(), signal.SIGKILL)  # a worker killed mid-apply, on another host
"""


def blink_schema(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, as a user runs it."""
    command = Path(sys.executable).with_name("blink-schema")
    return subprocess.run([str(command), *args], capture_output=True, text=True, timeout=60, check=False)


@LOCKS
def test_a_killed_applys_lock_is_listed_released_by_its_id_and_the_next_apply_succeeds(
    hook: Any, tmp_path: Path
) -> None:
    records = f"{tmp_path}/records/"
    killed = subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL

    with rm.Mocker() as m, pytest.raises(BlinkLockedError) as refused:
        apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records)
    assert m.call_count == 0
    command = re.search(r"release its lock: (blink-schema unlock .*)$", str(refused.value))
    assert command is not None
    lock_id = shlex.split(command.group(1))[-1]

    listed = blink_schema("locks", records)
    assert listed.returncode == 0
    assert f"{lock_id}  ws-1/Incidents  held by migrate/manual__1/apply (try 1) on worker-2" in listed.stdout

    released = blink_schema(*shlex.split(command.group(1))[1:])
    assert released.returncode == 0, released.stderr
    assert f"Released the lock {lock_id} on ws-1/Incidents" in released.stdout
    assert "No lock is held" in blink_schema("locks", records).stdout

    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json={"id": "f", "name": "Title", "type": "text", "display_name": "Title"})
        assert apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records).ok


@LOCKS
def test_unlock_with_another_id_releases_nothing_and_says_why(tmp_path: Path, capsys: Any) -> None:
    records = f"{tmp_path}/records/"
    subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=60, check=False)
    assert main(["unlock", records, "ws-1/Incidents", "0000000000000000"]) == 1
    assert "not 0000000000000000: nothing released" in capsys.readouterr().err
    assert main(["unlock", records, "Incidents", "0000000000000000"]) == 1
    assert "give the table as WS_ID/TABLE" in capsys.readouterr().err
    assert main(["locks", records]) == 0
    assert "ws-1/Incidents  held by" in capsys.readouterr().out


@LOCKS
def test_locks_and_unlock_on_s3(bucket: tuple[Any, str], capsys: Any) -> None:
    records = f"s3://aws_default@{bucket[1]}/records/"
    subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=120, check=False)
    assert main(["locks", records]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if "ws-1/Incidents  held by" in line]
    assert len(listed) == 1 and "held by migrate/manual__1/apply (try 1) on worker-2" in listed[0]
    lock_id = listed[0].split()[0]
    assert main(["unlock", records, "ws-1/Incidents", lock_id]) == 0
    assert main(["locks", records]) == 0
    assert "No lock is held" in capsys.readouterr().out


@LOCKS
@pytest.mark.parametrize("records", ["s4://bucket/records/", "nosuchscheme://x/"])
def test_a_mistyped_scheme_is_one_line_and_exit_1(records: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locks", records]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"blink-schema: {records} cannot be used (") and len(err.splitlines()) == 1


@LOCKS
def test_an_unreachable_object_store_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:

    extra = {"endpoint_url": "http://127.0.0.1:9", "region_name": "us-east-1"}
    extra["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 2}  # type: ignore[assignment]
    connection = {"conn_type": "aws", "login": "key-id", "password": "not-a-secret", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEAD", json.dumps(connection))
    assert main(["locks", "s3://aws_dead@bucket/records/"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("blink-schema: s3://aws_dead@bucket/records/ cannot be used (") and "Traceback" not in err
