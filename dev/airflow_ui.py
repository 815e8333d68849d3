"""The example DAGs in Airflow's own UI: the driver of ``make airflow-ui`` (Airflow 3).

It starts a Blink sandbox (or uses the tenant in ``BLINK_BASE_URL`` and ``BLINK_API_KEY``), then
``airflow standalone`` (api-server, scheduler, DAG processor and triggerer) on free loopback ports,
with a project-local ``AIRFLOW_HOME`` (``.airflow-ui/``), the example DAGs, a ``blink_default``
connection to the sandbox (in the metadata database, with the UI's Test button on), and the
records and snapshots under that home, the pool ``blink_applies`` the fleet example applies in, and
the fleet example's tables in the sandbox. Airflow and the sandbox keep their ports (and the
sandbox its key and state) under that home across starts. It prints the URL, the login, every
example DAG and the command that changes the sandbox's catalogue, and stops everything on Ctrl-C
(or SIGTERM). ``BLINK_CATALOGUE_POLL_SECONDS`` sets how often the event-driven sync's trigger
polls (default here 10, for a demo; the DAG's own default is 300).

In ``dev/``, apart from the DAGs: Airflow does not parse it.
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

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DAGS = ROOT / "example_dags"
"""The DAGs this launcher runs (dev/ holds the launchers, apart from the product)."""
START_TIMEOUT = 300.0
DAG_REFRESH_SECONDS = 10
"""How often Airflow's DAG processor looks for new DAG files here (its default, 300 s, hid a new
file for minutes)."""


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
    """Stop ``airflow standalone`` and everything it started (its own process group): SIGTERM,
    then SIGKILL after 60 s. It returns once every process of the group has exited (the
    scheduler, API server, triggerer and DAG processor outlive standalone itself by seconds), so
    "Stopped" is said only then. Every wait is bounded."""
    for sig, grace in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        if group_exited(process, grace):
            return
        say(f"- airflow standalone's processes did not all stop within {grace} s of signal {sig.name}")


def group_exited(process: subprocess.Popen[bytes], grace: float) -> bool:
    """Whether every process of ``process``'s group has exited within ``grace`` seconds (one
    that has exited and waits for its parent to collect it counts as exited)."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # collects standalone itself
        if not alive_in_group(process.pid):
            return True
        time.sleep(0.2)
    return False


def alive_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` still running (not zombies), from ``/proc``; where there is
    no ``/proc``, the group itself while it has any member."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    alive = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # exited meanwhile
            if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
                alive.append(int(entry.name))
    return alive


def start_sandbox(home: Path) -> Any:
    """The sandbox of this home: the same port, key, admin token and state (``blink_sandbox.sqlite``)
    at every start, so the records, assets and catalogue of an earlier start carry over."""
    from blinkops_sandbox import BlinkSandbox

    state = home / "blink_sandbox.json"
    saved = json.loads(state.read_text()) if state.exists() else {}
    kept = {
        "db": str(home / "blink_sandbox.sqlite"),
        "api_key": saved.get("api_key"),
        "admin_token": saved.get("admin_token"),
    }
    try:
        sandbox = BlinkSandbox(port=int(saved.get("port", 0)), **kept).start()
    except OSError:  # its port is taken now
        sandbox = BlinkSandbox(**kept).start()
        say(f"- The sandbox's port {saved['port']} is taken: it runs on port {sandbox.port} now. A plan of a record")
        say("  written at the old port says what to do (point the connection back, or move the record aside)")
    state.write_text(json.dumps({"port": sandbox.port, "api_key": sandbox.api_key, "admin_token": sandbox.admin_token}))
    say(f"- Blink sandbox started at {sandbox.base_url} (state: {kept['db']})")
    return sandbox


POOL = ("blink_applies", "4", "Blink schema applies: the fleet's limit on concurrent applies")
"""The pool the fleet example's applies run in (a task in a pool that does not exist is never scheduled)."""


def prepare_metadata(env: dict[str, str]) -> None:
    """The metadata database, made or upgraded, with the fleet example's pool."""
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    subprocess.run([*airflow, "pools", "set", *POOL], env=env, check=True, capture_output=True)


def create_fleet_tables(sandbox: Any) -> list[str]:
    """The fleet example's tables in the sandbox as they were before the fleet's migration: each
    made from its declared schema less its last field (as ``blink-sandbox create-table`` makes
    one), so the fleet's first run adds a field to every table and asks a person to review it (the
    default policy, ``changes``). A table made at an earlier start is kept."""
    made = []
    for path in sorted((EXAMPLE_DAGS / "blink_schema_fleet").glob("*/*.json")):
        ws_id, table = path.parent.name, path.stem
        if table not in {entry["name"] for entry in sandbox.store.tables(ws_id)}:
            declared = json.loads(path.read_text())
            sandbox.create_table(ws_id, table, {**declared, "fields": declared["fields"][:-1]})
            made.append(f"{ws_id}/{table}")
    return made


def store_connection(env: dict[str, str], conn: dict[str, Any]) -> None:
    """``blink_default`` in the metadata database, so Admin -> Connections lists it."""
    airflow = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow, "connections", "delete", "blink_default"], env=env, check=False, capture_output=True)
    subprocess.run(
        [*airflow, "connections", "add", "blink_default", "--conn-json", json.dumps(conn)],
        env=env,
        check=True,
        capture_output=True,
    )


def airflow_port(home: Path) -> int:
    """Airflow's port for this home: the one of the last start while it is free, so open tabs
    keep working across restarts; a free one otherwise (saved for the next start)."""
    saved = home / "airflow_port"
    port = int(saved.read_text()) if saved.exists() and saved.read_text().strip().isdigit() else 0
    if port:
        with socket.socket() as sock:
            # As Airflow's server binds (uvicorn sets SO_REUSEADDR): the last run's connections left
            # in TIME_WAIT after a quick restart do not take the port; a process listening on it does.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
                sock.listen()
            except OSError:
                say(f"- Airflow's port {port} is taken: Airflow runs on another port this time")
                port = 0
    port = port or free_port()
    saved.write_text(str(port))
    return port


def main() -> int:
    home = Path(os.environ.get("AIRFLOW_HOME") or ROOT / ".airflow-ui").resolve()
    home.mkdir(parents=True, exist_ok=True)
    port = airflow_port(home)
    url = f"http://127.0.0.1:{port}"
    tenant_url, tenant_key = os.environ.get("BLINK_BASE_URL"), os.environ.get("BLINK_API_KEY")
    sandbox: Any = None
    if tenant_url and tenant_key:
        conn = {"conn_type": "blink", "host": tenant_url, "password": tenant_key}
        say(f"- Using the Blink at {tenant_url} (BLINK_BASE_URL), not the sandbox")
    else:
        sandbox = start_sandbox(home)
        # The port as well as the host: Airflow 3.3's connection list tests a connection without a
        # port with port 0, which its API refuses ("Bad Request"); with the port, its Test button works.
        conn = {**json.loads(sandbox.connection_json()), "port": sandbox.port}
        made = create_fleet_tables(sandbox)
        if made:
            tables = ", ".join(made)
            say(f"- The fleet example's tables made in the sandbox, each a field short of its declaration: {tables}")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),  # its `airflow`
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",  # the Test button of this local UI
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": str(DAG_REFRESH_SECONDS),  # a new DAG file shows within seconds
        "AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT": str(home / "blink_snapshots"),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(home / "blink_schema_records"),
    }
    env.setdefault("BLINK_CATALOGUE_POLL_SECONDS", "10")  # a change shows within seconds here
    prepare_metadata(env)
    if sandbox is None:  # a tenant's key stays in this process's environment, not in the metadata database
        env["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(conn)
    else:
        env.pop("AIRFLOW_CONN_BLINK_DEFAULT", None)
        store_connection(env, conn)
    log = home / "standalone.log"
    # Ctrl-C (SIGINT) and SIGTERM are recorded, never raised: an exception thrown into any line
    # (say, inside Popen's own bookkeeping) could leave the stop below waiting for ever.
    stopping: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stopping.append(signum))
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
            if stopping:
                return 0
            if process.poll() is not None or time.monotonic() > deadline:
                say(f"Airflow did not come up (exit {process.poll()}); the end of {log}:")
                say(log.read_text(errors="replace")[-3000:])
                return 1
            time.sleep(1)
        passwords = home / "simple_auth_manager_passwords.json.generated"
        login = "user admin, password in " + str(passwords)
        deadline = time.monotonic() + 60
        while not passwords.exists() and time.monotonic() < deadline and not stopping:
            time.sleep(0.5)
        if passwords.exists():
            login = f"user admin, password {json.loads(passwords.read_text()).get('admin')}"
        say(f"Airflow is up at {url}")
        say(f"  Login:    {login}")
        say("  DAGs:     blink_table_schema_migration (a table's plan, review, apply),")
        say(f"            blink_schema_fleet (every table of example_dags/blink_schema_fleet; pool {POOL[0]}:")
        say("              its first run adds a field to each table and waits for your review in Required Actions),")
        say("            blink_connection_types_nightly_sync (the catalogue's daily snapshot and diff),")
        say("            blink_connection_types_on_change (unpause it: it runs when the catalogue changes)")
        say(f"  DAG files: a file added to {EXAMPLE_DAGS} appears within about {DAG_REFRESH_SECONDS} s")
        say(f"  Records:  {env['AIRFLOW_VAR_BLINK_SCHEMA_RECORDS']}")
        say(f"  Snapshots: {env['AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT']}")
        if sandbox is None:
            say("  Connection: blink_default, from AIRFLOW_CONN_BLINK_DEFAULT: your tenant's API key is not written")
            say("            to this local metadata database, so Admin -> Connections does not list it")
        else:
            say("  Connection: blink_default, in Admin -> Connections (its Test button works)")
            blink_sandbox = Path(sys.executable).with_name("blink-sandbox")
            say(f"  Sandbox:  {sandbox.base_url} (the same port and state at every start: {home})")
            say(f"  API key:  {sandbox.api_key} (the sandbox's own; header BLINK-API-KEY)")
            say("  Change its catalogue (the event-driven sync then runs):")
            say(f"            {blink_sandbox} put-connection-type {sandbox.url} --admin-token {sandbox.admin_token} \\")
            say("              --id ct-demo --name demo-type")
            say("  Change a field as in Blink's UI, against its declaration (the next review shows it as drift):")
            say(f"            {blink_sandbox} update-field {sandbox.url} --admin-token {sandbox.admin_token} \\")
            say("              --ws-id ws-demo --table Incidents --field Severity --attribute default_value=High \\")
            say("              --by you@example.com")
            blink_schema = Path(sys.executable).with_name("blink-schema")
            say("  Bring a table under code (its declaration as Blink holds it: its first plan is all unchanged):")
            say(f"            BLINK_BASE_URL={sandbox.base_url} BLINK_API_KEY={sandbox.api_key} \\")
            say(f"              {blink_schema} pull ws-demo Incidents")
        poll = env["BLINK_CATALOGUE_POLL_SECONDS"]
        say(f"  Polls:    the catalogue every {poll} s (set BLINK_CATALOGUE_POLL_SECONDS to change it)")
        say("Press Ctrl-C to stop.")
        while process.poll() is None and not stopping:
            time.sleep(0.5)
        return 0 if stopping or process.returncode in (0, None) else 1
    finally:
        say(f"- Stopping Airflow (process group {process.pid}) ...")
        stop(process)
        if sandbox is not None:
            sandbox.stop()
        say("- Stopped")


if __name__ == "__main__":
    raise SystemExit(main())
