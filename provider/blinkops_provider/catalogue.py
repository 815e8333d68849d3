"""Comparing snapshots of the connection-type catalogue (the nightly sync's diff).

Each DAG run keeps its own snapshot, named by :func:`snapshot_name` so that names sort as the runs
were scheduled to run (the logical date, or ``run_after`` for a run without one), then by run id:
``2026-11-24T000000Z__scheduled__2026-11-24T00-00-00-00-00.json``. The diff of a run compares its
snapshot with the latest one named before it (:func:`previous_snapshot`), whatever its date, so
a second run the same day, or one started by an event, reports what changed since the previous
look; a retry or a clear of the same run rewrites only its own snapshot and gives the same diff.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "XCOM_IDS",
    "CatalogueDiff",
    "diff_catalogues",
    "previous_snapshot",
    "prune_snapshots",
    "read_snapshot",
    "snapshot_name",
]

_SNAPSHOT_NAME = re.compile(r"^(?!.*\.diff\.json$)\d{4}-\d{2}-\d{2}(T\d{6}(\d{6})?Z__[A-Za-z0-9%._-]+)?\.json$")
"""A snapshot's file name: :func:`snapshot_name`'s, or ``YYYY-MM-DD.json`` (before 0.2)."""

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


def snapshot_name(dag_run: Any) -> str:
    """The file name of a DAG run's snapshot: when the run was scheduled to run (its logical date;
    ``run_after`` for an Airflow 3 run that has none), in UTC to the microsecond, then its run id
    with every character outside ``A-Z a-z 0-9 _ -`` written as ``%XX`` (its UTF-8 bytes; ``.``
    and ``%`` included), so two run ids never share a name and no name ends in ``.diff.json``.
    Names sort as the runs were scheduled, then by run id.
    Use it in a template: ``output_path=".../connection_types/{{ snapshot_name(dag_run) }}"`` with
    ``user_defined_macros={"snapshot_name": snapshot_name}`` on the DAG.

    :raises ValueError: the run has neither a ``run_after`` nor a logical date.
    """
    when = next(
        (
            value
            for name in ("logical_date", "execution_date", "run_after")
            if isinstance(value := getattr(dag_run, name, None), dt.datetime)
        ),
        None,
    )
    if when is None:
        raise ValueError(f"the DAG run {getattr(dag_run, 'run_id', dag_run)!r} has no run_after or logical date")
    stamp = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H%M%S%fZ")
    return f"{stamp}__{_file_safe(str(dag_run.run_id))}.json"


_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _file_safe(text: str) -> str:
    """``text`` with every character outside ``_KEPT`` as ``%XX`` per UTF-8 byte: injective."""
    return "".join(c if c in _KEPT else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


def previous_snapshot(path: Any) -> Any | None:
    """The latest snapshot in the same folder named before ``path`` (an earlier look), or None."""
    current = _as_path(path)
    folder = current.parent
    if not folder.exists():
        return None
    older = [p for p in folder.iterdir() if _SNAPSHOT_NAME.match(p.name) and p.name < current.name]
    return max(older, key=lambda p: p.name) if older else None


def prune_snapshots(path: Any, keep: int) -> list[str]:
    """Delete all but the ``keep`` latest snapshots in ``path``'s folder (``path`` among the kept),
    each with its ``.diff.json``.

    :returns: the names deleted, oldest first.
    :raises ValueError: ``keep`` is not a whole number of at least 2 (a diff needs the previous look).
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 2:
        raise ValueError(f"keep must be a whole number of snapshots, at least 2, got {keep!r}")
    current = _as_path(path)
    snapshots = sorted((p for p in current.parent.iterdir() if _SNAPSHOT_NAME.match(p.name)), key=lambda p: p.name)
    stale = [p for p in snapshots[:-keep] if p.name != current.name]
    for old in stale:
        old.unlink(missing_ok=True)
        old.with_name(old.name.removesuffix(".json") + ".diff.json").unlink(missing_ok=True)
    return [p.name for p in stale]


def _as_path(path: Any) -> Any:
    if isinstance(path, str):
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        return ObjectStoragePath(path)
    return path
