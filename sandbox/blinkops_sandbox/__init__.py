"""
The Blink sandbox: a local emulator of Blink's endpoints, with fault injection, a CLI and a pytest fixture.

Its own distribution, ``blinkops-sandbox`` (as moto is to boto3): the provider's wheel holds none of it, and it shares
no code with the client, only Blink's published facts (``_blink_api``). It needs FastAPI and uvicorn (its dependencies).

The names below load on first use, so that the pytest plugin living in this package imports
nothing heavy (not even Airflow) when pytest starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from blinkops_sandbox._faults import FaultConfig
    from blinkops_sandbox._seed import DEMO_RECORDS, DEMO_ROWS
    from blinkops_sandbox._server import BlinkSandbox

__version__ = "0.1.0"
"""The sandbox's version."""

__all__ = ["DEMO_RECORDS", "DEMO_ROWS", "BlinkSandbox", "FaultConfig", "StoreError", "__version__"]

_HOMES = {
    "BlinkSandbox": "blinkops_sandbox._server",
    "FaultConfig": "blinkops_sandbox._faults",
    "StoreError": "blinkops_sandbox._store",
    "DEMO_ROWS": "blinkops_sandbox._seed",
    "DEMO_RECORDS": "blinkops_sandbox._seed",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])  # the lazy names too (autodoc lists a module's members so)
