"""``make airflow-ui`` for real: Airflow 3 standalone with the example DAGs comes up, lists them,
runs the event-driven sync when the catalogue changes (a real triggerer polling a real sandbox),
and stops cleanly on Ctrl-C (``make ui-test``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_sandbox import BlinkSandbox
from tests.conftest import EXAMPLE_DAGS
from tests.ui.conftest import API_TIMEOUT

pytestmark = pytest.mark.ui

POLL = 3  # seconds between the trigger's polls
RUN_END = 480  # seconds a run may take to end: seconds alone, minutes beside CI's other lane (a sync once took 240+)
ON_CHANGE = "blink_connection_types_on_change"


def wait_for(
    what: str, check: Any, timeout: float, driver: subprocess.Popen[str], log: Path, evidence: Any = None
) -> Any:
    """``check()`` until it is truthy; else fails with the evidence: standalone's log, the newest task
    logs and ``evidence()`` (a run's task states)."""
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except requests.Timeout:  # a busy api-server: ask again, until the deadline
            found = None
        if found:
            print(f"{what}: {time.monotonic() - started:.0f} s")  # pytest shows it on a failure
            return found
        try:
            driver.wait(timeout=1)  # between checks: returns at once when the driver exits
        except subprocess.TimeoutExpired:
            continue
        break
    text = log.read_text(errors="replace") if log.exists() else "(no log)"
    scheduler = "\n".join([line[:600] for line in text.splitlines() if line.startswith("scheduler")][-15:])
    raise AssertionError(
        f"{what}: not within {timeout:.0f} s (driver exit {driver.poll()}):\n{text[-4000:]}"
        f"\n---- the scheduler's last lines ----\n{scheduler}{task_logs(log.parent)}"
        + (f"\n---- {evidence_of(evidence)} ----" if evidence else "")
    )


def evidence_of(evidence: Any) -> str:
    try:
        return str(evidence())
    except Exception as error:  # the evidence of a failure must not hide it
        return f"(no evidence: {error!r})"


def task_states(url: str, api: requests.Session, dag: str, run_id: str) -> str:
    """A run's task instances as ``task: state (try n)``."""
    answer = api.get(f"{url}/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances", timeout=API_TIMEOUT)
    found = answer.json().get("task_instances", []) if answer.ok else []
    states = ", ".join(f"{ti['task_id']}: {ti['state']} (try {ti['try_number']})" for ti in found)
    return f"{dag}/{run_id}: {states or answer.text[:300]}"


def task_logs(home: Path, newest: int = 3) -> str:
    """The ends of the newest task logs under ``home`` (a timed-out wait's evidence: a task's
    retry, a failure or a slow start show there, not in standalone's log)."""
    found = sorted((home / "logs").glob("dag_id=*/**/*.log"), key=lambda p: p.stat().st_mtime)[-newest:]
    return "".join(f"\n---- {p.relative_to(home)} ----\n{p.read_text(errors='replace')[-2500:]}" for p in found)


def test_make_airflow_ui_serves_the_examples_and_the_trigger_runs_the_sync_on_a_change(tmp_path: Path) -> None:
    home = tmp_path / "airflow-ui"
    with BlinkSandbox() as sandbox:
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "BLINK_BASE_URL": sandbox.url,
            "BLINK_API_KEY": sandbox.api_key,
            "BLINK_CATALOGUE_POLL_SECONDS": str(POLL),
            "PYTHONFAULTHANDLER": "1",  # see stop_driver
        }
        for name in [name for name in env if name.startswith("AIRFLOW__") or name.startswith("AIRFLOW_CONN_")]:
            env.pop(name)
        out = tmp_path / "driver.out"
        with out.open("w") as printed:
            command = [sys.executable, str(EXAMPLE_DAGS.parent / "dev" / "airflow_ui.py")]
            driver = subprocess.Popen(command, env=env, stdout=printed, stderr=subprocess.STDOUT, text=True)
        log = home / "standalone.log"
        try:
            line = wait_for(
                "the driver's URL",
                lambda: next((ln for ln in out.read_text().splitlines() if ln.startswith("Airflow is up at ")), None),
                300,
                driver,
                log,
            )
            url = line.removeprefix("Airflow is up at ").strip()
            login = next(ln for ln in out.read_text().splitlines() if "Login:" in ln)
            password = login.rsplit("password ", 1)[1].strip()
            token = requests.post(
                f"{url}/auth/token", json={"username": "admin", "password": password}, timeout=API_TIMEOUT
            )
            assert token.status_code in (200, 201), token.text
            api = requests.Session()
            api.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

            def dags() -> set[str]:
                answer = api.get(f"{url}/api/v2/dags", timeout=API_TIMEOUT)
                return {dag["dag_id"] for dag in answer.json().get("dags", [])} if answer.ok else set()

            listed = wait_for("the example DAGs", lambda: ON_CHANGE in dags() and dags(), 180, driver, log)
            assert set(EXAMPLES) <= listed
            printed_dags = out.read_text().split("  DAGs:", 1)[1].split("  Records:", 1)[0]
            assert all(dag_id in printed_dags for dag_id in EXAMPLES), printed_dags  # the banner names every one

            baseline = unpause_and_take_the_baseline(url, api, driver, log)
            added = {"id": "ct-ui", "name": "ui-added", "display_name": "UI", "plugin_name": "ui"}
            sandbox.store.upsert_connection_types([{**added, "oauth_supported": False}])
            changed = time.monotonic()
            run = wait_for(
                "a run of the event-driven sync", lambda: asset_triggered(sync_runs(url, api)), 120, driver, log
            )
            seen = time.monotonic() - changed
            finished = sync_end("the run's end", url, api, run["dag_run_id"], driver, log)
            assert finished["state"] == "success", log.read_text(errors="replace")[-3000:]
            diff = latest_diff(home)
            assert (diff["baseline"], diff["counts"]["added"], diff["added"]) == (
                False,
                1,
                [{"id": "ct-ui", "name": "ui-added"}],
            )
            assert baseline["state"] == "success"
            print(f"the change was seen and a run queued {seen:.1f} s after it (polls every {POLL} s)")
        finally:
            stop_driver(driver, out)


EXAMPLES = ("blink_table_schema_migration", "blink_schema_fleet", "blink_connection_types_nightly_sync", ON_CHANGE)


def asset_triggered(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in runs if r["run_type"] == "asset_triggered"), None)


def ended(runs: list[dict[str, Any]], run_id: str) -> dict[str, Any] | None:
    return next((r for r in runs if r["dag_run_id"] == run_id and r["state"] in ("success", "failed")), None)


def sync_runs(url: str, api: requests.Session) -> list[dict[str, Any]]:
    """The event-driven sync's runs (none while the api-server does not answer)."""
    answer = api.get(f"{url}/api/v2/dags/{ON_CHANGE}/dagRuns", timeout=API_TIMEOUT)
    return list(answer.json().get("dag_runs", [])) if answer.ok else []


def sync_end(
    what: str, url: str, api: requests.Session, run_id: str, driver: subprocess.Popen[str], log: Path
) -> dict[str, Any]:
    """The event-driven sync's run ``run_id`` once it has ended (its task states if it does not)."""

    def end() -> dict[str, Any] | None:
        return ended(sync_runs(url, api), run_id)

    return dict(wait_for(what, end, RUN_END, driver, log, lambda: task_states(url, api, ON_CHANGE, run_id)))


def latest_diff(home: Path) -> dict[str, Any]:
    """The newest diff the event-driven sync wrote, in its own folder (snapshot names sort as runs do)."""
    diffs = sorted((home / "blink_snapshots" / "connection_types" / ON_CHANGE).glob("*.diff.json"))
    return dict(json.loads(diffs[-1].read_text()))


def unpause_and_take_the_baseline(
    url: str, api: requests.Session, driver: subprocess.Popen[str], log: Path
) -> dict[str, Any]:
    """#44 item 4: unpausing the event-driven sync starts its daily run at once, which takes the
    baseline; the trigger takes its own. The first change after this is a diff, not a baseline."""
    assert api.patch(f"{url}/api/v2/dags/{ON_CHANGE}", json={"is_paused": False}, timeout=API_TIMEOUT).ok
    first = wait_for("the run unpausing starts", lambda: next(iter(sync_runs(url, api)), None), 180, driver, log)
    assert first["run_type"] == "scheduled", first
    done = sync_end("the baseline run's end", url, api, first["dag_run_id"], driver, log)
    wait_for(
        "the trigger's baseline", lambda: "Watching the catalogue" in log.read_text(errors="replace"), 180, driver, log
    )
    assert asset_triggered(sync_runs(url, api)) is None  # the trigger's baseline fires nothing
    return dict(done)


def start_driver(home: Path, out: Path) -> tuple[subprocess.Popen[str], str, requests.Session]:
    """``make airflow-ui`` with its own sandbox (no tenant): the driver, the URL, a logged-in API session."""
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "BLINK_CATALOGUE_POLL_SECONDS": str(POLL),
        "PYTHONFAULTHANDLER": "1",
    }
    for name in [n for n in env if n.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "BLINK_BASE", "BLINK_API"))]:
        env.pop(name)
    with out.open("w") as printed:
        command = [sys.executable, str(EXAMPLE_DAGS.parent / "dev" / "airflow_ui.py")]
        driver = subprocess.Popen(command, env=env, stdout=printed, stderr=subprocess.STDOUT, text=True)
    line = wait_for(
        "the driver's URL",
        lambda: next((ln for ln in out.read_text().splitlines() if ln.startswith("Airflow is up at ")), None),
        300,
        driver,
        home / "standalone.log",
    )
    url = line.removeprefix("Airflow is up at ").strip()
    password = next(ln for ln in out.read_text().splitlines() if "Login:" in ln).rsplit("password ", 1)[1].strip()
    token = requests.post(f"{url}/auth/token", json={"username": "admin", "password": password}, timeout=API_TIMEOUT)
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {token.json()['access_token']}"
    api.cookies.set("_token", token.json()["access_token"])  # for the browser, as the login page sets it
    return driver, url, api


def stop_driver(driver: subprocess.Popen[str], out: Path) -> None:
    """Ctrl-C, as a person stops ``make airflow-ui``: it exits 0 within two minutes, saying so.
    If it does not, SIGABRT makes its fault handler print every thread's stack into ``out``."""
    if driver.poll() is None:
        driver.send_signal(signal.SIGINT)
    try:
        code = driver.wait(timeout=120)
    except subprocess.TimeoutExpired:
        driver.send_signal(signal.SIGABRT)
        driver.wait(timeout=30)
        raise AssertionError(f"the driver did not stop within 120 s of Ctrl-C:\n{out.read_text()[-6000:]}") from None
    printed = out.read_text()
    assert code == 0, printed[-3000:]
    assert printed.rstrip().endswith("- Stopped"), printed[-3000:]
    group = int(printed.split("- Stopping Airflow (process group ", 1)[1].split(")", 1)[0])
    assert running_in_group(group) == [], "Stopped was said while Airflow's processes still ran"  # #56 item 12


def running_in_group(pgid: int) -> list[str]:
    """The command lines of the processes of group ``pgid`` still running (zombies aside), from /proc."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            running.append(command)
    return running


MIGRATION = "blink_table_schema_migration"


def migrate_and_approve(
    url: str,
    api: requests.Session,
    schema: dict[str, Any],
    driver: subprocess.Popen[str],
    log: Path,
    reads: str = "",
) -> str:
    """A run of the migration example with ``schema``, its review (whose text ``reads``) approved
    through the REST API as a person's click would: the run's final state."""
    wait_for(
        "the migration DAG", lambda: api.get(f"{url}/api/v2/dags/{MIGRATION}", timeout=API_TIMEOUT).ok, 180, driver, log
    )
    assert api.patch(f"{url}/api/v2/dags/{MIGRATION}", json={"is_paused": False}, timeout=API_TIMEOUT).ok
    declared = log.parent / f"schema-{time.monotonic_ns()}.json"  # the param schema_file names a file
    declared.write_text(json.dumps(schema))
    conf = {"ws_id": "ws-demo", "table": "Incidents", "schema_file": str(declared)}
    started = api.post(
        f"{url}/api/v2/dags/{MIGRATION}/dagRuns", json={"logical_date": None, "conf": conf}, timeout=API_TIMEOUT
    )
    assert started.ok, started.text
    run_id = started.json()["dag_run_id"]
    review = approve(url, api, MIGRATION, run_id, driver, log)
    assert "change" in review["body"] or "add" in review["body"]
    assert reads in review["body"], review["body"]
    return run_end(url, api, MIGRATION, run_id, driver, log)


REVIEWS = {MIGRATION: "migrate.apply", "blink_schema_fleet": "fleet.review"}
"""Each example's task that asks a person (the migration's apply asks itself; the fleet asks once)."""


def approve(url: str, api: requests.Session, dag: str, run_id: str, driver: subprocess.Popen[str], log: Path) -> Any:
    """The run's pending review, approved through the REST API as a person's click would; returns it."""

    def pending() -> Any:
        answer = api.get(f"{url}/api/v2/dags/{dag}/dagRuns/{run_id}/hitlDetails", timeout=API_TIMEOUT)
        details = answer.json().get("hitl_details", []) if answer.ok else []
        return next((d for d in details if not d.get("response_received")), None)

    review = wait_for(f"the review of {dag}", pending, 240, driver, log)
    # A person takes seconds; an answer within the scheduler's loop races it (Airflow marks the
    # review failed: "task state changed externally"). Answer once the scheduler has seen the
    # review's first execution end (it paused, awaiting input).
    seen = f"task_id='{REVIEWS[dag]}', run_id='{run_id}'"
    wait_for("the scheduler to see the review wait", lambda: seen in log.read_text(errors="replace"), 60, driver, log)
    answered = api.patch(
        f"{url}/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances/{REVIEWS[dag]}/-1/hitlDetails",
        json={"chosen_options": ["Approve"], "params_input": {}},
        timeout=API_TIMEOUT,
    )
    assert answered.ok, answered.text
    return review


def run_end(url: str, api: requests.Session, dag: str, run_id: str, driver: subprocess.Popen[str], log: Path) -> str:
    def finished() -> Any:
        answer = api.get(f"{url}/api/v2/dags/{dag}/dagRuns/{run_id}", timeout=API_TIMEOUT)
        return answer.ok and answer.json()["state"] in ("success", "failed") and answer.json()["state"]

    return str(
        wait_for(f"the end of {dag}'s run", finished, RUN_END, driver, log, lambda: task_states(url, api, dag, run_id))
    )


def the_fleet_runs_to_green(url: str, api: requests.Session, driver: subprocess.Popen[str], log: Path) -> None:
    """#44 item 2, #50 item 7: the fleet example as it ships, in make airflow-ui: its pool exists
    and the sandbox has its six tables, each a field short of its declaration, so a run with the
    defaults asks for one review of every table (policy ``changes``), and ends green once approved."""
    fleet = "blink_schema_fleet"
    wait_for("the fleet DAG", lambda: api.get(f"{url}/api/v2/dags/{fleet}", timeout=API_TIMEOUT).ok, 180, driver, log)
    assert api.get(f"{url}/api/v2/pools/blink_applies", timeout=API_TIMEOUT).ok  # made by make airflow-ui
    assert api.patch(f"{url}/api/v2/dags/{fleet}", json={"is_paused": False}, timeout=API_TIMEOUT).ok
    started = api.post(
        f"{url}/api/v2/dags/{fleet}/dagRuns", json={"logical_date": None, "conf": {}}, timeout=API_TIMEOUT
    )
    assert started.ok, started.text
    run_id = started.json()["dag_run_id"]
    review = approve(url, api, fleet, run_id, driver, log)
    assert "Fleet review: 6 tables: 6 tables to change" in review["body"], review["body"]
    assert run_end(url, api, fleet, run_id, driver, log) == "success", log.read_text()[-3000:]


def a_partly_applied_migration_is_announced(
    url: str,
    api: requests.Session,
    schema: dict[str, Any],
    browser: Any,
    driver: subprocess.Popen[str],
    log: Path,
    sandbox: dict[str, Any],
) -> None:
    """An approved plan that Blink refuses in part (a second reference to one table, which no plan
    can foresee): the run fails, and the table's asset still gets an event naming the fields that did
    change (the announce teardown), in the REST API and on the asset's page. (A plan that refuses an
    entry itself applies nothing, #72.)"""
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.ui.conftest import SHOTS

    blink = f"http://127.0.0.1:{sandbox['port']}/api/v1/workspace/ws-demo/table/Incidents/fields"
    made = requests.post(  # a person adds a reference field in Blink's UI (to the table itself)
        blink,
        headers={"BLINK-API-KEY": sandbox["api_key"]},
        json={"type": "reference", "display_name": "Reviewer",
              "attributes": {"table_reference": {"table_name": "Incidents", "display_name_field": "Title"}}},
        timeout=API_TIMEOUT,
    )  # fmt: skip
    assert made.ok, made.text
    changed = json.loads(json.dumps(schema))
    changed["fields"].append(  # moved to Users, which Owner references already: Blink refuses it
        {"field": "reviewer", "type": "reference", "display_name": "Reviewer",
         "attributes": {"table_reference": {"table_name": "Users", "display_name_field": "Name"}}}
    )  # fmt: skip
    changed["fields"][1]["display_name"] = "What happened, briefly"  # Description: changed
    assert migrate_and_approve(url, api, changed, driver, log) == "failed"
    found = api.get(
        f"{url}/api/v2/assets", params={"uri_pattern": "ws-demo/Incidents", "only_active": False}, timeout=API_TIMEOUT
    )
    assets = found.json()["assets"]  # (inactive too: no DAG declares the asset, the alias made it)
    (asset,) = [a for a in assets if a["uri"].endswith("/ws-demo/Incidents")]
    events = api.get(
        f"{url}/api/v2/assets/events", params={"asset_id": asset["id"], "order_by": "-timestamp"}, timeout=API_TIMEOUT
    )
    latest = events.json()["asset_events"][0]
    assert latest["source_task_id"] == "migrate.announce" and list(latest["extra"]["changed"]) == ["Description"]
    browser.get(f"{url}/assets/{asset['id']}")
    WebDriverWait(browser, 60).until(lambda page: "announce" in page.page_source, "the announce event is not shown")
    browser.save_screenshot(str(SHOTS / "airflow-ui-partly-applied-announced.png"))


def the_apply_links_to_its_table_and_says_who_approved(browser: Any, url: str, api: requests.Session) -> None:
    """#63 item 11: the last migration's apply, in the browser: its log's first lines say who
    approved, and its "Blink table" button opens the table's page in the sandbox."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.ui.conftest import SHOTS

    runs = api.get(f"{url}/api/v2/dags/{MIGRATION}/dagRuns?order_by=-run_after", timeout=API_TIMEOUT).json()
    run_id = runs["dag_runs"][0]["dag_run_id"]
    task = f"{url}/api/v2/dags/{MIGRATION}/dagRuns/{run_id}/taskInstances/migrate.apply"
    links = api.get(f"{task}/links", timeout=API_TIMEOUT).json()["extra_links"]
    assert links["Blink table"].endswith("/_sandbox/ui/ws-demo/tables/Incidents"), links
    browser.get(f"{url}/api/v2/monitor/health")
    browser.add_cookie({"name": "_token", "value": api.cookies["_token"]})
    browser.get(f"{url}/dags/{MIGRATION}/runs/{run_id}/tasks/migrate.apply")
    WebDriverWait(browser, 90).until(
        lambda page: re.search(r"approved by \S+ at 20", page.page_source), "the apply's log does not say who approved"
    )

    def button(page: Any) -> Any:
        found = [a for a in page.find_elements(By.TAG_NAME, "a") if a.get_attribute("textContent") == "Blink table"]
        return found[0] if found else False

    browser.get(f"{url}/dags/{MIGRATION}/runs/{run_id}/tasks/migrate.apply/details")  # (its Extra Links)
    link = WebDriverWait(browser, 60).until(button, "no 'Blink table' button on the apply's Details tab")
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "airflow-ui-apply-log-and-link.png"))
    href = link.get_attribute("href")
    assert href == links["Blink table"], href
    browser.get(href)  # as its click opens it (in a new tab)
    WebDriverWait(browser, 30).until(lambda page: "<h1>Incidents</h1>" in page.page_source, "the table's page")
    assert "Table <code>Incidents</code> in workspace <code>ws-demo</code>" in browser.page_source


def printed_command(printed: str, after: str) -> list[str]:
    """The command the banner prints after the line ``after`` (its lines joined), as a shell splits it."""
    import shlex

    lines = printed.split(after, 1)[1].split("\n")[1:]
    command = []
    for line in lines:
        command.append(line.strip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split(" ".join(command))


def pull_a_table_as_printed(printed: str) -> dict[str, Any]:
    """#57 item 6: the banner's pull command, run as printed (its variables set as a shell would),
    prints the table's declaration."""
    words = printed_command(printed, "Bring a table under code")
    env = dict(os.environ)
    while "=" in words[0] and not words[0].startswith(("/", "-")):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    done = subprocess.run(words, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def change_a_field_as_printed(printed: str) -> str:
    """#56 item 12: the banner's command, run as printed, changes a field as a person in Blink's
    UI would; what the next migration's review then says of it (drift, naming who made it)."""
    words = printed_command(printed, "Change a field as in Blink's UI")
    done = subprocess.run(words, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "Field 'Severity' of ws-demo/Incidents changed" in done.stdout, done.stderr
    return "Severity: attributes.default_value (last changed in Blink by you@example.com"


def the_printed_change_queues_the_event_driven_sync(
    url: str, api: requests.Session, printed: str, driver: subprocess.Popen[str], log: Path, home: Path
) -> None:
    unpause_and_take_the_baseline(url, api, driver, log)
    command = printed.split("Change its catalogue (the event-driven sync then runs):", 1)[1]
    words = " ".join(command.split("\n")[1:3]).replace("\\", " ").split()
    done = subprocess.run(words, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "written to the sandbox" in done.stdout, done.stderr
    run = wait_for(
        "the event-driven run the printed command queues",
        lambda: asset_triggered(sync_runs(url, api)),
        120,
        driver,
        log,
    )
    finished = sync_end("the event-driven run's end", url, api, run["dag_run_id"], driver, log)
    assert finished["state"] == "success", finished
    assert latest_diff(home)["added"] == [{"id": "ct-demo", "name": "demo-type"}]  # the first change, as added


def in_the_browser(browser: Any, url: str, api: requests.Session, driver: subprocess.Popen[str], log: Path) -> None:
    """What a person sees (screenshots in build/ui-test/): blink_default under Admin -> Connections,
    and the event-driven sync's diff naming the type the printed command added."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.ui.conftest import SHOTS

    browser.get(f"{url}/api/v2/monitor/health")
    browser.add_cookie({"name": "_token", "value": api.cookies["_token"]})
    browser.get(f"{url}/connections")
    WebDriverWait(browser, 60).until(lambda page: "blink_default" in page.page_source, "blink_default is not listed")
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "airflow-ui-connections.png"))

    def press_test(page: Any) -> bool:  # the banner says the Test button works: press it, as a person would
        row = next((r for r in page.find_elements(By.TAG_NAME, "tr") if "blink_default" in r.text), None)
        if row is None:
            return False
        row.find_element(By.CSS_SELECTOR, "button[aria-label='Test Connection']").click()
        return True

    WebDriverWait(browser, 60).until(press_test, "no Test button in the row of blink_default")
    WebDriverWait(browser, 90).until(
        lambda page: "Test Connection Successful" in page.page_source or "Test Connection Failed" in page.page_source
    )
    browser.save_screenshot(str(SHOTS / "airflow-ui-test-button.png"))
    said = browser.find_element(By.TAG_NAME, "body").text  # the toast, as a person reads it
    assert "Test Connection Successful" in browser.page_source, (
        "the Test button did not report success: " + said[said.find("Test Connection") :][:600],
        log.read_text()[-3000:],
    )
    runs = api.get(f"{url}/api/v2/dags/{ON_CHANGE}/dagRuns?order_by=-run_after", timeout=API_TIMEOUT).json()["dag_runs"]
    browser.get(f"{url}/dags/{ON_CHANGE}/runs/{runs[0]['dag_run_id']}/tasks/diff")
    WebDriverWait(browser, 90).until(
        lambda page: "demo-type (ct-demo)" in page.page_source, "the diff does not name the new type"
    )
    browser.save_screenshot(str(SHOTS / "airflow-ui-catalogue-diff.png"))


def test_a_second_start_has_the_same_blink_the_connection_in_view_and_a_command_that_changes_the_catalogue(
    tmp_path: Path, browser: Any
) -> None:
    """#36: two starts of make airflow-ui in a row, each followed by a migration with a changed
    schema, both end green (the second start is the same Blink: port, key and state), with
    nothing deleted by hand; the connection is in the metadata database with its Test button on;
    and the printed command changes the catalogue, which queues the event-driven sync."""
    home = tmp_path / "airflow-ui"
    schema = json.loads((EXAMPLE_DAGS / "blink_table_schema_migration.json").read_text())
    sandboxes, urls = [], []
    for start in (1, 2):
        out = tmp_path / f"driver-{start}.out"
        driver, url, api = start_driver(home, out)
        urls.append(url)  # (the second start follows the first's stop at once: its connections in TIME_WAIT)
        log = home / "standalone.log"
        try:
            printed = out.read_text()
            sandboxes.append(next(ln for ln in printed.splitlines() if ln.strip().startswith("Sandbox:")))
            saved = json.loads((home / "blink_sandbox.json").read_text())  # #50 item 7: the key is in the banner
            assert f"  API key:  {saved['api_key']} " in printed
            assert "its first run adds a field to each table and waits for your review in Required Actions" in printed
            conn = api.get(f"{url}/api/v2/connections/blink_default", timeout=API_TIMEOUT)
            assert conn.ok and conn.json()["conn_type"] == "blink", conn.text
            tested = api.post(
                f"{url}/api/v2/connections/test", json={**conn.json(), "password": None}, timeout=API_TIMEOUT
            )
            assert tested.ok and tested.json()["status"] is True, tested.text  # the Test button answers
            assert "connection types visible" in tested.json()["message"]
            schema["fields"][0]["display_name"] = f"Title, start {start}"  # a changed schema each time
            if start == 1:
                pulled = pull_a_table_as_printed(printed)
                assert [f["field"] for f in pulled["fields"]][:2] == ["Title", "Description"], pulled
            drift = change_a_field_as_printed(printed) if start == 2 else ""  # the review then says so
            assert migrate_and_approve(url, api, schema, driver, log, drift) == "success", log.read_text()[-3000:]
            if start == 2:
                the_apply_links_to_its_table_and_says_who_approved(browser, url, api)
                the_fleet_runs_to_green(url, api, driver, log)
                the_printed_change_queues_the_event_driven_sync(url, api, printed, driver, log, home)
                in_the_browser(browser, url, api, driver, log)
                a_partly_applied_migration_is_announced(url, api, schema, browser, driver, log, saved)
        finally:
            stop_driver(driver, out)
    assert sandboxes[0] == sandboxes[1]  # the same port, every start
    assert urls[0] == urls[1]  # Airflow at the same URL too: open tabs keep working (#63 item 11)


def test_a_quick_restart_keeps_airflows_port_while_its_last_connections_are_in_time_wait(tmp_path: Path) -> None:
    """#63 item 11: Ctrl-C, then make airflow-ui again within a minute: the last run's connections
    are in TIME_WAIT, and Airflow is still at the same URL; a port some process listens on is not."""
    import socket

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dev"))
    import airflow_ui

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()  # the server's side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    server.close()
    (tmp_path / "airflow_port").write_text(str(port))
    assert airflow_ui.airflow_port(tmp_path) == port
    with socket.create_server(("127.0.0.1", port)):  # now something listens there
        assert airflow_ui.airflow_port(tmp_path) != port
