"""Comparing snapshots of the connection-type catalogue (the nightly sync's diff)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["XCOM_IDS", "CatalogueDiff", "diff_catalogues", "previous_snapshot", "read_snapshot"]

_SNAPSHOT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")

XCOM_IDS = 100
"""The most ids of each kind (added, removed, changed) that :meth:`CatalogueDiff.to_xcom` keeps."""


@dataclass(frozen=True)
class CatalogueDiff:
    """What changed between two snapshots, as sorted lists of ids."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def counts(self) -> dict[str, int]:
        """``{"added": n, "removed": n, "changed": n, "unchanged": n}``."""
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "unchanged": self.unchanged,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the ids and the counts."""
        return {"added": self.added, "removed": self.removed, "changed": self.changed, "counts": self.counts}

    def to_xcom(self, cap: int = XCOM_IDS) -> dict[str, Any]:
        """A small JSON-ready dict for XCom: at most ``cap`` ids of each kind, how many more there
        are (``more``), and the counts. The whole lists belong in the ``.diff.json`` file."""
        kinds = {"added": self.added, "removed": self.removed, "changed": self.changed}
        return {
            **{kind: ids[:cap] for kind, ids in kinds.items()},
            "more": {kind: max(0, len(ids) - cap) for kind, ids in kinds.items()},
            "counts": self.counts,
        }

    def describe(self) -> str:
        """One line: ``3 added, 2 removed, 4 changed, 194 unchanged``."""
        return ", ".join(f"{count} {kind}" for kind, count in self.counts.items())


def diff_catalogues(
    previous: Iterable[Mapping[str, Any]] | None, current: Iterable[Mapping[str, Any]], *, key: str = "id"
) -> CatalogueDiff:
    """Compare two snapshots by ``key``: ids only in ``current`` are added, only in ``previous``
    removed, in both with any other member different changed. No previous snapshot (None): all added.

    :raises ValueError: an item without ``key``, or a ``key`` that appears twice in one snapshot.
    """
    before = _index(previous or (), key, "previous")
    after = _index(current, key, "current")
    both = before.keys() & after.keys()
    changed = sorted(k for k in both if before[k] != after[k])
    return CatalogueDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=changed,
        unchanged=len(both) - len(changed),
    )


def _index(items: Iterable[Mapping[str, Any]], key: str, which: str) -> dict[str, Mapping[str, Any]]:
    index: dict[str, Mapping[str, Any]] = {}
    for position, item in enumerate(items):
        if key not in item:
            raise ValueError(f"item {position} of the {which} snapshot has no {key!r}; select it to diff by it")
        value = str(item[key])
        if value in index:
            raise ValueError(f"{key} {value!r} appears twice in the {which} snapshot")
        index[value] = item
    return index


def read_snapshot(path: Any) -> list[dict[str, Any]]:
    """A snapshot written by ``ConnectionTypesToXComOperator(output_path=...)``: a JSON array.

    :param path: an ``ObjectStoragePath``, a ``pathlib.Path``, or a string for either.
    """
    data = json.loads(_as_path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path} is not a snapshot: a JSON array was expected, found {type(data).__name__}")
    return data


def previous_snapshot(path: Any) -> Any | None:
    """The latest dated snapshot (``YYYY-MM-DD.json``) in the same folder that is older than ``path``."""
    current = _as_path(path)
    folder = current.parent
    if not folder.exists():
        return None
    older = [p for p in folder.iterdir() if _SNAPSHOT_NAME.match(p.name) and p.name < current.name]
    return max(older, key=lambda p: p.name) if older else None


def _as_path(path: Any) -> Any:
    if isinstance(path, str):
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        return ObjectStoragePath(path)
    return path
