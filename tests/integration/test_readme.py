"""The README's code runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_the_one_line_migration_builds_the_reviewed_workflow() -> None:
    from blinkops_provider.task_groups import review_step_available

    (block,) = [block for block in BLOCKS if "BlinkTableMigration(" in block]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    expected = {"migrate.schema", "migrate.plan", "migrate.apply", "migrate.announce"}
    assert set(namespace["dag"].task_ids) == expected  # type: ignore[attr-defined]
    apply = namespace["dag"].task_dict["migrate.apply"]  # type: ignore[attr-defined]
    assert type(apply).__name__ == ("ReviewedApply" if review_step_available() else "UpdateTableFieldsOperator")


def test_the_dag_example_builds_its_two_tasks() -> None:
    (dag_block,) = [block for block in BLOCKS if "with DAG(" in block and "BlinkTableMigration" not in block]
    namespace: dict[str, object] = {}
    exec(compile(dag_block, "README.md", "exec"), namespace)
    tasks = {task.task_id: type(task).__name__ for task in namespace["catalogue"].dag.tasks}  # type: ignore[attr-defined]
    assert tasks == {"severity": "UpdateTableFieldOperator", "catalogue": "ConnectionTypesToXComOperator"}


def test_the_fixture_example_passes(pytester: pytest.Pytester) -> None:
    (fixture_block,) = [block for block in BLOCKS if "def test_" in block]
    pytester.makepyfile(test_readme_example=fixture_block)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
