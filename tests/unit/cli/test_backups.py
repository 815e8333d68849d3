"""``blink-schema backups`` (blinkops_provider.cli.backups, #74 item 3): each apply's backup listed with its plan id,
time, fields, rows and size; ``--prune`` deletes the old ones and never the newest; a damaged one is listed as such."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.migrations import apply_schema
from tests.fake_blink import FakeBlink, blink_field

HELD = {"T": [blink_field("Name", "text"), blink_field("Risk", "text"), blink_field("Notes", "text")]}


def three_applies(hook: Any, records: str) -> list[str]:
    """Three applies of T, each changing Name's description; their backups' locations, oldest first."""
    made = []
    with rm.Mocker() as m:
        fake = FakeBlink(HELD).mount(m)
        fake.records["T"] = [{"id": "r1", "Name": "a", "Risk": "x"}]
        for n in range(3):
            declared = [{"field": "Name", "type": "text", "display_name": "Name", "description": f"v{n}"}]
            made.append(apply_schema(hook, "ws-1", "T", declared, record_path=records).backup)
        declared = [{"field": "Risk", "remove": True}]
        made.append(apply_schema(hook, "ws-1", "T", declared, record_path=records, acknowledge_risks=True).backup)
    return made


def test_backups_lists_each_apply_then_prune_keeps_the_newest(
    hook: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = f"{tmp_path}/"
    made = three_applies(hook, records)
    capsys.readouterr()  # (the applies' logs)
    args = ["backups", "ws-1", "T", "--record-path", records]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [Path(one).stem for one in made]
    assert "fields Risk; values of Risk in 1 row(s)" in lines[-1] and " bytes " in lines[-1]
    assert main([*args, "--prune", "--keep", "0"]) == 1
    assert "keep must be a whole number of backups, at least 1" in capsys.readouterr().err
    assert main([*args, "--prune", "--keep", "1", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["deleted"] == made[:3] and [one["location"] for one in shown["backups"]] == made[3:]
    assert [p.name for p in Path(made[3]).parent.iterdir()] == [Path(made[3]).name]


def test_a_damaged_backup_is_listed_as_such_and_left_by_prune(
    hook: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = f"{tmp_path}/"
    made = three_applies(hook, records)
    Path(made[0]).write_text(Path(made[0]).read_text()[:40])
    assert main(["backups", "ws-1", "T", "--record-path", records, "--prune", "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{Path(made[0]).stem}  DAMAGED (the backup at {made[0]} is corrupt or truncated at line 1)" in out
    assert sorted(p.name for p in Path(made[0]).parent.iterdir()) == sorted([Path(made[0]).name, Path(made[3]).name])
