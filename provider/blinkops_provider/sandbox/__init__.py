"""
A local emulator of Blink's two endpoints, with fault injection, a CLI and a pytest fixture.

Needs FastAPI and uvicorn: they come with Airflow 3, and with the ``sandbox`` extra on Airflow 2.11
(``pip install "airflow-provider-blinkops[sandbox]"``).

The names below load on first use, so that the pytest plugin living in this package imports
nothing heavy (not even Airflow) when pytest starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from blinkops_provider.sandbox._faults import FaultConfig
    from blinkops_provider.sandbox._server import BlinkSandbox

__all__ = ["BlinkSandbox", "FaultConfig", "StoreError"]

_HOMES = {
    "BlinkSandbox": "blinkops_provider.sandbox._server",
    "FaultConfig": "blinkops_provider.sandbox._faults",
    "StoreError": "blinkops_provider.sandbox._store",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])  # the lazy names too (autodoc lists a module's members so)
