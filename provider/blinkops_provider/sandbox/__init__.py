"""A local emulator of Blink's two endpoints, with fault injection, a CLI and a pytest fixture.

Needs FastAPI and uvicorn: they come with Airflow 3, and with the ``sandbox`` extra on Airflow 2.11
(``pip install "airflow-provider-blinkops[sandbox]"``).
"""

from __future__ import annotations

from blinkops_provider.sandbox.faults import FaultConfig
from blinkops_provider.sandbox.server import BlinkSandbox

__all__ = ["BlinkSandbox", "FaultConfig"]
