"""Airflow 2.11 and 3.x: our modules import cleanly, warn about nothing, and register with Airflow."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import blinkops_provider.exceptions, blinkops_provider.models, blinkops_provider.rql
        from blinkops_provider.hooks.blink import BlinkHook
        from blinkops_provider.operators.tables import UpdateTableFieldOperator
        from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
        BlinkHook()
        UpdateTableFieldOperator(task_id="u", ws_id="w", table="t", field="f", field_type="text",
                                 display_name="F")
        ConnectionTypesToXComOperator(task_id="c", filter={"name": "x"})
        from airflow.providers_manager import ProvidersManager
        manager = ProvidersManager()
        hook = manager.hooks["blink"]
        behaviour = manager.field_behaviours.get("blink")
        provider = manager.providers["airflow-provider-blinkops"]
    ours = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if "blinkops_provider" in w.filename or "blinkops_provider" in str(w.message)
    ]
    print(json.dumps({
        "warnings": ours,
        "hook": hook.hook_class_name if hook else None,
        "hook_name": hook.hook_name if hook else None,
        "behaviour": behaviour,
        "version": provider.version,
    }))
    """
)


@pytest.fixture(scope="module")
def fresh_interpreter() -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_no_warning_comes_from_our_modules(fresh_interpreter: dict) -> None:
    assert fresh_interpreter["warnings"] == []


def test_airflow_knows_the_blink_connection_type(fresh_interpreter: dict) -> None:
    from blinkops_provider import __version__

    assert fresh_interpreter["hook"] == "blinkops_provider.hooks.blink.BlinkHook"
    assert fresh_interpreter["hook_name"] == "Blink"
    assert fresh_interpreter["version"] == __version__
    behaviour = fresh_interpreter["behaviour"]
    if behaviour is None:  # Airflow 3.1 reads a provider's form only through Flask AppBuilder's wtforms
        import importlib.util

        import airflow

        assert airflow.__version__.startswith("3.1.") and importlib.util.find_spec("wtforms") is None
        return
    assert behaviour["relabeling"] == {
        "host": "Base URL",
        "password": "API key",
        "port": "Port (empty: the Base URL's)",
    }
    assert sorted(behaviour["hidden_fields"]) == ["login", "schema"]


def test_the_pytest_plugin_imports_nothing_heavy() -> None:
    """pytest loads the plugin before any conftest: it must not import Airflow (and fix its home)."""
    code = (
        "import sys, blinkops_sandbox._pytest_plugin; "
        "print(sorted(m for m in ('airflow', 'fastapi', 'uvicorn', 'pydantic') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
