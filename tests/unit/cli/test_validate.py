"""``blink-schema validate`` (blinkops_provider.cli.validate, #65 item 1): offline, every check a plan
makes without Blink, one line per problem with the entry's line, GitHub annotations, JSON, and
Terraform-like exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blinkops_provider.cli.main import main
from tests.conftest import EXAMPLE_DAGS

FLEET = EXAMPLE_DAGS / "blink_schema_fleet"
BROKEN = """{"fields": [
  {"field": "Title", "type": "text", "display_name": "Title"},
  {"field": "Stage", "type": "dropdown", "display_name": "Stage"},
  {"field": "Title", "type": "text", "display_name": "Title again"},
  {"field": "Tags", "type": "multi-select", "display_name": "Tags", "attributes": {"options": ["a"]},
   "type_change": "cast"}
]}
"""


def broken_fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    shutil.copytree(FLEET, folder)
    (folder / "ws-broken").mkdir()
    (folder / "ws-broken" / "Incidents.json").write_text(BROKEN)
    return folder


def test_the_examples_validate_clean(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(FLEET), str(EXAMPLE_DAGS / "blink_table_schema_migration.json")]
    assert main(["validate", *paths]) == 0
    count = len(list(FLEET.glob("*/*.json"))) + 1
    assert capsys.readouterr().out == f"{count} declaration(s) valid\n"


def test_a_broken_copy_fails_with_one_line_per_problem_and_its_json_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = broken_fleet(tmp_path)
    assert main(["validate", str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    where = folder / "ws-broken" / "Incidents.json"
    assert len(lines) == 3  # every problem at once, in the entries' order, each on its entry's line
    assert lines[0].startswith(f"{where}:3: entry 2 ('Stage'): type: unknown field type 'dropdown'; allowed: text,")
    assert lines[1] == f"{where}:4: entry 3 ('Title'): field 'Title' is declared twice (entries 1 and 3)"
    assert lines[2] == (
        f"{where}:5: entry 4 ('Tags'): 'type_change' must be one of: 'copy' (add a new field of the new type, copy "
        "every value (refused if one does not convert), remove the old); 'copy_or_empty' (as copy, leaving empty the "
        "rows whose value does not convert (destructive, counted)); got 'cast'"
    )


def test_an_entry_is_named_by_its_place_in_the_file_tombstones_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text('[\n {"field": "Old", "remove": true},\n {"field": "New", "type": "nope", "display_name": "N"}\n]')
    assert main(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{path}:3: entry 2 ('New'): type: unknown field type 'nope'")


def test_github_annotations_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  {"field": "A", "type": "text"}\n]')
    assert main(["validate", str(bad), "--format", "github"]) == 1
    said = capsys.readouterr().out.strip()
    assert (
        said
        == f"::error file={bad},line=2::entry 1 ('A'): display_name required (Blink resets what an update leaves out)"
    )
    assert main(["validate", str(bad), "--format", "json"]) == 1
    (found,) = json.loads(capsys.readouterr().out)
    assert (found["file"], found["line"], found["entry"]) == (str(bad), 2, 1)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{nope", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{"fields": []}', "declares no field; give at least one"),
        ('{"fields": [], "colour": 1}', "names 'colour', which a declaration does not take"),
    ],
)
def test_a_file_that_is_not_a_declaration_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    path = tmp_path / "t.json"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(str(path)) and said in line


def test_a_path_that_is_not_there_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing"), str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path / 'missing'}: no such file or folder",
        f"{tmp_path}: holds no <ws_id>/<table>.json declaration (the fleet's layout)",
    ]


OFFLINE = """
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError("a connection was opened")
socket.socket.connect = refuse
socket.create_connection = refuse
from blinkops_provider.cli.main import main
code = main(sys.argv[1:])
print("exit", code, "airflow" in sys.modules)
"""


def test_validate_runs_offline_and_imports_no_airflow(tmp_path: Path) -> None:
    """No connection, no request (a socket that refuses every connection), no Airflow: even with a
    connection pointing at an unreachable host in the environment."""
    env = {"AIRFLOW_CONN_BLINK_DEFAULT": json.dumps({"conn_type": "blink", "host": "https://10.255.255.1"})}
    env |= {"PATH": "/usr/bin:/bin", "BLINK_BASE_URL": "https://10.255.255.1", "BLINK_API_KEY": "unused-key-123"}
    folder = broken_fleet(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE, "validate", str(folder)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.stdout.splitlines()[-1] == "exit 1 False", done.stdout + done.stderr
    assert done.stderr == ""
