"""``blink-schema pull`` (blinkops_provider.cli.pull, #57): the declaration on stdout or in files, the record when
asked, the connection from Airflow or BLINK_BASE_URL/BLINK_API_KEY, and each mistake one line, exit 1 (#73), never the
key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import pull_schema
from tests.fake_blink import FakeBlink, blink_field

# -- pull (#57) ---------------------------------------------------------------------------------


def test_pull_prints_the_declaration_that_the_operators_take(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str]
) -> None:

    assert main(["pull", "ws-demo", "Incidents"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == pull_schema(BlinkHook(), "ws-demo", "Incidents")
    assert err == "" and blink_sandbox.api_key not in out


def test_pull_to_a_file_refuses_to_replace_it_unless_forced(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "decl" / "Incidents.json"
    assert main(["pull", "ws-demo", "Incidents", "-o", str(target)]) == 0
    assert f"ws-demo/Incidents (10 fields) written to {target}" in capsys.readouterr().err
    target.write_text("mine")
    assert main(["pull", "ws-demo", "Incidents", "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == f"blink-schema: {target} exist(s): nothing was written; give --force to replace\n"
    assert target.read_text() == "mine"
    assert main(["pull", "ws-demo", "Incidents", "-o", str(target), "--force"]) == 0
    assert json.loads(target.read_text())["fields"][0]["field"] == "Title"


def test_pull_all_writes_each_table_where_the_fleet_reads_it_and_records_the_baseline(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blink_sandbox.create_table(
        "ws-demo", "Q1/Q2 plans", {"fields": [{"field": "A", "type": "text", "display_name": "A"}]}
    )
    folder, records = tmp_path / "schemas", tmp_path / "records"
    assert main(["pull", "ws-demo", "--all", "-o", str(folder), "--record-path", f"{records}/"]) == 0
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.json"))
    assert written == ["ws-demo/Incidents.json", "ws-demo/Q1%2FQ2%20plans.json", "ws-demo/Users.json"]
    assert sorted(str(p.relative_to(records)) for p in records.rglob("*.json")) == written
    err = capsys.readouterr().err
    assert "the record of ws-demo/Q1/Q2 plans written to" in err


def test_pull_reads_blink_base_url_and_api_key_and_never_prints_the_key(
    blink_sandbox: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_BLINK_DEFAULT")
    monkeypatch.setenv("BLINK_BASE_URL", blink_sandbox.base_url)
    monkeypatch.setenv("BLINK_API_KEY", blink_sandbox.api_key)
    assert main(["pull", "ws-demo", "Users", "--conn-id", "blink_env"]) == 0
    assert json.loads(capsys.readouterr().out)["fields"]
    assert "AIRFLOW_CONN_BLINK_ENV" not in os.environ  # nothing written to the environment
    monkeypatch.setenv("BLINK_API_KEY", "wrong-key-123456")
    assert main(["pull", "ws-demo", "Users"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "401: invalid API key" in err and "check BLINK_API_KEY" in err
    assert "the connection that BLINK_BASE_URL and BLINK_API_KEY give" in err and "password" not in err
    assert "wrong-key" not in err and blink_sandbox.api_key not in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["pull", "ws-demo", "Nope"], "no table 'Nope' in workspace 'ws-demo'; its tables: 'Incidents', 'Users'"),
        (["pull", "ws-demo"], "give a TABLE, or --all for every table of the workspace (not both)"),
        (["pull", "ws-demo", "Users", "--all", "-o", "x"], "give a TABLE, or --all"),
        (["pull", "ws-demo", "--all"], "--all writes one file per table: give -o FOLDER"),
    ],
)
def test_each_mistake_of_pull_is_one_line_and_exit_1(
    blink_sandbox: Any, args: list[str], said: str, capsys: pytest.CaptureFixture[str], sleeps: Any
) -> None:
    assert main(args, clock=sleeps.as_clock()) == 1
    assert not sleeps  # a mistake is not retried
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and said in err, err


def test_an_unreachable_blink_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sleeps: Any
) -> None:
    monkeypatch.setenv("BLINK_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("BLINK_API_KEY", "a-key-never-shown-1234")
    assert main(["pull", "ws-demo", "Incidents"], clock=sleeps.as_clock()) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "could not reach 127.0.0.1:9" in err and "a-key-never" not in err
    assert sleeps  # the hook retried (its waits recorded), and said nothing of it: the one line is the end


def test_the_command_as_installed_prints_no_traceback(blink_sandbox: Any, tmp_path: Path) -> None:
    env = {**os.environ, "BLINK_BASE_URL": blink_sandbox.base_url, "BLINK_API_KEY": "refused-key-98765"}
    done = subprocess.run(
        [sys.executable, "-m", "blinkops_provider.cli", "pull", "ws-demo", "Incidents"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("blink-schema: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and "refused-key" not in done.stderr


def test_pull_names_on_stderr_each_attribute_it_leaves_out(
    blink_conn: None, capsys: pytest.CaptureFixture[str]
) -> None:

    held = {"Contracts": [blink_field("due_3", "date", "Due", include_time=True, color="red")]}
    with rm.Mocker() as m:
        FakeBlink(held).mount(m)
        assert main(["pull", "ws-1", "Contracts"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["fields"][0]["attributes"] == {"include_time": True}
    assert err == (
        "blink-schema: field 'due_3' of ws-1/Contracts holds attribute(s) 'color', which a declaration may not set: "
        "left out; every apply keeps them\n"
    )


@pytest.mark.usefixtures("airflow_db")
def test_pull_finds_the_connection_in_airflows_metadata_database(blink_sandbox: Any, tmp_path: Path) -> None:
    """#63 item 6: the documented first form, with ``blink_default`` only in the metadata DB (as
    ``make airflow-ui`` makes it; ``airflow connections get`` finds it), in a process of its own."""
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(Connection).filter(Connection.conn_id == "blink_in_db").delete()
        session.add(
            Connection(
                conn_id="blink_in_db", conn_type="blink", host=blink_sandbox.base_url, password=blink_sandbox.api_key
            )
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "BLINK_"))}
    target = tmp_path / "users.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "blinkops_provider.cli",
            "pull",
            "ws-demo",
            "Users",
            "-o",
            str(target),
            "--conn-id",
            "blink_in_db",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text())["fields"] and blink_sandbox.api_key not in done.stderr


def test_a_missing_connection_names_the_commands_flag_and_the_environment_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#63 item 11: ``--conn-id`` (not the Python argument ``blink_conn_id``) and BLINK_BASE_URL/BLINK_API_KEY."""
    monkeypatch.delenv("BLINK_BASE_URL", raising=False)
    assert main(["pull", "ws-demo", "Users", "--conn-id", "no_such_blink"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "the Airflow connection 'no_such_blink' does not exist" in err
    assert "--conn-id" in err and "BLINK_BASE_URL and BLINK_API_KEY" in err and "blink_conn_id" not in err
