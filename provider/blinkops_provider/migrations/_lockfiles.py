"""Where a table's lock is kept, and the three operations the lock needs from a store, each atomic:

- **create** the lock with its body, only if there is none (never a lock without its body);
- **read** it: its body and a version that changes whenever the lock is replaced;
- **remove** it, only if it is still the version read (a conditional delete).

On a local or shared POSIX folder, the body is written to a file of its own and hard-linked into
place (``link`` fails when the name exists); the conditional delete holds an ``flock`` on
``<lock>.guard``, which every remover takes, so no lock can change between the check and the
delete. On S3 the create is a conditional write that carries the body (``If-None-Match: *``),
the read returns the object's ETag with its body, and the delete is conditional on that ETag
(``If-Match``). Any other object store cannot do these, and has no lock (:class:`NoLock`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from blinkops_provider._storage import local_path
from blinkops_provider.migrations._record import unusable_location

SUFFIX = ".lock"


class LockFile(Protocol):
    """A store's place for one table's lock."""

    where: str
    """The lock's location, as messages show it."""

    def create(self, body: bytes) -> bool:
        """Create the lock with ``body`` unless one exists; whether it was created."""

    def read(self) -> tuple[bytes, str] | None:
        """The lock's body and version, or None when there is no lock."""

    def remove(self, version: str) -> bool:
        """Remove the lock if it is still at ``version``; whether it was removed."""


def lock_file(record: str) -> LockFile:
    """The lock of the record at ``record``: keyed by the record's resolved location, so every
    spelling of one record (a symlink, ``file://``, a relative path) shares one lock."""
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
    """Every lock under a records folder (or the one lock of a record file)."""
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
        """Every remover of this lock, one at a time: threads by a lock of this process, processes
        (and hosts, on a shared file system) by an ``flock`` on ``<lock>.guard``."""
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
        """One conditional request on the lock's object: whether S3 carried it out (``lost``, or a
        failed condition: another request got there first)."""
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
    """A conditional request that S3 refused because the object is not as the condition says
    (412), or because another conditional request on it was in flight (409); or a read whose
    object was replaced between its HEAD and its GET (s3fs's ``FileExpired``, an ``EBUSY``)."""
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
