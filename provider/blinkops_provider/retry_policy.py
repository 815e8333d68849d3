"""Airflow's task retry policy for Blink's errors (Airflow 3.2+): retry what may pass, fail at
once what never will."""

from __future__ import annotations

from blinkops_provider._retry_policy import BlinkRetryPolicy

__all__ = ["BlinkRetryPolicy"]
