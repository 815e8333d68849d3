"""
pytest plugin (entry point ``pytest11``): the ``blink_sandbox`` fixture.

Test your DAGs and hooks offline::

    def test_my_dag(blink_sandbox):
        blink_sandbox.set_faults(sequence=[503])        # the first request fails
        run_my_task()                                   # uses the blink_default connection
        assert blink_sandbox.requests[-1]["status"] == 200

By default one sandbox serves the whole session; before each test it is reset to its seed data,
its faults cleared and its request log emptied, and ``AIRFLOW_CONN_BLINK_DEFAULT`` points at it.
``@pytest.mark.blink_sandbox(connection_types=2500, ...)`` gives a test its own sandbox, made with
those :class:`~blinkops_sandbox.BlinkSandbox` options.

Cheap and inert until used: loading the plugin imports only this module (and pytest); the
sandbox, its store and its server libraries are imported, and a server started, only when a test
asks for ``blink_sandbox``. Without FastAPI or uvicorn, that test fails with the install hint.
Switch the plugin off with ``pytest -p no:blink_sandbox`` (or ``addopts`` in your pytest config).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from blinkops_sandbox._server import BlinkSandbox


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "blink_sandbox(**options): run the test against its own Blink sandbox made with these "
        "BlinkSandbox options (e.g. connection_types=2500)",
    )


def _sandbox_class() -> type[BlinkSandbox]:
    """
    Return the sandbox's class, imported only when a test asks for the fixture.

    A clear failure, not a traceback, when its server libraries are missing.
    """
    from blinkops_sandbox._server import BlinkSandbox, SandboxDependencyError, check_dependencies

    try:
        check_dependencies()
    except SandboxDependencyError as err:
        pytest.fail(f"blink_sandbox: {err}", pytrace=False)
    return BlinkSandbox


@pytest.fixture(scope="session")
def blink_sandbox_session() -> Iterator[BlinkSandbox]:
    """Yield the sandbox shared by the session's tests (use ``blink_sandbox`` in tests)."""
    with _sandbox_class()() as sandbox:
        yield sandbox


@pytest.fixture
def blink_sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlinkSandbox]:
    """Yield a running Blink sandbox with ``blink_default`` pointed at it, fresh for this test."""
    marker = request.node.get_closest_marker("blink_sandbox")
    if marker is not None:
        sandbox = _sandbox_class()(*marker.args, **marker.kwargs).start()
    else:
        sandbox = request.getfixturevalue("blink_sandbox_session")
        sandbox.reset()
    sandbox.clear_faults()
    sandbox.log.clear()
    monkeypatch.setenv("AIRFLOW_CONN_BLINK_DEFAULT", sandbox.connection_json())
    try:
        yield sandbox
    finally:
        if marker is not None:
            sandbox.stop()
        else:
            sandbox.clear_faults()
