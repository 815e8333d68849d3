"""Plan, review, apply in Airflow 3's UI: the migration example waits for a person to approve a
plan that changes something, and a real browser approves it; a plan that changes nothing asks
no one (``make ui-test``).

The DAG runs with ``airflow dags test`` against the api-server's metadata DB: the run waits at
``review`` until the approval is recorded through the UI, as Airflow documents for testing
human-in-the-loop tasks. The screenshot of the review of a destructive change is the one
docs/operators/update_table_fields.md shows.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from blinkops_provider.assets import asset_host
from blinkops_sandbox import DEMO_ROWS, BlinkSandbox
from tests.conftest import EXAMPLE_DAGS
from tests.integration.test_e2e_dags import DOWNSTREAM_DAG
from tests.ui.conftest import SHOTS, AirflowUI
from tests.ui.test_connection_form import button, press, waiting

pytestmark = pytest.mark.ui

DAG_ID = "blink_table_schema_migration"
ROLLBACK_ID = "blink_table_rollback"


def waiting_review(ui: AirflowUI, run: subprocess.Popen[bytes], log: Path, dag_id: str = DAG_ID) -> dict[str, Any]:
    """The review's human-in-the-loop request, once the run has reached it."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        answer = ui.api("GET", f"/dags/{dag_id}/dagRuns/~/hitlDetails")
        if answer.ok:
            pending = [d for d in answer.json()["hitl_details"] if not d.get("response_received")]
            if pending:
                return dict(pending[0])
        try:  # waiting on the run lets an early end fail at once
            code = run.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"the run ended ({code}) before its review:\n{log.read_text()[-3000:]}")
    raise AssertionError(f"no review was requested:\n{log.read_text()[-3000:]}")


def ui_reviews(ui: AirflowUI, dag_id: str = DAG_ID) -> list[dict[str, Any]]:
    answer = ui.api("GET", f"/dags/{dag_id}/dagRuns/~/hitlDetails")
    assert answer.ok, answer.text
    return list(answer.json()["hitl_details"])


def test_the_plan_is_reviewed_and_approved_in_the_ui(
    airflow_ui: AirflowUI, sandbox: BlinkSandbox, browser: Any, tmp_path: Path
) -> None:
    # The migration example as it ships, in a DAGs folder of the test's own: runs 3 and 4 edit its declaration.
    dags = tmp_path / "dags"
    dags.mkdir()
    for name in (f"{DAG_ID}.py", f"{DAG_ID}.json"):
        shutil.copy(EXAMPLE_DAGS / name, dags / name)
    env = {
        **airflow_ui.env,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_BLINK_DEFAULT": sandbox.connection_json(),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(tmp_path / "records"),
    }
    # A DAG scheduled on the table's asset, as a downstream team would write it (registered first).
    downstream = Path(airflow_ui.env["AIRFLOW__CORE__DAGS_FOLDER"])
    downstream.mkdir(parents=True, exist_ok=True)
    (downstream / "downstream.py").write_text(DOWNSTREAM_DAG)
    registered = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "reserialize"],
        env={**env, "AIRFLOW__CORE__DAGS_FOLDER": str(downstream)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert registered.returncode == 0, registered.stderr[-3000:]

    def start(log: Path, schema: Any = None) -> subprocess.Popen[bytes]:
        if schema is not None:
            (dags / f"{DAG_ID}.json").write_text(json.dumps(schema))
        with log.open("wb") as out:
            arguments = json.dumps({"ws_id": "ws-demo", "table": "Incidents"})
            command = [sys.executable, "-m", "airflow", "dags", "test", DAG_ID, "-c", arguments]
            return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def approve(
        run: subprocess.Popen[bytes],
        log: Path,
        expected: str,
        shot: str | None = None,
        nothing_sent: bool = False,
        choice: str = "Approve",
    ) -> dict[str, Any]:
        try:
            review = waiting_review(airflow_ui, run, log)
            if nothing_sent:
                assert not [r for r in sandbox.requests if r["method"] != "GET"]  # nothing before the approval
            assert expected in review["body"], review["body"]
            ti = review["task_instance"]
            browser.get(f"{airflow_ui.url}/dags/{DAG_ID}/runs/{ti['dag_run_id']}/tasks/migrate.apply/required_actions")
            button(browser, choice)
            waiting(browser).until(lambda driver: "Title" in driver.page_source, "the plan is not shown")
            assert "The baseline is the table as Blink holds it" in browser.page_source
            if "Workflows it breaks" in review["body"]:  # what a person reads on the page (#75)
                assert "Workflows it breaks" in browser.page_source and "pb-triage" in browser.page_source
            if shot:
                SHOTS.mkdir(parents=True, exist_ok=True)
                browser.save_screenshot(str(SHOTS / shot))
            press(browser, choice)
            code = run.wait(timeout=180)
            assert (code == 0) is (choice == "Approve"), log.read_text()[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        return review

    # 1. The seeded table differs from the declaration: a person is asked, and nothing is applied
    #    before the approval. The plan adds two fields, removes one (#48) and retypes one (#64): the
    #    review shows the removal and the retype first, with the rows they count, and the body the add will POST.
    log = tmp_path / "run-1.log"
    counted = "2 to add, 8 to change, 1 to remove, 1 to retype (3 destructive)"  # the new required Queue: #75
    review = approve(start(log), log, counted, nothing_sent=True)
    # #75: the review names the sandbox's workflows each change breaks, before anyone approves
    assert "**Workflows it breaks**" in review["body"]
    triage = "- Risk (retype): 'Triage new incidents' (pb-triage, active): step S1 (filtered on), S2 (written)"
    assert triage in review["body"], review["body"]
    assert (
        "- Affected hosts (remove): 'Nightly host sweep' (pb-sweep, active): step S1 (read), S2 (written)"
        in (review["body"])
    )
    hosts = sum("Affected hosts" in row for row in DEMO_ROWS["Incidents"])
    assert f"- Affected hosts: remove: deletes values in {hosts} of 120 rows, permanently" in review["body"]
    assert "- Risk: retype: risk-level → single-select: add the new field, copy 120 rows" in review["body"]
    assert review["body"].index("Affected hosts") < review["body"].index("| field | action | details |")
    assert "| Root cause | add | adds Root cause (long-text), shown as 'Root cause', described" in review["body"]
    writes = [(r["method"], r["raw_path"].rsplit("/", 1)[-1]) for r in sandbox.requests if r["method"] != "GET"]
    assert writes[0] == ("POST", "fields") and writes[-1] == ("DELETE", "Affected%20hosts")  # removals last
    rows = [path for method, path in writes if method == "PUT" and path.startswith("rec-")]
    assert len(rows) == 240  # the backfill's 120 rows and the retype's 120
    assert len([method for method, path in writes if method == "PUT" and path not in rows]) == 11  # 8, table, retype 2
    text = log.read_text()
    assert "Schema of ws-demo/Incidents: 12 of 12 fields applied (2 added, 8 changed, 1 removed, 1 retyped)" in text
    # the apply read the answer from Airflow's record: who approved it in the browser (#55)
    approved = re.search(r"Plan [0-9a-f]{16} approved by (.+?) at 20\S+ in review", text)
    (answered,) = ui_reviews(airflow_ui)
    assert approved is not None and approved.group(1) == answered["responded_by_user"]["name"], text[-3000:]
    assert "Root cause: added (long-text, 'Root cause'; Blink's name is 'root_cause')" in text

    # 2. Nothing changed: no one is asked, and nothing is written to Blink (#56 item 2).
    writes_before = len([r for r in sandbox.requests if r["method"] != "GET"])
    log = tmp_path / "run-2.log"
    assert start(log).wait(timeout=300) == 0, log.read_text()[-3000:]
    reviews = ui_reviews(airflow_ui)
    assert len(reviews) == 1, reviews  # still only run 1's
    assert "Schema of ws-demo/Incidents: 12 of 12 fields applied (12 unchanged)" in log.read_text()
    assert len([r for r in sandbox.requests if r["method"] != "GET"]) == writes_before

    # 3. An option that rows use removed from a select: the review leads with the destructive change, counted.
    schema = json.loads((EXAMPLE_DAGS / "blink_table_schema_migration.json").read_text())
    severity = next(entry for entry in schema["fields"] if entry["field"] == "Severity")
    removed = "High"
    severity["attributes"]["options"].remove(removed)
    log = tmp_path / "run-3.log"
    review = approve(start(log, schema=schema), log, "**Destructive**", shot="plan-review.png")
    assert review["body"].index("**Destructive**") < review["body"].index("| field | action | details |")
    used = sum(row["Severity"] == removed for row in DEMO_ROWS["Incidents"])
    assert f"options removed: {removed!r} (in {used} of 120 rows): those values are orphaned" in review["body"]
    assert "Schema of ws-demo/Incidents: 12 of 12 fields applied (1 changed, 11 unchanged)" in log.read_text()

    # 4. Rejected in the browser (#44 item 1, #55): nothing is sent; the apply, which asked, is red, saying who
    #    rejected which plan and when, and so is the run.
    puts = len([r for r in sandbox.requests if r["method"] == "PUT"])
    severity["display_name"] = "Severity (rejected)"
    log = tmp_path / "run-4.log"
    review = approve(start(log, schema=schema), log, "1 to change", choice="Reject")
    assert len([r for r in sandbox.requests if r["method"] == "PUT"]) == puts  # nothing applied
    text = log.read_text()
    said = r"rejected in review: nothing was applied: (.+?) rejected plan [0-9a-f]{16} of ws-demo/Incidents at 20"
    rejected = re.search(said, text)
    answer = next(d for d in ui_reviews(airflow_ui) if d["task_instance"]["dag_run_id"] == review["task_instance"]["dag_run_id"])  # fmt: skip
    assert rejected is not None and rejected.group(1) == answer["responded_by_user"]["name"], text[-3000:]
    run_id = review["task_instance"]["dag_run_id"]
    tasks = airflow_ui.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances").json()["task_instances"]
    states = {ti["task_id"]: ti["state"] for ti in tasks}
    assert states["migrate.apply"] == "failed", states  # the apply asked, and the Reject failed it
    state = airflow_ui.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}").json()["state"]
    assert state == "failed", state
    browser.get(f"{airflow_ui.url}/dags/{DAG_ID}/runs/{run_id}")
    waiting(browser).until(lambda driver: "failed" in driver.page_source.lower(), "the run is not shown as failed")
    browser.save_screenshot(str(SHOTS / "plan-rejected.png"))

    # 5. The newest apply (run 3's: an option dropped) rolled back from the UI (#74): the rollback example asks,
    #    showing its plan; the browser approves; the option and the rows' values are back.
    shutil.copy(EXAMPLE_DAGS / f"{ROLLBACK_ID}.py", dags / f"{ROLLBACK_ID}.py")
    log = tmp_path / "rollback.log"
    with log.open("wb") as out:
        arguments = json.dumps({"ws_id": "ws-demo", "table": "Incidents"})
        command = [sys.executable, "-m", "airflow", "dags", "test", ROLLBACK_ID, "-c", arguments]
        run = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        review = waiting_review(airflow_ui, run, log, dag_id=ROLLBACK_ID)
        assert "Severity: restore: put back attributes.options" in review["body"], review["body"]
        ti = review["task_instance"]
        browser.get(f"{airflow_ui.url}/dags/{ROLLBACK_ID}/runs/{ti['dag_run_id']}/tasks/rollback/required_actions")
        button(browser, "Approve")
        waiting(browser).until(lambda driver: "Rollback" in driver.page_source, "the rollback's plan is not shown")
        browser.save_screenshot(str(SHOTS / "rollback-review.png"))
        press(browser, "Approve")
        assert run.wait(timeout=180) == 0, log.read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    (held,) = [f for f in sandbox.store.fields("ws-demo", "Incidents") if f["name"] == "Severity"]
    assert removed in held["attributes"]["options"], held
    rows = sandbox.store.find_records("ws-demo", "Incidents", json.dumps({"limit": 1000}))["results"]
    assert sum(row.get("Severity") == removed for row in rows) == used

    # The table's asset, made by the event the apply emitted through its alias: the asset graph.
    uri = f"blink://{asset_host(sandbox.base_url)}/ws-demo/Incidents"
    browser.get(f"{airflow_ui.url}/assets")

    def open_asset(driver: Any) -> bool:
        link = next((a for a in driver.find_elements(By.TAG_NAME, "a") if a.text == uri), None)
        if link is None:
            return False
        link.click()
        return True

    waiting(browser).until(open_asset, f"no asset {uri}")
    waiting(browser).until(lambda driver: "migrate.apply" in driver.page_source, "no graph of the asset")
    browser.save_screenshot(str(SHOTS / "asset-graph.png"))


FLEET = "blink_schema_fleet"
FLEET_DAG = """
import pendulum
from airflow.providers.common.compat.sdk import DAG
from blinkops_provider.task_groups import BlinkSchemaFleet

with DAG("blink_schema_fleet", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:
    BlinkSchemaFleet(
        "fleet", folder={folder!r}, record_path="{{{{ var.value.blink_schema_records }}}}/", review_policy={policy!r}
    )
"""


def test_the_fleet_is_reviewed_once_in_the_ui_with_the_risky_tables_first(
    airflow_ui: AirflowUI, sandbox: BlinkSandbox, browser: Any, tmp_path: Path
) -> None:
    """Four tables of the fleet example: a first run applies every field without asking anyone
    (policy ``destructive``); the second finds one refused, one destructive, one changed and one unchanged
    table, and asks one person once, the refused and destructive tables first."""
    import requests

    # A DAGs folder of the test's own: each run's fleet DAG, one BlinkSchemaFleet over that run's folder.
    dags = tmp_path / "dags"
    dags.mkdir()
    env = {
        **airflow_ui.env,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_BLINK_DEFAULT": sandbox.connection_json(),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(tmp_path / "records"),
    }
    select = {"type": "single-select", "display_name": "Stage", "attributes": {"options": ["New", "Done"]}}
    first = {
        "Access": [{"field": "Stage", **select}],
        "Billing": [{"field": "Stage", **select}],
        "Catalog": [{"field": "Stage", **select}],
        "Devices": [{"field": "Stage", **select}],
    }
    owner = {"field": "Owner", "type": "text", "display_name": "Owner"}  # declared only later
    in_blink = {**owner, "display_name": "Owner (as Blink has it)"}  # so the later declaration changes it
    for table, fields in first.items():  # the tables, made as a user would (blink-sandbox create-table)
        made = requests.put(
            f"{sandbox.url}/_sandbox/workspace/ws-ui/table/{table}",
            json={"fields": [*fields, in_blink] if table == "Devices" else fields},
            headers={"X-Sandbox-Token": sandbox.admin_token},
            timeout=30,
        )
        assert made.ok, made.text
    rows = requests.post(  # Billing's rows use the option its next declaration drops: destructive, counted (#64)
        f"{sandbox.url}/_sandbox/workspace/ws-ui/table/Billing/rows",
        json=[{"Stage": "Done"}, {"Stage": "New"}, {"Stage": "Done"}],
        headers={"X-Sandbox-Token": sandbox.admin_token},
        timeout=30,
    )
    assert rows.ok, rows.text

    def fleet_run(name: str, schemas: dict[str, list[dict[str, Any]]], policy: str) -> subprocess.Popen[bytes]:
        folder = tmp_path / name / "ws-ui"
        folder.mkdir(parents=True)
        for table, fields in schemas.items():
            (folder / f"{table}.json").write_text(json.dumps({"fields": fields}))
        (dags / "fleet.py").write_text(FLEET_DAG.format(folder=str(folder.parent), policy=policy))
        with (tmp_path / f"{name}.log").open("wb") as out:
            command = [sys.executable, "-m", "airflow", "dags", "test", FLEET]
            return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def answered(name: str, schemas: dict[str, list[dict[str, Any]]], choice: str, look: Any = None) -> dict[str, Any]:
        """A fleet run whose one review is answered ``choice`` in the browser (``look`` reads the
        review first); the run ends not green either way here (a refused table, or a rejection)."""
        log = tmp_path / f"{name}.log"
        run = fleet_run(name, schemas, "changes")
        try:
            review = waiting_review(airflow_ui, run, log, dag_id=FLEET)
            ti = review["task_instance"]
            browser.get(f"{airflow_ui.url}/dags/{FLEET}/runs/{ti['dag_run_id']}/tasks/fleet.review/required_actions")
            if look is not None:
                look(review)
            press(browser, choice)
            assert run.wait(timeout=300) != 0
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        return review

    # 1. Every field is as Blink holds it and nothing is destructive: policy "destructive" asks no one.
    assert fleet_run("first", first, "destructive").wait(timeout=600) == 0, (tmp_path / "first.log").read_text()[-3000:]
    # every field already as declared: nothing is written to Blink (#56 item 2)
    assert len([r for r in sandbox.requests if r["method"] == "PUT" and "/ws-ui/" in r["path"]]) == 0

    # 2. Billing removes an option (destructive), Access changes a type (refused), Devices declares a
    #    field it did not before (and renames it), Catalog is unchanged: one review, policy "changes".
    second = {
        "Access": [{"field": "Stage", "type": "text", "display_name": "Stage"}],
        "Billing": [{"field": "Stage", **select, "attributes": {"options": ["New"]}}],
        "Catalog": first["Catalog"],
        "Devices": [*first["Devices"], owner],
    }

    def look(review: dict[str, Any]) -> None:
        body = review["body"]
        assert body.startswith("Fleet review: 4 tables: 3 tables to change (2 with refused or destructive changes")
        order = [body.index(f"- ws-ui/{table}") for table in ("Access", "Billing", "Devices")]
        assert order == sorted(order), body  # refused, then destructive, then the others
        assert "Nothing to change in: ws-ui/Catalog" in body
        assert len(ui_reviews(airflow_ui, FLEET)) == 1  # one review for the whole fleet
        button(browser, "Approve")
        waiting(browser).until(lambda driver: "Fleet review" in driver.page_source, "the fleet's review is not shown")
        page = browser.page_source
        assert page.index("ws-ui/Access") < page.index("ws-ui/Billing") < page.index("ws-ui/Devices")
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SHOTS / "fleet-review.png"))

    answered("second", second, "Approve", look)  # Access's refused type change fails its apply, so the run
    text = (tmp_path / "second.log").read_text()
    assert "Fleet of 4 tables: 2 applied, 1 unchanged, 1 failed, 0 stale" in text, text[-3000:]

    # 3. The same change rejected in the browser (#44 item 1): nothing is applied, every table is
    #    listed as rejected (none as failed), and the run is red, saying so.
    puts = len([r for r in sandbox.requests if r["method"] == "PUT"])
    review = answered("third", second, "Reject")
    ti, log = review["task_instance"], tmp_path / "third.log"
    text = log.read_text()
    assert "Fleet of 4 tables: rejected in review: nothing was applied." in text, text[-3000:]
    rejected = re.search(r"Rejected: (.*?)(?:\s+\[airflow|$)", text, re.M)
    kept = re.search(r"Unchanged \(nothing to apply\): (.*?)(?:\s+\[airflow|$)", text, re.M)
    assert rejected is not None and "ws-ui/Access" in rejected.group(1), text[-3000:]  # its refused change
    assert kept is not None and "ws-ui/Catalog" in kept.group(1)  # #50 item 7: not listed as rejected
    listed = sorted(rejected.group(1).split(", ") + kept.group(1).split(", "))
    assert listed == ["ws-ui/Access", "ws-ui/Billing", "ws-ui/Catalog", "ws-ui/Devices"]
    after = text.split("Fleet of 4 tables: rejected", 1)[1][:500]
    assert re.search(r"\b404\b", after) is None, after  # no status 404 (a log's timestamp may hold "404")
    assert len([r for r in sandbox.requests if r["method"] == "PUT"]) == puts
    state = airflow_ui.api("GET", f"/dags/{FLEET}/dagRuns/{ti['dag_run_id']}").json()["state"]
    assert state == "failed", state
