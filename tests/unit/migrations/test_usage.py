"""
A plan's blast radius (#75, ``migrations._usage``): the Blink workflows whose steps use what a change takes away, named
before anyone approves; what could not be read listed as such; a refused read said as "not checked".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError, BlinkStalePlanError
from blinkops_provider.migrations import apply_schema, plan_markdown, plan_schema, plan_xcom
from blinkops_provider.utils.states import Action
from tests.fake_blink import FakeBlink, blink_field, step, workflow

HELD = {
    "incidents": [
        blink_field("Risk", "text"),
        blink_field("Severity", "single-select", options=["Low", "High"]),
        blink_field("Owner", "text"),
        blink_field("Title", "text"),
    ],
    "users": [blink_field("Risk", "text"), blink_field("Name", "text")],
}
ROWS = [{"id": "r1", "Risk": "x", "Severity": "High", "Owner": "a", "Title": "t"}]


def kinds_of_use() -> list[dict[str, Any]]:
    """One workflow per kind of use of 'Risk' in table 'incidents', and ones that must not be listed."""
    return [
        workflow("wf-input", "Per-column input", [step("S1", "tables.AddRecordV2", Risk="high", Title="t")]),
        workflow("wf-ci", "Condition", [step("S1", "tables.GetRecordsV3", ci='{"Risk": {"$eq": "high"}}')]),
        workflow(
            "wf-rql",
            "RQL query",
            [step("S1", "tables.GetRecordsV3", query='{"filter": {"Title": "x"}, "sort": ["-Risk"]}')],
            active=False,
        ),
        workflow("wf-body", "JSON body", [step("S1", "tables.UpdateRecords", data='[{"id": "1", "Risk": "low"}]')]),
        workflow(
            "wf-users", "Other table, same field name", [step("S1", "tables.GetRecordsV3", "users", ci={"Risk": 1})]
        ),
        workflow("wf-display", "Display name only", [step("S1", "tables.AddRecordV2", **{"Risk level": "x"})]),
        workflow("wf-other", "Other field", [step("S1", "tables.GetRecordsV3", ci={"Owner": "a"})]),
        workflow(
            "wf-broken",
            "Broken",
            "steps:\n  - {id: S1, action: tables.AddRecordV2, inputs: {table: incidents, Risk: x\n",
        ),
        workflow("wf-elsewhere", "Broken, elsewhere", "steps:\n  - {id: S1, action: tables.AddRecordV2\n"),
        workflow(
            "wf-expr", "Table from an expression", [step("S1", "tables.AddRecordV2", "{{ steps.S0.output.t }}", Risk=1)]
        ),
        workflow("wf-sql", "SQL", [step("S1", "tables.GetRecordsV3", None, sql="SELECT Risk FROM incidents")]),
    ]


def removal() -> list[dict[str, Any]]:
    return [{"field": "Risk", "remove": True}]


@pytest.fixture
def blink() -> Any:
    with rm.Mocker() as m:
        fake = FakeBlink(HELD).mount(m)
        fake.records["incidents"] = [dict(row) for row in ROWS]
        fake.workflows = kinds_of_use()
        yield fake


def test_a_removal_names_exactly_the_workflows_and_steps_that_use_the_field(hook: Any, blink: Any) -> None:
    (row,) = plan_schema(hook, "ws-1", "incidents", removal()).fields
    known = {(use.id, use.steps, use.active) for use in row.workflows if not use.unread}
    assert known == {
        ("wf-input", (("S1", "written"),), True),
        ("wf-ci", (("S1", "filtered on"),), True),
        ("wf-rql", (("S1", "read"),), False),
        ("wf-body", (("S1", "written"),), True),
    }  # not another table's field of the same name, not a display name, not another field
    unread = {use.id: use.unread for use in row.workflows if use.unread}
    assert set(unread) == {"wf-broken", "wf-expr", "wf-sql"}  # (one that names neither the table nor an expression
    # cannot use it: it is not parsed)
    assert unread["wf-broken"].startswith("its definition does not parse as YAML at line")
    assert "on a table it does not name" in unread["wf-expr"]
    assert unread["wf-sql"] == "step S1 (tables.GetRecordsV3) names 'Risk' only in free text (sql)"
    assert row.destructive and row.breaks_workflows
    assert blink.workflow_reads == 1  # one paged walk


def test_the_plan_says_them_in_its_text_markdown_and_xcom(hook: Any, blink: Any) -> None:
    planned = plan_xcom(plan_schema(hook, "ws-1", "incidents", removal()))
    markdown = plan_markdown(planned)
    assert "**Workflows it breaks**" in markdown
    assert "- Risk (remove): 'Condition' (wf-ci, active): step S1 (filtered on)" in markdown
    assert "- Risk (remove): 'RQL query' (wf-rql, inactive): step S1 (read)" in markdown
    assert "- Risk (remove): could not be read: 'Broken' (wf-broken, inactive)" not in markdown  # it is active
    assert "- Risk (remove): could not be read: 'Broken' (wf-broken, active): its definition does not parse" in markdown
    assert "breaks 3 active workflow(s): 'Per-column input', 'Condition', 'JSON body'" in markdown
    (row,) = planned["fields"]
    assert {
        "workflow": "Condition",
        "id": "wf-ci",
        "active": True,
        "steps": [{"step": "S1", "use": "filtered on"}],
    } in (row["workflows"])
    assert json.loads(json.dumps(planned)) == planned  # JSON-ready


def test_a_display_name_change_reads_no_workflow(hook: Any, blink: Any) -> None:
    declared = [{"field": "Risk", "type": "text", "display_name": "Risk level"}]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert (row.action, row.workflows, row.destructive) == (Action.CHANGE, (), False)
    assert blink.workflow_reads == 0  # nothing a step can notice: the workflows are not read


def test_required_on_names_the_steps_that_add_rows_without_the_field(hook: Any, blink: Any) -> None:
    blink.workflows = [
        workflow("wf-add", "Adds without", [step("S1", "tables.AddRecordV2", Title="t")]),
        workflow("wf-sets", "Adds with", [step("S1", "tables.AddRecordV2", Title="t", Owner="a")]),
        workflow("wf-insert", "Insert", [step("S2", "system.TableInsert", data='{"Title": "t"}')]),
        workflow("wf-read", "Reads", [step("S1", "tables.GetRecordsV3", ci={"Owner": "a"})]),
    ]
    declared = [{"field": "Owner", "type": "text", "display_name": "Owner", "attributes": {"required": True}}]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert [(use.id, use.steps) for use in row.workflows] == [
        ("wf-add", (("S1", "adds rows without it"),)),
        ("wf-insert", (("S2", "adds rows without it"),)),
    ]


def test_is_unique_on_names_the_steps_that_write_the_field(hook: Any, blink: Any) -> None:
    blink.workflows = [
        workflow("wf-write", "Writes", [step("S1", "tables.UpdateRecords", data='[{"id": "1", "Owner": "b"}]')]),
        workflow("wf-read", "Reads", [step("S1", "tables.GetRecordsV3", ci={"Owner": "a"})]),
    ]
    declared = [{"field": "Owner", "type": "text", "display_name": "Owner", "attributes": {"is_unique": True}}]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert [(use.id, use.steps) for use in row.workflows] == [("wf-write", (("S1", "written"),))]


def test_an_option_dropped_names_the_steps_that_mention_the_field(hook: Any, blink: Any) -> None:
    blink.workflows = [workflow("wf-sev", "Severity", [step("S1", "tables.GetRecordsV3", ci={"Severity": "Low"})])]
    declared = [
        {"field": "Severity", "type": "single-select", "display_name": "Severity", "attributes": {"options": ["High"]}}
    ]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert [(use.id, use.steps) for use in row.workflows] == [("wf-sev", (("S1", "filtered on"),))]


def test_an_inactive_workflow_alone_is_listed_but_not_destructive(hook: Any, blink: Any) -> None:
    blink.workflows = [workflow("wf-off", "Off", [step("S1", "tables.GetRecordsV3", ci={"Title": "a"})], active=False)]
    declared = [{"field": "Title", "type": "text", "display_name": "Title", "attributes": {"required": True}}]
    blink.records["incidents"] = [{"id": "r1", "Title": "t"}]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert row.workflows == () and not row.destructive  # a read of the field does not break on required
    blink.workflows = [workflow("wf-off", "Off", [step("S1", "tables.AddRecordV2", Owner="a")], active=False)]
    (row,) = plan_schema(hook, "ws-1", "incidents", declared).fields
    assert [use.id for use in row.workflows] == ["wf-off"] and not row.destructive


@pytest.mark.parametrize("status", [403, 404, 405])
def test_a_refused_workflows_read_is_said_as_not_checked_and_is_destructive(hook: Any, blink: Any, status: int) -> None:
    blink.workflows_status = status
    declared = [{"field": "Owner", "type": "text", "display_name": "Owner", "attributes": {"is_unique": True}}]
    planned = plan_schema(hook, "ws-1", "incidents", declared)
    (row,) = planned.fields
    assert row.workflows_unread == f"workflows not checked: Blink answered {status} to the workflows read"
    assert row.destructive
    markdown = plan_markdown(plan_xcom(planned))
    assert f"- Owner (change): workflows not checked: Blink answered {status} to the workflows read" in markdown


def test_a_break_of_an_active_workflow_is_not_applied_without_approval(hook: Any, blink: Any, tmp_path: Path) -> None:
    declared = [{"field": "Owner", "type": "text", "display_name": "Owner", "attributes": {"is_unique": True}}]
    blink.workflows = [workflow("wf-write", "Writes", [step("S1", "tables.UpdateRecords", data='[{"Owner": "b"}]')])]
    with pytest.raises(BlinkInputError, match=r"breaks Blink workflows: 'Owner' \(change\): 'Writes' \(wf-write\)"):
        apply_schema(hook, "ws-1", "incidents", declared, record_path=f"{tmp_path}/")
    assert blink.puts == []
    result = apply_schema(hook, "ws-1", "incidents", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert result.outcomes() == {"Owner": "changed"}
    assert result.workflows == {"Owner": ["wf-write"]}  # the XCom's "workflows", and the record's:
    assert json.loads((tmp_path / "ws-1" / "incidents.json").read_text())["workflows"] == {"Owner": ["wf-write"]}
    from blinkops_provider.assets import event_extra

    extra = event_extra("ws-1", "incidents", ["Owner"], workflows=result.workflows)
    assert (extra["workflows"], extra["workflows_count"]) == (("wf-write",), 1)


def test_workflow_usage_refuse_refuses_before_any_write_naming_workflows_and_steps(
    hook: Any, blink: Any, tmp_path: Path
) -> None:
    with pytest.raises(BlinkInputError) as refused:
        apply_schema(
            hook,
            "ws-1",
            "incidents",
            removal(),
            record_path=f"{tmp_path}/",
            acknowledge_risks=True,
            workflow_usage="refuse",
        )
    said = str(refused.value)
    assert "it breaks active workflow(s) 'Per-column input' (wf-input): S1 (written)" in said
    assert "workflow_usage='refuse'" in said
    assert blink.puts == blink.deletes == [] and not list(tmp_path.glob("**/*.jsonl"))  # not even a backup
    planned = plan_schema(hook, "ws-1", "incidents", removal(), workflow_usage="refuse")
    assert planned.fields[0].action == Action.REFUSED
    with pytest.raises(BlinkInputError, match=r"workflow_usage must be one of 'review', 'refuse', got 'ignore'"):
        plan_schema(hook, "ws-1", "incidents", removal(), workflow_usage="ignore")


def test_a_workflow_that_starts_using_the_field_after_the_review_makes_the_plan_stale(
    hook: Any, blink: Any, tmp_path: Path
) -> None:
    blink.workflows = []
    reviewed = plan_xcom(plan_schema(hook, "ws-1", "incidents", removal(), record_path=f"{tmp_path}/"))
    blink.workflows = [workflow("wf-new", "New", [step("S1", "tables.GetRecordsV3", ci={"Risk": "x"})])]
    with pytest.raises(BlinkStalePlanError):
        apply_schema(
            hook, "ws-1", "incidents", removal(), record_path=f"{tmp_path}/", plan=reviewed, acknowledge_risks=True
        )
    assert blink.deletes == []


def test_the_workflows_walk_is_checked_like_every_walk(hook: Any, blink: Any) -> None:
    blink.workflows = [workflow(f"wf-{n}", f"W{n}", [step("S1", "tables.GetRecordsV3")]) for n in range(7)]
    assert [one.id for one in hook.iter_workflows("ws-1", page_size=3)] == [f"wf-{n}" for n in range(7)]
    with pytest.raises(BlinkInputError, match="page_size must be an integer from 1 to 1000"):
        hook.iter_workflows("ws-1", page_size=0)


def test_a_short_or_doubled_workflows_walk_is_an_error(hook: Any) -> None:
    from blinkops_provider.exceptions import BlinkResponseError

    url = "https://blink.test/api/v1/workspace/ws-1/playbooks"
    one = workflow("wf-1", "One", [])
    with rm.Mocker() as m:
        m.get(
            url,
            [{"json": {"results": [one], "total": 3, "limit": 1, "offset": 0}}, {"json": {"results": [], "total": 3}}],
        )
        with pytest.raises(BlinkResponseError, match=r"it ended at 1 workflows where Blink said 3 \(a short walk\)"):
            list(hook.iter_workflows("ws-1", page_size=1))
        m.get(url, [{"json": {"results": [one], "total": 2}}, {"json": {"results": [one], "total": 2}}])
        with pytest.raises(BlinkResponseError, match=r"repeats a workflow \(a doubled walk\)"):
            list(hook.iter_workflows("ws-1", page_size=1))


# -- against the sandbox, and the docs' page ------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "example_dags" / "blink_table_schema_migration.json"
PAGE = Path(__file__).resolve().parents[3] / "docs" / "workflows.md"


def test_against_the_sandbox_the_demo_plan_names_exactly_its_workflows(blink_sandbox: Any, tmp_path: Path) -> None:
    from blinkops_provider.hooks.blink import BlinkHook

    planned = plan_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text()))
    found = {
        (row.field, use.id, use.steps): use.active for row in planned.fields for use in row.workflows if not use.unread
    }
    assert found == {
        ("Risk", "pb-triage", (("S1", "filtered on"), ("S2", "written"))): True,  # a condition, a per-column input
        ("Queue", "pb-triage", (("S2", "adds rows without it"),)): True,  # an upsert without the new required field
        ("Queue", "pb-sweep", (("S2", "adds rows without it"),)): True,  # a JSON body without it
        ("Affected hosts", "pb-sweep", (("S1", "read"), ("S2", "written"))): True,  # an RQL select, a JSON body
    }  # not the Users workflow, not the display-name changes (Description, Impact, Resolved, Due)
    unread = {(row.field, use.id) for row in planned.fields for use in row.workflows if use.unread}
    assert unread == {
        ("Risk", "pb-report"),  # named in an SQL query only
        ("Risk", "pb-draft"),  # does not parse
        ("Queue", "pb-draft"),
        ("Affected hosts", "pb-draft"),
    }
    blink_sandbox.set_faults(workflows_read_status=404)
    refused = plan_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text()))
    assert {row.field for row in refused.fields if row.workflows_unread} == {"Risk", "Queue", "Affected hosts"}
    assert refused.fingerprint != planned.fingerprint


def page_blocks(kind: str) -> list[str]:
    import re

    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), flags=re.S)


def test_the_pages_example_runs_as_written(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re
    import shlex

    from blinkops_provider.cli.main import main

    monkeypatch.chdir(EXAMPLE.parents[1])  # the page's paths are the repository's
    (block,) = page_blocks("console")
    command, *output = block.splitlines()
    assert main(shlex.split(command.removeprefix("$ "))[1:]) == 0
    printed = capsys.readouterr().out
    for line in output:
        pattern = re.compile(".+?".join(re.escape(part) for part in re.split(r"<[a-z ]+>", line)))
        assert pattern.search(printed), f"{line!r} not in:\n{printed}"
