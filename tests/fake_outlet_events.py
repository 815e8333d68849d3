"""``context["outlet_events"]`` for tests: keyed as Airflow's accessors are, by an asset's or an
alias's identity (its class, name and URI), since Airflow 3.1's ``Asset`` and ``AssetAlias`` are
not hashable. Reading a key makes its accessor, as Airflow's do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def identity(item: Any) -> tuple[Any, ...]:
    """What Airflow keys an accessor by; a key already read back (a tuple) is its own."""
    if isinstance(item, tuple):
        return item
    return (type(item).__name__, getattr(item, "name", None), getattr(item, "uri", None))


class Added(list[tuple[str, dict[str, Any]]]):
    """An alias's accessor: records each ``add`` as ``(uri, extra)``."""

    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        self.append((asset.uri, extra or {}))


class OutletEvents(dict[tuple[Any, ...], Any]):
    """One accessor per asset or alias, made by ``make`` (default :class:`Added`) on first read."""

    def __init__(self, make: Callable[[], Any] = Added) -> None:
        super().__init__()
        self.make = make

    def __getitem__(self, item: Any) -> Any:
        key = identity(item)
        if key not in self:
            super().__setitem__(key, self.make())
        return super().__getitem__(key)
