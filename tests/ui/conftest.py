"""What ``make ui-test`` starts: Airflow 3's api-server, a Blink sandbox and headless Chromium.

Each runs on this machine only (127.0.0.1) and is stopped at the end, also when a test fails:
one api-server (a fresh AIRFLOW_HOME) for the session; a sandbox and a browser (a fresh profile:
no cookie of another module's Airflow on 127.0.0.1) for each module. The browser is Debian's
``chromium`` with ``chromium-driver`` (``make ui-test`` installs them with apt when missing): a
browser a Python package downloads cannot work offline.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_sandbox import BlinkSandbox

# The test is of Airflow 3's UI (React, REST API v2); Airflow 2.11's environment has no selenium.
collect_ignore = (
    [] if version("apache-airflow").startswith("3.") else ["test_connection_form.py", "test_plan_review.py"]
)

SHOTS = Path(__file__).resolve().parents[2] / "build" / "ui-test"
"""Where the screenshots go (``build/`` is ignored by git)."""

START_TIMEOUT = 120.0
API_TIMEOUT = 60
"""Seconds for an answer of Airflow's REST API: CI runs the browser tests beside the test suites."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AirflowUI:
    """A running api-server: its URL, a REST helper, and the environment that shares its metadata DB."""

    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path, env: dict[str, str]) -> None:
        self.url = url
        self.process = process
        self.log = log
        self.env = env

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A call to the REST API (the simple auth manager makes every caller an admin)."""
        return requests.request(method, f"{self.url}/api/v2{path}", timeout=API_TIMEOUT, **kwargs)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _wait_until_up(ui: AirflowUI) -> None:
    """Poll the health endpoint; waiting on the process lets an early exit fail at once."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{ui.url}/api/v2/monitor/health", timeout=2).ok:
                return
        except (requests.ConnectionError, requests.Timeout):  # not up yet, or busy
            pass
        try:
            code = ui.process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue
        raise RuntimeError(f"the api-server exited with {code}:\n{ui.log_tail()}")
    raise RuntimeError(f"the api-server did not answer within {START_TIMEOUT:.0f} s:\n{ui.log_tail()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope="session")
def airflow_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowUI]:
    """Airflow 3's api-server on a free loopback port, with a fresh AIRFLOW_HOME."""
    home = tmp_path_factory.mktemp("airflow-home")
    port = free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
    }
    env.pop("AIRFLOW_CONN_BLINK_DEFAULT", None)
    airflow = [sys.executable, "-m", "airflow"]
    migrated = subprocess.run([*airflow, "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    log = home / "api-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*airflow, "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ui = AirflowUI(f"http://127.0.0.1:{port}", process, log, env)
    try:
        _wait_until_up(ui)
        yield ui
    finally:
        _stop(process)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[BlinkSandbox]:
    """The Blink the connection points at, reachable from the api-server's process."""
    with BlinkSandbox() as running:
        yield running


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Debian Chromium through selenium, with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, (
        "make ui-test needs Debian's chromium and chromium-driver: apt-get install chromium chromium-driver"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    # Without the networking flags Chromium keeps calling Google's hosts, which this machine refuses.
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1300",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
