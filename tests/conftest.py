"""Shared test set-up: an isolated AIRFLOW_HOME, connections from AIRFLOW_CONN_* variables, no DB."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Before anything imports Airflow: its home, config and logs go to a throw-away folder; each of
# pytest-xdist's workers gets its own (a worker inherits the controller's environment, and two
# workers must not share one SQLite metadata DB).
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix=f"blink-airflow-home-{os.environ['PYTEST_XDIST_WORKER']}-")
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-airflow-home-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
EXAMPLE_DAGS = Path(__file__).resolve().parents[1] / "example_dags"
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(EXAMPLE_DAGS))

pytest_plugins = ["pytester"]

# The lineage tests need the [openlineage] extra (make test installs every extra; make test-lowest
# installs the wheel without it, where test_assets checks that nothing of OpenLineage is imported).
HAS_OPENLINEAGE = importlib.util.find_spec("airflow.providers.openlineage") is not None
collect_ignore = [] if HAS_OPENLINEAGE else ["integration/test_lineage.py", "integration/test_lineage_e2e.py"]

COMPAT = frozenset(
    {
        "test_tables.py",
        "test_connection_types.py",
        "test_conventions.py",
        "test_batch.py",
        "test_blink.py",
        "test_transport.py",
        "test_secrets.py",
        "test_s3_output.py",
        "test_assets.py",
        "test_lineage.py",
        "test_lineage_e2e.py",
        "test_triggers.py",
        "test_e2e_dags.py",
        "test_example_dags.py",
        "test_compat.py",
        "test_readme.py",
        "test_review.py",
        "test_hitl.py",
        "test_task_groups.py",
        "test_lock.py",
        "test_apply.py",
        "test_main.py",
        "test_backup.py",
        "test_rollback.py",
    }
)
"""The test modules that depend on Airflow's version (the operators, the hook and its transport, the
assets and lineage, the triggers, the DAGs end to end, the compat layer, the review and where the
records go): marked ``compat``. ``make test`` runs every test on the locked Airflow 3; the other
lines (Airflow 2.11, 3.1, Python 3.13, the lowest pins) run ``-m compat``. The rest (the plan, the
walk, RQL, names, the sandbox) does not depend on Airflow's version."""


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """A migrated metadata DB (SQLite) in the session's AIRFLOW_HOME (a worker's own), made once
    for every module that runs DAGs: ``pytestmark = pytest.mark.usefixtures("airflow_db")``."""
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="session")
def one_execution_api() -> Iterator[None]:
    """dag.test() on Airflow 3.1 builds Airflow's in-process execution API anew for each task, and
    building its versioned routes takes seconds (most of an end-to-end test's time); Airflow 3.2
    keeps one a process (``functools.lru_cache`` on the same function). Keep one on 3.1 too, as
    later Airflow does: ``pytestmark = pytest.mark.usefixtures("one_execution_api")``."""
    try:
        from airflow.sdk.execution_time import supervisor
    except ImportError:  # Airflow 2: dag.test() runs the tasks without it
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        if not hasattr(supervisor.in_process_api_server, "cache_info"):
            patch.setattr(
                supervisor, "in_process_api_server", functools.lru_cache(maxsize=1)(supervisor.in_process_api_server)
            )
        yield


SPREAD = frozenset({"test_e2e_dags.py"})
"""The test modules whose tests stand alone, so that pytest-xdist may spread them over its workers
(the end-to-end DAGs: most of the suite's time). Every other module is a group of its own, run by
one worker in its order (``--dist loadgroup``)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in COMPAT:
            item.add_marker(pytest.mark.compat)
        if item.path.name not in SPREAD:
            item.add_marker(pytest.mark.xdist_group(str(item.path)))


API_KEY = "blink-test-key-0123456789abcdef"
BASE = "https://blink.test/api/v1"


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str = "blink_default", **members: Any) -> None:
    """Define an Airflow connection as an AIRFLOW_CONN_<ID> JSON variable."""
    conn = {"conn_type": "blink", "host": "https://blink.test", "password": API_KEY}
    conn.update(members)
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


@pytest.fixture
def blink_conn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default ``blink_default`` connection pointing at https://blink.test."""
    set_connection(monkeypatch)


class Sleeps(list[float]):
    """Records the waits a hook asked for instead of sleeping, and moves a fake clock on by them."""

    clock = 1000.0

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        self.clock += seconds

    def as_clock(self, **overrides: Any) -> Any:
        """A request-path clock whose sleeps are recorded and whose monotonic time is the fake one."""
        from blinkops_provider.hooks.blink import Clock

        return Clock(**{"sleep": self, "monotonic": lambda: self.clock, **overrides})


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_hook(blink_conn: None, sleeps: Sleeps) -> Callable[..., Any]:
    """Build a BlinkHook whose waits are recorded, not slept."""
    from blinkops_provider.hooks.blink import BlinkHook

    def make(**kwargs: Any) -> BlinkHook:
        kwargs.setdefault("clock", sleeps.as_clock())
        return BlinkHook(**kwargs)

    return make


@pytest.fixture
def blink_without_table_reads() -> Iterator[Any]:
    """Outside a test's own mock, Blink does not serve the table reads (the plan falls back to the
    record): ``pytestmark = pytest.mark.usefixtures("blink_without_table_reads")``."""
    import requests_mock

    from tests.fake_blink import without_table_reads

    with requests_mock.Mocker() as m:
        yield without_table_reads(m)


@pytest.fixture
def hook(make_hook: Callable[..., Any]) -> Any:
    return make_hook(retry_delay=0.5)


@pytest.fixture
def all_output(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[[], str]]:
    """Everything logged or printed so far (Airflow 3 logs through structlog, 2.x through logging)."""
    caplog.set_level("DEBUG")

    def text() -> str:
        captured = capsys.readouterr()
        return caplog.text + captured.out + captured.err

    return text


@pytest.fixture
def provider_log(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> Callable[[], list[str]]:
    """The provider's own log lines so far, once each (stdlib records on 2.x, structlog output on 3.x)."""
    caplog.set_level("DEBUG")

    def lines() -> list[str]:
        records = [r.getMessage() for r in caplog.records if "blinkops_provider" in r.name]
        if records:
            return records
        return [line for line in capsys.readouterr().out.splitlines() if "blinkops_provider" in line]

    return lines


# -- object storage: a local S3 API (moto in server mode on 127.0.0.1) --------------------------


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free loopback port, serving one request at a time: S3 carries out a
    conditional write (``If-None-Match``, ``If-Match``) atomically, while moto checks the condition
    and then writes, so two concurrent requests could both pass the check (seen with eight
    processes polling the table lock without pause)."""
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app, one_at_a_time = DomainDispatcherApplication(create_backend_app), threading.Lock()

    def atomic(environ: Any, start_response: Any) -> list[bytes]:
        with one_at_a_time:
            return list(app(environ, start_response))

    server = make_server("127.0.0.1", 0, atomic, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A fresh bucket, and ``aws_default`` pointing at the local S3 API."""
    import boto3

    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(
        "AIRFLOW_CONN_AWS_DEFAULT",
        json.dumps(
            {
                "conn_type": "aws",
                "login": "testing",
                "password": "testing",
                "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
            }
        ),
    )
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    name = f"snapshots-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return client, name


def keys(client: Any, bucket: str) -> list[str]:
    return sorted(obj["Key"] for obj in client.list_objects_v2(Bucket=bucket).get("Contents", []))


class FakeTI:
    """A task instance as the operators use it: ``pushed`` holds what they push, and
    ``xcom_pull`` answers from ``xcoms`` (``{task id: value}``; the key ``"*"``: for any task),
    each pull kept in ``pulled`` as ``(task ids, map indexes)``."""

    def __init__(self, xcoms: dict[str, Any] | None = None) -> None:
        self.xcoms = dict(xcoms or {})
        self.pushed: dict[str, Any] = {}
        self.pulled: list[tuple[Any, Any]] = []

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: Any = None, map_indexes: Any = -1, **_: Any) -> Any:
        self.pulled.append((task_ids, map_indexes))
        return self.xcoms.get(task_ids, self.xcoms.get("*"))
