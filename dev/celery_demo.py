"""The fleet example on a distributed Airflow: the driver of ``make celery-demo`` (Airflow 3).

It starts everything itself, on loopback, and stops it at the end: PostgreSQL (the metadata
database) and Redis (the Celery broker) from Debian's packages, moto's S3 server (the records and
the locks, through the AWS connection ``aws_demo`` whose ``endpoint_url`` points at it), a Blink
sandbox with 20 ms of latency, Airflow's api-server, scheduler and DAG processor, and two Celery
workers, each with its own ``AIRFLOW_HOME`` and host name (``worker-1``, ``worker-2``). Then:

1. **The fleet**: ``blink_schema_fleet`` on 20 tables of 10 fields (review policy ``destructive``: adds
   need no person). Checks that tasks ran on both workers, that the 20 tables were applied, and
   that each table's record matches what Blink holds. Prints the fleet's time, the time per
   table and which worker ran which task.
2. **Two runs apply one table at once**: exactly one sends the table's fields; the other is
   refused, and its message says what to do.
3. **A worker killed with SIGKILL mid-apply** (it holds the table's lock): the apply's next try,
   on the other worker, takes over the lock of its own earlier try, applies, and the record and
   Blink agree again.

Exits 1 when a check fails. The state is kept in ``.airflow-celery/`` (made afresh at each run);
its ``*.log`` files are the logs of each process. In ``dev/``, apart from the DAGs.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DAGS = ROOT / "example_dags"
"""The DAGs this launcher runs (dev/ holds the launchers, apart from the product)."""
FLEET = "blink_schema_fleet"
WS = "ws-celery"
TABLES = [f"Fleet {n:02d}" for n in range(1, 21)]
BUCKET = "blink-demo"
RECORDS = f"s3://aws_demo@{BUCKET}/records"
"""The Variable ``blink_schema_records``: the DAG adds the ``/`` that makes it a folder of records."""
WORKERS = ("worker-1", "worker-2")


class DemoFailed(Exception):
    """A check of the demo failed."""


def say(text: str) -> None:
    print(text, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    what: str, check: Callable[[], Any], timeout: float, logs: list[Path], services: Services | None = None
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        dead = services.dead() if services else []
        if dead:
            logs = [services.log(name) for name in dead] if services else logs
            what = f"{what}: {', '.join(dead)} exited"
            break
        time.sleep(0.5)
    tails = "\n".join(f"--- {log} ---\n{log.read_text(errors='replace')[-2500:]}" for log in logs if log.exists())
    raise DemoFailed(f"{what}: not within {timeout:.0f} s\n{tails}")


def declared(table: int, version: int) -> dict[str, Any]:
    """Ten fields of a fleet table; ``version`` changes the display names (a change, not destructive)."""
    kinds = ["text", "long-text", "number", "checkbox", "date", "text", "number", "list", "text", "single-select"]
    fields = []
    for n, kind in enumerate(kinds):
        entry: dict[str, Any] = {"field": f"f{n}", "type": kind, "display_name": f"Field {n} v{version}"}
        if kind == "single-select":
            entry["attributes"] = {"options": ["Low", "High"]}
        fields.append(entry)
    return {"fields": fields}


def write_folder(root: Path, tables: dict[str, dict[str, Any]], ws_id: str = WS) -> Path:
    """A fleet's folder of declared schemas, ``<root>/<ws_id>/<table>.json``."""
    shutil.rmtree(root, ignore_errors=True)
    (root / ws_id).mkdir(parents=True)
    for name, schema in tables.items():
        (root / ws_id / f"{name}.json").write_text(json.dumps(schema, indent=1))
    return root


class Services:
    """The processes the demo starts, stopped in reverse order."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stoppers: list[Callable[[], None]] = []
        self.killed: set[str] = set()

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with (self.home / f"{name}.log").open("ab") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.home
            )
        self.processes.append((name, process))
        return process

    def log(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def dead(self) -> list[str]:
        """The processes that exited, but for those the demo killed."""
        return [name for name, process in self.processes if process.poll() is not None and name not in self.killed]

    def stop(self) -> None:
        for _name, process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for _name, process in reversed(self.processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for stopper in reversed(self.stoppers):
            stopper()


def as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, its commands run as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def start_postgres(services: Services) -> str:
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not binaries:
        raise DemoFailed("PostgreSQL is not installed: apt-get install postgresql (make celery-demo does)")
    bindir = binaries[-1].parent
    data = services.home / "postgres"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        os.chmod(services.home, 0o755)
    port = free_port()
    subprocess.run(
        as_postgres([str(bindir / "initdb"), "-D", str(data), "-U", "airflow", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={data} -c max_connections=200"
    subprocess.run(
        as_postgres(
            [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "server.log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
    )
    services.stoppers.append(
        lambda: subprocess.run(
            as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]), capture_output=True
        )
    )
    subprocess.run(
        [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "airflow", "airflow"],
        check=True,
        capture_output=True,
    )
    return f"airflow@127.0.0.1:{port}/airflow"


def start_redis(services: Services) -> str:
    server = shutil.which("redis-server")
    if server is None:
        raise DemoFailed("Redis is not installed: apt-get install redis-server (make celery-demo does)")
    port = free_port()
    services.start("redis", [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
    wait_for("Redis", lambda: _accepts(port), 30, [services.log("redis")])
    return f"redis://127.0.0.1:{port}/0"


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def start_s3(services: Services) -> str:
    import boto3

    port = free_port()
    services.start("moto", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)])
    wait_for("moto's S3 server", lambda: _accepts(port), 60, [services.log("moto")])
    url = f"http://127.0.0.1:{port}"
    s3 = boto3.client(
        "s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="demo", aws_secret_access_key="demo"
    )
    s3.create_bucket(Bucket=BUCKET)
    return url


class Airflow:
    """Airflow's processes, its CLI and its metadata database."""

    def __init__(self, services: Services, env: dict[str, str], database: str) -> None:
        self.services = services
        self.env = env
        self.database = database
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            raise DemoFailed(f"airflow {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg2

        with psycopg2.connect(f"postgresql://{self.database}") as db, db.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def start_worker(self, name: str) -> None:
        home = self.services.home / name
        home.mkdir(exist_ok=True)
        env = {
            **self.env,
            "AIRFLOW_HOME": str(home),
            "BLINK_DEMO_WORKER": name,
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        }
        command = [sys.executable, "-m", "airflow", "celery", "worker", "--concurrency", "4"]
        self.workers[name] = self.services.start(name, [*command, "--celery-hostname", f"{name}@%h"], env)

    def logs(self) -> list[Path]:
        return [self.services.log(name) for name in ("scheduler", "dag-processor", "api-server", "triggerer", *WORKERS)]

    def run(self, run_id: str, conf: dict[str, Any]) -> None:
        self.cli("dags", "trigger", FLEET, "--run-id", run_id, "--conf", json.dumps(conf))

    def finished(self, run_id: str, timeout: float = 600) -> str:
        def state() -> str | None:
            rows = self.query("SELECT state FROM dag_run WHERE dag_id = %s AND run_id = %s", FLEET, run_id)
            return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

        return str(wait_for(f"the run {run_id}", state, timeout, self.logs(), self.services))

    def tasks(self, run_id: str) -> list[tuple[str, int, str, str, int]]:
        """(task_id, map_index, state, hostname, try_number) of each task of a run."""
        rows = self.query(
            "SELECT task_id, map_index, state, hostname, try_number FROM task_instance "
            "WHERE dag_id = %s AND run_id = %s ORDER BY task_id, map_index",
            FLEET,
            run_id,
        )
        return [(str(t), int(m), str(s), str(h or ""), int(n or 0)) for t, m, s, h, n in rows]

    def state(self, run_id: str, task_id: str, map_index: int = -1) -> str | None:
        rows = self.query(
            "SELECT state FROM task_instance WHERE dag_id = %s AND run_id = %s AND task_id = %s AND map_index = %s",
            FLEET,
            run_id,
            task_id,
            map_index,
        )
        return rows[0][0] if rows else None

    def task_log(self, run_id: str, task_id: str, map_index: int, attempt: int) -> str:
        """A try's log, from whichever worker ran it."""
        name = f"dag_id={FLEET}/run_id={run_id}/task_id={task_id}/map_index={map_index}/attempt={attempt}.log"
        found = [home / "logs" / name for home in (self.services.home / w for w in WORKERS)]
        return "".join(path.read_text(errors="replace") for path in found if path.exists())

    def xcom(self, run_id: str, task_id: str, map_index: int = -1, key: str = "return_value") -> Any:
        rows = self.query(
            "SELECT value FROM xcom WHERE dag_id = %s AND run_id = %s AND task_id = %s AND map_index = %s AND key = %s",
            FLEET,
            run_id,
            task_id,
            map_index,
            key,
        )
        if not rows:
            return None
        value = rows[0][0]
        return json.loads(value) if isinstance(value, str) else value


def airflow_env(home: Path, database: str, broker: str, s3_url: str, sandbox: Any, api_port: int) -> dict[str, str]:
    from cryptography.fernet import Fernet

    (home / "blink_demo_host.py").write_text(
        "import os, socket\n\n\ndef hostname() -> str:\n"
        '    """The demo worker\'s name (BLINK_DEMO_WORKER), else this machine\'s."""\n'
        '    return os.environ.get("BLINK_DEMO_WORKER") or socket.gethostname()\n'
    )
    url = f"http://127.0.0.1:{api_port}"
    aws = {
        "conn_type": "aws",
        "login": "demo",
        "password": "demo-secret",  # moto takes any; 5 characters or more, so Airflow masks it
        "extra": {"endpoint_url": s3_url, "region_name": "us-east-1"},
    }
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_", "BLINK_"))
    }
    env.update(
        {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(home), os.environ.get("PYTHONPATH")])),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://{database}",
            "AIRFLOW__CELERY__BROKER_URL": broker,
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://{database}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__API__BASE_URL": url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "blink_demo_host.hostname",
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",  # the demo approves through the REST API
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "3",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "20",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "3",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW_CONN_BLINK_DEFAULT": sandbox.connection_json(),
            "AIRFLOW_CONN_AWS_DEMO": json.dumps(aws),
            "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": RECORDS,
        }
    )
    return env


def start_airflow(
    services: Services, env: dict[str, str], database: str, workers: tuple[str, ...] = WORKERS
) -> Airflow:
    """Airflow on ``database``, with ``workers`` (Celery workers; none for a local executor)."""
    import requests

    airflow = Airflow(services, env, database)
    airflow.cli("db", "migrate")
    airflow.cli("pools", "set", "blink_applies", "4", "Blink schema applies: the fleet's limit across workers")
    for name in ("api-server", "scheduler", "dag-processor", "triggerer"):
        services.start(name, [sys.executable, "-m", "airflow", name], env)
    for worker in workers:
        airflow.start_worker(worker)
    url = env["AIRFLOW__API__BASE_URL"]

    def healthy() -> bool:
        try:
            return requests.get(f"{url}/api/v2/monitor/health", timeout=2).ok
        except requests.RequestException:
            return False

    wait_for("Airflow's api-server", healthy, 300, airflow.logs(), airflow.services)
    wait_for(
        "the fleet DAG to be parsed",
        lambda: airflow.query("SELECT 1 FROM dag WHERE dag_id = %s", FLEET),
        300,
        airflow.logs(),
    )
    for worker in workers:
        wait_for(
            f"{worker} to be ready",
            lambda w=worker: "ready." in services.log(w).read_text(errors="replace"),
            300,
            airflow.logs(),
            airflow.services,
        )
    airflow.cli("dags", "unpause", FLEET)
    return airflow


def record_matches_blink(sandbox: Any, table: str) -> bool:
    from blinkops_provider.migrations import SchemaRecord, record_location

    recorded, _ = SchemaRecord(
        record_location(f"{RECORDS}/", WS, table), blink=sandbox.base_url, ws_id=WS, table=table
    ).read()
    held = {f["name"]: f for f in sandbox.store.fields(WS, table)}
    return bool(recorded) and all(
        name in held
        and {key: held[name].get(key) for key in ("type", "display_name")}
        == {key: body.get(key) for key in ("type", "display_name")}
        and (held[name].get("attributes") or {}) == (body.get("attributes") or {})
        for name, body in recorded.items()
    )


def fleet_of_20(airflow: Airflow, sandbox: Any) -> None:
    say("== 1. The fleet: 20 tables of 10 fields, on two workers ==")
    folder = write_folder(airflow.services.home / "fleet", {name: declared(i, 1) for i, name in enumerate(TABLES)})
    started = time.monotonic()
    airflow.run("fleet", {"folder": str(folder), "review_policy": "destructive"})
    state = airflow.finished("fleet")
    took = time.monotonic() - started
    tasks = airflow.tasks("fleet")
    say(f"- Run 'fleet': {state} in {took:.1f} s, {took / len(TABLES):.2f} s per table (trigger to end)")
    say("- Which worker ran which task:")
    for task_id, index, task_state, host, tries in tasks:
        name = f"{task_id}[{index}]" if index >= 0 else task_id
        say(f"    {name:<16} {task_state:<10} {host} (try {tries})")
    hosts = {host for _, _, task_state, host, _ in tasks if task_state == "success"}
    if state != "success":
        raise DemoFailed(f"the fleet's run ended {state}")
    if not set(WORKERS) <= hosts:
        raise DemoFailed(f"tasks ran on {sorted(hosts)}, not on both workers")
    summary = airflow.xcom("fleet", "fleet.summary")
    say(f"- Summary: {summary['text'].splitlines()[0]}")
    if sorted(summary["applied"]) != sorted(f"{WS}/{name}" for name in TABLES):
        raise DemoFailed(f"not every table was applied: {summary}")
    unmatched = [name for name in TABLES if not record_matches_blink(sandbox, name)]
    if unmatched:
        raise DemoFailed(f"records that do not match Blink: {unmatched}")
    say(f"- Tasks ran on {', '.join(sorted(hosts))}; 20 tables applied; each record on S3 matches what Blink holds")


def approve(airflow: Airflow, run_id: str) -> None:
    """Approve a run's review through the REST API, as a person's click in the UI does."""
    import requests

    url = f"{airflow.env['AIRFLOW__API__BASE_URL']}/api/v2/dags/{FLEET}/dagRuns/{run_id}"
    answer = requests.patch(
        f"{url}/taskInstances/fleet.review/-1/hitlDetails",
        json={"chosen_options": ["Approve"], "params_input": {}},
        timeout=30,
    )
    if not answer.ok:
        raise DemoFailed(f"approving {run_id}'s review failed: {answer.status_code} {answer.text}")


def two_runs_at_once(airflow: Airflow, sandbox: Any) -> None:
    """Both runs wait at their review (policy ``always``) and are approved at the same moment, so
    their applies start together; Blink answers slowly, so the first holds the lock for 20 s."""
    say("== 2. Two runs apply one table at once ==")
    table = TABLES[0]
    runs = ("contend-a", "contend-b")
    folder = write_folder(airflow.services.home / "contend", {table: declared(0, 2)})
    for run_id in runs:
        airflow.run(run_id, {"folder": str(folder), "review_policy": "always"})
    for run_id in runs:  # answered once the scheduler has seen the review wait, as a person would
        seen = f"task_id='fleet.review', run_id='{run_id}'"
        wait_for(
            f"{run_id}'s review to wait",
            lambda seen=seen, run_id=run_id: (
                airflow.state(run_id, "fleet.review") in ("deferred", "awaiting_input")
                and seen in airflow.services.log("scheduler").read_text(errors="replace")
            ),
            300,
            airflow.logs(),
            airflow.services,
        )
    sandbox.set_faults(latency_ms=10_000)  # each wave of PUTs takes 10 s: the holder keeps the lock 20 s
    sandbox.log.clear()
    for run_id in runs:
        approve(airflow, run_id)
    states = {run_id: airflow.finished(run_id) for run_id in runs}
    sandbox.set_faults(latency_ms=20)
    puts = [r for r in sandbox.requests if r.get("method") == "PUT" and f"/table/{table}/" in r.get("path", "")]
    results = {run_id: airflow.xcom(run_id, "fleet.apply", 0) or {} for run_id in runs}
    say(f"- Both approved at once. Runs: {states}; PUT requests for {WS}/{table}: {len(puts)} (10 declared fields)")
    winners = [run_id for run_id, result in results.items() if result.get("outcome") == "applied"]
    if len(winners) != 1 or len(puts) != 10:
        raise DemoFailed(f"expected one apply to send the 10 fields, got {results} and {len(puts)} PUTs")
    loser = next(run_id for run_id in runs if run_id not in winners)
    refused = airflow.task_log(loser, "fleet.apply", 0, 1)
    if "BlinkLockedError" not in refused:
        raise DemoFailed(
            f"{loser}'s first try was not refused by the lock (the applies did not meet):\n{refused[-3000:]}"
        )
    first = next(line for line in refused.splitlines() if "BlinkLockedError" in line)
    say(f"- One holder: {winners[0]} applied. {loser}'s first try was refused by the lock:")
    say(f"    {_refusal(first)}")
    message = str(results[loser].get("error") or "")
    say(f"- {loser}'s last try ({results[loser].get('outcome')}): {message}")
    if "blink-schema unlock" not in message and "plan again" not in message:
        raise DemoFailed(f"the loser's message does not say what to do: {message!r}")
    if not record_matches_blink(sandbox, table):
        raise DemoFailed("the record does not match Blink after the contention")


def _refusal(line: str) -> str:
    """The exception's text from a task log's JSON line."""
    with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
        detail = json.loads(line)["error_detail"][0]
        return f"{detail['exc_type']}: {detail['exc_value']}"
    return line[:600]


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def worker_killed_mid_apply(airflow: Airflow, sandbox: Any) -> None:
    from blinkops_provider.migrations import held_locks

    say("== 3. A worker killed with SIGKILL mid-apply ==")
    table = TABLES[1]
    folder = write_folder(airflow.services.home / "kill", {table: declared(1, 3)})
    sandbox.set_faults(latency_ms=4000)
    airflow.run("kill", {"folder": str(folder), "review_policy": "destructive"})
    lock = wait_for(
        "the apply to take the table's lock", lambda: held_locks(f"{RECORDS}/"), 300, airflow.logs(), airflow.services
    )[0]
    holder = lock.holder
    victim = next((name for name, worker in airflow.workers.items() if _descends(holder.pid, worker.pid)), None)
    if victim is None:
        raise DemoFailed(f"the lock's holder (pid {holder.pid}) is no worker's task")
    say(f"- {holder.describe()} holds the lock of {WS}/{table}: SIGKILL to {victim} and its tasks")
    airflow.services.killed.add(victim)
    os.killpg(airflow.workers[victim].pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(holder.pid, signal.SIGKILL)
    airflow.workers[victim].wait()
    sandbox.clear_faults()
    state = airflow.finished("kill")
    tries = [
        (host, tries, task_state)
        for task_id, _, task_state, host, tries in airflow.tasks("kill")
        if task_id == "fleet.apply"
    ]
    say(f"- Run 'kill': {state}; the apply: {tries}")
    if state != "success" or not tries or tries[0][1] < 2:
        raise DemoFailed(f"the apply did not recover by its next try: {state}, {tries}")
    if held_locks(f"{RECORDS}/"):
        raise DemoFailed(f"a lock is still held: {held_locks(RECORDS + '/')}")
    if not record_matches_blink(sandbox, table):
        raise DemoFailed("the record does not match Blink after the recovery")
    say(f"- The next try ran on {tries[0][0]}, took over its earlier try's lock and applied; the record matches Blink")
    airflow.start_worker(victim)  # back to two workers, as an operator would restart it


def main() -> int:
    os.environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"  # this driver's own reads of the records, quietly
    from blinkops_sandbox import BlinkSandbox

    home = (ROOT / ".airflow-celery").resolve()
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    services = Services(home)
    sandbox = BlinkSandbox().start()
    sandbox.set_faults(latency_ms=20)
    services.stoppers.append(sandbox.stop)
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))  # stop everything on the way out
    try:
        say("- Starting PostgreSQL, Redis, moto's S3 server and the Blink sandbox (20 ms latency) ...")
        database = start_postgres(services)
        broker = start_redis(services)
        s3_url = start_s3(services)
        for name in TABLES:
            sandbox.create_table(WS, name, declared(TABLES.index(name), 0))
        env = airflow_env(home, database, broker, s3_url, sandbox, free_port())
        os.environ["AIRFLOW_CONN_AWS_DEMO"] = env["AIRFLOW_CONN_AWS_DEMO"]  # this driver reads the records too
        say("- Starting Airflow: api-server, scheduler, DAG processor, two Celery workers ...")
        airflow = start_airflow(services, env, database)
        say(f"- Up in {time.monotonic() - started:.0f} s (logs: {home}/*.log)")
        fleet_of_20(airflow, sandbox)
        two_runs_at_once(airflow, sandbox)
        worker_killed_mid_apply(airflow, sandbox)
    except DemoFailed as failed:
        say(f"FAILED: {failed}")
        return 1
    finally:
        say("- Stopping everything ...")
        services.stop()
    say(f"celery-demo: every check passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
