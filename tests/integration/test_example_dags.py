"""DAG integrity: every file in example_dags/ imports cleanly, without I/O, with the expected tasks."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from typing import Any

import airflow
import pytest

from tests.conftest import EXAMPLE_DAGS

DAG_FILES = sorted(EXAMPLE_DAGS.glob("*.py"))
"""Every Python file of example_dags/: the folder holds DAGs only (#58: the launchers are in dev/)."""

PROBE = textwrap.dedent(
    """
    import builtins, importlib.util, io as io_module, json, os, socket, sys, warnings
    import airflow.providers.common.compat.sdk as sdk
    for name in ("DAG", "Param", "Asset", "task", "get_current_context"):
        getattr(sdk, name)
    import blinkops_provider.operators.tables, blinkops_provider.operators.connection_types

    path = sys.argv[1]
    io = []
    LIBRARIES = (sys.prefix, sys.base_prefix, sys.exec_prefix)
    # Airflow 3.1 also looks into its home's plugins and config folders on first use: its own.
    AIRFLOW_OWN = tuple(os.path.join(os.environ["AIRFLOW_HOME"], name) for name in ("plugins", "config"))
    real_open = builtins.open
    def watched_open(file, *args, **kwargs):
        # Airflow and libraries read their own data (schemas, time zones): only other files count.
        own = str(file).startswith(LIBRARIES + AIRFLOW_OWN) or str(file).endswith(".py")
        if not isinstance(file, int) and not own:
            io.append(str(file))
        return real_open(file, *args, **kwargs)
    builtins.open = io_module.open = watched_open
    socket.socket.connect = lambda self, *a: io.append(f"connect {a}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = importlib.util.spec_from_file_location("example_dag", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    builtins.open = io_module.open = real_open
    dag = module.dag
    print(json.dumps({
        "io": io,
        "warnings": [[f"{w.category.__name__}: {w.message}", w.filename] for w in caught],
        "dag_id": dag.dag_id,
        "tasks": {t.task_id: type(t).__name__ for t in dag.tasks},
        "schedule": str(getattr(dag, "schedule", None) or getattr(dag, "schedule_interval", None)),
        "catchup": dag.catchup,
        "doc_md": bool(dag.doc_md),
        "params": sorted(dag.params.keys()),
    }))
    """
)

AIRFLOW = tuple(int(part) for part in airflow.__version__.split(".")[:2])
HAS_APPROVAL = AIRFLOW >= (3, 1) and importlib.util.find_spec("airflow.providers.standard") is not None
"""Airflow 3.1 and later have the human-in-the-loop approval the migration reviews its plan with."""

EXPECTED = {
    "blink_schema_fleet.py": {
        "dag_id": "blink_schema_fleet",
        "tasks": {
            "fleet.tables": "_PythonDecoratedOperator",
            "fleet.plan": "MappedOperator",  # one UpdateTableFieldsOperator per table
            "fleet.to_apply": "_PythonDecoratedOperator",
            "fleet.apply": "MappedOperator",
            "fleet.summary": "_PythonDecoratedOperator",
            **({"fleet.review": "PlanReview"} if HAS_APPROVAL else {}),
        },
        "schedule": "None",
        "params": ["acknowledge_risks", "folder", "review_policy"],
    },
    "blink_table_schema_migration.py": {
        "dag_id": "blink_table_schema_migration",
        "tasks": {
            "migrate.schema": "_PythonDecoratedOperator",
            "migrate.plan": "UpdateTableFieldsOperator",
            "migrate.apply": "ReviewedApply" if HAS_APPROVAL else "UpdateTableFieldsOperator",  # it asks itself
            "migrate.announce": "_PythonDecoratedOperator",
        },
        "schedule": "None",
        "params": ["acknowledge_risks", "review_policy", "schema_file", "table", "ws_id"],
    },
    "blink_table_rollback.py": {
        "dag_id": "blink_table_rollback",
        "tasks": {"rollback": "RollbackTableOperator"},
        "schedule": "None",
        "params": ["acknowledge_risks", "apply", "review_policy", "table", "ws_id"],
    },
    "blink_connection_types_nightly_sync.py": {
        "dag_id": "blink_connection_types_nightly_sync",
        "tasks": {"snapshot": "ConnectionTypesToXComOperator", "diff": "_PythonDecoratedOperator"},
        "schedule": "@daily",
        "params": ["keep_snapshots", "name_like"],
    },
}


def test_every_example_dag_is_covered() -> None:
    assert sorted(p.name for p in DAG_FILES) == sorted(EXPECTED)


@pytest.fixture(scope="module", params=DAG_FILES, ids=lambda p: p.name)
def probe(request: pytest.FixtureRequest) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(request.param)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {"file": request.param.name, **json.loads(done.stdout.strip().splitlines()[-1])}


def upstream(warning: list[str]) -> bool:  # [text, the file it was raised in]
    """Before Airflow 3.3, the standard provider's approval operator imports ``BranchMixIn``
    through common.compat, which finds it (on 3.1) at Airflow's deprecated location: a warning
    raised in common.compat, not caused by the example. On 3.3 every warning counts."""
    return AIRFLOW < (3, 3) and "/airflow/providers/common/compat/" in warning[1]


def test_imports_without_warnings_or_io(probe: dict[str, Any]) -> None:
    assert [text for text, where in probe["warnings"] if not upstream([text, where])] == []
    assert probe["io"] == []  # no file read, no connection made at parse time


def test_has_the_expected_shape(probe: dict[str, Any]) -> None:
    expected = EXPECTED[probe["file"]]
    assert probe["tasks"] == expected["tasks"]
    assert probe["dag_id"] == expected["dag_id"]
    assert probe["schedule"] == expected["schedule"]
    assert probe["catchup"] is False
    assert probe["doc_md"] is True
    assert probe["params"] == expected["params"]


@pytest.mark.skipif(AIRFLOW < (3, 0), reason="AssetWatcher (event-driven scheduling) needs Airflow 3.0 or later")
def test_the_event_driven_sync_is_scheduled_by_the_catalogue_trigger() -> None:
    from blinkops_provider.triggers import BlinkCatalogueChangeTrigger

    spec = importlib.util.spec_from_file_location("nightly", EXAMPLE_DAGS / "blink_connection_types_nightly_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    on_change = module.on_change
    assert on_change.dag_id == "blink_connection_types_on_change" and on_change.max_active_runs == 1
    assert sorted(on_change.task_ids) == ["diff", "snapshot"]
    (watcher,) = module.CATALOGUE_CHANGES.watchers
    assert isinstance(watcher.trigger, BlinkCatalogueChangeTrigger) and watcher.trigger.poll_interval == 300
    assert list(on_change.timetable.asset_condition.objects) == [module.CATALOGUE_CHANGES]
    # #44 item 4: also daily, starting at once when unpaused: that run is the baseline of the first change's diff
    daily = on_change.timetable.timetable  # airflow.sdk's on 3.2+, airflow.timetables' (serialize) on 3.1
    assert (
        daily.run_immediately if hasattr(daily, "run_immediately") else daily.serialize()["run_immediately"]
    ) is True


class ReviewXComs:
    """The XCom of a run as the fleet's summary reads it: the review's answer as Airflow records
    it (its return value, which the review step pushes on a Reject too), the applies' results."""

    def __init__(self, decision: str | None, applies: list[Any] | None = None) -> None:
        self.values: dict[tuple[str, str, int | None], Any] = {}
        if decision is not None:
            self.values[("fleet.review", "return_value", -1)] = {"chosen_options": [decision]}
        for index, result in enumerate(applies or []):
            self.values[("fleet.apply", "return_value", index)] = result
        self.pushed: dict[str, Any] = {}

    def xcom_pull(self, task_ids: str, key: str = "return_value", map_indexes: int | None = None) -> Any:
        return self.values.get((task_ids, key, map_indexes))

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, EXAMPLE_DAGS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_rejected_fleet_review_fails_the_run_and_the_summary_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """#44 item 1, #55: the fleet's summary runs whatever the applies did (all_done); it reads the
    review's answer from Airflow's record, lists every table as rejected (none as failed) and fails
    the run saying nothing was applied; elsewhere it follows the applies."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    import blinkops_provider.task_groups as groups

    module = example("blink_schema_fleet")
    summary = module.dag.get_task("fleet.summary")
    assert "fleet.apply" in summary.upstream_task_ids and summary.trigger_rule == "all_done"
    tables = [{"ws_id": "ws", "table": "A"}, {"ws_id": "ws", "table": "B"}]
    applied = {"outcome": "applied", "rate_limited": 0}
    unchanged = {"outcome": "unchanged", "rate_limited": 0}
    monkeypatch.setattr(groups, "get_current_context", lambda: {"ti": ReviewXComs(None, [applied, unchanged])})
    assert summary.python_callable(tables, [])["text"].startswith("Fleet of 2 tables: 1 applied, 1 unchanged, 0 failed")
    if not HAS_APPROVAL:
        assert "fleet.review" not in module.dag.task_ids
        return
    monkeypatch.setattr(groups, "get_current_context", lambda: {"ti": ReviewXComs("Reject")})
    rejected = r"^Fleet of 2 tables: rejected in review: nothing was applied\. Rejected: ws/A, ws/B"
    with pytest.raises(AirflowFailException, match=rejected):
        summary.python_callable(tables, [])
    same = {"ws_id": "ws", "table": "B", "fields": [{"field": "f", "action": "unchanged"}]}
    with pytest.raises(AirflowFailException, match=r"Rejected: ws/A Unchanged \(nothing to apply\): ws/B\. Change"):
        summary.python_callable(tables, [same])  # #50 item 7: a table with nothing to apply is not "rejected"
