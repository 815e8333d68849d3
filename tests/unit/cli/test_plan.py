"""``blink-schema plan`` (blinkops_provider.cli.plan, #65): the plan printed as text, Markdown or JSON, its exit status
with ``--detailed-exitcode``, a fleet's folder, and each mistake one line, exit 1, never the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_markdown, plan_schema, plan_xcom
from tests.fake_blink import FakeBlink, blink_field

# -- #65: blink-schema plan ------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "example_dags" / "blink_table_schema_migration.json"


def writes_of(sandbox: Any) -> list[Any]:
    return [entry for entry in sandbox.requests if entry["method"] != "GET"]


def test_plan_prints_the_plan_and_says_with_its_exit_code_whether_anything_would_change(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records"
    args = ["plan", "ws-demo", "Incidents", str(EXAMPLE), "--record-path", f"{records}/"]
    assert main(args) == 0  # without --detailed-exitcode: 0 whatever the plan
    text = capsys.readouterr().out
    assert "2 to add, 8 to change, 1 to remove, 1 to retype (3 destructive)" in text  # Queue breaks workflows (#75)
    assert "- Affected hosts: remove: deletes values in 90 of 120 rows, permanently" in text
    assert "- Queue: add: breaks 2 active workflow(s): 'Triage new incidents', 'Nightly host sweep'" in text
    assert main([*args, "--detailed-exitcode"]) == 2
    capsys.readouterr()
    assert writes_of(blink_sandbox) == [] and not records.exists()  # it reads; it never writes
    apply_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text()), record_path=f"{records}/",
                 acknowledge_risks=True)  # fmt: skip
    recorded = (records / "ws-demo" / "Incidents.json").read_bytes()
    assert main([*args, "--detailed-exitcode"]) == 0
    said = capsys.readouterr().out
    assert "11 unchanged, 1 already gone" in said and "| 11 fields | unchanged |" in said
    assert (records / "ws-demo" / "Incidents.json").read_bytes() == recorded  # the baseline is read, not written


def test_plan_markdown_is_the_review_body_and_json_is_the_plans_xcom(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    args = ["plan", "ws-demo", "Incidents", str(EXAMPLE), "--out", str(out)]
    assert main([*args, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    planned = plan_xcom(plan_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text())))
    assert plan_markdown(planned) == markdown.rstrip("\n")  # the review shows exactly this, then Approve and Reject
    assert markdown.startswith(f"**Plan `{planned['fingerprint']}`** for ws-demo/Incidents")
    assert main([*args, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["fingerprint"] == planned["fingerprint"] and shown["fields"] == planned["fields"]
    assert json.loads(out.read_text()) == shown


def test_plan_of_a_folder_plans_every_table_as_the_fleet(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = Path(__file__).resolve().parents[3] / "example_dags" / "blink_schema_fleet"
    for path in sorted(folder.glob("*/*.json")):  # the fleet's tables, made as a user would
        blink_sandbox.create_table(path.parent.name, path.stem, json.loads(path.read_text()))
    assert main(["plan", "--folder", str(folder), "--detailed-exitcode", "--format", "markdown"]) == 0
    said = capsys.readouterr().out
    count = len(list(folder.glob("*/*.json")))
    assert said.startswith(f"Fleet review: {count} tables: ") and "unchanged" in said
    assert main(["plan", "--folder", str(folder), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == count


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["plan", "ws-demo", "Incidents"], "give WS_ID TABLE DECLARATION"),
        (["plan", "ws-demo", "Nope", "EXAMPLE"], "no table 'Nope' in workspace 'ws-demo'"),
        (["plan", "ws-demo", "Incidents", "/no/such.json"], "No such file or directory"),
        (["plan", "--folder", "/nowhere", "ws-demo"], "not both"),
    ],
)
def test_each_mistake_of_plan_is_one_line_and_exit_1(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    argv = [str(EXAMPLE) if part == "EXAMPLE" else part for part in argv]
    assert main([*argv, "--detailed-exitcode"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and said in captured.err, captured.err
    assert writes_of(blink_sandbox) == []


def test_plan_with_a_refused_key_never_prints_it(
    blink_sandbox: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BLINK_BASE_URL", blink_sandbox.base_url)
    monkeypatch.setenv("BLINK_API_KEY", "wrong-key-123456")
    assert main(["plan", "ws-demo", "Incidents", str(EXAMPLE)]) == 1
    err = capsys.readouterr().err
    assert "401" in err and "wrong-key" not in err and "123456" not in err
    # (#72 item 8) said in the terms the connection was given in: the variables, not Airflow's connection
    assert "check BLINK_API_KEY" in err and "the connection that BLINK_BASE_URL and BLINK_API_KEY give" in err
    assert "blink_default" not in err and "password" not in err and "header_name" not in err


def test_plan_against_a_blink_with_its_own_naming_rule(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """#65: plan's exit codes against the tests' own fake Blink (opaque names, its own rule), the
    connection given as BLINK_BASE_URL/BLINK_API_KEY; nothing is written."""

    monkeypatch.setenv("BLINK_BASE_URL", "https://blink.test")
    monkeypatch.setenv("BLINK_API_KEY", "fake-key-0123456789")
    held = {"T": [blink_field("fld_0001", "text", "Title")]}
    declared = tmp_path / "T.json"
    declared.write_text(json.dumps([{"field": "fld_0001", "type": "text", "display_name": "Title"}]))
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        assert main(["plan", "ws-1", "T", str(declared), "--detailed-exitcode"]) == 0
        assert "1 unchanged" in capsys.readouterr().out
        declared.write_text(json.dumps([{"field": "fld_0001", "type": "text", "display_name": "Title!"}]))
        assert main(["plan", "ws-1", "T", str(declared), "--detailed-exitcode", "--format", "json"]) == 2
        (row,) = json.loads(capsys.readouterr().out)["fields"]
        assert (row["action"], row["members"]) == ("change", ["display_name"])
        assert [r.method for r in m.request_history if r.method != "GET"] == [] and blink.puts == []


# -- #72 item 8: the commands -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "table"),
    [
        (
            [{"field": "Title", "type": "text", "display_name": "Title"}, {"field": "Title", "remove": True}],
            "Incidents",
        ),
        ([{"field": "Title", "type": "text", "display_name": "Title"}], "Incidentz"),
    ],
    ids=["tombstone-conflict", "mistyped-table"],
)
def test_a_mistake_that_is_not_the_connections_gets_no_connection_advice(
    blink_sandbox: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    declared: Any,
    table: str,
) -> None:
    monkeypatch.setenv("BLINK_BASE_URL", blink_sandbox.base_url)
    monkeypatch.setenv("BLINK_API_KEY", blink_sandbox.api_key)
    path = tmp_path / "declared.json"
    path.write_text(json.dumps(declared))
    assert main(["plan", "ws-demo", table, str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("blink-schema: ") and "BLINK_BASE_URL" not in err and "connection" not in err, err


def test_plan_out_creates_its_folder(blink_sandbox: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "not" / "yet" / "plan.json"
    assert main(["plan", "ws-demo", "Incidents", str(EXAMPLE), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["table"] == "Incidents"


def test_validate_and_plan_refuse_two_entries_with_one_display_name(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "declared.json"
    declared = [
        {"field": "Queue", "type": "text", "display_name": "Queue"},
        {"field": "Team", "type": "text", "display_name": "Queue"},
    ]
    path.write_text(json.dumps(declared))
    assert main(["validate", str(path)]) == 1
    said = capsys.readouterr().out
    assert "one display name to several entries ('Queue' and 'Team')" in said, said
    assert main(["plan", "ws-demo", "Incidents", str(path)]) == 1
    assert "one display name to several entries ('Queue' and 'Team')" in capsys.readouterr().err
    assert writes_of(blink_sandbox) == []


def test_validate_refuses_a_backfill_its_field_cannot_hold(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "declared.json"
    path.write_text(json.dumps([{"field": "Impact", "type": "number", "display_name": "Impact", "backfill": "triage"}]))
    assert main(["validate", str(path)]) == 1
    assert "'backfill' of a 'number' field must be a number, got 'triage'" in capsys.readouterr().out
