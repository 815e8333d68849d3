"""The README's code runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_the_dag_example_builds_its_two_tasks() -> None:
    (dag_block,) = [block for block in BLOCKS if "with DAG(" in block]
    namespace: dict[str, object] = {}
    exec(compile(dag_block, "README.md", "exec"), namespace)
    tasks = {task.task_id: type(task).__name__ for task in namespace["catalogue"].dag.tasks}  # type: ignore[attr-defined]
    assert tasks == {"severity": "UpdateTableFieldOperator", "catalogue": "ConnectionTypesToXComOperator"}


def test_the_fixture_example_passes(pytester: pytest.Pytester) -> None:
    (fixture_block,) = [block for block in BLOCKS if "def test_" in block]
    pytester.makepyfile(test_readme_example=fixture_block)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_the_sample_output_of_make_test_is_what_make_test_prints() -> None:
    """#36: the README's sample of ``make test`` cannot go stale: mypy's file count and pytest's
    counts are those of this tree (the collection, without running; the time is not checked)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    files = len(list((root / "provider" / "blinkops_provider").rglob("*.py")))
    assert f"Success: no issues found in {files} source files" in README
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    ).stdout
    found = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", collected)
    assert found is not None, collected[-2000:]
    selected, deselected = int(found.group(1)), int(found.group(3))
    summary = re.search(r"=+ (\d+) passed, (\d+) deselected, ", README)
    assert summary is not None
    import airflow

    from tests.conftest import HAS_OPENLINEAGE

    if airflow.__version__.startswith("3.") and HAS_OPENLINEAGE:  # the sample's environment: make test's
        assert (int(summary.group(1)), int(summary.group(2))) == (selected, deselected)
        assert f"the {deselected} deselected are `make ui-test`'s" in README
    else:  # Airflow 2.11 or the lowest floors collect fewer: the sample is not theirs
        assert selected < int(summary.group(1))
