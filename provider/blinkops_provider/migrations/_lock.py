"""
How a table is locked while a migration applies to it.

An apply holds its table's lock from before it plans until it has written the record, so two
applies of one table never send at once and the second plans against the first one's record.

- **One holder.** The lock is created only where there is none, with its body in the same atomic
  step (the stores below): of any number of applies started at once,
  one holds it. It is keyed by the record's resolved location (a symlink shares it).
- **No clock.** A lock never expires: a live holder keeps it however long it runs, and no two
  machines' clocks are compared. ``since`` is shown to people, never judged.
- **Removed only by its holder**, or by a takeover or an unlock that removes exactly the lock it
  read (a conditional delete): a lock replaced in between is left alone. A lock that is gone when
  read is not "expired": the apply simply tries to create it again.
- **A dead holder** is taken over automatically only where this provider can show it is gone: an
  earlier try of the same task instance (Airflow runs one try at a time), or a process on this
  host that no longer runs. Otherwise the refusal prints the command that releases that lock by
  its id (:func:`force_unlock`, ``blink-schema unlock``), as Terraform's ``force-unlock`` does.
- **Waiting** polls often, with jitter, and logs whom it waits for: from 0.1 s, growing by half
  at each poll up to 2 s, and back to 0.1 s whenever another apply holds the lock, so the time a
  waiter lets pass after a release stays small against the holds before it.

Where a table's lock is kept, and the three operations the lock needs from a store, each atomic:

- **create** the lock with its body, only if there is none (never a lock without its body);
- **read** it: its body and a version that changes whenever the lock is replaced;
- **remove** it, only if it is still the version read (a conditional delete).

On a local or shared POSIX folder, the body is written to a file of its own and hard-linked into
place (``link`` fails when the name exists); the conditional delete holds an ``flock`` on
``<lock>.guard``, which every remover takes, so no lock can change between the check and the
delete. On S3 the create is a conditional write that carries the body (``If-None-Match: *``),
the read returns the object's ETag with its body, and the delete is conditional on that ETag
(``If-Match``). Any other object store cannot do these, and has no lock (:class:`NoLock`).

The record of a schema migration: what this provider last applied to one table, the plan's
baseline.

The record is a small JSON file at a path the user names: a local path (with several workers, a
shared one) or any URI Airflow's ``ObjectStoragePath`` reads (``s3://aws_conn_id@bucket/blink/
records/``). A path that ends in ``/`` names a folder of records: each table's record is then
``<folder>/<ws_id>/<table>.json``, the names in the canonical segment form of
:mod:`blinkops_provider.utils.names` (``/`` and ``..`` encoded), so no name escapes the folder and no two
tables share a file (:func:`record_location`). The record holds, per field, the body last sent
and confirmed by Blink (a 2xx), and names the Blink (its canonical host: any spelling of the
same Base URL is the same Blink), workspace and table it is for, so one record cannot be used
for another table.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import logging
import os
import random
import secrets
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError, BlinkLockedError
from blinkops_provider.utils.names import blink_host, segment
from blinkops_provider.utils.storage import local_path, replacing, storage_path, worker_local
from blinkops_provider.utils.text import one_line

RECORD_FORMAT = "blinkops-schema-record/1"
_FORMAT_NAME, _, _FORMAT_VERSION = RECORD_FORMAT.rpartition("/")


def unusable_location(where: str, err: OSError, doing: str) -> BlinkConfigurationError:
    """
    Return a record or lock location that cannot be read or written, named.

    As the provider's error (no retry helps: fix the location or its permissions).
    """
    why = err.strerror or str(err) or type(err).__name__
    return BlinkConfigurationError(
        f"the schema record location {where!r} cannot be {doing} ({type(err).__name__}: {why}); give record_path a "
        "folder or object-storage URI that every worker can read and write"
    )


def record_location(record_path: str | os.PathLike[str], ws_id: str, table: str) -> str:
    """
    Return where the record of ``ws_id``/``table`` is kept, given ``record_path``.

    - A path ending in ``/`` is a folder of records: the result is
      ``<folder>/<ws_id>/<table>.json``, each name one canonical segment
      (each name percent-encoded as one path segment), so it stays in the folder and is the table's own.
    - Any other path is the record itself, as given; it may hold no ``.`` or ``..`` segment.

    :raises BlinkInputError: an empty or non-text ``record_path``, a dot segment in a file path,
        or a workspace or table name that cannot name a file (empty, a lone surrogate).
    """
    if not isinstance(record_path, (str, os.PathLike)) or not os.fspath(record_path).strip():
        raise BlinkInputError(
            f"record_path must be a file path, a folder ending in '/', or an object-storage URI, got {record_path!r}"
        )
    location = os.fspath(record_path)
    if location.endswith(("/", os.sep)):
        try:
            return f"{location}{segment(ws_id, 'workspace id')}/{segment(table, 'table name')}.json"
        except ValueError as err:
            raise BlinkInputError(f"the schema record cannot be placed in {location!r}: {err}") from None
    if {".", ".."} & set(location.replace(os.sep, "/").split("/")):
        raise BlinkInputError(
            f"record_path {location!r} has a '.' or '..' segment; give a path without them, or a folder "
            "ending in '/' (each table's record is then placed inside it, where no name can escape it)"
        )
    return location


def check_shared(location: str, executor: str | None = None) -> None:
    """
    Refuse a record location on a worker's own disk when the executor runs tasks on several machines.

    On a worker's own temporary disk (``/tmp``, ``/var/tmp``, ``/dev/shm``, the temp dir), each
    worker would keep its own record and its own lock, and nothing would keep two applies apart.

    :param executor: Airflow's ``[core] executor`` (read from the configuration when None).
    :raises BlinkConfigurationError: naming the location, the executor and what to set instead.
    """
    executor = worker_local(location, executor)
    if executor is not None:
        raise BlinkConfigurationError(
            f"the schema record location {location!r} is on this worker's own temporary disk, and the executor "
            f"({executor}) runs tasks on several machines: each worker would keep its own record and lock. Set "
            "record_path (the example's Variable blink_schema_records) to a folder every worker shares, or an "
            "object-storage URI naming its connection, e.g. s3://aws_default@bucket/blink/records/"
        )


class SchemaRecord:
    """
    What this provider last applied to one table, kept as JSON at ``location``.

    :param location: a local path or an object-storage URI, one per table.
    :param blink: the Blink it is for (the connection's base URL; any spelling of it).
    :param ws_id: the workspace.
    :param table: the table.
    """

    def __init__(self, location: str | os.PathLike[str], *, blink: str, ws_id: str, table: str) -> None:
        self.location = os.fspath(location)
        self.blink, self.ws_id, self.table = blink, ws_id, table
        self.host = blink_host(blink)
        """The Blink's canonical name (as ``blink_host`` gives it), as recorded."""
        self.names: dict[str, str] = {}
        """What :meth:`read` found noted: declared field name -> the name Blink gave the field when
        this provider added it (only where they differ)."""
        self.table_name: str | None = None
        """What :meth:`read` found noted: the name Blink gave the table when this provider created it."""
        self.retyping: dict[str, str] = {}
        """What :meth:`read` found noted: the new field of each retype in progress (a checkpoint)."""
        self.found = False
        """Whether :meth:`read` found a record."""
        self.approval: dict[str, Any] = {}
        """What :meth:`read` found noted: who let the last apply through (``approved_by``/``approved_at``, or
        ``acknowledged``)."""

    def read(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        """
        Return the recorded field bodies and when they were recorded; ``({}, None)`` when there is no record yet.

        :raises BlinkInputError: the file is not a record this provider wrote, or it is for
            another Blink, workspace or table.
        """
        path = storage_path(self.location, "record_path", BlinkConfigurationError)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return {}, None
        except OSError as err:
            raise unusable_location(self.location, err, "read") from None
        data = self._checked(raw, f"the schema record at {self.location!r}")
        self.found = True
        self._read_notes(data)
        fields = {str(name): body for name, body in data["fields"].items() if isinstance(body, dict)}
        recorded_at = data.get("recorded_at")
        return fields, recorded_at if isinstance(recorded_at, str) else None

    def _read_notes(self, data: dict[str, Any]) -> None:
        """
        Keep the record's notes.

        Blink's names of the fields and the table this provider made (:attr:`names`, :attr:`table_name`); a note of the
        wrong type is left out.
        """
        self.names = _names(data.get("names"))
        self.retyping = _names(data.get("retyping"))
        approval = data.get("approval")
        self.approval = dict(approval) if isinstance(approval, dict) else {}
        table_name = data.get("table_name")
        self.table_name = table_name if isinstance(table_name, str) and table_name else None

    def _checked(self, raw: bytes, where: str) -> dict[str, Any]:
        """Return the record's JSON, once it is known to be a record of this format for this table."""
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as err:
            raise BlinkInputError(
                f"{where} is not valid JSON ({err}); move it away to start again (every field is then planned as add)"
            ) from None
        written = data.get("format") if isinstance(data, dict) else None
        name, _, version = str(written).rpartition("/")
        if name == _FORMAT_NAME and version.isdigit() and int(version) > int(_FORMAT_VERSION):
            raise BlinkInputError(
                f"{where} is of a newer format ({written!r}) than this provider reads ({RECORD_FORMAT!r}); "
                "upgrade airflow-provider-blinkops on every worker"
            )
        if written != RECORD_FORMAT or not isinstance(data.get("fields"), dict):
            raise BlinkInputError(
                f"{where} is not a schema record written by this provider (format {RECORD_FORMAT!r}); "
                "give record_path a file of its own"
            )
        self._check_owner((data.get("blink"), data.get("ws_id"), data.get("table")), where)
        return dict(data)

    def _check_owner(self, owner: tuple[Any, Any, Any], where: str) -> None:
        """
        Check that the record is this table's.

        :raises BlinkInputError: the record is another Blink's, workspace's or table's.
        """
        if owner[0] != self.host and owner[1:] == (self.ws_id, self.table):
            raise BlinkInputError(
                f"{where} names the Blink at {owner[0]}, and the connection's Blink is {self.host}: it was written "
                f"through another connection, or the Blink moved (a sandbox on another port?). Point the connection "
                f"back at {owner[0]} if that is the same Blink, or move the record aside to start again at "
                f"{self.host} (every field is then planned as add)"
            )
        if owner != (self.host, self.ws_id, self.table):
            raise BlinkInputError(
                f"{where} is for table {owner[2]!r} of workspace {owner[1]!r} at {owner[0]}, not {self.table!r} of "
                f"{self.ws_id!r} at {self.host}; give each table its own record_path (a folder ending in '/' does)"
            )

    def write(
        self,
        fields: Mapping[str, Mapping[str, Any]],
        *,
        now: dt.datetime,
        names: Mapping[str, str] | None = None,
        table_name: str | None = None,
        approval: Mapping[str, Any] | None = None,
        backfilled: Mapping[str, int] | None = None,
        retyping: Mapping[str, str] | None = None,
        backup: str = "",
        workflows: Mapping[str, list[str]] | None = None,
    ) -> None:
        """
        Replace the record with ``fields`` (name -> body sent), in one move.

        With ``names`` (declared name -> Blink's name, where they differ), ``table_name`` (Blink's name of a table this
        provider created) and ``approval`` (who approved this apply's plan and when, ``{"approved_by", "approved_at"}``,
        or ``{"acknowledged": true}``) and ``backfilled`` (the rows this apply's backfills filled, by field) noted when
        given; ``backup``, where this apply saved what it changed and destroyed first (a rollback reads it); and
        ``workflows``, per field, the ids of the Blink workflows its plan said the change breaks.
        """
        notes: dict[str, Any] = {"names": dict(names)} if names else {}
        if table_name:
            notes["table_name"] = table_name
        if approval:
            notes["approval"] = dict(approval)
        if backfilled:
            notes["backfilled"] = dict(backfilled)
        if retyping:
            notes["retyping"] = dict(retyping)
        if backup:
            notes["backup"] = backup
        if workflows:
            notes["workflows"] = {field: list(ids) for field, ids in workflows.items()}
        data = {
            "format": RECORD_FORMAT,
            "blink": self.host,
            "ws_id": self.ws_id,
            "table": self.table,
            "recorded_at": now.astimezone(dt.UTC).isoformat(timespec="seconds"),
            "fields": dict(fields),
            **notes,
        }
        try:
            with replacing(storage_path(self.location, "record_path")) as out:  # (after sending: see apply)
                out.write(json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError as err:
            raise unusable_location(self.location, err, "written") from None


def _names(note: Any) -> dict[str, str]:
    """Return a note of names (declared name -> Blink's), its entries of the wrong type left out."""
    return {str(k): v for k, v in (note.items() if isinstance(note, dict) else ()) if isinstance(v, str) and v}


SUFFIX = ".lock"


class LockFile(Protocol):
    """A store's place for one table's lock."""

    where: str
    """The lock's location, as messages show it."""

    def create(self, body: bytes) -> bool:
        """Create the lock with ``body`` unless one exists; whether it was created."""

    def read(self) -> tuple[bytes, str] | None:
        """Return the lock's body and version, or None when there is no lock."""

    def remove(self, version: str) -> bool:
        """Remove the lock if it is still at ``version``; whether it was removed."""


def lock_file(record: str) -> LockFile:
    """
    Return the lock of the record at ``record``.

    Keyed by the record's resolved location, so every spelling of one record (a symlink, ``file://``, a relative path)
    shares one lock.
    """
    local = local_path(record)
    if local is not None:
        resolved = Path(os.path.realpath(local))
        return LocalLockFile(resolved.with_name(resolved.name + SUFFIX))
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    path = ObjectStoragePath(record + SUFFIX)
    if path.protocol in ("s3", "s3a"):
        return S3LockObject(path)
    return NoLock(str(path))


def lock_files(records: str) -> Iterator[LockFile]:
    """Yield every lock under a records folder (or the one lock of a record file)."""
    local = local_path(records)
    if local is not None:
        root = Path(os.path.realpath(local))
        found = root.rglob(f"*{SUFFIX}") if root.is_dir() else [root.with_name(root.name + SUFFIX)]
        yield from (LocalLockFile(path) for path in sorted(found) if path.is_file())
        return
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    remote: Any = ObjectStoragePath(records)
    remote.fs  # noqa: B018 - an unknown scheme fails here, on every Airflow (not as "no lock")
    if remote.protocol not in ("s3", "s3a"):
        return
    if remote.is_dir():
        yield from (S3LockObject(path) for path in sorted(remote.rglob(f"*{SUFFIX}"), key=str))
    elif remote.with_name(remote.name + SUFFIX).exists():
        yield S3LockObject(remote.with_name(remote.name + SUFFIX))


_THREAD_GUARDS: dict[str, threading.Lock] = {}
_THREAD_GUARDS_LOCK = threading.Lock()


class LocalLockFile:
    """A lock on a local or shared POSIX folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def create(self, body: bytes) -> bool:
        partial = self.path.with_name(f".{self.path.name}.{secrets.token_hex(6)}.partial")
        with self._typed("written"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                partial.write_bytes(body)
                os.link(partial, self.path)
            except FileExistsError:
                return False
            finally:
                partial.unlink(missing_ok=True)  # also when the body could not be written whole
        return True

    def read(self) -> tuple[bytes, str] | None:
        with self._typed("read"):
            try:
                body = self.path.read_bytes()
            except FileNotFoundError:
                return None
        return body, hashlib.sha256(body).hexdigest()

    def remove(self, version: str) -> bool:
        with self._guarded():
            now = self.read()
            if now is None or now[1] != version:
                return False
            with self._typed("removed"):
                self.path.unlink(missing_ok=True)
        return True

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """
        Yield every remover of this lock, one at a time.

        Threads by a lock of this process, processes (and hosts, on a shared file system) by an ``flock`` on
        ``<lock>.guard``.
        """
        guard = self.path.with_name(self.path.name + ".guard")
        with _THREAD_GUARDS_LOCK:
            in_process = _THREAD_GUARDS.setdefault(str(guard), threading.Lock())
        with in_process, self._typed("locked"), guard.open("ab") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            yield

    @contextlib.contextmanager
    def _typed(self, doing: str) -> Iterator[None]:
        try:
            yield
        except OSError as err:
            raise unusable_location(self.where, err, doing) from None


READ_TRIES = 10
"""Reads of a lock on S3 replaced under them (each a HEAD and a GET) before the store counts as unreadable."""


class S3LockObject:
    """A lock on S3, or a store that speaks its API with conditional writes and deletes."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self.where = str(path)
        self.fs = path.fs
        self.bucket, _, self.key = path.path.partition("/")  # (its bucket names the connection on Airflow 2.11)

    def create(self, body: bytes) -> bool:
        return self._conditional("put_object", "written", FileExistsError, Body=body, IfNoneMatch="*")

    def read(self) -> tuple[bytes, str] | None:
        for _ in range(READ_TRIES):  # replaced between the head and the get: read the new one
            self.fs.invalidate_cache(f"{self.bucket}/{self.key}")
            try:
                with self.fs.open(f"{self.bucket}/{self.key}", "rb") as handle:
                    return handle.read(), str(handle.details["ETag"])
            except FileNotFoundError:
                return None
            except OSError as err:
                if not _lost_a_race(err):
                    raise unusable_location(self.where, err, "read") from None
        raise unusable_location(self.where, OSError(errno.EAGAIN, f"replaced while read, {READ_TRIES} times"), "read")

    def remove(self, version: str) -> bool:
        return self._conditional("delete_object", "removed", FileNotFoundError, IfMatch=version)

    def _conditional(self, method: str, doing: str, lost: type[OSError], **kwargs: Any) -> bool:
        """
        Return one conditional request on the lock's object.

        Whether S3 carried it out (``lost``, or a failed condition: another request got there first).
        """
        try:
            self.fs.call_s3(method, Bucket=self.bucket, Key=self.key, **kwargs)
        except lost:
            return False
        except OSError as err:
            if _lost_a_race(err):
                return False
            raise unusable_location(self.where, err, doing) from None
        finally:
            self.fs.invalidate_cache(f"{self.bucket}/{self.key}")
        return True


def _lost_a_race(err: OSError) -> bool:
    """
    Return whether ``err`` is a race lost to another writer of the object.

    That is a conditional request S3 refused because the object is not as the condition says
    (412) or because another conditional request on it was in flight (409); or a read whose
    object was replaced between its HEAD and its GET (s3fs's ``FileExpired``, an ``EBUSY``).
    """
    code = getattr(err.__cause__, "response", {}).get("Error", {}).get("Code")
    return code in ("PreconditionFailed", "ConditionalRequestConflict") or err.errno in (errno.EINVAL, errno.EBUSY)


class NoLock:
    """An object store with no conditional write: nothing keeps two applies apart (the apply says so)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def create(self, body: bytes) -> bool:
        return True

    def read(self) -> tuple[bytes, str] | None:
        return None

    def remove(self, version: str) -> bool:
        return True


LOCK_FORMAT = "blinkops-table-lock/1"
FIRST_POLL, POLL_GROWTH, MAX_POLL = 0.1, 1.5, 2.0
JITTER = 0.5
"""Each wait is drawn from ``(1 - JITTER) x`` to ``(1 + JITTER) x`` the poll, so waiters started at
once do not poll in step."""

_log = logging.getLogger(__name__)


def _process(pid: int) -> tuple[str, str] | None:
    """Return a process's state and start time (Linux ``/proc``), None where they cannot be read."""
    try:
        after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return after_name[0], after_name[19]


def _running(pid: int, started: Any) -> bool:
    """
    Return whether the process ``pid`` of this host, started at ``started``, may still run.

    False only where it is shown gone (no such process, a zombie, or another process with that pid since).
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return True  # not a process id: nothing shows it gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError, OSError):
        return True
    now = _process(pid)
    if now is None:
        return True
    known = isinstance(started, str) and started.isdigit()  # a start time this module recorded
    return now[0] not in ("Z", "X") and (not known or now[1] == started)


@dataclass(frozen=True)
class Holder:
    """
    Who holds a lock.

    The Airflow task instance (DAG, run, task, map index, try), the host and the process; ``label`` names a holder that
    is not a task.
    """

    host: str
    pid: int
    started: str | None = None
    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    map_index: int | None = None
    try_number: int | None = None
    label: str | None = None

    @classmethod
    def current(cls, ti: Any = None, *, label: str | None = None) -> Holder:
        """Return this process, as the task instance ``ti`` that the operator hands in (None: no task)."""
        task: dict[str, Any] = {}
        if ti is not None and isinstance(getattr(ti, "task_id", None), str):
            names = ("dag_id", "run_id", "task_id", "map_index", "try_number")
            task = {name: getattr(ti, name, None) for name in names}
            task = {name: value if isinstance(value, (str, int)) else None for name, value in task.items()}
        pid = os.getpid()
        state = _process(pid)
        return cls(host=socket.gethostname(), pid=pid, started=state and state[1], label=label, **task)

    @property
    def task_instance(self) -> tuple[Any, ...] | None:
        parts = (self.dag_id, self.run_id, self.task_id, self.map_index)
        return parts if None not in parts else None

    def describe(self) -> str:
        where = f"on {self.host} (pid {self.pid})" if self.pid > 0 else "(host and process unknown)"
        if self.task_instance is None:
            return f"{self.label} {where}" if self.label else where
        index = f"[{self.map_index}]" if self.map_index is not None and self.map_index >= 0 else ""
        return f"{self.dag_id}/{self.run_id}/{self.task_id}{index} (try {self.try_number}) {where}"

    def why_gone(self, me: Holder) -> str:
        """Return why this holder is known to be gone, as ``me`` sees it; empty when it cannot be shown."""
        tries = (self.try_number, me.try_number)
        same = self.task_instance is not None and self.task_instance == me.task_instance
        if same and all(isinstance(n, int) for n in tries) and tries[0] < tries[1]:  # type: ignore[operator]
            return f"it is try {self.try_number} of this task instance, and this is try {me.try_number}"
        if self.host == me.host and not _running(self.pid, self.started):
            return f"its process {self.pid} no longer runs on this host"
        return ""

    @classmethod
    def from_json(cls, data: Any) -> Holder:
        """Return a holder as a lock's body names it; a member of the wrong type is left unknown."""
        data = data if isinstance(data, dict) else {}
        kinds = {"pid": int, "map_index": int, "try_number": int}
        values: dict[str, Any] = {}
        for name in (f.name for f in fields(cls)):
            value, kind = data.get(name), kinds.get(name, str)
            if isinstance(value, kind) and not isinstance(value, bool):
                values[name] = value
        values["host"] = values.get("host") or "an unknown host"
        values.setdefault("pid", 0)
        return cls(**values)


@dataclass(frozen=True)
class LockInfo:
    """A lock as read: its id, the table, since when (as its holder wrote it), and the holder."""

    id: str
    ws_id: str
    table: str
    since: str
    holder: Holder
    where: str
    version: str

    @classmethod
    def read(cls, body: bytes, version: str, where: str) -> LockInfo:
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            digest = hashlib.sha256(body).hexdigest()[:16]
            owner = data.get("owner") if isinstance(data, dict) else None  # a lock of 0.1's format
            holder = Holder.from_json({"label": str(owner) if owner else "an unknown holder"})
            return cls(f"unknown-{digest}", "?", "?", "an unknown time", holder, where, version)
        text = {name: str(data.get(name) or "?") for name in ("ws_id", "table", "since")}
        return cls(data["id"], holder=Holder.from_json(data.get("holder")), where=where, version=version, **text)

    def describe(self) -> str:
        return f"lock {self.id} on {self.ws_id}/{self.table}, held by {self.holder.describe()} since {self.since}"


def unlock_command(records: str, ws_id: str, table: str, lock_id: str) -> str:
    """Return the command that releases one lock by its id (``records`` as ``record_path`` names it)."""
    table_arg = f"{segment(ws_id, 'workspace id')}/{segment(table, 'table name')}"
    return f"blink-schema unlock -- {shlex.quote(records)} {shlex.quote(table_arg)} {shlex.quote(lock_id)}"


class TableLock:
    """
    The lock of one table's record, held for a ``with`` block (see the module's text).

    :param record: the record's location (:func:`record_location`'s, computed once by the apply).
    :param records: the ``record_path`` as given (a folder ending in ``/`` or the record itself),
        for the unlock command a refusal prints (by default the record).
    :param holder: who holds it (:meth:`Holder.current`).
    :param wait: seconds to wait for another holder (0: refuse at once), checked where it was
        given (``lock_wait``).
    :param file: where the lock is kept (by default the record's store: :func:`lock_file`).
    :raises BlinkLockedError: another apply holds the lock (after ``wait``), naming it and how to
        release it if it is gone.
    :raises BlinkConfigurationError: the lock's location cannot be read or written.
    """

    def __init__(
        self,
        record: str,
        *,
        ws_id: str,
        table: str,
        holder: Holder,
        records: str | None = None,
        wait: float = 0.0,
        now: Any = None,
        sleep: Any = None,
        monotonic: Any = None,
        log: Any = None,
        file: LockFile | None = None,
    ) -> None:
        self.record, self.ws_id, self.table, self.holder = record, ws_id, table, holder
        self.records = str(records) if records is not None else record
        self.wait = wait
        self.file = file or lock_file(self.record)
        self.id = secrets.token_hex(8)
        self.now = now or (lambda: dt.datetime.now(dt.UTC))
        self.sleep, self.monotonic = sleep or time.sleep, monotonic or time.monotonic
        self.log = log or _log

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _body(self) -> bytes:
        since = self.now().astimezone(dt.UTC).isoformat(timespec="seconds")
        data = {"format": LOCK_FORMAT, "id": self.id, "ws_id": self.ws_id, "table": self.table, "record": self.record}
        return json.dumps({**data, "since": since, "holder": asdict(self.holder)}).encode("utf-8")

    def acquire(self) -> None:
        if isinstance(self.file, NoLock):
            self.log.warning(
                "The store of %s has no conditional write, so two applies of this table are not kept apart: run "
                "them one at a time (the DAG's max_active_runs=1, or a pool of one slot)",
                self.record,
            )
            return
        body, deadline = self._body(), self.monotonic() + self.wait
        poll, told, vanished = FIRST_POLL, "", 0
        jitter = random.Random(self.id)  # each waiter its own draws
        while not self.file.create(body):
            found = self.file.read()
            vanished = vanished + 1 if found is None else 0
            if vanished == 1:
                continue  # released since: try again at once
            other = None if found is None else LockInfo.read(*found, self.file.where)
            if not self._taken_over(other):
                told, poll = self._wait_for(other, deadline, told, poll, jitter)

    def _taken_over(self, other: LockInfo | None) -> bool:
        """Remove ``other`` if its holder is gone (that lock only: one that replaced it stays)."""
        why = other.holder.why_gone(self.holder) if other is not None else ""
        if other is None or not why:
            return False
        self.log.warning("Taking over the %s: %s", other.describe(), why)
        self.file.remove(other.version)
        return True

    def _wait_for(
        self, other: LockInfo | None, deadline: float, told: str, poll: float, jitter: random.Random
    ) -> tuple[str, float]:
        """
        Wait one poll for ``other`` (a holder not yet told of: its hold starts now, and the poll with it).

        The holder told of and the next poll.

        :raises BlinkLockedError: the wait is over.
        """
        left = deadline - self.monotonic()
        if left <= 0:
            raise BlinkLockedError(self._refusal(other))
        if other is not None and told != other.id:
            self.log.info("Waiting up to %s s for the %s", f"{left:.0f}", other.describe())
            told, poll = other.id, FIRST_POLL
        self.sleep(min(poll * jitter.uniform(1 - JITTER, 1 + JITTER), left))
        return told, min(poll * POLL_GROWTH, MAX_POLL)

    def _refusal(self, other: LockInfo | None) -> str:
        waited = f" (waited {self.wait:g} s)" if self.wait else ""
        if other is None:  # a lock that cannot be created, nor read: a dangling link, say
            return (
                f"{self.ws_id}/{self.table}: the lock at {self.file.where} cannot be created and reads as missing (a "
                f"broken link there?); nothing was sent{waited}. Remove what stands at that path once no apply runs"
            )
        command = unlock_command(self.records, self.ws_id, self.table, other.id)
        return (
            f"{self.ws_id}/{self.table} is being applied by {other.holder.describe()} (since {other.since}; lock "
            f"{other.id} at {other.where}); nothing was sent{waited}. Try again once it is done. If that apply is "
            f"gone (a killed worker), release its lock: {command}"
        )

    def release(self) -> None:
        """Remove the lock if it is still this one's (never another holder's)."""
        if isinstance(self.file, NoLock):
            return
        found = self.file.read()
        if found is None or LockInfo.read(*found, self.file.where).id != self.id or not self.file.remove(found[1]):
            self.log.warning(
                "Lock %s of %s/%s is no longer this apply's: left alone",
                self.id,
                one_line(self.ws_id),
                one_line(self.table),
            )


def held_locks(records: str | os.PathLike[str]) -> list[LockInfo]:
    """Return the locks held under a records location (a folder, or one record), for people to see."""
    infos = []
    for lock in lock_files(os.fspath(records)):
        found = lock.read()
        if found is not None:
            infos.append(LockInfo.read(*found, lock.where))
    return infos


def force_unlock(records: str | os.PathLike[str], ws_id: str, table: str, lock_id: str) -> LockInfo:
    """
    Release the lock ``lock_id`` of ``ws_id``/``table`` (left by an apply that is gone).

    As Terraform's ``force-unlock`` does. Only that lock is removed: one that replaced it stays.

    :returns: the lock released.
    :raises BlinkInputError: no lock there, or not that one (nothing is released).
    """
    location = os.fspath(records)
    lock = lock_file(record_location(location, ws_id, table))
    found = lock.read()
    if found is None:
        raise BlinkInputError(f"{ws_id}/{table} has no lock at {lock.where}: nothing to release")
    info = LockInfo.read(*found, lock.where)
    if info.id != lock_id or (info.ws_id, info.table) not in ((ws_id, table), ("?", "?")):
        raise BlinkInputError(f"the lock at {lock.where} is the {info.describe()}, not {lock_id}: nothing released")
    if not lock.remove(info.version):
        raise BlinkInputError(f"the lock at {lock.where} changed while it was released: nothing released")
    return info
