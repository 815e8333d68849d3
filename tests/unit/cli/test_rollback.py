"""``blink-schema rollback`` (blinkops_provider.cli.rollback, #74): against the sandbox, the example migration applied
(a removal, a retype, changes, adds with a backfill), its rollback printed as a plan, then carried out with
``--apply-now``: the table's fields and every row's values as they were before the apply."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.cli.main import main
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_schema

EXAMPLE = Path(__file__).resolve().parents[3] / "example_dags" / "blink_table_schema_migration.json"


def table_state(hook: BlinkHook) -> tuple[list[Any], dict[Any, dict[str, Any]]]:
    """The table as a person sees it: each field's definition and each row's values, by display name."""
    fields = hook.get_table_fields("ws-demo", "Incidents")
    user = [f for f in fields if not (f.attributes or {}).get("system")]
    shown = {f.name: f.display_name for f in user}
    defined = sorted(json.dumps([f.display_name, f.type, f.description or "", f.attributes or {}], sort_keys=True) for f in user)  # fmt: skip
    rows = {
        row["id"]: {shown[k]: v for k, v in row.items() if k in shown and v not in (None, "", [])}
        for row in hook.iter_records("ws-demo", "Incidents")
    }
    return defined, rows


def writes_of(sandbox: Any) -> list[Any]:
    return [entry for entry in sandbox.requests if entry["method"] != "GET"]


def test_rollback_plans_then_puts_the_example_migration_back(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook, records = BlinkHook(), f"{tmp_path}/records/"
    declared = json.loads(EXAMPLE.read_text())
    before = table_state(hook)
    applied = apply_schema(hook, "ws-demo", "Incidents", declared, record_path=records, acknowledge_risks=True)
    after_apply = table_state(hook)
    assert after_apply != before
    args = ["rollback", "ws-demo", "Incidents", "--record-path", records]
    sent = len(writes_of(blink_sandbox))
    assert main([*args, "--detailed-exitcode"]) == 2
    text = capsys.readouterr().out
    assert f"of apply {Path(applied.backup).stem} for ws-demo/Incidents" in text
    assert "Affected hosts: re-create (Blink names it; saved as 'Affected hosts'), 90 row(s) to restore" in text
    assert main([*args, "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert len(writes_of(blink_sandbox)) == sent  # planning sends nothing
    assert main([*args, "--apply-now", "--approved", planned["fingerprint"]]) == 0
    said = capsys.readouterr().out
    assert "Rolled back: 210 row(s) restored; re-created 'Risk' as 'risk', 'Affected hosts' as 'affected_hosts'" in said
    assert table_state(hook) == before
    again = apply_schema(hook, "ws-demo", "Incidents", declared, record_path=records, acknowledge_risks=True)
    assert not again.failed and table_state(hook) == after_apply  # the same declaration does the same again
    unchanged = plan_schema(hook, "ws-demo", "Incidents", declared, record_path=records)
    assert not unchanged.has_changes or {row.action for row in unchanged.fields} <= {"unchanged"}


def test_rollback_without_a_backup_or_with_a_stale_approval_says_why_in_one_line(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = f"{tmp_path}/records/"
    assert main(["rollback", "ws-demo", "Incidents", "--record-path", records]) == 1
    assert "no backup of an apply to ws-demo/Incidents" in capsys.readouterr().err
    apply_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text()), record_path=records,
                 acknowledge_risks=True)  # fmt: skip
    capsys.readouterr()  # (what the apply logged: the command's own output is checked below)
    sent = len(writes_of(blink_sandbox))
    args = ["rollback", "ws-demo", "Incidents", "--record-path", records, "--apply-now", "--approved", "0" * 16]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("blink-schema: ") and "not what would be done now" in err and len(err.splitlines()) == 1, err
    assert len(writes_of(blink_sandbox)) == sent


PAGE = Path(__file__).resolve().parents[3] / "docs" / "undo.md"


def page_blocks(kind: str) -> list[str]:
    """The page's fenced blocks of ``kind`` (``console``, ``python``), as written."""
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), flags=re.S)


def shown(line: str) -> re.Pattern[str]:
    """A line of the page's output as a pattern: each ``<placeholder>`` stands for what differs per run."""
    return re.compile(".+?".join(re.escape(part) for part in re.split(r"<[a-z ]+>", line)))


def test_the_undo_pages_examples_run_as_written(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the page's record_path is records/
    declared = json.loads(EXAMPLE.read_text())
    before = table_state(BlinkHook())
    apply_schema(BlinkHook(), "ws-demo", "Incidents", declared, record_path="records/", acknowledge_risks=True)
    capsys.readouterr()
    fingerprint = ""
    for block in page_blocks("console"):
        for command, *output in [part.splitlines() for part in re.split(r"^\$ ", block, flags=re.M) if part]:
            argv = shlex.split(command.replace("<fingerprint>", fingerprint))[1:]
            status = main(argv)
            printed = capsys.readouterr().out
            assert status == (2 if "--detailed-exitcode" in argv else 0), printed
            for line in output:
                assert shown(line).search(printed), f"{line!r} not in the output of {command!r}:\n{printed}"
            if "--detailed-exitcode" in argv:
                main([*argv, "--format", "json"])
                fingerprint = json.loads(capsys.readouterr().out)["fingerprint"]
    assert table_state(BlinkHook()) == before  # the page's --apply-now rolled the apply back
    apply_schema(BlinkHook(), "ws-demo", "Incidents", declared, record_path="records/", acknowledge_risks=True)
    (python,) = page_blocks("python")
    exec(compile(python, str(PAGE), "exec"), {})  # the page's own example, run as a reader would
    assert table_state(BlinkHook()) == before
