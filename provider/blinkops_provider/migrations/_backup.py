"""
The values an apply destroys, saved before it destroys them (#74): one backup per apply, beside the table's record.

Blink has no undo: a removed field's values are gone, and so are the values a retype's copy leaves empty or an option
dropped while rows use it. Before an apply's first write, :func:`save_backup` writes every field the plan removes,
retypes or changes, as Blink holds it now (its whole definition, what the provider does not know included), and the
values of each field whose values the plan can destroy, every row's (record id -> value), streamed page by page in one
walk of the rows. The file is then read back, its rows counted and its digest checked, before anything is sent:
a backup that cannot be written or does not read back stops the apply with nothing sent.

The file is JSON Lines, in the record's storage (a local folder or object storage), at
``<record>.backups/<plan id>.jsonl``: a header (what it is, the plan, the table, the fields' definitions), one line
per row (``{"id": ..., "values": {field: value}}``), and a trailer (``{"rows": n, "sha256": ...}``, the digest of
every line before it). It holds the table's values, never the API key.

A retry of the same plan (a killed worker) keeps the backup its first try wrote, once it reads back whole: by then
the first try may have destroyed values, and a new walk would save less.

A rollback (``_rollback``) reads one back (:func:`read_backup`, :func:`backup_rows`) and writes its own the same way
(:func:`write_backup`); :func:`list_backups` and :func:`prune_backups` are ``blink-schema backups``. An apply never
deletes a backup.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan
from blinkops_provider.models import TableField
from blinkops_provider.utils.read_ahead import read_ahead
from blinkops_provider.utils.states import Action
from blinkops_provider.utils.storage import folder_path, replacing, storage_path

FORMAT = "blinkops-backup/1"
"""What a backup's header says it is (and which version of the format)."""

PAGE_SIZE = 500
"""Rows read per request of the walk."""


@dataclass(frozen=True)
class Backup:
    """
    A backup written and read back whole.

    :ivar location: where it is (a local path or an object-storage URI).
    :ivar plan_id: the plan whose apply it precedes.
    :ivar fields: Blink's names of the fields whose definitions it holds.
    :ivar valued: Blink's names of the fields whose values it holds.
    :ivar rows: the rows it holds.
    :ivar digest: the SHA-256 of its lines before the trailer.
    """

    location: str
    plan_id: str
    fields: tuple[str, ...]
    valued: tuple[str, ...]
    rows: int
    digest: str
    saved_at: str = ""
    """When it was written (ISO 8601)."""
    header: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Its first line: what a rollback reads besides the rows (the fields' definitions, the bodies sent, the adds)."""
    size: int = 0
    """Its size in bytes (as :func:`list_backups` reads it; 0 otherwise)."""
    damaged: str = ""
    """Why it does not read back whole ("" when it does: as :func:`list_backups` lists it)."""

    def said(self) -> str:
        """Return the backup as a person reads it in a log line."""
        if not self.valued:
            named = ", ".join(map(repr, self.fields)) or "no field (it only adds)"
            return f"the definitions of {named} saved at {self.location}"
        return f"the values of {', '.join(map(repr, self.valued))} in {self.rows:,} row(s) saved at {self.location}"


def backup_location(record_location: str, plan_id: str) -> str:
    """Return where the backup of the apply of ``plan_id`` goes: beside the table's record."""
    return f"{record_location}.backups/{plan_id}.jsonl"


SAVED = (Action.ADD, Action.CHANGE, Action.RETYPE, Action.REMOVE)
"""The actions a rollback can undo, so whose apply writes a backup first (with a record to write it beside)."""


def needs_backup(plan: SchemaPlan) -> bool:
    """
    Return whether the apply of ``plan`` writes a backup first.

    It adds, changes, retypes or removes a field of a table that exists (a table it creates has nothing to save).
    """
    return plan.table_plan.action != Action.CREATE and any(row.action in SAVED for row in plan.fields)


def _defined(plan: SchemaPlan) -> list[FieldPlan]:
    """Return the rows whose fields' definitions the apply changes or removes."""
    kept = (Action.CHANGE, Action.RETYPE, Action.REMOVE)
    return [row for row in plan.fields if row.action in kept]


def save_backup(
    hook: BlinkHook,
    plan: SchemaPlan,
    record_location: str,
    held: list[TableField],
    *,
    prior: Mapping[str, Any] | None = None,
) -> Backup:
    """
    Write the backup of ``plan``'s apply, read it back, and return it (or keep the one a first try wrote).

    The header holds what a rollback needs besides the rows: the names of every field the table had (``before``), the
    whole definition of each field the apply changes, retypes or removes (``fields``), the body each change sends
    (``sent``: what a rollback compares with Blink's field to tell a person's later edit), and the display names of
    the fields the apply adds (``adds``, a retype's new field among them).

    :param held: the table's fields, as the plan read them.
    :param prior: the table's record before this apply (its fields, names, table name, approval; None: there was
        none), and ``declared``, each field's declared name by Blink's name (a rollback notes re-created fields' new
        names under it, so the declaration finds them again).

    :raises BlinkConfigurationError: the backup cannot be written, or does not read back whole: nothing was sent.
    """
    location = backup_location(record_location, plan.fingerprint)
    target = storage_path(location, "the backup", BlinkConfigurationError)
    if target.exists():
        kept = read_backup(location)
        hook.log.info("Plan %s: its backup exists (a retry): kept, %s", plan.fingerprint, kept.said())
        return kept
    table = plan.table_plan.name or plan.table
    names = {row.name_in_blink for row in _defined(plan)}
    valued = sorted({row.name_in_blink for row in plan.destroying})
    live = held
    adding = [row for row in plan.fields if row.action in (Action.ADD, Action.RETYPE) and row.body is not None]
    header = {
        "format": FORMAT,
        "plan_id": plan.fingerprint,
        "saved_at": hook.clock.now().isoformat(),
        "ws_id": plan.ws_id,
        "table": table,
        "before": sorted(str(field.name) for field in live),
        "fields": [field.to_json_dict() for field in live if field.name in names],
        "sent": {
            row.name_in_blink: row.body.to_body()
            for row in plan.fields
            if row.action == Action.CHANGE and row.body is not None
        },
        "adds": [row.body.display_name for row in adding if row.body is not None and row.body.display_name],
        "valued": valued,
        "record": dict(prior) if prior is not None else None,
        "declared": {row.name_in_blink: row.field for row in plan.fields},
    }
    backup = write_backup(hook, location, header)
    hook.log.info("Plan %s: %s (read back whole)", plan.fingerprint, backup.said())
    return backup


def write_backup(hook: BlinkHook, location: str, header: Mapping[str, Any]) -> Backup:
    """
    Write a backup at ``location``: ``header``, then the values of its ``valued`` fields in every row; read it back.

    :raises BlinkConfigurationError: it cannot be written, or does not read back whole.
    """
    target = storage_path(location, "the backup", BlinkConfigurationError)
    rows = _rows(hook, str(header["ws_id"]), str(header["table"]), list(header["valued"]))
    try:
        with replacing(target) as out:
            written = _write(out, header, rows)
    except OSError as err:
        raise BlinkConfigurationError(
            f"the backup {header['plan_id']} cannot be written at {location} ({type(err).__name__}: {err}): "
            "nothing was sent; fix the record_path's storage and run again"
        ) from None
    backup = read_backup(location)
    if (backup.rows, backup.digest) != written:
        raise BlinkConfigurationError(
            f"the backup {header['plan_id']} at {location} read back {backup.rows} row(s), digest "
            f"{backup.digest[:12]}, where {written[0]} were written, digest {written[1][:12]}: nothing was sent"
        )
    return backup


def _rows(hook: BlinkHook, ws_id: str, table: str, valued: list[str]) -> Iterator[dict[str, Any]]:
    """
    Every row's values of the ``valued`` fields, in Blink's order of ids, one page at a time.

    The next page is read (on a thread of its own) while this one is written, so the backup takes one walk's time, not
    a walk's and the writing's; two pages are held at most.
    """
    if not valued:
        return
    records = hook.iter_records(ws_id, table, page_size=PAGE_SIZE)
    for page in read_ahead(records, PAGE_SIZE, "blink-backup-read"):
        for record in page:
            yield {"id": record.get("id"), "values": {name: record.get(name) for name in valued}}


def _write(out: Any, header: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> tuple[int, str]:
    """Write the backup's lines; return its rows and digest."""
    digest, count, lines = hashlib.sha256(), -1, _lines(header, rows)  # (-1: the header is no row)
    while chunk := list(islice(lines, PAGE_SIZE)):  # one write per page of lines
        text = b"".join(chunk)
        digest.update(text)
        out.write(text)
        count += len(chunk)
    out.write(_line({"rows": count, "sha256": digest.hexdigest()}))
    return count, digest.hexdigest()


def _lines(header: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    yield _line(header)
    for row in rows:
        yield _line(row)


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode
"""One encoder for every line (``json.dumps`` with options makes a new one per call: a third of a backup's time)."""


def _line(value: Mapping[str, Any]) -> bytes:
    return (_ENCODE(value) + "\n").encode()


ROW, TRAILER = b'{"id":', b'{"rows":'
"""How a row's line and the trailer begin (their keys sorted): a read-back tells them apart without parsing a row."""


def read_backup(location: str) -> Backup:
    """
    Return the backup at ``location``, read whole: its rows counted and its digest checked against its trailer.

    :raises BlinkConfigurationError: it is missing, truncated or corrupt, saying which.
    """
    target = storage_path(location, "the backup", BlinkConfigurationError)
    if not target.exists():
        raise BlinkConfigurationError(f"the backup at {location} is missing")
    digest, count, header, trailer = hashlib.sha256(), 0, None, None
    with target.open("rb") as lines:
        for number, line in enumerate(iter(lines.readline, b""), start=1):  # (2.11 wraps a remote file: no iteration)
            if trailer is not None:
                raise BlinkConfigurationError(f"the backup at {location} is corrupt: line {number} follows its trailer")
            if number == 1 or line.startswith(TRAILER):
                value = _parsed(line, location, number)
                if number > 1:
                    trailer = value
                    continue
                header = value
            elif not line.startswith(ROW) or not line.endswith(b"\n"):
                raise BlinkConfigurationError(f"the backup at {location} is corrupt or truncated at line {number}")
            else:
                count += 1  # (a row is parsed when it is used: its digest is checked here)
            digest.update(line)
    if header is None or header.get("format") != FORMAT:
        raise BlinkConfigurationError(f"the backup at {location} is corrupt: it does not begin with a {FORMAT} header")
    if trailer is None or set(trailer) != {"rows", "sha256"}:
        raise BlinkConfigurationError(f"the backup at {location} is truncated: it has no trailer after {count} row(s)")
    if trailer["rows"] != count or trailer["sha256"] != digest.hexdigest():
        raise BlinkConfigurationError(
            f"the backup at {location} is corrupt: its trailer says {trailer['rows']} row(s) and digest "
            f"{str(trailer['sha256'])[:12]}, its lines are {count} row(s), digest {digest.hexdigest()[:12]}"
        )
    return Backup(
        location=location,
        plan_id=str(header.get("plan_id")),
        fields=tuple(str(field.get("name")) for field in header.get("fields", [])),
        valued=tuple(header.get("valued", [])),
        rows=count,
        digest=digest.hexdigest(),
        saved_at=str(header.get("saved_at") or ""),
        header=header,
    )


def _parsed(line: bytes, location: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not line.endswith(b"\n"):
        raise BlinkConfigurationError(f"the backup at {location} is corrupt or truncated at line {number}")
    return value


def backup_rows(backup: Backup) -> Iterator[dict[str, Any]]:
    """
    Yield the rows of a backup read whole (:func:`read_backup`), one at a time: ``{"id": ..., "values": {...}}``.

    :raises BlinkConfigurationError: it changed since it was read (its digest differs at the end).
    """
    target = storage_path(backup.location, "the backup", BlinkConfigurationError)
    digest = hashlib.sha256()
    with target.open("rb") as lines:
        for number, line in enumerate(iter(lines.readline, b""), start=1):  # (2.11 wraps a remote file: no iteration)
            value = _parsed(line, backup.location, number)
            if number > 1 and set(value) == {"rows", "sha256"}:
                break
            digest.update(line)
            if number > 1:
                yield value
    if digest.hexdigest() != backup.digest:
        raise BlinkConfigurationError(f"the backup at {backup.location} changed while it was read: run again")


KEPT = 10
"""How many backups of a table ``blink-schema backups --prune`` keeps by default (the newest ones)."""


def backup_locations(record_location: str) -> list[str]:
    """Return where each backup beside a table's record is, by name (a half-written ``.partial`` is none)."""
    folder = folder_path(f"{record_location}.backups")
    if not folder.exists():
        return []
    names = sorted(path.name for path in folder.iterdir() if path.name.endswith(".jsonl"))
    return [f"{record_location}.backups/{name}" for name in names]


def backups_of(record_location: str, *, only: str | None = None) -> list[Backup]:
    """
    Return the backups beside a table's record, oldest first, each read whole (``only``: the one of that plan id).

    :raises BlinkConfigurationError: one is truncated or corrupt (saying which).
    """
    found = [
        read_backup(location)
        for location in backup_locations(record_location)
        if only is None or location.endswith(f"/{only}.jsonl")
    ]
    return sorted(found, key=lambda backup: (backup.saved_at, backup.plan_id))


def list_backups(record_location: str) -> list[Backup]:
    """
    Return every backup beside a table's record, oldest first, each read whole, with its size.

    A damaged one is listed too, first, with why (:attr:`Backup.damaged`), never raised: a listing shows them all.
    """
    listed = []
    for location in backup_locations(record_location):
        size = int(storage_path(location, "the backup", BlinkConfigurationError).stat().st_size)
        try:
            backup = read_backup(location)
        except BlinkConfigurationError as err:
            name = location.rpartition("/")[2].removesuffix(".jsonl")
            backup = Backup(location, name, (), (), 0, "", damaged=str(err))
        listed.append(dataclasses.replace(backup, size=size))
    return sorted(listed, key=lambda backup: (not backup.damaged, backup.saved_at, backup.plan_id))


def prune_backups(record_location: str, keep: int = KEPT) -> list[Backup]:
    """
    Delete the backups of a table beyond the newest ``keep`` (at least 1: the newest is never deleted); return them.

    Only backups that read back whole are counted and deleted; a damaged one is left for a person to look at.

    :raises BlinkInputError: ``keep`` is not a whole number of at least 1.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise BlinkInputError(f"keep must be a whole number of backups, at least 1 (the newest is kept), got {keep!r}")
    whole = []
    for location in backup_locations(record_location):
        try:
            whole.append(read_backup(location))
        except BlinkConfigurationError:
            continue
    whole.sort(key=lambda backup: (backup.saved_at, backup.plan_id))
    old = whole[:-keep]
    for backup in old:
        storage_path(backup.location, "the backup", BlinkConfigurationError).unlink()
    return old
