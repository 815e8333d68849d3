"""OpenLineage end to end: the example DAGs run with ``airflow dags test`` and OpenLineage's file
transport; the events they emit carry the datasets of the table and of the catalogue (the
[openlineage] extra; tests/conftest.py leaves this module out without it)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.assets import asset_host
from blinkops_sandbox import BlinkSandbox
from dev.reviewer import reviewing

pytestmark = pytest.mark.usefixtures("airflow_db", "one_execution_api")


def run_with_lineage(dag_id: str, tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    """``airflow dags test`` with OpenLineage writing its events to a file; the events."""
    events = tmp_path / "openlineage.jsonl"
    env = {
        **os.environ,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events), "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "blink-e2e",
        "AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT": str(tmp_path / "snapshots"),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(tmp_path / "records"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert events.exists(), (done.stdout + done.stderr)[-3000:]
    return [json.loads(line) for line in events.read_text().splitlines() if line.strip()]


def completed(events: list[dict[str, Any]], task_id: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"].endswith(f".{task_id}")]
    return event


def test_the_migration_emits_the_table_with_its_schema(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    from tests.integration.test_e2e_dags import REVIEWS_IN_DAG_TEST

    # Airflow 3.3: the review is answered as a person's is; before, `dags test` cannot run it (3.1)
    # or there is none (2.11): no one is asked (review_policy never), and the removal acknowledged.
    conf = {"ws_id": "ws-demo", "table": "Incidents", "acknowledge_risks": not REVIEWS_IN_DAG_TEST}
    conf.update({} if REVIEWS_IN_DAG_TEST else {"review_policy": "never"})
    with reviewing(user="lineage") if REVIEWS_IN_DAG_TEST else contextlib.nullcontext():
        events = run_with_lineage("blink_table_schema_migration", tmp_path, "-c", json.dumps(conf))
    (output,) = completed(events, "migrate.apply")["outputs"]
    assert (output["namespace"], output["name"]) == (
        f"blink://{asset_host(blink_sandbox.base_url)}",
        "ws-demo/Incidents",
    )
    fields = output["facets"]["schema"]["fields"]
    assert [(f["name"], f["type"], f["description"]) for f in fields[:2]] == [
        ("Title", "text", "Title"),
        ("Description", "long-text", "What happened"),
    ]
    assert len(fields) == 11  # every declared field (the tombstone aside)
    assert completed(events, "migrate.plan")["outputs"] == []  # a plan changes nothing


def test_the_sync_emits_the_catalogue_in_and_the_snapshot_out(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    events = run_with_lineage("blink_connection_types_nightly_sync", tmp_path, "2026-11-20")
    event = completed(events, "snapshot")
    (source,) = event["inputs"]
    assert (source["namespace"], source["name"]) == (
        f"blink://{asset_host(blink_sandbox.base_url)}",
        "connection_types",
    )
    (snapshot,) = event["outputs"]
    assert snapshot["namespace"] == "file"
    folder = tmp_path / "snapshots" / "connection_types" / "blink_connection_types_nightly_sync"
    (written,) = [p for p in folder.glob("2026-11-20T000000000000Z__*.json") if not p.name.endswith(".diff.json")]
    assert snapshot["name"] == str(written)  # this run's own snapshot
