"""
Where the provider reads and writes its files.

A local path with the standard library (no object-storage discovery), anything else (``s3://...``) through Airflow's
``ObjectStoragePath``. A file is written to a partial file of its own and moved into place, so a reader never sees half
of it and a failure leaves the previous file as it was.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError

SINGLE_MACHINE_EXECUTORS = frozenset({"LocalExecutor", "SequentialExecutor", "DebugExecutor"})
"""Executors that run every task on one machine: there, a local folder is shared by every task."""


def local_path(location: str) -> Path | None:
    """Return the local file a location names (a plain path or a ``file://`` URI), else None."""
    parts = urlsplit(location)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(unquote(parts.path))
    if parts.scheme and len(parts.scheme) > 1:  # s3://..., gs://... (a drive letter is one character)
        return None
    return Path(location)


def worker_local(location: str, executor: str | None = None) -> str | None:
    """
    Return the executor that makes ``location`` one worker's own copy, or None.

    The executor is returned when ``location`` is on a worker's own temporary disk (``/tmp``, ``/var/tmp``,
    ``/dev/shm``, the temp dir) and the executor runs tasks on several machines. There, each worker would keep its own
    copy of what is written, and another task would not see it.

    :param executor: Airflow's ``[core] executor`` (read from the configuration when None).
    """
    import tempfile

    local = local_path(location)
    if local is None:
        return None
    if executor is None:
        from airflow.providers.common.compat.sdk import conf

        executor = str(conf.get("core", "executor", fallback="LocalExecutor"))
    names = {part.strip().rpartition(":")[2].rpartition(".")[2] for part in executor.split(",") if part.strip()}
    if names <= SINGLE_MACHINE_EXECUTORS:
        return None
    resolved = os.path.realpath(local)
    scratch = {os.path.realpath(p) for p in ("/tmp", "/var/tmp", "/dev/shm", tempfile.gettempdir())}
    return executor if any(resolved == root or resolved.startswith(root + os.sep) for root in scratch) else None


Refusal = type[BlinkInputError] | type[BlinkConfigurationError]


def regular_file(path: Path, what: str = "output_path", refusal: Refusal = BlinkInputError) -> Path:
    """
    Return where a local file is written.

    A symlink is written through to its target (the link stays); a path that exists and is not a regular file (a device,
    pipe, socket or directory) is refused, never replaced.

    :raises BlinkInputError: (or ``refusal``) the path (or what it links to) exists and is not a
        regular file, or a folder on its way is a file.
    """
    target = path.resolve() if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except NotADirectoryError:
        raise refusal(
            f"{what} {str(path)!r} cannot be written: a folder on its way is a file; give a path under folders"
        ) from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise refusal(
            f"{what} {str(path)!r} is {kind}, not a regular file; the file replaces its target, "
            "so give the path of a file (new or existing)"
        )
    return target


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def storage_path(
    location: str | os.PathLike[str], what: str = "output_path", refusal: Refusal = BlinkInputError
) -> Any:
    """
    Return a ``pathlib.Path`` for a local location (checked with :func:`regular_file`).

    Else an ``ObjectStoragePath`` (refused when it exists and is not a file).

    :param refusal: the error a location that cannot hold the file is (a schema record's:
        :class:`BlinkConfigurationError`, as when it cannot be read or written).
    :raises BlinkInputError: (or ``refusal``) the location exists and is not a regular file.
    """
    if isinstance(location, Path):
        return regular_file(location, what, refusal)
    local = local_path(os.fspath(location))
    if local is not None:
        return regular_file(local, what, refusal)
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    target = ObjectStoragePath(os.fspath(location))
    if target.exists() and not target.is_file():
        raise refusal(f"{what} {os.fspath(location)!r} exists and is not a file; give a file path")
    return target


def folder_path(location: str) -> Any:
    """Return a ``pathlib.Path`` for a local folder, else an ``ObjectStoragePath`` (a prefix in object storage)."""
    local = local_path(location)
    if local is not None:
        return local
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    return ObjectStoragePath(location)


_LOCAL = type(Path())
"""The class of a plain local path (``PosixPath`` or ``WindowsPath``)."""


@contextmanager
def replacing(target: Any) -> Iterator[IO[bytes]]:
    """
    Yield a binary file to write ``target``'s new content to.

    When the block ends normally, it replaces ``target`` in one move; on any exception it is removed and ``target`` is
    untouched.
    """
    partial = target.with_name(f"{target.name}.{secrets.token_hex(6)}.partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with partial.open("wb") as out:
            yield out
        if type(target) is _LOCAL:  # (ObjectStoragePath is a Path subclass on Airflow 2.11)
            os.replace(partial, target)
        else:
            partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
