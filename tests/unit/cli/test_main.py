"""``blink-schema``'s entry point (blinkops_provider.cli.main, #63 item 12; one exit status rule, #73): ``--help`` and a
mistake in the arguments are answered without importing Airflow; the command itself runs as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

LIGHT = """
import sys
from blinkops_provider.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    heavy = sorted(name for name in sys.modules if name == "airflow" or name.startswith("blinkops_provider.migrations"))
    print("exit", done.code, "imported", heavy)
"""


@pytest.mark.parametrize(("argv", "code"), [(["--help"], 0), (["pull", "--help"], 0), (["pull"], 1), ([], 1)])
def test_help_and_argument_mistakes_import_no_airflow(argv: list[str], code: int) -> None:
    done = subprocess.run([sys.executable, "-c", LIGHT, *argv], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == f"exit {code} imported []", done.stdout + done.stderr
    assert "usage: blink-schema" in done.stdout + done.stderr


def test_the_parsed_command_runs_the_migrations_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from blinkops_provider.cli.main import main

    assert main(["locks", f"{tmp_path}/"]) == 0
    assert capsys.readouterr().out == f"No lock is held under {tmp_path}/\n"  # the locks command ran


def test_the_commands_print_only_their_own_output_on_any_airflow(blink_sandbox: Any, tmp_path: Path) -> None:
    """#65 item 4: validate, plan and pull, run as a user runs them (another process), print their
    own output and nothing else: no Airflow import warning, no "empty cryptography key" (2.11 printed
    both); a mistake is one line."""
    example = Path(__file__).resolve().parents[3] / "example_dags" / "blink_table_schema_migration.json"
    env = {**os.environ, "BLINK_BASE_URL": blink_sandbox.base_url, "BLINK_API_KEY": blink_sandbox.api_key}
    env |= {"AIRFLOW_HOME": str(tmp_path / "airflow")}
    command = [sys.executable, "-m", "blinkops_provider.cli"]
    for argv in (
        ["validate", str(example)],
        ["plan", "ws-demo", "Incidents", str(example), "--format", "json"],
        ["pull", "ws-demo", "Users"],
    ):
        done = subprocess.run([*command, *argv], capture_output=True, text=True, timeout=300, env=env)
        assert (done.returncode, done.stderr) == (0, ""), (argv, done.stderr[-2000:])
        assert done.stdout.strip()
    mistake = subprocess.run(
        [*command, "plan", "ws-demo", "Nope", str(example)], capture_output=True, text=True, timeout=300, env=env
    )
    assert mistake.returncode == 1 and mistake.stderr.count("\n") == 1 and "no table 'Nope'" in mistake.stderr
