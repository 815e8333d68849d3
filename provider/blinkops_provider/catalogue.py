"""
Comparing snapshots of the connection-type catalogue (the nightly sync's diff).

Each DAG run keeps its own snapshot, named by :func:`snapshot_name` so that names sort as the runs
were scheduled to run (the logical date, or ``run_after`` for a run without one), then by run id:
``2026-11-24T000000000000Z__scheduled__2026-11-24T00%3A00%3A00%2B00%3A00.json``. The diff of a run compares its
snapshot with the latest one named before it (``previous_snapshot``), whatever its date, so
a second run the same day, or one started by an event, reports what changed since the previous
look; a retry or a clear of the same run rewrites only its own snapshot and gives the same diff.
The first snapshot is a baseline: there is nothing to compare it with. A diff names the types
added and removed, and for each changed one the members that changed, old -> new.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider.utils.text import escaped, show

__all__ = ["record_catalogue_diff", "snapshot_name"]

_SNAPSHOT_NAME = re.compile(r"^(?!.*\.diff\.json$)\d{4}-\d{2}-\d{2}(T\d{6}(\d{6})?Z__[A-Za-z0-9%._-]+)?\.json$")
"""A snapshot's file name, as :func:`snapshot_name` makes it, or ``YYYY-MM-DD.json`` as earlier
versions named them (it sorts before every later look of that day and after the days before)."""

XCOM_IDS = 100
"""The most ids of each kind (added, removed, changed) that :meth:`CatalogueDiff.to_xcom` keeps."""


@dataclass(frozen=True)
class CatalogueDiff:
    """
    What changed between two snapshots: sorted lists of ids, and what a person reads of them.

    :ivar baseline: there was no earlier snapshot: nothing to compare with (the lists are empty).
    :ivar total: how many connection types the current snapshot holds.
    :ivar names: id -> name, for every id in the lists.
    :ivar members: a changed id -> ``(member, before, after)`` for each member that changed.
    """

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    baseline: bool = False
    total: int = 0
    names: dict[str, str] = field(default_factory=dict, compare=False)
    members: dict[str, list[tuple[str, Any, Any]]] = field(default_factory=dict, compare=False)

    @property
    def counts(self) -> dict[str, int]:
        """``{"added": n, "removed": n, "changed": n, "unchanged": n}``."""
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "unchanged": self.unchanged,
        }

    def _named(self, ids: list[str]) -> list[dict[str, Any]]:
        return [{"id": i, "name": self.names.get(i)} for i in ids]

    def _changes(self, ids: list[str]) -> list[dict[str, Any]]:
        return [
            {
                "id": i,
                "name": self.names.get(i),
                "members": [{"member": m, "before": show(b), "after": show(a)} for m, b, a in self.members.get(i, [])],
            }
            for i in ids
        ]

    def to_dict(self) -> dict[str, Any]:
        """
        Return a JSON-ready dict, the counts first.

        Added and removed types by id and name, changed ones with the members that changed, old -> new (values cut to 60
        characters).
        """
        return {
            "counts": self.counts,
            "baseline": self.baseline,
            "total": self.total,
            "added": self._named(self.added),
            "removed": self._named(self.removed),
            "changed": self._changes(self.changed),
        }

    def to_xcom(self, cap: int = XCOM_IDS) -> dict[str, Any]:
        """
        :meth:`to_dict`, small for XCom: at most ``cap`` types of each kind, and how many more there are (``more``).

        The whole lists belong in the ``.diff.json`` file.
        """
        kinds = {"added": self.added, "removed": self.removed, "changed": self.changed}
        whole = self.to_dict()
        return {
            **{key: whole[key] for key in ("counts", "baseline", "total")},
            **{kind: whole[kind][:cap] for kind in kinds},
            "more": {kind: max(0, len(ids) - cap) for kind, ids in kinds.items()},
        }

    def describe(self) -> str:
        """
        Return one line, the counts first.

        ``3 added, 2 removed, 4 changed, 194 unchanged``; for a baseline, ``first snapshot: 199 connection types;
        nothing to compare with``.
        """
        if self.baseline:
            return f"first snapshot: {self.total} connection types; nothing to compare with"
        return ", ".join(f"{count} {kind}" for kind, count in self.counts.items())

    def lines(self, cap: int = 20) -> list[str]:
        """
        Return a line for each type added, removed or changed (at most ``cap`` of each kind).

        By name and id, a changed one with its members, old -> new.
        """
        out = []
        for kind, ids in (("added", self.added), ("removed", self.removed), ("changed", self.changed)):
            for i in ids[:cap]:
                shown = "; ".join(f"{_text(m)}: {show(b)} -> {show(a)}" for m, b, a in self.members.get(i, []))
                out.append(f"{kind}: {_text(self.names.get(i))} ({_text(i)})" + (f": {shown}" if shown else ""))
            if len(ids) > cap:
                out.append(f"{kind}: and {len(ids) - cap} more (all in the .diff.json file)")
        return out


def _text(value: Any) -> str:
    """Return a name or value as a diff line shows it (:func:`blinkops_provider.utils.text.escaped`)."""
    return escaped(value)


def diff_catalogues(
    previous: Iterable[Mapping[str, Any]] | None, current: Iterable[Mapping[str, Any]], *, key: str = "id"
) -> CatalogueDiff:
    """
    Compare two snapshots by ``key``.

    Ids only in ``current`` are added, only in ``previous`` removed, in both with any other member different changed. No
    previous snapshot (None): a baseline, with nothing to compare with.

    :raises ValueError: an item without ``key``, or a ``key`` that appears twice in one snapshot.
    """
    after = _index(current, key, "current")
    if previous is None:
        return CatalogueDiff(baseline=True, total=len(after))
    before = _index(previous, key, "previous")
    both = before.keys() & after.keys()
    changed = sorted(k for k in both if before[k] != after[k])
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    names = {i: str((after.get(i) or before[i]).get("name", i)) for i in (*added, *removed, *changed)}
    members = {i: _members(before[i], after[i]) for i in changed}
    return CatalogueDiff(added, removed, changed, len(both) - len(changed), False, len(after), names, members)


def _members(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    return [
        (m, before.get(m), after.get(m)) for m in sorted(before.keys() | after.keys()) if before.get(m) != after.get(m)
    ]


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
    """
    Return a snapshot written by ``ConnectionTypesToXComOperator(output_path=...)``: a JSON array.

    :param path: an ``ObjectStoragePath``, a ``pathlib.Path``, or a string for either.
    """
    try:
        data = json.loads(_as_path(path).read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as err:
        raise ValueError(f"the snapshot {path} cannot be read as JSON ({err}); move it aside to start again") from None
    if not isinstance(data, list):
        raise ValueError(f"{path} is not a snapshot: a JSON array was expected, found {type(data).__name__}")
    return data


def snapshot_name(dag_run: Any) -> str:
    """
    Return the file name of a DAG run's snapshot.

    When the run was scheduled to run (its logical date; ``run_after`` for an Airflow 3 run that has none), in UTC to
    the microsecond, then its run id with every character outside ``A-Z a-z 0-9 _ -`` written as ``%XX`` (its UTF-8
    bytes; ``.`` and ``%`` included), so two run ids never share a name and no name ends in ``.diff.json``. Names sort
    as the runs were scheduled, then by run id. Use it in a template: ``output_path=".../connection_types/{{
    snapshot_name(dag_run) }}"`` with ``user_defined_macros={"snapshot_name": snapshot_name}`` on the DAG.

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
    """Return ``text`` with every character outside ``_KEPT`` as ``%XX`` per UTF-8 byte: injective."""
    return "".join(c if c in _KEPT else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


def previous_snapshot(path: Any, *, executor: str | None = None) -> Any | None:
    """
    Return the latest snapshot in the same folder named before ``path`` (an earlier look), or None.

    :param executor: Airflow's ``[core] executor`` (read from the configuration when None).
    :raises BlinkConfigurationError: the snapshots are on a worker's own temporary disk and the
        executor runs tasks on several machines: each worker would keep its own snapshots, and a
        diff would compare with whichever this worker happens to hold.
    """
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.utils.storage import worker_local

    current = _as_path(path)
    folder = current.parent
    on = worker_local(str(folder), executor)
    if on is not None:
        raise BlinkConfigurationError(
            f"the snapshots in {str(folder)!r} are on this worker's own temporary disk, and the executor ({on}) runs "
            "tasks on several machines: each worker would keep its own snapshots, and a diff would compare with "
            "whichever this worker holds. Set output_path (the example's Variable blink_snapshot_root) to a folder "
            "every worker shares, or an object-storage URI naming its connection, e.g. s3://aws_default@bucket/blink"
        )
    if not folder.exists():
        return None
    older = [p for p in _snapshots(folder) if p.name < current.name]
    return older[-1] if older else None


def _snapshots(folder: Any) -> list[Any]:
    """Return the snapshot files in ``folder``, oldest first (their names sort by time)."""
    return sorted((p for p in folder.iterdir() if _SNAPSHOT_NAME.match(p.name) and p.is_file()), key=lambda p: p.name)


def prune_snapshots(path: Any, keep: int) -> list[str]:
    """
    Delete all but the ``keep`` latest snapshots in ``path``'s folder (``path`` among the kept).

    Each with its ``.diff.json``.

    :returns: the names deleted, oldest first.
    :raises ValueError: ``keep`` is not a whole number of at least 2 (a diff needs the previous look).
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 2:
        raise ValueError(f"keep must be a whole number of snapshots, at least 2, got {keep!r}")
    current = _as_path(path)
    stale = [p for p in _snapshots(current.parent)[:-keep] if p.name != current.name]
    for old in stale:
        old.unlink(missing_ok=True)
        old.with_name(old.name.removesuffix(".json") + ".diff.json").unlink(missing_ok=True)
    return [p.name for p in stale]


def record_catalogue_diff(
    snapshot: Any, *, total: int, keep: int, outlet_events: Any = None, log: Any = None
) -> dict[str, Any]:
    """
    Record the nightly diff of a catalogue, in one call.

    For the task after ``ConnectionTypesToXComOperator(output_path=...)``: compare ``snapshot`` with the latest earlier
    snapshot in its folder (the first run records a baseline), write ``<name>.diff.json`` beside it, keep the latest
    ``keep`` snapshots, announce the counts on the catalogue's asset (through
    :data:`~blinkops_provider.assets.CATALOGUE_ALIAS`, when ``outlet_events`` is given: declare
    ``outlets=[AssetAlias(CATALOGUE_ALIAS)]`` on the task), and log the counts and each type added, removed or changed,
    by name.

    :param snapshot: this run's snapshot (the operator's ``path``).
    :param total: how many types the operator wrote (its ``total``).
    :returns: (for XCom) the counts, then the types added, removed and changed, at most 100 of each,
        with how many more there are, the snapshot and the previous one.
    """
    current = _as_path(snapshot)
    previous = previous_snapshot(current)  # an earlier run's: a retry compares the same way
    changes = diff_catalogues(read_snapshot(previous) if previous else None, read_snapshot(current))
    named = {"snapshot": str(current), "previous": str(previous) if previous else None}
    diff_file = current.with_name(current.name.removesuffix(".json") + ".diff.json")
    diff_file.write_text(json.dumps({**changes.to_dict(), **named}, indent=1, ensure_ascii=False))
    pruned = prune_snapshots(current, keep)
    if outlet_events is not None:
        from blinkops_provider.assets import CATALOGUE_ALIAS, add_alias_event, blink_catalogue_asset

        report = {**changes.counts, "baseline": changes.baseline, "total": total, **named}
        add_alias_event(outlet_events, CATALOGUE_ALIAS, blink_catalogue_asset(), report)
    _log_diff(log or logging.getLogger("airflow.task"), changes, current, previous, pruned)
    return {**changes.to_xcom(), **named}


def _log_diff(log: Any, changes: CatalogueDiff, current: Any, previous: Any, pruned: list[str]) -> None:
    log.info("Catalogue: %s", changes.describe())  # the counts first, then what changed, by name
    for line in changes.lines():
        log.info("  %s", line)
    log.info("Snapshot %s (previous: %s)", current.name, previous.name if previous else "none")
    if pruned:
        log.info("Deleted %d old snapshot(s), the oldest %s", len(pruned), pruned[0])


def _as_path(path: Any) -> Any:
    if isinstance(path, str):
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        return ObjectStoragePath(path)
    return path
