"""The package's shape (#41): the hook is a thin client that knows nothing of migrations, no
module imports another that imports it back, functions stay small, and the modules the issue
sized stay within their bounds. Read from the source with ``ast``: nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "provider" / "blinkops_provider"
TESTS = Path(__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in MODULES}
    return found


def test_the_hooks_and_the_batch_import_nothing_of_the_migrations() -> None:
    clients = [path for name, path in MODULES.items() if name.startswith("blinkops_provider.hooks")]
    clients.append(MODULES["blinkops_provider.batch"])
    for path in clients:
        assert not [name for name in imports(path) if name.startswith("blinkops_provider.migrations")], path


def test_the_operators_reach_the_migrations_through_their_front_door_only() -> None:
    """#48: ``blinkops_provider.migrations`` is the one door; nothing below it is imported."""
    operators = [path for name, path in MODULES.items() if name.startswith("blinkops_provider.operators")]
    below = {name for path in operators for name in imports(path) if name.startswith("blinkops_provider.migrations.")}
    assert below == set()
    assert any("blinkops_provider.migrations" in imports(path) for path in operators)


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = {name: imports(path) - {name} for name, path in MODULES.items()}
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    cycles = []

    def visit(name: str, trail: list[str]) -> None:
        for target in sorted(graph[name]):
            if target in trail:
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in done:
                visit(target, [*trail, target])
        done.add(name)

    done: set[str] = set()
    for name in sorted(graph):
        if name not in done:
            visit(name, [name])
    assert cycles == []


def functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text())
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_functions_are_small() -> None:
    """At most 60 lines (docstring included) outside the sandbox, 80 inside; ruff's C901 holds
    the complexity to 10 outside it (pyproject.toml)."""
    long = []
    for name, path in MODULES.items():
        bound = 80 if ".sandbox" in name else 60
        long += [
            f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"  # type: ignore[operator]
            for node in functions(path)
            if node.end_lineno - node.lineno + 1 > bound  # type: ignore[operator]
        ]
    assert long == []


def test_the_nightly_sync_example_calls_the_provider() -> None:
    """#41: the diff, prune and announce are ``record_catalogue_diff``'s."""
    example = PACKAGE.parents[1] / "example_dags" / "blink_connection_types_nightly_sync.py"
    assert "record_catalogue_diff(" in example.read_text()
