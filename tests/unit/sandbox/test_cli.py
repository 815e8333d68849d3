"""``blink-sandbox serve`` as a user runs it: prints where it listens, serves, stops on a signal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_provider.migrations import plan_text
from blinkops_sandbox.cli import main


def start(*args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "blinkops_sandbox.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    printed: dict[str, str] = {}
    assert process.stdout is not None
    for line in process.stdout:  # blocks until the server has printed its banner
        if ":" in line and line.startswith("  "):
            name, _, value = line.strip().partition(":")
            printed[name] = value.strip()
        if line.startswith("Stop with Ctrl-C"):
            break
    return process, printed


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_url_and_key_and_stops_cleanly(stop_signal: signal.Signals) -> None:
    process, printed = start("--seed-connection-types", "7", "--api-key", "cli-test-key-123", "--fault-sequence", "503")
    try:
        base_url = printed["base URL"]
        assert base_url.startswith("http://127.0.0.1:")
        assert base_url.endswith("/api/v1")
        assert printed["API key"].split()[0] == "cli-test-key-123"
        conn = json.loads(printed["connection"].split("=", 1)[1].strip("'"))
        host = base_url.removesuffix("/api/v1")
        page = {"table_page": "/_sandbox/ui/{ws_id}/tables/{table}"}  # its tables' pages, for the tasks' link
        assert conn == {"conn_type": "blink", "host": host, "password": "cli-test-key-123", "extra": page}
        url = f"{base_url}/connection_types"
        headers = {"BLINK-API-KEY": "cli-test-key-123"}
        assert requests.get(url, params={"q": "{}"}, headers=headers, timeout=30).status_code == 503
        assert requests.get(url, params={"q": "{}"}, headers=headers, timeout=30).json()["total"] == 7
    finally:
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Blink sandbox stopped." in out
    assert "alembic" not in err.lower() and "INFO" not in err  # quiet: no Airflow or migration lines (#44 item 8)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--error-rate", "2"], "invalid fault settings: error_rate: Input should be less than or equal to 1"),
        (["--fault-sequence", "418"], "invalid fault settings: sequence.0"),
        (["--seed-connection-types", "-1"], "--seed-connection-types must be 0 or more"),
    ],
)
def test_bad_flags_exit_2_with_a_message(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["serve", *args]) == 2
    assert message in capsys.readouterr().err


def test_busy_port_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2  # a user's mistake: exit 2 (#50 item 4)
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


# -- without the sandbox's server libraries ---------------------------------------------------------

BLOCK = """
import sys

for name in (%s,):
    sys.modules[name] = None  # what Python does for a module that cannot be imported
"""


@pytest.mark.parametrize("missing", [["uvicorn"], ["fastapi", "uvicorn"]])
def test_serve_without_its_libraries_exits_2_with_the_install_hint_and_no_banner(missing: list[str]) -> None:
    names = ", ".join(repr(name) for name in missing)
    code = BLOCK % names + "from blinkops_sandbox.cli import main\nraise SystemExit(main(['serve']))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == ""  # no banner, no key
    assert "pip install fastapi uvicorn (blinkops-sandbox's dependencies)" in done.stderr
    assert " and ".join(missing) in done.stderr
    assert "Traceback" not in done.stderr


def test_the_fixture_without_its_libraries_fails_with_the_install_hint(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(BLOCK % "'uvicorn'")
    pytester.makepyfile("def test_uses_it(blink_sandbox):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "blink_sandbox")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*blink_sandbox: the Blink sandbox needs uvicorn*pip install fastapi uvicorn (blinkops-sandbox's dependencies)*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_the_plugin_imports_nothing_heavy_until_a_test_asks_for_it() -> None:
    """Loading the pytest plugin (as every pytest run with the sandbox installed does) imports
    neither Airflow, the sandbox's server and store, FastAPI, uvicorn, nor the hook."""
    code = (
        "import sys\nimport blinkops_sandbox._pytest_plugin\n"
        "heavy = [m for m in ('airflow', 'fastapi', 'uvicorn', 'sqlite3', 'requests', 'pydantic',"
        " 'blinkops_sandbox._server', 'blinkops_provider.hooks') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "blinkops_sandbox.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_sandbox_on_every_interface_warns_before_it_prints_the_key() -> None:
    process = _serve("--host", "0.0.0.0", "--seed-connection-types", "3")
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("  API key:"):
                break
        warning = next(n for n, line in enumerate(lines) if line.startswith("WARNING: listening on 0.0.0.0"))
        assert warning < next(n for n, line in enumerate(lines) if line.startswith("  API key:"))
    finally:
        process.terminate()
        process.wait(10)


def test_sigterm_while_the_sandbox_starts_exits_0_with_its_store_whole(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.db"
    process = _serve("--db", str(db), "--seed-connection-types", "200000")
    deadline = time.monotonic() + 60  # the store exists: seeding has begun (polling the file system)
    while not db.exists() and process.poll() is None and time.monotonic() < deadline:
        os.sched_yield()
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_the_request_log_caps_every_body(blink_sandbox: Any) -> None:
    url = f"{blink_sandbox.base_url}/workspace/ws-demo/table/Incidents/fields/Severity"
    headers = {"BLINK-API-KEY": blink_sandbox.api_key, "Content-Type": "application/json"}
    big = json.dumps({"type": "text", "display_name": "x" * 1_000_000})
    requests.put(url, data=big, headers=headers, timeout=30)
    requests.put(url, data="y" * 1_000_000, headers={**headers, "Content-Type": "text/plain"}, timeout=30)
    bodies = [entry["body"] for entry in blink_sandbox.requests if entry["method"] == "PUT"]
    assert len(bodies) == 2
    assert all(isinstance(body, str) and len(body) < 2100 for body in bodies)


def test_put_connection_type_changes_a_running_sandboxs_catalogue_as_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command make airflow-ui prints, run as printed (#36): the type is in the catalogue."""
    from blinkops_sandbox import BlinkSandbox

    with BlinkSandbox(connection_types=3) as sandbox:
        args = ["put-connection-type", sandbox.url, "--admin-token", sandbox.admin_token, "--id", "ct-demo"]
        assert main([*args, "--name", "demo-type"]) == 0
        assert "Connection type 'ct-demo' (demo-type) written" in capsys.readouterr().out
        assert "ct-demo" in sandbox.store.connection_type_ids()
        assert main([*args, "--name", "x", "--admin-token", "wrong"]) == 2
        assert "refused it (401)" in capsys.readouterr().err


def test_the_printed_command_parses_whatever_credentials_a_sandbox_draws() -> None:
    """A random token drawn with a leading ``-`` was taken by the command line for an option (a
    CI run met it): the credentials a sandbox draws parse as printed, every time."""
    from blinkops_sandbox import BlinkSandbox
    from blinkops_sandbox.cli import build_parser

    for _ in range(200):  # a leading "-" came once in 64 draws of token_urlsafe
        sandbox = BlinkSandbox(connection_types=0)
        printed = ["put-connection-type", "http://127.0.0.1:1", "--admin-token", sandbox.admin_token]
        assert build_parser().parse_args([*printed, "--id", "i", "--name", "n"]).admin_token == sandbox.admin_token
        served = build_parser().parse_args(
            ["serve", "--api-key", sandbox.api_key, "--admin-token", sandbox.admin_token]
        )
        assert (served.api_key, served.admin_token) == (sandbox.api_key, sandbox.admin_token)


def test_create_table_makes_a_table_a_fleet_can_be_migrated_into(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#34: a fleet's tables are set up over HTTP, as a user would: the declared schema's fields
    exist afterwards, a second create is refused (409), and a wrong schema is refused (400)."""
    from blinkops_sandbox import BlinkSandbox

    schema = tmp_path / "Assets.json"
    schema.write_text(json.dumps({"fields": [{"field": "Name", "type": "text", "display_name": "Name"}]}))
    with BlinkSandbox(connection_types=1) as sandbox:
        args = ["create-table", sandbox.url, "--admin-token", sandbox.admin_token, "--ws-id", "ws-fleet"]
        assert main([*args, "--table", "Assets 2026", "--schema", str(schema)]) == 0
        assert "Table ws-fleet/Assets 2026 created" in capsys.readouterr().out
        names = [f["name"] for f in sandbox.store.fields("ws-fleet", "Assets 2026")]
        assert names == ["id", "created_at", "updated_at", "created_by", "updated_by", "Name"]  # Blink adds five
        assert main([*args, "--table", "Assets 2026", "--schema", str(schema)]) == 2
        assert "refused it (409)" in capsys.readouterr().err
        schema.write_text(json.dumps({"fields": [{"field": "Name", "type": "txt", "display_name": "Name"}]}))
        assert main([*args, "--table", "Other", "--schema", str(schema)]) == 2
        assert "refused it (400)" in capsys.readouterr().err


def test_the_fields_read_fault_switch_is_a_flag_of_serve() -> None:
    from blinkops_sandbox.cli import build_parser

    args = build_parser().parse_args(["serve", "--fields-read-status", "404"])
    assert args.fields_read_status == 404
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--fields-read-status", "500"])


# -- one line and exit 2 for a user's mistake, never a traceback (#43 item 15) --------------------------


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_refuses_a_port_out_of_range_in_one_line(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--port", port])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "a port is a whole number from 0 to 65535" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["in a missing folder", "not SQLite"])
def test_serve_refuses_a_database_it_cannot_use(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "no" / "such.db"
    if kind == "not SQLite":
        db = tmp_path / "text.db"
        db.write_text("not a database, just text " * 40)
    assert main(["serve", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blink-sandbox: --db ") and len(err.splitlines()) == 1


@pytest.mark.parametrize("token", ["tøken-€-secret", "abc\ndef", "bytes-\udcff-not-utf8", "tab\there"])
@pytest.mark.parametrize("command", ["serve-key", "serve-token", "put"])
def test_a_key_or_token_that_cannot_be_a_header_is_refused_without_echoing_it(
    capsys: pytest.CaptureFixture[str], token: str, command: str
) -> None:
    """#50 item 4: no banner then a traceback, no key a header cannot carry: one line, exit 2."""
    args = {
        "serve-key": ["serve", "--api-key", token],
        "serve-token": ["serve", "--admin-token", token],
        "put": ["put-connection-type", "http://127.0.0.1:9", "--admin-token", token, "--id", "x", "--name", "y"],
    }[command]
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    assert done.value.code == 2 and captured.out == "" and "Traceback" not in captured.err
    assert "a key or token is" in captured.err and token not in captured.err and "€" not in captured.err
    assert captured.err.strip().splitlines()[-1].startswith("blink-sandbox")


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "ftp://127.0.0.1:9", "http://:80"])
def test_a_malformed_sandbox_url_is_named_as_such(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with pytest.raises(SystemExit) as done:
        main(["put-connection-type", url, "--admin-token", "t", "--id", "x", "--name", "y"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "is not a" in err and "did not answer" not in err and "Traceback" not in err


def test_a_host_that_does_not_resolve_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "no-such-host.invalid"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blink-sandbox: cannot listen on no-such-host.invalid:0") and len(err.splitlines()) == 1


def test_a_schema_file_nested_too_deeply_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "deep.json"
    schema.write_text("[" * 100_000 + "]" * 100_000)
    args = ["create-table", "http://127.0.0.1:9", "--admin-token", "t", "--ws-id", "w", "--table", "T"]
    assert main([*args, "--schema", str(schema)]) == 2
    assert "nests too deeply" in capsys.readouterr().err


def test_an_undecodable_workspace_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"field": "Name", "type": "text", "display_name": "Name"}]}))
    args = ["create-table", "http://127.0.0.1:9", "--admin-token", "t", "--ws-id", "w\udcff", "--table", "T"]
    assert main([*args, "--schema", str(schema)]) == 2
    assert "must be text" in capsys.readouterr().err


def test_a_table_name_with_a_slash_is_created_as_one_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"field": "Name", "type": "text", "display_name": "Name"}]}))
    from blinkops_sandbox import BlinkSandbox

    with BlinkSandbox(connection_types=1) as sandbox:
        args = ["create-table", sandbox.url, "--admin-token", sandbox.admin_token, "--ws-id", "ws-q"]
        assert main([*args, "--table", "Q1/Q2 plans", "--schema", str(schema)]) == 0
        assert [f["name"] for f in sandbox.store.fields("ws-q", "Q1/Q2 plans")][-1] == "Name"


def test_update_field_makes_drift_that_the_next_plan_names_with_who(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#56 item 12: the command the docs name to make drift changes only what it is given, as a
    person in Blink's UI, and the next plan shows the change with who made it."""
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import apply_schema, plan_schema

    declared = [{"field": "Title", "type": "text", "display_name": "Incident title"}]  # a change: recorded
    record = str(tmp_path / "record.json")
    hook = BlinkHook()
    apply_schema(hook, "ws-demo", "Incidents", declared, record_path=record)
    before = blink_sandbox.store.get_field("ws-demo", "Incidents", "Title")
    args = ["update-field", blink_sandbox.url, "--admin-token", blink_sandbox.admin_token, "--ws-id", "ws-demo"]
    edit = [*args, "--table", "Incidents", "--field", "Title"]
    assert (
        main([*edit, "--description", "What happened", "--attribute", "default_value=n/a", "--by", "alice@x.io"]) == 0
    )
    assert "Field 'Title' of ws-demo/Incidents changed (attributes, description)" in capsys.readouterr().out
    after = blink_sandbox.store.get_field("ws-demo", "Incidents", "Title")
    assert after["description"] == "What happened" and after["updated_by"] == "alice@x.io"
    assert after["attributes"] == {**before["attributes"], "default_value": "n/a"}  # the rest kept
    assert after["display_name"] == before["display_name"]
    text = plan_text(plan_schema(hook, "ws-demo", "Incidents", declared, record_path=record))
    assert "- Title: description, attributes.default_value (last changed in Blink by alice@x.io" in text

    assert main(edit) == 2  # nothing to change
    assert "give what to change: --display-name, --description or --attribute" in capsys.readouterr().err
    assert main([*args, "--table", "Incidents", "--field", "Nope", "--description", "x"]) == 2
    assert "refused it (404)" in capsys.readouterr().err
    assert main([*args, "--table", "Incidents", "--field", "id", "--description", "x"]) == 2
    assert "refused it (400)" in capsys.readouterr().err  # Blink's system fields are its own
    with pytest.raises(SystemExit):
        main([*edit, "--attribute", "=1"])
    assert "give an attribute as NAME=VALUE" in capsys.readouterr().err


def test_put_records_loads_a_files_rows_all_or_none(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#64 item 2: ``blink-sandbox put-records`` writes a JSON file's rows, each checked as Blink
    checks a new record; one it would refuse writes none."""
    args = ["put-records", blink_sandbox.url, "--admin-token", blink_sandbox.admin_token, "--ws-id", "ws-demo"]
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps([{"Name": "Ada"}, {"Name": "Bob", "Email": "bob@x.io"}]))
    bad.write_text(json.dumps([{"Name": "Cy"}, {"Email": "no name?", "Age": 3}]))
    before = blink_sandbox.store.find_records("ws-demo", "Users", "{}")["total"]
    assert main([*args, "--table", "Users", "--file", str(good)]) == 0
    assert "2 row(s) written to ws-demo/Users" in capsys.readouterr().out
    assert main([*args, "--table", "Users", "--file", str(bad)]) == 2
    assert "record 1: the record names ['Age']" in capsys.readouterr().err
    after = blink_sandbox.store.find_records("ws-demo", "Users", json.dumps({"limit": 1000}))
    assert after["total"] == before + 2
    assert [row["Name"] for row in after["results"][-2:]] == ["Ada", "Bob"]
    (tmp_path / "object.json").write_text("{}")
    assert main([*args, "--table", "Users", "--file", str(tmp_path / "object.json")]) == 2
    assert "must hold a JSON list of rows" in capsys.readouterr().err


def test_put_workflows_loads_definitions_named_by_their_name_line(
    blink_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#75: ``blink-sandbox put-workflows`` loads each file as one workflow; one of that name is changed, and who
    changed it is recorded as a table's fields record it."""
    args = ["put-workflows", blink_sandbox.url, "--admin-token", blink_sandbox.admin_token, "--ws-id", "ws-demo"]
    named, unnamed = tmp_path / "triage.yaml", tmp_path / "sweep.yaml"
    named.write_text("name: Triage new incidents\nsteps: []\n")
    unnamed.write_text("steps: []\n")
    before = blink_sandbox.store.find_workflows("ws-demo", 100, 0)["total"]
    assert main([*args, str(named), str(unnamed), "--inactive"]) == 0
    assert "2 workflow(s) written to ws-demo" in capsys.readouterr().out
    listed = {one["name"]: one for one in blink_sandbox.store.find_workflows("ws-demo", 100, 0)["results"]}
    assert len(listed) == before + 1  # the seeded 'Triage new incidents' changed, 'sweep' added
    changed = listed["Triage new incidents"]
    assert (changed["id"], changed["playbook"], changed["active"]) == ("pb-triage", named.read_text(), False)
    assert changed["updated_by"] == "ui-user@sandbox.blink" and changed["created_by"] == "seed@sandbox.blink"
    assert listed["sweep"]["playbook"] == "steps: []\n"
    assert main([*args, str(tmp_path / "missing.yaml")]) == 2
    assert "the workflow file" in capsys.readouterr().err
    assert main([*args[:-1], "ws-nowhere", str(named)]) == 2
    assert "workspace 'ws-nowhere' not found" in capsys.readouterr().err
