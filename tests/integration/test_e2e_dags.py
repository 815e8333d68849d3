"""End to end: the example DAGs run with dag.test() against the blink_sandbox fixture."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pendulum
import pytest

from blinkops_provider.assets import asset_host
from blinkops_sandbox import DEMO_ROWS, BlinkSandbox
from dev.reviewer import reviewing
from tests.conftest import EXAMPLE_DAGS

DECLARED = json.loads((EXAMPLE_DAGS / "blink_table_schema_migration.json").read_text())["fields"]
ADDED = ["Root cause", "Queue"]  # the example's fields the seed lacks (#48; Queue is backfilled, #64)
REMOVED = [entry["field"] for entry in DECLARED if entry.get("remove")]
RETYPED = [entry["field"] for entry in DECLARED if entry.get("type_change")]  # (#64)
SCHEMA = [entry for entry in DECLARED if not entry.get("remove") and entry["field"] not in [*ADDED, *RETYPED]]
"""The example's entries for fields the sandbox's seed has, of the type it has."""
NEW_NAMES = {"Root cause": "root_cause", "Queue": "queue", "Risk": "risk_level_retyping"}
"""The names the sandbox gives the example's added fields, and the retyped one's new field."""

pytestmark = pytest.mark.usefixtures("airflow_db", "one_execution_api")


def load_dag(file_name: str, folder: Path = EXAMPLE_DAGS) -> Any:
    spec = importlib.util.spec_from_file_location(f"e2e_{Path(file_name).stem}", folder / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


@pytest.fixture
def dags_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGs folder of the test's own, as Airflow's configuration sees it: a DAG written there runs
    with dag.test() in this process, as ``airflow dags test`` runs it (Airflow 3 serializes a DAG
    only from its DAGs folder), without a process's start and execution API of its own."""
    from airflow import settings

    dags = tmp_path / "dags"
    dags.mkdir()
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
    monkeypatch.setattr(settings, "DAGS_FOLDER", str(dags))
    return dags


def run_on(dag: Any, day: pendulum.DateTime) -> Any:
    """dag.test() for one logical date (Airflow 2.11 calls it execution_date)."""
    keyword = "logical_date" if "logical_date" in inspect.signature(dag.test).parameters else "execution_date"
    return dag.test(**{keyword: day})


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the migration example keeps its schema records (the blink_schema_records Variable)."""
    monkeypatch.setenv("AIRFLOW_VAR_BLINK_SCHEMA_RECORDS", str(tmp_path / "records"))
    return tmp_path / "records"


AIRFLOW = tuple(int(part) for part in importlib.metadata.version("apache-airflow").split(".")[:2])
REVIEWS_IN_DAG_TEST = AIRFLOW >= (3, 3)
"""Whether dag.test() can run a review and be answered: Airflow 3.3's parks it awaiting input. On 3.1
dag.test() runs the review's trigger in-process, and its test supervisor answers the trigger's
read of the answer with "Unhandled request GetHITLDetailResponse": the review fails. There, the
review task is marked a success unrun, and a removal needs ``acknowledge_risks`` (as on 2.11);
the review itself is tested on 3.3 (here, and in the browser test)."""


@pytest.fixture(autouse=True)
def no_review_step_where_dag_test_cannot_run_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before Airflow 3.3, dag.test() cannot run a task that asks a person (above): the groups are
    built as on 2.11, without the review step (a removal needs ``acknowledge_risks``)."""
    if not REVIEWS_IN_DAG_TEST:
        from blinkops_provider import task_groups

        monkeypatch.setattr(task_groups, "review_step_available", lambda: False)


def run_reviewed(dag: Any, *, user: str, option: str = "Approve", **kwargs: Any) -> tuple[Any, list[str]]:
    """``dag.test(**kwargs)``, each review answered ``option`` by ``user`` as a person's answer is
    recorded (dev/reviewer.py); where dag.test() cannot run a review, it is marked a success."""
    if not REVIEWS_IN_DAG_TEST:
        return dag.test(mark_success_pattern=r"(.*\.)?review", **kwargs), []
    with reviewing(option=option, user=user) as answered:
        run = dag.test(**kwargs)
    return run, answered


def migrate(dag: Any = None, option: str = "Approve", **conf: Any) -> Any:
    """A run of the migration example, its review answered by alice (on Airflow 3.3; before,
    there is no review to answer, and the removal is acknowledged instead)."""
    dag = dag or load_dag("blink_table_schema_migration.py")
    conf = {"ws_id": "ws-demo", "table": "Incidents", "acknowledge_risks": not REVIEWS_IN_DAG_TEST, **conf}
    return run_reviewed(dag, user="alice", option=option, run_conf=conf)[0]


MIGRATION_DAG = """
import pendulum
from airflow.providers.common.compat.sdk import DAG, Param
from blinkops_provider.task_groups import BlinkTableMigration

with DAG(
    "blink_test_migration",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    params={{"ws_id": "ws-demo", "table": "Incidents", "acknowledge_risks": Param(False, type="boolean")}},
) as dag:
    BlinkTableMigration(
        "migrate",
        ws_id="{{{{ params.ws_id }}}}",
        table="{{{{ params.table }}}}",
        schema={schema!r},
        record_path="{{{{ var.value.blink_schema_records }}}}/",
        acknowledge_risks="{{{{ params.acknowledge_risks }}}}",
        review_policy={policy!r},
    )
"""


def migration_dag(dags: Path, schema: Any, policy: str = "changes") -> Any:
    """A DAG of the test's own: one BlinkTableMigration of ws-demo/Incidents with ``schema`` (a
    declaration, or a path to its file), written to the test's DAGs folder as a user writes one."""
    (dags / "migration.py").write_text(MIGRATION_DAG.format(schema=schema, policy=policy))
    return load_dag("migration.py", dags)


def state(run: Any) -> str:
    return str(getattr(run.state, "value", run.state))


def test_schema_migration_applies_every_declared_field(
    blink_sandbox: BlinkSandbox, capfd: pytest.CaptureFixture[str], records: Path
) -> None:
    run = migrate()
    assert state(run) == "success"
    # The summary is in the task's main log, not in the collapsed group Airflow opens after execute().
    printed = "".join(capfd.readouterr())
    progress = printed.index(f"{len(SCHEMA)}/{len(SCHEMA)} fields changed")  # while execute() runs: a batch's end
    assert printed.index("2/2 fields added") < progress < printed.index("1/1 fields removed")  # each batch named
    counted = "12 of 12 fields applied (2 added, 8 changed, 1 removed, 1 retyped)"
    summary = printed.index(f"Schema of ws-demo/Incidents: {counted}")
    assert printed.index("Queue: backfilled 120 row(s) with 'triage'") < progress  # before the changes
    assert progress < printed.index("Risk: retyped risk-level → single-select, 120 row(s) copied")
    assert progress < summary
    group_after_execute = re.compile(r"::group::Post|Post Execute")
    assert group_after_execute.search(printed, progress, summary) is None
    opened_after = group_after_execute.search(printed, summary) is not None
    import airflow

    assert opened_after or airflow.__version__.startswith("3.1.")  # 3.1's dags test opens no such group
    fields = {field["name"]: field for field in blink_sandbox.store.fields("ws-demo", "Incidents")}
    for declared in SCHEMA:
        field = fields[declared["field"]]
        assert (field["type"], field["display_name"]) == (declared["type"], declared["display_name"])
        attributes = declared.get("attributes", {})
        assert {name: field["attributes"].get(name) for name in attributes} == attributes
    # what the declaration leaves out is kept as Blink held it (#42): the seed's required and unique fields
    assert fields["Title"]["attributes"]["required"] is True
    assert fields["Description"]["attributes"]["is_unique"] is True
    writes = [(r["method"], r["raw_path"].rsplit("/", 1)[-1]) for r in blink_sandbox.requests if r["method"] != "GET"]
    rows = [(method, path) for method, path in writes if path.startswith("rec-")]
    assert len(rows) == 240  # the backfill's 120 rows and the retype's 120
    writes = [write for write in writes if write not in rows]
    retyping = NEW_NAMES["Risk"]
    assert sorted(writes) == sorted(
        [("POST", "fields")] * 3 + [*(("PUT", e["field"].replace(" ", "%20")) for e in SCHEMA), ("PUT", "Incidents"),
         ("PUT", "queue"), ("PUT", retyping), ("DELETE", "Risk"), ("DELETE", "Affected%20hosts")]
    )  # fmt: skip
    # (Queue is added without its check, filled, then made required; the retyped field has no check to give)
    assert writes[-1] == ("DELETE", "Affected%20hosts") and writes[0] == ("POST", "fields")  # removals last
    assert fields["root_cause"]["display_name"] == "Root cause" and "Affected hosts" not in fields
    assert fields["queue"]["attributes"]["required"] is True and "Risk" not in fields
    assert (fields[retyping]["type"], fields[retyping]["display_name"]) == ("single-select", "Risk level")
    held = blink_sandbox.store.find_records("ws-demo", "Incidents", json.dumps({"limit": 1000}))["results"]
    assert [row["queue"] for row in held] == ["triage"] * 120
    assert [row[retyping] for row in held] == [row["Risk"] for row in DEMO_ROWS["Incidents"]]
    record = json.loads((records / "ws-demo" / "Incidents.json").read_text())
    assert record["names"] == NEW_NAMES and record["backfilled"] == {"Queue": 120}


def test_a_refused_field_applies_nothing_and_asks_no_one(
    blink_sandbox: BlinkSandbox, tmp_path: Path, records: Path, dags_folder: Path
) -> None:
    """#72 item 6: a plan is one unit. A type change the plan refuses fails the plan task with the
    refusal said; nobody is asked to review, and nothing at all is sent to the table."""
    schema = [dict(entry) for entry in SCHEMA]
    broken = next(entry for entry in schema if entry["field"] == "Severity")
    broken["type"] = "text"  # a type change without type_change: the plan refuses it
    (tmp_path / "schema.json").write_text(json.dumps({"fields": schema}))
    run = migrate(migration_dag(dags_folder, str(tmp_path / "schema.json")))
    assert state(run) == "failed"
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()}
    assert states["migrate.plan"] == "failed" and states["migrate.apply"] != "success"
    assert states.get("migrate.review") in (None, "upstream_failed")  # nobody was asked
    fields = {field["name"]: field for field in blink_sandbox.store.fields("ws-demo", "Incidents")}
    assert fields["Severity"]["type"] == "single-select"
    assert [r for r in blink_sandbox.requests if r["method"] != "GET"] == []  # not one write


def reviewer_field(sandbox: BlinkSandbox) -> dict[str, Any]:
    """A second reference field in Blink (to the table itself), and its declaration moved to Users,
    which Owner references already: the plan cannot know it, Blink refuses it (one reference per
    target table) when the apply sends it."""
    body = {"type": "reference", "display_name": "Reviewer",
            "attributes": {"table_reference": {"table_name": "Incidents", "display_name_field": "Title"}}}  # fmt: skip
    sandbox.add_field("ws-demo", "Incidents", body, by="seed@sandbox.blink")
    return {"field": "reviewer", "type": "reference", "display_name": "Reviewer",
            "attributes": {"table_reference": {"table_name": "Users", "display_name_field": "Name"}}}  # fmt: skip


def test_the_batch_summary_reaches_xcom_even_when_the_task_fails(
    blink_sandbox: BlinkSandbox, tmp_path: Path, records: Path, dags_folder: Path
) -> None:
    schema = [*(dict(entry) for entry in SCHEMA), reviewer_field(blink_sandbox)]
    (tmp_path / "schema.json").write_text(json.dumps({"fields": schema}))
    dag = migration_dag(dags_folder, str(tmp_path / "schema.json"))
    run = migrate(dag, acknowledge_risks=True)
    assert state(run) == "failed"
    (ti,) = [ti for ti in run.get_task_instances() if ti.task_id == "migrate.apply"]
    summary = xcom_of(ti, dag)
    assert summary["updated"] == [entry["field"] for entry in SCHEMA]
    assert [f["field"] for f in summary["failed"]] == ["reviewer"]
    assert "already references table 'Users'" in summary["failed"][0]["message"]


def test_the_plan_is_made_against_blink_then_all_unchanged(blink_sandbox: BlinkSandbox, records: Path) -> None:
    dag = load_dag("blink_table_schema_migration.py")
    names = [entry["field"] for entry in DECLARED]
    first = migrate(dag)
    assert state(first) == "success"
    plan = xcom_of(task_of(first, "migrate.plan"), dag)
    actions = {f["field"]: f["action"] for f in plan["fields"]}
    assert [actions.pop(name) for name in [*ADDED, *REMOVED, *RETYPED]] == ["add", "add", "remove", "retype"]
    assert set(actions.values()) == {"change"}  # Blink has every other field, each differs from the seed
    assert plan["table_plan"]["action"] == "change" and plan["table_plan"]["members"] == ["description"]
    outcomes = xcom_of(task_of(first, "migrate.apply"), dag)["outcomes"]
    done = {"Root cause": "added", "Queue": "added", "Affected hosts": "removed", "Risk": "retyped"}
    assert outcomes == {**dict.fromkeys(actions, "changed"), **done}
    assert (records / "ws-demo" / "Incidents.json").is_file()

    second = migrate(dag)
    assert state(second) == "success"
    plan = xcom_of(task_of(second, "migrate.plan"), dag)
    assert {f["action"] for f in plan["fields"]} == {"unchanged"}
    assert [f["field"] for f in plan["fields"] if f.get("drift")] == []  # the added field too (#56 item 3)
    assert "The baseline is the table as Blink holds it" in plan["text"]
    assert xcom_of(task_of(second, "migrate.apply"), dag)["outcomes"] == dict.fromkeys(names, "unchanged")
    if REVIEWS_IN_DAG_TEST:  # a person is asked only when there is something to review
        from airflow.models.hitl import HITLDetail
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session

        with create_session() as session:
            asked = {ti.run_id for ti in (session.get(TaskInstance, row.ti_id) for row in session.query(HITLDetail))}
        assert (first.run_id in asked, second.run_id in asked) == (True, False)
        applied = xcom_of(task_of(first, "migrate.apply"), dag)
        assert applied["approved_by"] == "alice" and applied["approved_at"].startswith("20")
        record = json.loads((records / "ws-demo" / "Incidents.json").read_text())
        assert record["approval"] == {"approved_by": "alice", "approved_at": applied["approved_at"]}
        assert "approved_by" not in xcom_of(task_of(second, "migrate.apply"), dag)  # no one was asked


def test_the_schema_may_be_given_inline(blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path) -> None:
    inline = {"fields": [{"field": "Title", "type": "text", "display_name": "Incident title"}]}
    dag = migration_dag(dags_folder, inline)
    assert "migrate.schema" not in dag.task_ids  # a file only is read by a task of its own
    run = migrate(dag)
    assert state(run) == "success"
    assert xcom_of(task_of(run, "migrate.apply"), dag)["outcomes"] == {"Title": "changed"}
    fields = {field["name"]: field for field in blink_sandbox.store.fields("ws-demo", "Incidents")}
    assert fields["Title"]["display_name"] == "Incident title"


def test_a_wrong_schema_file_names_its_path_and_position(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    broken = dags_folder / "broken.json"
    broken.write_text('{"fields": [\n  {"field": "Title", "type": "text", "display_name": "T"}\n  {"field": "x"}\n]}')
    run = migrate(migration_dag(dags_folder, "broken.json"))  # relative: beside the DAG file
    assert state(run) == "failed"
    assert state(task_of(run, "migrate.schema")) == "failed"
    expected = f"schema file '{broken}' is not valid JSON: Expecting ',' delimiter at line 3"
    assert expected in "".join(capfd.readouterr())
    assert not [r for r in blink_sandbox.requests if r["method"] != "GET"]


def test_a_wrong_inline_schema_is_refused_before_any_request(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path
) -> None:
    run = migrate(migration_dag(dags_folder, [{"field": "Title", "type": "txt", "display_name": "T"}]))
    assert state(run) == "failed" and state(task_of(run, "migrate.plan")) == "failed"
    assert state(task_of(run, "migrate.apply")) == "upstream_failed"
    assert blink_sandbox.requests == []  # refused before the key's check


needs_review = pytest.mark.skipif(
    not REVIEWS_IN_DAG_TEST, reason="dag.test() runs a review on Airflow 3.3 (see REVIEWS_IN_DAG_TEST)"
)


@needs_review
def test_a_reject_fails_the_review_naming_who_and_sends_nothing(
    blink_sandbox: BlinkSandbox, records: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """#55: a person rejects the plan: the apply, which asked, is red and says who rejected which
    plan and when; nothing is written to Blink, and the run is failed."""
    dag = load_dag("blink_table_schema_migration.py")
    run = migrate(dag, option="Reject")
    printed = "".join(capfd.readouterr())
    assert state(run) == "failed"
    assert state(task_of(run, "migrate.apply")) == "failed"
    fingerprint = xcom_of(task_of(run, "migrate.plan"), dag)["fingerprint"]
    assert (
        f"rejected in review: nothing was applied: alice rejected plan {fingerprint} of ws-demo/Incidents at "
        in printed
    )
    assert [r for r in blink_sandbox.requests if r["method"] != "GET"] == []
    assert not (records / "ws-demo" / "Incidents.json").exists()


@needs_review
@pytest.mark.parametrize(("policy", "asked"), [("destructive", False), ("changes", True)])
def test_an_acknowledged_removal_skips_the_review_only_under_destructive(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path, policy: str, asked: bool
) -> None:
    """#55 item 4: acknowledge_risks with policy destructive removes without asking anyone; with
    changes the review is still asked, and its body says the removal is acknowledged."""
    dag = migration_dag(dags_folder, [{"field": "Affected hosts", "remove": True}], policy=policy)
    run, answered = run_reviewed(dag, user="dave", run_conf={"acknowledge_risks": True})
    assert state(run) == "success"
    assert answered == (["migrate.apply"] if asked else [])  # the apply asks, and reads its own record
    applied = xcom_of(task_of(run, "migrate.apply"), dag)
    assert applied["outcomes"] == {"Affected hosts": "removed"}
    assert (applied.get("approved_by"), applied.get("acknowledged")) == (("dave", None) if asked else (None, True))
    if asked:
        from airflow.models.hitl import HITLDetail
        from airflow.utils.session import create_session

        with create_session() as session:
            bodies = [row.body for row in session.query(HITLDetail).all()]
        assert any("The DAG already acknowledged the removals below" in (body or "") for body in bodies)


DOWNSTREAM_DAG = """
import pendulum
from airflow.providers.common.compat.sdk import DAG, task
from blinkops_provider.assets import blink_table_asset

with DAG(
    "blink_incidents_schema_changed",
    schedule=[blink_table_asset("ws-demo", "Incidents")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
) as dag:

    @task
    def react() -> None:
        pass

    react()
"""


def _has_ipv6_loopback() -> bool:
    import socket

    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    "loopback",
    [
        "127.0.0.1",
        pytest.param(
            "::1",
            marks=[
                pytest.mark.blink_sandbox(host="::1"),  # Base URL http://[::1]:<port>
                pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)"),
            ],
        ),
    ],
)
def test_a_dag_scheduled_on_the_table_asset_is_queued_by_the_migration(
    loopback: str, blink_sandbox: BlinkSandbox, records: Path, tmp_path: Path
) -> None:
    """The run the scheduler would start: the migration's event, through the operator's alias,
    queues the DAG scheduled on blink_table_asset("ws-demo", "Incidents"), on an IPv4 and an
    IPv6 Base URL alike (the asset's host keeps the IPv6 brackets)."""
    assert blink_sandbox.host == loopback
    import airflow
    from airflow import settings
    from sqlalchemy import text

    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "downstream.py").write_text(DOWNSTREAM_DAG)
    env = {**os.environ, "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    for command in (["dags", "reserialize"], ["dags", "unpause", "blink_incidents_schema_changed"]):
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *command], capture_output=True, text=True, timeout=600, env=env
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert state(migrate()) == "success"

    uri = f"blink://{asset_host(blink_sandbox.base_url)}/ws-demo/Incidents"
    assert uri.startswith("blink://[::1]:" if loopback == "::1" else "blink://127.0.0.1:")
    kind = "dataset" if airflow.__version__.startswith("2.") else "asset"
    queued = text(
        f"SELECT q.target_dag_id FROM {kind}_dag_run_queue q JOIN {kind} a ON a.id = q.{kind}_id WHERE a.uri = :uri"
    )
    with settings.engine.connect() as connection:
        assert [row[0] for row in connection.execute(queued, {"uri": uri})] == ["blink_incidents_schema_changed"]
    extra = asset_events(uri)[-1]  # this run's (earlier tests migrated the same table)
    assert extra["changed_count"] == 8 and extra["changed"][0] == "Title" and "unchanged" not in extra
    assert (list(extra["retyped"]), extra["added_count"]) == (["Risk"], 2)
    assert (extra["ws_id"], extra["table"]) == ("ws-demo", "Incidents")


EMPTY_FILTER_DAG = """
from airflow.providers.common.compat.sdk import DAG
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

with DAG("blink_filter_renders_empty", schedule=None, params={"empty": {}, "no_predicate": {"name": {}}}) as dag:
    for name in ("empty", "no_predicate"):
        ConnectionTypesToXComOperator(
            task_id=name,
            filter="{{ params.%s | tojson }}" % name,
            select=["id"],
            output_path="%s/%s.json" % (OUT, name),
        )
"""


def test_a_filter_template_that_renders_to_no_condition_lists_everything(
    blink_sandbox: BlinkSandbox, tmp_path: Path, dags_folder: Path
) -> None:
    """A DAG whose filter renders to ``{}`` or ``{"name": {}}`` lists every type, sending no filter."""
    (dags_folder / "filter_renders_empty.py").write_text(f"OUT = {str(tmp_path)!r}\n" + EMPTY_FILTER_DAG)
    assert state(load_dag("filter_renders_empty.py", dags_folder).test()) == "success"
    ids = blink_sandbox.store.connection_type_ids()
    for name in ("empty", "no_predicate"):
        assert [item["id"] for item in json.loads((tmp_path / f"{name}.json").read_text())] == ids
    sent = [json.loads(parse_qs(r["query"])["q"][0]) for r in blink_sandbox.requests]
    assert len(sent) >= 2
    assert all("name" not in json.dumps(q.get("filter")) for q in sent)  # only the walk's own id ranges


def test_the_apply_links_to_its_table_in_blinks_ui(blink_sandbox: BlinkSandbox, records: Path) -> None:
    """#63 item 11: the migration's tasks carry a "Blink table" link built from the connection's host."""
    import requests

    dag = load_dag("blink_table_schema_migration.py")
    run = migrate(dag)
    assert state(run) == "success"
    apply = task_of(run, "migrate.apply")
    task = dag.get_task("migrate.apply")
    (link,) = [link for link in task.operator_extra_links if link.name == "Blink table"]
    if AIRFLOW >= (3, 0):  # the worker computed the link when the task ended; the UI reads it from here
        url = xcom_of(apply, dag, key=link.xcom_key, raw=True)
    else:  # Airflow 2's webserver asks the link itself
        url = link.get_link(task, ti_key=apply.key)
    assert url == f"{blink_sandbox.url}/_sandbox/ui/ws-demo/tables/Incidents"
    page = requests.get(url, timeout=10)
    assert page.status_code == 200 and "<h1>Incidents</h1>" in page.text
    assert "120 rows" in page.text and "root_cause" in page.text  # the field the apply added
    assert blink_sandbox.api_key not in page.text


def task_of(run: Any, task_id: str) -> Any:
    (ti,) = [ti for ti in run.get_task_instances() if ti.task_id == task_id]
    return ti


def xcom_of(ti: Any, dag: Any, key: str = "return_value", *, raw: bool = False) -> Any:
    """A task instance's XCom (its return_value unless ``key``) from the metadata DB (Airflow 2.11 and 3);
    ``raw``: the text stored (as Airflow 3 keeps an extra link's address)."""
    try:
        from airflow.models.xcom import XComModel as XCom  # Airflow 3
    except ImportError:
        from airflow.models.xcom import XCom  # type: ignore[no-redef]
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XCom).filter_by(dag_id=dag.dag_id, task_id=ti.task_id, run_id=ti.run_id, key=key).one()
        value = row.value
    if raw:
        return value
    return (
        json.loads(value)
        if isinstance(value, str)
        else XCom.deserialize_value(row)
        if isinstance(value, bytes)
        else value
    )


def change_catalogue(sandbox: BlinkSandbox) -> dict[str, list[str]]:
    """The demo's change between two syncs (3 added, 2 removed, 4 changed): one definition of it."""
    spec = importlib.util.spec_from_file_location("blink_demo", EXAMPLE_DAGS.parent / "dev" / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo.change_catalogue(sandbox)  # type: ignore[no-any-return]


def test_nightly_sync_snapshots_and_diffs(
    blink_sandbox: BlinkSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT", str(tmp_path))
    dag = load_dag("blink_connection_types_nightly_sync.py")
    catalogue = f"blink://{asset_host(blink_sandbox.base_url)}/connection_types"  # replaces blink-connection-types
    before = len(asset_events(catalogue))  # another test on this worker may have synced the same sandbox
    first = run_on(dag, pendulum.datetime(2026, 11, 20, tz="UTC"))
    assert state(first) == "success"
    changes = change_catalogue(blink_sandbox)
    second = run_on(dag, pendulum.datetime(2026, 11, 21, tz="UTC"))
    assert state(second) == "success"

    folder = tmp_path / "connection_types" / dag.dag_id
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 4 and [name.endswith(".diff.json") for name in names] == [True, False, True, False]
    first_name, second_name = (name for name in names if not name.endswith(".diff.json"))
    assert first_name.startswith("2026-11-20T000000000000Z__") and second_name.startswith("2026-11-21T000000000000Z__")
    first_snapshot = json.loads((folder / first_name).read_text())
    second_snapshot = json.loads((folder / second_name).read_text())
    assert len(first_snapshot) == 200
    assert len(second_snapshot) == 201
    assert [item["name"] for item in second_snapshot] == sorted(item["name"] for item in second_snapshot)
    assert set(second_snapshot[0]) <= {
        "id",
        "name",
        "display_name",
        "plugin_name",
        "oauth_supported",
        "documentation_link",
        "updated_at",
        "metadata",
    }
    first_diff = json.loads((folder / first_name).with_suffix(".diff.json").read_text())
    assert first_diff["baseline"] is True and first_diff["total"] == 200  # the first run: a baseline (#36)
    assert first_diff["counts"] == {"added": 0, "removed": 0, "changed": 0, "unchanged": 0}
    assert first_diff["previous"] is None
    diff = json.loads((folder / second_name).with_suffix(".diff.json").read_text())
    assert diff["counts"] == {"added": 3, "removed": 2, "changed": 4, "unchanged": 194}
    assert {key: [t["id"] for t in diff[key]] for key in ("added", "removed", "changed")} == changes
    assert all(t["name"] for key in ("added", "removed", "changed") for t in diff[key])  # by name too (#36)
    assert all(t["members"] for t in diff["changed"])  # with what changed, old -> new
    assert diff["previous"].endswith(first_name)
    extras = asset_events(catalogue)[before:]
    assert [(e["added"], e["removed"], e["changed"], e["baseline"]) for e in extras] == [
        (0, 0, 0, True),
        (3, 2, 4, False),
    ]
    assert extras[-1]["snapshot"].endswith(second_name)
    returned = xcom_of(task_of(second, "diff"), dag)
    assert {kind: [t["id"] for t in returned[kind]] for kind in ("added", "removed", "changed")} == changes
    assert returned["more"] == {"added": 0, "removed": 0, "changed": 0}
    assert next(iter(returned)) == "counts"  # the summary leads with the counts
    first_returned = xcom_of(task_of(first, "diff"), dag)
    assert first_returned["baseline"] is True and first_returned["added"] == []

    # The catalogue changes again, and a second run the same day (at noon) reports that change,
    # against the morning's look, not the day before's; the morning's diff is kept.
    written = (folder / second_name).with_suffix(".diff.json").read_text()
    blink_sandbox.store.upsert_connection_types(
        [
            {
                "id": "ct-same-day",
                "name": "zz-same-day",
                "display_name": "Same day",
                "plugin_name": "zz",
                "oauth_supported": False,
            }
        ]
    )
    noon = run_on(dag, pendulum.datetime(2026, 11, 21, 12, tz="UTC"))
    assert state(noon) == "success"
    (noon_name,) = [
        p.name for p in folder.glob("2026-11-21T120000000000Z__*.json") if not p.name.endswith(".diff.json")
    ]
    noon_diff = json.loads((folder / noon_name).with_suffix(".diff.json").read_text())
    assert noon_diff["counts"] == {"added": 1, "removed": 0, "changed": 0, "unchanged": 201}
    assert [t["id"] for t in noon_diff["added"]] == ["ct-same-day"] and noon_diff["previous"].endswith(second_name)
    assert (folder / second_name).with_suffix(".diff.json").read_text() == written


def test_two_catalogue_syncs_on_one_day_keep_and_compare_their_own_snapshots(
    blink_sandbox: BlinkSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#56 item 1: the nightly and the event-driven sync, in one AIRFLOW_HOME on one day, share a
    run id; each writes to its own folder, and each diff compares with its own DAG's last look.
    The event-driven page says so (#63 item 11), as the catalogue operator's page does."""
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "event_driven.md").read_text().split())
    assert "same snapshot folder" not in page
    assert (
        "Each DAG keeps its snapshots in a folder of its own, `<blink_snapshot_root>/connection_types/<dag id>/`"
        in page
    )
    monkeypatch.setenv("AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT", str(tmp_path))
    spec = importlib.util.spec_from_file_location("e2e_syncs", EXAMPLE_DAGS / "blink_connection_types_nightly_sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    nightly = module.dag
    # Airflow 2.11 has no event-driven sync: a second DAG of the same sync stands in for it.
    on_change = getattr(module, "on_change", None) or module.catalogue_sync(
        "blink_connection_types_on_change", "@daily", None
    )
    day = pendulum.datetime(2026, 11, 27, tz="UTC")
    assert state(run_on(nightly, day)) == "success"
    changes = change_catalogue(blink_sandbox)
    other = run_on(on_change, day)
    assert state(other) == "success"
    root = tmp_path / "connection_types"
    assert sorted(p.name for p in root.iterdir()) == sorted([nightly.dag_id, on_change.dag_id])

    def snapshots(dag: Any) -> list[Path]:
        return sorted(p for p in (root / dag.dag_id).glob("*.json") if not p.name.endswith(".diff.json"))

    (own,) = snapshots(on_change)
    (nightly_first,) = snapshots(nightly)
    assert own.name[:26] == nightly_first.name[:26]  # one day (Airflow 2.11's dag.test: one run id too)
    baseline = json.loads(own.with_suffix(".diff.json").read_text())
    assert baseline["baseline"] is True and baseline["total"] == 201  # its own first look, not the nightly's
    assert len(json.loads(nightly_first.read_text())) == 200  # the nightly's snapshot was not overwritten
    kept = own.read_bytes()

    # The nightly's second run of the day compares with its own morning look, not the other DAG's.
    assert state(run_on(nightly, day.add(hours=12))) == "success"
    first, second = snapshots(nightly)
    assert first == nightly_first
    diff = json.loads(second.with_suffix(".diff.json").read_text())
    assert diff["previous"].endswith(f"{nightly.dag_id}/{first.name}")
    assert diff["counts"] == {"added": 3, "removed": 2, "changed": 4, "unchanged": 194}
    assert {key: [t["id"] for t in diff[key]] for key in ("added", "removed", "changed")} == changes
    assert snapshots(on_change) == [own] and own.read_bytes() == kept


def asset_events(name: str) -> list[dict[str, Any]]:
    """The extras of the events on an asset, oldest first (Airflow 2.11 calls assets datasets)."""
    import airflow
    from airflow import settings
    from sqlalchemy import text

    kind = "dataset" if airflow.__version__.startswith("2.") else "asset"
    query = text(
        f"SELECT e.extra FROM {kind}_event e JOIN {kind} a ON a.id = e.{kind}_id WHERE a.uri = :uri ORDER BY e.id"
    )
    with settings.engine.connect() as connection:
        return [
            json.loads(extra) if isinstance(extra, str) else extra
            for (extra,) in connection.execute(query, {"uri": name})
        ]


RATE_LIMITED_DAG = """
import datetime as dt
from airflow.providers.common.compat.sdk import DAG
from blinkops_provider.operators.tables import UpdateTableFieldOperator

with DAG("blink_rate_limited", schedule=None) as dag:
    UpdateTableFieldOperator(
        task_id="title", ws_id="ws-demo", table="Incidents", field="Title", field_type="text",
        display_name="Incident title",
        retries=1, retry_delay=dt.timedelta(minutes=10), hook_params={"retry_limit": 1},
    )
"""


@pytest.mark.skipif(
    not importlib.import_module("blinkops_provider.retry_policy").HAS_RETRY_POLICY,
    reason="retry_policy needs Airflow 3.3 or later",
)
def test_a_rate_limited_task_is_retried_after_blinks_retry_after_not_its_retry_delay(
    blink_sandbox: BlinkSandbox, dags_folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The task's first request (the read of the table's fields) gets a 429 with Retry-After: 2 (the
    hook does not retry: retry_limit 1); BlinkRetryPolicy has Airflow retry the task after 2 s, not
    after its 10 minutes."""
    from airflow import settings
    from sqlalchemy import text

    (dags_folder / "rate_limited.py").write_text(RATE_LIMITED_DAG)
    blink_sandbox.set_faults(sequence=[429], retry_after="2")
    run = load_dag("rate_limited.py", dags_folder).test()
    printed = "".join(capfd.readouterr())
    assert state(run) == "success", printed[-3000:]
    assert "retrying after its Retry-After, 2 s" in printed
    assert [(r["method"], r["status"]) for r in blink_sandbox.requests] == [("GET", 429), ("GET", 200), ("PUT", 200)]
    with settings.engine.connect() as connection:
        history = (
            "SELECT end_date, retry_delay_override FROM task_instance_history WHERE dag_id = :dag AND try_number = 1"
        )
        (first,) = connection.execute(text(history), {"dag": "blink_rate_limited"})
        current = "SELECT try_number, start_date, state FROM task_instance WHERE dag_id = :dag"
        (second,) = connection.execute(text(current), {"dag": "blink_rate_limited"})
    assert first[1] == 2.0  # the policy's delay, as Airflow stored it
    assert (second[0], second[2]) == (2, "success")
    waited = pendulum.parse(str(second[1])) - pendulum.parse(str(first[0]))
    assert waited.total_seconds() < 600  # not the task's retry_delay of 10 minutes


def test_a_partly_applied_migration_still_announces_what_it_changed(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path
) -> None:
    """#36: an approved plan whose apply Blink refuses in part: two fields are changed in Blink,
    one is refused (a BlinkClientError, so the run is failed), and the table's asset event still
    tells downstream DAGs which fields changed (the announce teardown)."""
    assert state(migrate(migration_dag(dags_folder, {"fields": SCHEMA}))) == "success"  # (in this DAGs folder)
    uri = f"blink://{asset_host(blink_sandbox.base_url)}/ws-demo/Incidents"
    before = len(asset_events(uri))
    changed = json.loads(json.dumps(SCHEMA))
    by_name = {entry["field"]: entry for entry in changed}
    changed.append(reviewer_field(blink_sandbox))  # refused by Blink when the apply sends it
    by_name["Description"]["display_name"] = "What happened, in short"
    by_name["Impact"]["display_name"] = "Impact (0-10)"
    run = migrate(migration_dag(dags_folder, {"fields": changed}), acknowledge_risks=True)
    assert state(run) == "failed"
    events = asset_events(uri)[before:]
    assert len(events) == 1
    assert set(events[0]["changed"]) == {"Description", "Impact"} and events[0]["changed_count"] == 2


def test_the_fleet_example_plans_each_table_reviews_once_and_applies_each(
    blink_sandbox: BlinkSandbox, records: Path
) -> None:
    """#34 (in part): the six tables of a folder of declared schemas, one mapped plan and one mapped
    apply per table, one review of all of them; every table's fields end as declared."""
    folder = EXAMPLE_DAGS / "blink_schema_fleet" / "ws-demo"
    for path in sorted(folder.glob("*.json")):  # each table's fields, named otherwise in Blink for now
        fields = json.loads(path.read_text())["fields"]
        blink_sandbox.store.add_table(
            "ws-demo",
            path.stem,
            [{**f, "name": f["field"], "display_name": "old", "attributes": f.get("attributes", {})} for f in fields],
        )
    dag = load_dag("blink_schema_fleet.py")
    run, answered = run_reviewed(dag, user="bob")
    assert answered == (["fleet.review"] if REVIEWS_IN_DAG_TEST else [])  # one review for the six tables
    assert state(run) == "success"
    for path in sorted(folder.glob("*.json")):
        declared = {f["field"]: f for f in json.loads(path.read_text())["fields"]}
        stored = {f["name"]: f for f in blink_sandbox.store.fields("ws-demo", path.stem)}
        assert {name: stored[name]["display_name"] for name in declared} == {
            name: f["display_name"] for name, f in declared.items()
        }
        assert (records / "ws-demo" / f"{path.stem}.json").exists()
        assert len(list((records / "ws-demo" / f"{path.stem}.json.backups").glob("*.jsonl"))) == 1  # (#74)
    summary = xcom_of(task_of(run, "fleet.summary"), dag)
    assert sorted(summary["applied"]) == [f"ws-demo/{path.stem}" for path in sorted(folder.glob("*.json"))]
    assert len(summary["applied"]) == 6
    assert summary["failed"] == summary["stale"] == [] and summary["rate_limited"] == 0
    # #74: each table of the fleet rolls back on its own, from the backup its apply wrote
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import RollbackRequest, rollback

    first = sorted(folder.glob("*.json"))[0]
    names = {f["field"] for f in json.loads(first.read_text())["fields"]}
    rollback(BlinkHook(), RollbackRequest("ws-demo", first.stem, f"{records}/"))
    assert {f["display_name"] for f in blink_sandbox.store.fields("ws-demo", first.stem) if f["name"] in names} == {
        "old"
    }


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "table_migration.md"


def docs_code(heading: str) -> str:
    """The first Python block below ``heading`` on the BlinkTableMigration page, as a user copies it."""
    section = DOCS_PAGE.read_text().split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def docs_dag_test(dags: Path, capfd: pytest.CaptureFixture[str], name: str) -> str:
    """The docs' DAG as ``airflow dags test`` runs it (``dag.test()``), its review answered as a
    person's is on 3.1+: what it printed."""
    run, _ = run_reviewed(load_dag(name, dags), user="erin")
    printed = "".join(capfd.readouterr())
    assert state(run) == "success", printed[-3000:]
    return printed


SEVERITY = {"field": "Severity", "type": "single-select", "display_name": "Severity",
            "attributes": {"options": ["Low", "Medium", "High", "Critical"], "default_value": "Medium"}}  # fmt: skip


def test_the_docs_one_line_dag_runs_as_written(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """#55: the docs' complete DAG, copied out of the page as a user would, on this Airflow line: a
    run with a change plans, reviews (3.1+) and applies; a run with nothing to change asks no one
    and writes nothing."""
    (dags_folder / "incidents_schema.py").write_text(docs_code("## A complete DAG") + "\n")
    (dags_folder / "incidents.json").write_text(json.dumps({"fields": [SEVERITY]}))
    first = docs_dag_test(dags_folder, capfd, "incidents_schema.py")
    assert "Schema of ws-demo/Incidents: 1 of 1 fields applied (1 changed)" in first, first[-3000:]
    writes = len([r for r in blink_sandbox.requests if r["method"] != "GET"])
    second = docs_dag_test(dags_folder, capfd, "incidents_schema.py")
    assert "0 to add, 0 to change (0 destructive), 1 unchanged" in second, second[-3000:]
    assert "Schema of ws-demo/Incidents: 1 of 1 fields applied (1 unchanged)" in second, second[-3000:]
    assert len([r for r in blink_sandbox.requests if r["method"] != "GET"]) == writes  # a rerun writes nothing
    assert (records / "ws-demo" / "Incidents.json").is_file()


@needs_review
def test_the_docs_dag_wired_by_hand_runs_as_written(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """#55 item 5: the operators wired by hand with review_task_id, as the page shows them: the
    review's Approve lets the apply run; its XCom, a copy, names no approver (#63 item 1)."""
    (dags_folder / "incidents_by_hand.py").write_text(docs_code("## Wiring the operators yourself") + "\n")
    printed = docs_dag_test(dags_folder, capfd, "incidents_by_hand.py")
    assert "Schema of ws-demo/Incidents: 1 of 1 fields applied (1 changed)" in printed, printed[-3000:]
    assert not re.search(r"approved by erin", printed), printed[-3000:]


def test_tables_pulled_into_a_folder_plan_all_unchanged_in_the_fleet_asking_no_review(
    blink_sandbox: BlinkSandbox, records: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """#57: ``blink-schema pull --all`` writes one file per table, where the fleet reads them (a
    name with a ``/`` included); the fleet example over that folder plans every table unchanged,
    asks no one, and writes nothing."""
    from blinkops_provider.cli.main import main

    blink_sandbox.create_table(
        "ws-demo", "Q1/Q2 plans", {"fields": [{"field": "A", "type": "text", "display_name": "A"}]}
    )
    folder = tmp_path / "pulled"
    assert main(["pull", "ws-demo", "--all", "-o", str(folder)]) == 0
    writes = len([r for r in blink_sandbox.requests if r["method"] != "GET"])
    dag = load_dag("blink_schema_fleet.py")
    run, answered = run_reviewed(dag, user="bob", run_conf={"folder": str(folder)})
    printed = "".join(capfd.readouterr())
    assert state(run) == "success", printed[-3000:]
    assert answered == []  # nothing to review: the review skips itself (where dag.test() runs one)
    assert not REVIEWS_IN_DAG_TEST or task_of(run, "fleet.review").state == "skipped"
    summary = xcom_of(task_of(run, "fleet.summary"), dag)
    assert sorted(summary["unchanged"]) == ["ws-demo/Incidents", "ws-demo/Q1/Q2 plans", "ws-demo/Users"], summary
    assert summary["applied"] == summary["failed"] == []
    assert len([r for r in blink_sandbox.requests if r["method"] != "GET"]) == writes


def test_the_adoption_pages_dag_writes_each_pulled_declaration_for_review(
    blink_sandbox: BlinkSandbox, dags_folder: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """#57 item 4: the DAG of the "Adopting existing tables" page, copied as a user would, pulls
    tables and writes each declaration where it was told (a local folder here)."""
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import pull_schema

    page = (Path(__file__).resolve().parents[2] / "docs" / "adopting.md").read_text()
    code = page.split("## In Python, or as a task", 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    (dags_folder / "pull_schemas.py").write_text(code + "\n")
    conf = {"ws_id": "ws-demo", "tables": ["Incidents", "Users"], "to": str(tmp_path / "pulled")}
    run = load_dag("pull_schemas.py", dags_folder).test(run_conf=conf)
    printed = "".join(capfd.readouterr())
    assert state(run) == "success", printed[-3000:]
    for table in ("Incidents", "Users"):
        written = json.loads((tmp_path / "pulled" / "ws-demo" / f"{table}.json").read_text())
        assert written == pull_schema(BlinkHook(), "ws-demo", table)


@needs_review
def test_an_answer_overwritten_by_dag_tests_own_write_is_resumed_not_waited_on_for_ever(
    blink_sandbox: BlinkSandbox, records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI run under load hung: dag.test() stored the review's parked state over the answer's
    resume (SQLite takes no row lock). Here each answer is followed by that overwrite; the
    reviewer resumes the answered review with the same answer, and the run ends as approved."""
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import update

    from dev import reviewer

    answered = reviewer.answer

    def answer_then_overwritten(dag_id: str, run_id: str, task_id: str, map_index: int, **kwargs: Any) -> None:
        answered(dag_id, run_id, task_id, map_index, **{**kwargs, "commit": False})
        session = kwargs["session"]
        stored = update(TaskInstance).where(TaskInstance.run_id == run_id, TaskInstance.task_id == task_id)
        session.execute(stored.values(state="awaiting_input"))  # as dag.test()'s late write does
        session.commit()  # (one transaction: dag.test() never sees the answer's resume before the overwrite)

    monkeypatch.setattr(reviewer, "answer", answer_then_overwritten)
    run = migrate()
    assert state(run) == "success"
    apply = xcom_of(task_of(run, "migrate.apply"), load_dag("blink_table_schema_migration.py"))
    assert apply["approved_by"] == "alice"


# -- #63 item 1: an approval that an XCom edit cannot forge ------------------------------------------

ASSIGNED_DAG = """
import pendulum
from airflow.providers.common.compat.sdk import DAG
from blinkops_provider.task_groups import BlinkTableMigration

with DAG("blink_assigned_review", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:
    BlinkTableMigration(
        "migrate",
        ws_id="ws-demo",
        table="Incidents",
        schema=[{"field": "Affected hosts", "remove": True}],
        record_path="{{ var.value.blink_schema_records }}/",
        assigned_users=[{"id": "alice", "name": "alice"}],
    )
"""
FORGED_APPROVE = {
    "chosen_options": ["Approve"],
    "params_input": {},
    "responded_at": "2026-11-28T01:02:03+00:00",
    "responded_by_user": {"id": "alice", "name": "alice"},
}


def forge_xcoms(session: Any, dag_id: str, run_id: str) -> None:
    """What a user allowed to edit XComs (not to answer reviews) can do through Airflow's REST API
    (its handlers, called as the API server calls them): an "Approve" as the asking task's return
    value, and a plan XCom that claims a review."""
    from airflow.api_fastapi.common.dagbag import create_dag_bag
    from airflow.api_fastapi.core_api.datamodels.xcom import XComCreateBody, XComUpdateBody
    from airflow.api_fastapi.core_api.routes.public.xcom import create_xcom_entry, update_xcom_entry
    from fastapi import HTTPException

    body = XComCreateBody(key="return_value", value=FORGED_APPROVE)
    try:
        create_xcom_entry(dag_id, "migrate.apply", run_id, body, session=session, dag_bag=create_dag_bag())
    except HTTPException as err:  # a second look after a locked database (a loaded machine): forged already
        if err.status_code != 409:
            raise
        session.rollback()
        update = XComUpdateBody(value=FORGED_APPROVE)
        update_xcom_entry(dag_id, "migrate.apply", run_id, "return_value", update, session=session)
    claim = {"review": {"reviewed": True}, "approved_by": "alice", **FORGED_APPROVE}
    update_xcom_entry(dag_id, "migrate.plan", run_id, "return_value", XComUpdateBody(value=claim), session=session)
    session.commit()


def review_as(act: Any) -> Any:
    """While the block runs, ``act(session, dag_id, run_id, task_id, map_index)`` on each review that
    waits (dev/reviewer.py's loop, with another answer)."""
    from dev import reviewer

    return reviewer.reviewing_with(act)


@needs_review
@pytest.mark.parametrize("then", ["Reject", "no answer"])
def test_an_approve_written_into_xcoms_through_the_rest_api_removes_nothing(
    blink_sandbox: BlinkSandbox, records: Path, dags_folder: Path, then: str
) -> None:
    from dev import reviewer

    (dags_folder / "assigned.py").write_text(ASSIGNED_DAG)
    dag = load_dag("assigned.py", dags_folder)
    seen: list[tuple[str, int]] = []

    def act(session: Any, dag_id: str, run_id: str, task_id: str, map_index: int) -> None:
        forge_xcoms(session, dag_id, run_id)
        waiting = [task for _, run, task, _ in reviewer.waiting_reviews(session) if run == run_id]
        seen.append((task_id, len([r for r in blink_sandbox.requests if r["method"] != "GET"])))
        assert waiting == ["migrate.apply"]  # the forged answer resumed nothing: the apply still waits
        if then == "Reject":
            reviewer.answer(dag_id, run_id, task_id, map_index, option="Reject", user="alice", session=session)
        else:  # no one answers: the review times out, as a person's silence does
            reviewer.time_out(session, run_id, task_id, map_index)

    with reviewer.reviewing_with(act):
        run = dag.test()
    assert seen and set(seen) == {("migrate.apply", 0)}  # (looked at again after a locked database: the same)
    assert state(run) == "failed" and state(task_of(run, "migrate.apply")) == "failed"
    assert [r for r in blink_sandbox.requests if r["method"] == "DELETE"] == []
    assert "Affected hosts" in {f["name"] for f in blink_sandbox.store.fields("ws-demo", "Incidents")}


@needs_review
@pytest.mark.parametrize(("user", "removed"), [("mallory", False), ("alice", True)])
def test_only_an_assigned_users_answer_through_the_rest_api_lets_the_removal_through(
    blink_sandbox: BlinkSandbox,
    records: Path,
    dags_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    user: str,
    removed: bool,
) -> None:
    """Airflow's handler lets anyone answer when its auth manager says so (the simple one's
    all-admins mode, as ``make airflow-ui`` runs): then only an answer from one of the review's
    ``assigned_users`` lets the removal through."""
    from dev import reviewer

    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "True")
    (dags_folder / "assigned.py").write_text(ASSIGNED_DAG)
    dag = load_dag("assigned.py", dags_folder)

    def act(session: Any, dag_id: str, run_id: str, task_id: str, map_index: int) -> None:
        reviewer.answer(dag_id, run_id, task_id, map_index, option="Approve", user=user, session=session)

    with reviewer.reviewing_with(act):
        run = dag.test()
    printed = "".join(capfd.readouterr())
    deletes = [r for r in blink_sandbox.requests if r["method"] == "DELETE"]
    assert (state(run) == "success", len(deletes)) == (removed, int(removed)), printed[-3000:]
    if removed:
        applied = xcom_of(task_of(run, "migrate.apply"), dag)
        assert applied["outcomes"] == {"Affected hosts": "removed"} and applied["approved_by"] == "alice"
    else:
        assert "answered by 'mallory' (id mallory), who is not among its assigned_users (alice (id alice))" in printed
