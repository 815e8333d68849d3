"""Blink's query language (RQL) for the connection-type listing: the ``q`` parameter."""

from __future__ import annotations

from blinkops_provider._rql import RQLQuery

__all__ = ["RQLQuery"]
