"""The package's public API and its layers (#49, #58): every public name documented once in
docs/api.rst with a docstring, every documented name public, nothing exported by a private module
(how many names there are is what callers need, not a limit); the layers are import-linter's
(pyproject.toml's ``[tool.importlinter]``), and breaking one fails it."""

from __future__ import annotations

import ast
import importlib
import itertools
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import blinkops_provider
import blinkops_sandbox

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "provider" / "blinkops_provider"
SANDBOX = ROOT / "sandbox" / "blinkops_sandbox"
API_RST = (ROOT / "docs" / "api.rst").read_text()


def modules() -> dict[str, object]:
    """Every module of the provider, and of the sandbox (its own distribution, documented beside it)."""
    found: dict[str, object] = {"blinkops_provider": blinkops_provider, "blinkops_sandbox": blinkops_sandbox}
    for package in (blinkops_provider, blinkops_sandbox):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.endswith(".__main__"):
                continue  # (running it is the command)
            found[info.name] = importlib.import_module(info.name)
    return found


def is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def public_names() -> set[str]:
    return {
        f"{name}.{member}"
        for name, module in modules().items()
        if is_public(name)
        for member in getattr(module, "__all__", [])
    }


def documented() -> set[str]:
    """``module.name`` for every name docs/api.rst documents: each ``autoX`` directive, and the
    members of an ``automodule`` (its ``:members:``, or all of ``__all__``: conf.py's default)."""
    names: set[str] = set()
    for kind, target, options in re.findall(r"^\.\. auto(\w+):: (\S+)\n((?:   .*\n)*)", API_RST, re.M):
        members = re.search(r":members:(.*)", options)
        if kind != "module":
            names.add(target)
        elif members and members.group(1).strip():
            names |= {f"{target}.{member.strip()}" for member in members.group(1).split(",")}
        else:
            names |= {f"{target}.{member}" for member in importlib.import_module(target).__all__}
    return names


def test_docs_api_documents_every_public_name_and_only_those() -> None:
    public = public_names()
    assert public and documented() == public
    automodules = re.findall(r"^\.\. automodule:: (\S+)$", API_RST, re.M)
    assert len(automodules) == len(set(automodules))  # each module, so each name, once


def test_no_private_module_exports_or_is_documented() -> None:
    for name, module in modules().items():
        if not is_public(name):
            assert not hasattr(module, "__all__"), f"{name} is private: it exports nothing"
            assert name not in API_RST, f"the docs show the private module {name}"
    documents = [*ROOT.glob("docs/*.md"), *ROOT.glob("docs/*/*.md"), ROOT / "README.md"]
    for document in documents:
        if document.name != "changelog.md":  # history names the modules as they were
            assert not re.findall(r"blinkops_provider(?:\.\w+)*\._\w+", document.read_text()), document


def _constant_docs() -> dict[str, str]:
    """Every module-level ``NAME = ...`` of the package followed by a string: its docstring."""
    docs: dict[str, str] = {}
    for path in [*PACKAGE.rglob("*.py"), *SANDBOX.rglob("*.py")]:
        body = ast.parse(path.read_text()).body
        for node, after in itertools.pairwise(body):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(after, ast.Expr):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                    docs.update({t.id: after.value.value for t in targets if isinstance(t, ast.Name)})
    return docs


def test_every_public_name_has_a_docstring() -> None:
    constants = _constant_docs()
    for name in public_names():
        module, member = name.rsplit(".", 1)
        value = getattr(importlib.import_module(module), member)
        if callable(value):
            assert (value.__doc__ or "").strip(), name
        else:
            assert constants.get(member, "").strip(), f"{name}: a constant needs a docstring"


LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(package: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=package.parent,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        (None, "", None),
        ("blinkops_provider/hooks/_walk.py", "import blinkops_provider.migrations", "Layers"),
        ("blinkops_sandbox/_store.py", "import blinkops_provider.hooks.blink", "The sandbox imports nothing"),
        ("blinkops_provider/assets.py", "import blinkops_sandbox", "The sandbox imports nothing"),
        ("blinkops_provider/operators/_base.py", "import blinkops_provider.migrations._plan", "front door only"),
        ("blinkops_provider/migrations/_apply.py", "import blinkops_provider.hooks._walk", "catalogue walk"),
        ("blinkops_provider/migrations/_plan_types.py", "import blinkops_provider.migrations._text", "No import cycle"),
        ("blinkops_provider/migrations/_plan.py", "import blinkops_provider.migrations._review", "a live table pulled"),
    ],
    ids=[
        "as-is",
        "hooks-import-migrations",
        "sandbox-imports-client",
        "provider-imports-sandbox",
        "operator-below-front-door",
        "hooks-internal",
        "plan-imports-its-reader",
        "planner-imports-the-gate",
    ],
)
def test_import_linter_holds_the_layers(tmp_path: Path, module: str | None, line: str, contract: str | None) -> None:
    """The packages as they are keep every contract; one import that crosses a layer breaks one."""
    copy = tmp_path / "blinkops_provider"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SANDBOX, tmp_path / "blinkops_sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    if module is not None:
        target = tmp_path / module
        target.write_text(target.read_text() + f"\n{line}  # a crossing\n")
    done = lint_imports(copy)
    if contract is None:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    else:
        assert done.returncode != 0
        broken = done.stdout[done.stdout.index("Broken contracts") :]
        assert contract in broken, broken


def test_the_nightly_sync_example_calls_the_provider() -> None:
    """#41: the diff, prune and announce are ``record_catalogue_diff``'s."""
    example = ROOT / "example_dags" / "blink_connection_types_nightly_sync.py"
    assert "record_catalogue_diff(" in example.read_text()


def test_dev_imports_nothing_from_the_tests() -> None:
    """#66: a harness (``dev/``) that needs no test code."""
    for path in sorted((ROOT / "dev").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = [
            name
            for node in ast.walk(tree)
            for name in (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        ]
        assert [name for name in imported if name == "tests" or name.startswith("tests.")] == [], path.name


AIRFLOW_AT_THE_EDGE = {
    "get_current_context",
    "Context",
    "DAG",
    "dag",
    "XCom",
    "BaseOperator",
    "ApprovalOperator",
    "TaskInstance",
    "task_dict",
    "xcom_pull",
    "xcom_push",
    "get_flat_relative_ids",
}
"""What the migrations must not read of Airflow (#66): the task's context, the DAG, XCom, operators."""


def test_the_migrations_read_nothing_of_airflows_task_context_dag_xcom_or_operators() -> None:
    """Airflow stays at the edge: the operators read the review's answer and the holder and hand
    them in. (Storage through ObjectStoragePath, and the command line's connection look-up, are
    not a task's context.)"""
    for path in sorted((PACKAGE / "migrations").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow"):
                names = {alias.name for alias in node.names}
                assert not names & AIRFLOW_AT_THE_EDGE, f"{path.name} imports {names & AIRFLOW_AT_THE_EDGE}"
                assert "operators" not in (node.module or "").split("."), f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Attribute):
                assert node.attr not in AIRFLOW_AT_THE_EDGE, f"{path.name} reads .{node.attr}"
