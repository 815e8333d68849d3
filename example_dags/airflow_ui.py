"""The example DAGs in Airflow's own UI: the driver of ``make airflow-ui`` (Airflow 3).

It starts a Blink sandbox (or uses the tenant in ``BLINK_BASE_URL`` and ``BLINK_API_KEY``), then
``airflow standalone`` (api-server, scheduler, DAG processor and triggerer) on free loopback ports,
with a project-local ``AIRFLOW_HOME`` (``.airflow-ui/``), the example DAGs, a ``blink_default``
connection to the sandbox, and the records and snapshots under that home. It prints the URL and
the login, and stops everything on Ctrl-C (or SIGTERM). ``BLINK_CATALOGUE_POLL_SECONDS`` sets how
often the event-driven sync's trigger polls (default 300).

Listed in ``.airflowignore``: Airflow does not parse it as a DAG file.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
START_TIMEOUT = 300.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def say(text: str) -> None:
    print(text, flush=True)


def up(url: str) -> bool:
    import requests

    try:
        return requests.get(f"{url}/api/v2/monitor/health", timeout=2).ok
    except requests.RequestException:
        return False


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop ``airflow standalone`` and everything it started (its own process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> int:
    home = Path(os.environ.get("AIRFLOW_HOME") or HERE.parent / ".airflow-ui").resolve()
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    tenant_url, tenant_key = os.environ.get("BLINK_BASE_URL"), os.environ.get("BLINK_API_KEY")
    sandbox: Any = None
    if tenant_url and tenant_key:
        conn = {"conn_type": "blink", "host": tenant_url, "password": tenant_key}
        say(f"- Using the Blink at {tenant_url} (BLINK_BASE_URL), not the sandbox")
    else:
        from blinkops_provider.sandbox import BlinkSandbox

        sandbox = BlinkSandbox().start()
        conn = json.loads(sandbox.connection_json())
        say(f"- Blink sandbox started at {sandbox.base_url}")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),  # its `airflow`
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(HERE),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW_CONN_BLINK_DEFAULT": json.dumps(conn),
        "AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT": str(home / "blink_snapshots"),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(home / "blink_schema_records"),
    }
    log = home / "standalone.log"
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow", "standalone"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    say(f"- Starting Airflow (airflow standalone; log: {log}) ...")
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not up(url):
            if process.poll() is not None or time.monotonic() > deadline or stopping:
                say(f"Airflow did not come up (exit {process.poll()}); the end of {log}:")
                say(log.read_text(errors="replace")[-3000:])
                return 1
            time.sleep(1)
        passwords = home / "simple_auth_manager_passwords.json.generated"
        login = "user admin, password in " + str(passwords)
        deadline = time.monotonic() + 60
        while not passwords.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        if passwords.exists():
            login = f"user admin, password {json.loads(passwords.read_text()).get('admin')}"
        say(f"Airflow is up at {url}")
        say(f"  Login:    {login}")
        say("  DAGs:     blink_table_schema_migration, blink_connection_types_nightly_sync,")
        say("            blink_connection_types_on_change (unpause it: it runs when the catalogue changes)")
        say(f"  Records:  {env['AIRFLOW_VAR_BLINK_SCHEMA_RECORDS']}")
        say(f"  Snapshots: {env['AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT']}")
        say("Press Ctrl-C to stop.")
        while process.poll() is None and not stopping:
            time.sleep(0.5)
        return 0 if stopping or process.returncode in (0, None) else 1
    except KeyboardInterrupt:
        return 0
    finally:
        say("- Stopping Airflow ...")
        stop(process)
        if sandbox is not None:
            sandbox.stop()
        say("- Stopped")


if __name__ == "__main__":
    raise SystemExit(main())
