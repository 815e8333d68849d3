"""
Operators of the Blink provider.

:class:`BaseBlinkOperator`, the base of the operators in :mod:`blinkops_provider.operators.tables` and
:mod:`blinkops_provider.operators.connection_types`.
"""

from __future__ import annotations

from blinkops_provider.operators._base import BaseBlinkOperator

__all__ = ["BaseBlinkOperator"]
