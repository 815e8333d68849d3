"""``blink-schema``'s entry point (blinkops_provider._schema_cli, #63 item 12): ``--help`` and a
mistake in the arguments are answered without importing Airflow; the command itself runs as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

LIGHT = """
import sys
from blinkops_provider._schema_cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    heavy = sorted(name for name in sys.modules if name == "airflow" or name.startswith("blinkops_provider.migrations"))
    print("exit", done.code, "imported", heavy)
"""


@pytest.mark.parametrize(("argv", "code"), [(["--help"], 0), (["pull", "--help"], 0), (["pull"], 2), ([], 2)])
def test_help_and_argument_mistakes_import_no_airflow(argv: list[str], code: int) -> None:
    done = subprocess.run([sys.executable, "-c", LIGHT, *argv], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == f"exit {code} imported []", done.stdout + done.stderr
    assert "usage: blink-schema" in done.stdout + done.stderr


def test_the_parsed_command_runs_the_migrations_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from blinkops_provider import _schema_cli
    from blinkops_provider.migrations import _cli

    ran: list[str] = []
    monkeypatch.setattr(_cli, "run", lambda args: ran.append(args.command) or 0)
    assert _schema_cli.main(["locks", "/nowhere/"]) == 0 and ran == ["locks"]
