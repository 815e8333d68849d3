"""docs/ci.md's GitHub Actions recipe (#65 item 3): its shell lines, as written, run against the
sandbox in a repository of the test's own, with a pull request's base branch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLE_DAGS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ci.md"


def steps() -> dict[str, str]:
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", PAGE.read_text(), re.S).group(1))  # type: ignore[union-attr]
    return {step["name"]: step["run"] for step in workflow["jobs"]["plan"]["steps"] if "run" in step}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def pull_request(tmp_path: Path) -> Path:
    """A repository whose base branch holds the fleet's declarations, and whose pull request
    changes one table's and adds another."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_DAGS / "blink_schema_fleet", repo / "blink_schemas")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "base", "--allow-empty")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "the fleet")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-qb", "change")
    (repo / "blink_schemas" / "ws-demo").mkdir(exist_ok=True)
    shutil.copy(
        EXAMPLE_DAGS / "blink_table_schema_migration.json", repo / "blink_schemas" / "ws-demo" / "Incidents.json"
    )
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "declare Incidents")
    return repo


def run(script: str, repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def validated_and_planned(repo: Path, env: dict[str, str]) -> str:
    """Run the recipe's validate and plan steps; the comment they write."""
    commands = steps()
    validated = run(commands["Validate every declaration"], repo, env)
    assert validated.returncode == 0 and validated.stdout.endswith("declaration(s) valid\n"), validated.stderr
    planned = run(commands["Plan each changed table"], repo, env)
    assert planned.returncode == 0, planned.stderr
    return (repo / "plan.md").read_text()


def test_the_recipes_commands_validate_and_post_the_plan_of_each_changed_table(
    blink_sandbox: Any, tmp_path: Path
) -> None:
    repo = pull_request(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "GITHUB_BASE_REF": "main",
        "BLINK_BASE_URL": blink_sandbox.base_url,
        "BLINK_API_KEY": blink_sandbox.api_key,
    }
    env.pop("AIRFLOW_CONN_BLINK_DEFAULT", None)  # the recipe's connection is BLINK_BASE_URL/BLINK_API_KEY
    commands = steps()
    comment = validated_and_planned(repo, env)
    assert comment.startswith("## Blink schema plans\n\n**Plan `")
    assert "for ws-demo/Incidents" in comment and "deletes values in 90 of 120 rows" in comment
    assert comment.count("**Plan `") == 1  # the changed table only
    assert [e for e in blink_sandbox.requests if e["method"] != "GET"] == []  # a read-only key would do

    broken = repo / "blink_schemas" / "ws-demo" / "Incidents.json"
    broken.write_text(broken.read_text().replace('"type": "long-text"', '"type": "longtext"', 1))
    failed = run(commands["Validate every declaration"], repo, env)
    assert failed.returncode == 1
    (line,) = failed.stdout.splitlines()
    assert line.startswith("::error file=blink_schemas/ws-demo/Incidents.json,line=5::entry 2 ('Description'): type:")


def install_step() -> dict[str, Any]:
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", PAGE.read_text(), re.S).group(1))  # type: ignore[union-attr]
    (step,) = [step for step in workflow["jobs"]["plan"]["steps"] if step.get("name") == "Install"]
    return dict(step)


@pytest.mark.recipe
def test_the_recipe_installs_as_written_into_a_fresh_environment_and_runs(blink_sandbox: Any, tmp_path: Path) -> None:
    """#72 item 8: the workflow line by line on a fresh runner: a new virtual environment, the
    install line as written (``BLINK_PROVIDER`` this repository, as a runner would name its copy),
    then the validate and plan steps with the commands that install gave."""
    repo = pull_request(tmp_path)
    venv = tmp_path / "runner"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = install_step()
    assert install["env"]["BLINK_PROVIDER"].startswith("git+https://")  # what the page tells a reader
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "GITHUB_BASE_REF": "main",
        "BLINK_BASE_URL": blink_sandbox.base_url,
        "BLINK_API_KEY": blink_sandbox.api_key,
        "BLINK_PROVIDER": str(ROOT),  # (this repository, where the runner would clone its copy)
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
    }
    installed = subprocess.run(
        ["bash", "-e", "-c", install["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=1800
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (venv / "bin" / "blink-schema").exists()
    comment = validated_and_planned(repo, env)
    assert "for ws-demo/Incidents" in comment and "deletes values in 90 of 120 rows" in comment
