"""blink-schema (blinkops_provider.cli and blinkops_provider.migrations._pull): a lock left by a killed apply is listed,
released by its id with the command the refusal prints, and the next apply succeeds (#33); a live
table pulled into a declaration that plans all unchanged, and each mistake one line, exit 1 (#57; one exit status rule, #73).

A live table as a declaration (blinkops_provider.migrations._pull, #57): pulled, then planned
against the same Blink, it is all unchanged; against the sandbox and against a Blink of the tests'
own, whose naming rule and defaults differ.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.exceptions import BlinkLockedError, BlinkNotFoundError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_schema, plan_text, plan_xcom, pull_schema
from blinkops_provider.migrations._pull import pull_table, record_pulled
from blinkops_provider.models import FieldType
from blinkops_sandbox import BlinkSandbox
from tests.fake_blink import FakeBlink, blink_field, without_table_reads

ODD = "Risk «level» / %20 ?#&= 日本 \t end"
"""A display name and description with characters that need care."""


def every_type() -> list[dict[str, Any]]:
    """One field of each of Blink's 18 user types, each with every attribute a declaration may set
    that the type takes."""
    fields = []
    for kind in FieldType:
        attributes: dict[str, Any] = {"required": True, "is_unique": False, "default_value": "a"}
        if kind in (FieldType.SINGLE_SELECT, FieldType.MULTI_SELECT, FieldType.STATUS):
            attributes["options"] = ["a", "b, c", "日本"]
        if kind is FieldType.REFERENCE:
            attributes["table_reference"] = {"table_name": "Users", "display_name_field": "Name"}
        if kind is FieldType.DATE:
            attributes["include_time"] = True
        fields.append(
            {
                "field": f"F {kind.value}",
                "type": kind.value,
                "display_name": f"{ODD} {kind.value}",
                "description": f"{ODD}\nsecond line",
                "attributes": attributes,
            }
        )
    return fields


def all_unchanged(plan: Any) -> bool:
    return not plan.has_changes and {row.action for row in plan.fields} == {"unchanged"}


@pytest.mark.parametrize("table", ["Every type", "Q1/Q2 plans ..", "日本 %41"])
def test_a_pulled_table_of_every_type_plans_all_unchanged_against_the_sandbox(
    blink_sandbox: BlinkSandbox, table: str, tmp_path: Path
) -> None:
    blink_sandbox.create_table("ws-pull", table, {"fields": every_type()})
    hook = BlinkHook()
    declaration = pull_schema(hook, "ws-pull", table)
    assert [entry["field"] for entry in declaration["fields"]] == [f"F {kind.value}" for kind in FieldType]
    assert declaration["fields"][0]["display_name"] == f"{ODD} text"  # Blink's values, whatever the characters
    reference = next(entry for entry in declaration["fields"] if entry["type"] == "reference")
    assert reference["attributes"]["table_reference"] == {"table_name": "Users", "display_name_field": "Name"}
    plan = plan_schema(hook, "ws-pull", table, json.loads(json.dumps(declaration)), record_path=f"{tmp_path}/")
    assert all_unchanged(plan), plan_text(plan)


def test_the_demo_table_pulled_plans_all_unchanged_and_keeps_no_system_field(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    declaration = pull_schema(hook, "ws-demo", "Incidents")
    names = [entry["field"] for entry in declaration["fields"]]
    assert not {"id", "created_at", "updated_at", "created_by", "updated_by"} & set(names)
    assert names == [f["name"] for f in blink_sandbox.store.fields("ws-demo", "Incidents")][5:]  # Blink's order
    assert set(declaration) == {"display_name", "description", "fields"}
    assert all(
        set(entry) == {"field", "type", "display_name", "description", "attributes"} for entry in declaration["fields"]
    )
    assert all_unchanged(plan_schema(hook, "ws-demo", "Incidents", declaration))


HELD = {
    "Contracts": [
        blink_field("supplier_1", "text", "Supplier", required=True, is_unique=True, description="Who"),
        blink_field("tier_2", "single-select", "Tier", options=["Gold", "Silver"], default_value="Gold"),
        # What this Blink fills in or holds: a default it adds, a null, an attribute of its own.
        blink_field("due_3", "date", "Due", include_time=False, color="red", required=None),
        blink_field("owner_4", "reference", "Owner", table_reference={"table_name": "Users"}),
    ],
    "Users": [blink_field("name_1", "text", "Name")],
}


def test_a_blink_with_its_own_names_and_defaults_pulls_to_all_unchanged_naming_what_is_left_out(
    make_hook: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.meta["Contracts"].update(display_name="Supplier contracts", description="All of them")
        pulled = pull_table(hook, "ws-1", "Supplier contracts")  # found by its display name too
        plan = plan_schema(hook, "ws-1", "Contracts", pulled.declaration)
    assert pulled.table == "Contracts"
    assert (pulled.declaration["display_name"], pulled.declaration["description"]) == (
        "Supplier contracts",
        "All of them",
    )
    due = next(entry for entry in pulled.declaration["fields"] if entry["field"] == "due_3")
    assert due["attributes"] == {"include_time": False}
    assert pulled.unsettable == {"due_3": ["color"]}
    assert all_unchanged(plan), plan_text(plan)
    assert blink.puts == [] and blink.posts == [] and blink.deletes == []


def test_a_missing_table_names_the_tables_the_workspace_has(make_hook: Any) -> None:
    many = {f"T{n:02d}": [blink_field("a", "text")] for n in range(25)}
    with rm.Mocker() as m:
        FakeBlink(many).mount(m)
        with pytest.raises(
            BlinkNotFoundError, match=r"no table 'Nope' in workspace 'ws-1'; its tables: 'T00', 'T01'"
        ) as err:
            pull_schema(make_hook(), "ws-1", "Nope")
    assert "'T19' and 5 more" in str(err.value) and "'T20'" not in str(err.value)


def test_the_pulled_record_is_the_next_plans_baseline_so_a_later_change_in_blink_is_drift(
    make_hook: Any, tmp_path: Path
) -> None:
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        pulled = pull_table(hook, "ws-1", "Contracts")
        where = record_pulled(hook, pulled, f"{tmp_path}/")
        assert where == f"{tmp_path}/ws-1/Contracts.json"
        blink.change_in_ui("Contracts", "tier_2", who="carol@blink.test", options=["Gold", "Silver", "Bronze"])
        plan = plan_schema(hook, "ws-1", "Contracts", pulled.declaration, record_path=f"{tmp_path}/")
    tier = next(row for row in plan.fields if row.field == "tier_2")
    assert tier.drift == ("attributes.options",) and tier.action == "change"  # the declaration puts it back
    assert "(last changed in Blink by carol@blink.test" in plan_text(plan)
    assert blink.puts == []


def test_every_type_pulled_from_a_blink_with_its_own_names_and_defaults_plans_all_unchanged(make_hook: Any) -> None:
    """#57: the table of 18 types, created in a Blink of the tests' own (its naming rule), which
    then fills in defaults of its own and holds an attribute a declaration may not set."""
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink({"Users": [blink_field("name_1", "text", "Name")]}).mount(m)
        body = {
            "display_name": ODD,
            "description": ODD,
            "fields": [{k: v for k, v in f.items() if k != "field"} for f in every_type()],
        }
        made = hook.create_table("ws-1", body)
        for held in blink.tables[made.name].values():
            if not held["attributes"].get("system"):
                held["attributes"] = {"required": False, "is_unique": False, **held["attributes"], "color": "blue"}
        pulled = pull_table(hook, "ws-1", made.name)
        plan = plan_schema(hook, "ws-1", made.name, json.loads(json.dumps(pulled.declaration)))
    assert [entry["type"] for entry in pulled.declaration["fields"]] == [kind.value for kind in FieldType]
    assert pulled.declaration["fields"][0]["field"] != "F text"  # Blink's own name, not the sandbox's
    assert pulled.unsettable == {entry["field"]: ["color"] for entry in pulled.declaration["fields"]}
    assert all("color" not in entry["attributes"] for entry in pulled.declaration["fields"])
    assert all_unchanged(plan), plan_text(plan)


LOCKS = pytest.mark.usefixtures("blink_without_table_reads")
"""The locks' tests: Blink does not serve the table reads (the plan falls back to the record)."""


SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]

KILLED_APPLY = """
import os, signal, sys
from blinkops_provider.migrations._lock import Holder, TableLock, record_location

holder = Holder(host="worker-2", pid=os.getpid(), dag_id="migrate", run_id="manual__1", task_id="apply",
                map_index=-1, try_number=1)
TableLock(record_location(sys.argv[1], "ws-1", "Incidents"), records=sys.argv[1], ws_id="ws-1", table="Incidents", holder=holder).acquire()
os.kill(os.getpid(), signal.SIGKILL)  # a worker killed mid-apply, on another host
"""


def blink_schema(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, as a user runs it."""
    command = Path(sys.executable).with_name("blink-schema")
    return subprocess.run([str(command), *args], capture_output=True, text=True, timeout=60, check=False)


@LOCKS
def test_a_killed_applys_lock_is_listed_released_by_its_id_and_the_next_apply_succeeds(
    hook: Any, tmp_path: Path
) -> None:
    records = f"{tmp_path}/records/"
    killed = subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL

    with rm.Mocker() as m, pytest.raises(BlinkLockedError) as refused:
        apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records)
    assert m.call_count == 0
    command = re.search(r"release its lock: (blink-schema unlock .*)$", str(refused.value))
    assert command is not None
    lock_id = shlex.split(command.group(1))[-1]

    listed = blink_schema("locks", records)
    assert listed.returncode == 0
    assert f"{lock_id}  ws-1/Incidents  held by migrate/manual__1/apply (try 1) on worker-2" in listed.stdout

    released = blink_schema(*shlex.split(command.group(1))[1:])
    assert released.returncode == 0, released.stderr
    assert f"Released the lock {lock_id} on ws-1/Incidents" in released.stdout
    assert "No lock is held" in blink_schema("locks", records).stdout

    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json={"id": "f", "name": "Title", "type": "text", "display_name": "Title"})
        assert apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records).ok


@LOCKS
def test_unlock_with_another_id_releases_nothing_and_says_why(tmp_path: Path, capsys: Any) -> None:
    records = f"{tmp_path}/records/"
    subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=60, check=False)
    assert main(["unlock", records, "ws-1/Incidents", "0000000000000000"]) == 1
    assert "not 0000000000000000: nothing released" in capsys.readouterr().err
    assert main(["unlock", records, "Incidents", "0000000000000000"]) == 1
    assert "give the table as WS_ID/TABLE" in capsys.readouterr().err
    assert main(["locks", records]) == 0
    assert "ws-1/Incidents  held by" in capsys.readouterr().out


@LOCKS
def test_locks_and_unlock_on_s3(bucket: tuple[Any, str], capsys: Any) -> None:
    records = f"s3://aws_default@{bucket[1]}/records/"
    subprocess.run([sys.executable, "-c", KILLED_APPLY, records], timeout=120, check=False)
    assert main(["locks", records]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if "ws-1/Incidents  held by" in line]
    assert len(listed) == 1 and "held by migrate/manual__1/apply (try 1) on worker-2" in listed[0]
    lock_id = listed[0].split()[0]
    assert main(["unlock", records, "ws-1/Incidents", lock_id]) == 0
    assert main(["locks", records]) == 0
    assert "No lock is held" in capsys.readouterr().out


@LOCKS
@pytest.mark.parametrize("records", ["s4://bucket/records/", "nosuchscheme://x/"])
def test_a_mistyped_scheme_is_one_line_and_exit_1(records: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locks", records]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"blink-schema: {records} cannot be used (") and len(err.splitlines()) == 1


@LOCKS
def test_an_unreachable_object_store_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    extra = {"endpoint_url": "http://127.0.0.1:9", "region_name": "us-east-1"}
    extra["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 2}  # type: ignore[assignment]
    connection = {"conn_type": "aws", "login": "key-id", "password": "not-a-secret", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEAD", json.dumps(connection))
    assert main(["locks", "s3://aws_dead@bucket/records/"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("blink-schema: s3://aws_dead@bucket/records/ cannot be used (") and "Traceback" not in err


# -- pull (#57) ---------------------------------------------------------------------------------


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch, sleeps: Any) -> None:
    """The command's hook with its retries' waits recorded, not slept."""
    import functools

    from blinkops_provider.cli import connection, plan, pull

    hook = functools.partial(connection.quiet_hook, clock=sleeps.as_clock())
    monkeypatch.setattr(pull, "quiet_hook", hook)
    monkeypatch.setattr(plan, "quiet_hook", hook)


def test_pull_prints_the_declaration_that_the_operators_take(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import pull_schema

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


@pytest.mark.usefixtures("quick")
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
    blink_sandbox: Any, args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and said in err, err


@pytest.mark.usefixtures("quick")
def test_an_unreachable_blink_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sleeps: Any
) -> None:
    monkeypatch.setenv("BLINK_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("BLINK_API_KEY", "a-key-never-shown-1234")
    assert main(["pull", "ws-demo", "Incidents"]) == 1
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
    from tests.fake_blink import FakeBlink, blink_field

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


# -- #65: blink-schema plan ------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "example_dags" / "blink_table_schema_migration.json"


def writes_of(sandbox: Any) -> list[Any]:
    return [entry for entry in sandbox.requests if entry["method"] != "GET"]


def test_plan_prints_the_plan_and_says_with_its_exit_code_whether_anything_would_change(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records"
    args = ["plan", "ws-demo", "Incidents", str(EXAMPLE), "--record-path", f"{records}/"]
    assert main(args) == 0  # without --detailed-exitcode: 0 whatever the plan
    text = capsys.readouterr().out
    assert "2 to add, 8 to change, 1 to remove, 1 to retype (2 destructive)" in text
    assert "- Affected hosts: remove: deletes values in 90 of 120 rows, permanently" in text
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
    from blinkops_provider.migrations import plan_schema
    from blinkops_provider.operators._review import _plan_body

    out = tmp_path / "plan.json"
    args = ["plan", "ws-demo", "Incidents", str(EXAMPLE), "--out", str(out)]
    assert main([*args, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    planned = plan_xcom(plan_schema(BlinkHook(), "ws-demo", "Incidents", json.loads(EXAMPLE.read_text())))
    assert _plan_body(planned, False).startswith(markdown.rstrip("\n"))  # the review shows exactly this
    assert markdown.startswith(f"**Plan `{planned['fingerprint']}`** for ws-demo/Incidents")
    assert main([*args, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["fingerprint"] == planned["fingerprint"] and shown["fields"] == planned["fields"]
    assert json.loads(out.read_text()) == shown


def test_plan_of_a_folder_plans_every_table_as_the_fleet(
    blink_sandbox: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = Path(__file__).resolve().parents[2] / "example_dags" / "blink_schema_fleet"
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
    from tests.fake_blink import FakeBlink, blink_field

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
