"""The record of a schema migration: what this provider last applied to one table, the plan's
baseline.

The record is a small JSON file at a path the user names: a local path (with several workers, a
shared one) or any URI Airflow's ``ObjectStoragePath`` reads (``s3://aws_conn_id@bucket/blink/
records/``). A path that ends in ``/`` names a folder of records: each table's record is then
``<folder>/<ws_id>/<table>.json``, the names in the canonical segment form of
:mod:`blinkops_provider._inputs` (``/`` and ``..`` encoded), so no name escapes the folder and no two
tables share a file (:func:`record_location`). The record holds, per field, the body last sent
and confirmed by Blink (a 2xx), and names the Blink (its canonical host: any spelling of the
same Base URL is the same Blink), workspace and table it is for, so one record cannot be used
for another table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from typing import Any

from blinkops_provider._inputs import blink_host, segment
from blinkops_provider._storage import replacing, storage_path, worker_local
from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError

RECORD_FORMAT = "blinkops-schema-record/1"
_FORMAT_NAME, _, _FORMAT_VERSION = RECORD_FORMAT.rpartition("/")


def unusable_location(where: str, err: OSError, doing: str) -> BlinkConfigurationError:
    """A record or lock location that cannot be read or written, named, as the provider's error
    (no retry helps: fix the location or its permissions)."""
    why = err.strerror or str(err) or type(err).__name__
    return BlinkConfigurationError(
        f"the schema record location {where!r} cannot be {doing} ({type(err).__name__}: {why}); give record_path a "
        "folder or object-storage URI that every worker can read and write"
    )


def record_location(record_path: str | os.PathLike[str], ws_id: str, table: str) -> str:
    """Where the record of ``ws_id``/``table`` is kept, given ``record_path``.

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
    """Refuse a record location on a worker's own temporary disk (``/tmp``, ``/var/tmp``,
    ``/dev/shm``, the temp dir) when the executor runs tasks on several machines: each worker
    would keep its own record and its own lock, and nothing would keep two applies apart.

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
    """What this provider last applied to one table, kept as JSON at ``location``.

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

    def read(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        """The recorded field bodies and when they were recorded; ``({}, None)`` when there is no
        record yet.

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
        """The record's notes: Blink's names of the fields and the table this provider made
        (:attr:`names`, :attr:`table_name`); a note of the wrong type is left out."""
        self.names = _names(data.get("names"))
        self.retyping = _names(data.get("retyping"))
        table_name = data.get("table_name")
        self.table_name = table_name if isinstance(table_name, str) and table_name else None

    def _checked(self, raw: bytes, where: str) -> dict[str, Any]:
        """The record's JSON, once it is known to be a record of this format for this table."""
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
        """:raises BlinkInputError: the record is another Blink's, workspace's or table's."""
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
    ) -> None:
        """Replace the record with ``fields`` (name -> body sent), in one move; with ``names``
        (declared name -> Blink's name, where they differ), ``table_name`` (Blink's name of a
        table this provider created) and ``approval`` (who approved this apply's plan and when,
        ``{"approved_by", "approved_at"}``, or ``{"acknowledged": true}``) and ``backfilled``
        (the rows this apply's backfills filled, by field) noted when given."""
        notes: dict[str, Any] = {"names": dict(names)} if names else {}
        if table_name:
            notes["table_name"] = table_name
        if approval:
            notes["approval"] = dict(approval)
        if backfilled:
            notes["backfilled"] = dict(backfilled)
        if retyping:
            notes["retyping"] = dict(retyping)
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
    """A note of names (declared name -> Blink's), its entries of the wrong type left out."""
    return {str(k): v for k, v in (note.items() if isinstance(note, dict) else ()) if isinstance(v, str) and v}
