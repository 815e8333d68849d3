"""The plan of a schema migration: the declared fields against the record of this provider's last
apply to the table, and that record itself.

Blink's API can update a table's field but cannot read one, so the only baseline there is, is
what this provider last applied and recorded. Each declared field is planned as ``add`` (never
applied through this record), ``change`` (with the members that differ) or ``unchanged``.

The record is a small JSON file at a path the user names: a local path (with several workers, a
shared one) or any URI Airflow's ``ObjectStoragePath`` reads (``s3://bucket/blink/records/
Incidents.json``). A path that ends in ``/`` names a folder of records: each table's record is
then ``<folder>/<ws_id>/<table>.json``, the names in the canonical segment form of
:mod:`blinkops_provider.names` (``/`` and ``..`` encoded), so no name escapes the folder and no two
tables share a file (:func:`record_location`). The record holds, per field, the body last sent
and confirmed by Blink (a 2xx), and names the Blink (its canonical host: any spelling of the
same Base URL is the same Blink), workspace and table it is for, so one record cannot be used
for another table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from blinkops_provider._storage import replacing, storage_path
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import FieldUpdate, _RepeatedMember, _unique_members, validate_field_updates
from blinkops_provider.names import blink_host, segment

__all__ = [
    "ADD",
    "BASELINE",
    "CHANGE",
    "UNCHANGED",
    "FieldPlan",
    "SchemaPlan",
    "SchemaRecord",
    "declared_schema",
    "plan_fields",
    "record_location",
]

ADD, CHANGE, UNCHANGED = "add", "change", "unchanged"

BASELINE = (
    "The baseline is the last apply this provider recorded, not Blink's current state: Blink's API "
    "cannot read a table's fields, so changes made in Blink's UI or by other tools are not seen."
)

RECORD_FORMAT = "blinkops-schema-record/1"
_FORMAT_NAME, _, _FORMAT_VERSION = RECORD_FORMAT.rpartition("/")


def record_location(record_path: str | os.PathLike[str], ws_id: str, table: str) -> str:
    """Where the record of ``ws_id``/``table`` is kept, given ``record_path``.

    - A path ending in ``/`` is a folder of records: the result is
      ``<folder>/<ws_id>/<table>.json``, each name one canonical segment
      (:func:`blinkops_provider.names.segment`), so it stays in the folder and is the table's own.
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


@dataclass(frozen=True)
class FieldPlan:
    """What the apply will do to one field: ``add``, ``change`` (``members`` lists what differs,
    e.g. ``display_name``, ``attributes.options``) or ``unchanged``."""

    field: str
    action: str
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchemaPlan:
    """The declared schema of one table against the record of the last apply.

    :ivar record: where the record is kept.
    :ivar recorded_at: when it was last written (ISO 8601), None when there is none yet.
    :ivar fields: one :class:`FieldPlan` per declared field, in the declared order.
    :ivar undeclared: fields in the record that the schema no longer declares (left as they are:
        a field update cannot delete a field).
    """

    ws_id: str
    table: str
    record: str
    recorded_at: str | None
    fields: tuple[FieldPlan, ...]
    undeclared: tuple[str, ...] = ()

    @cached_property
    def _by_field(self) -> dict[str, FieldPlan]:
        return {plan.field: plan for plan in self.fields}

    def action(self, field: str) -> str:
        """The action planned for a declared field."""
        return self._by_field[field].action

    def members(self, field: str) -> tuple[str, ...]:
        """The members that differ for a declared field (empty unless ``change``)."""
        return self._by_field[field].members

    @property
    def counts(self) -> dict[str, int]:
        """``{"add": n, "change": n, "unchanged": n}``."""
        return {action: sum(plan.action == action for plan in self.fields) for action in (ADD, CHANGE, UNCHANGED)}

    def describe(self) -> str:
        """The plan as text for the log and for a reviewer: a summary line, the baseline, and a
        table of the fields (Markdown, which reads as plain text too)."""
        counts = self.counts
        since = f"recorded {self.recorded_at}" if self.recorded_at else "none recorded yet"
        lines = [
            f"Plan for {self.ws_id}/{self.table}: {counts[ADD]} to add, {counts[CHANGE]} to change, "
            f"{counts[UNCHANGED]} unchanged (last apply: {since}, at {self.record})",
            "",
            BASELINE,
            "",
            "| field | action | members that differ |",
            "|---|---|---|",
            *(f"| {_cell(plan.field)} | {plan.action} | {', '.join(plan.members)} |" for plan in self.fields),
        ]
        if self.undeclared:
            names = ", ".join(map(repr, self.undeclared))
            lines += ["", f"Recorded but no longer declared (left as they are): {names}"]
        return "\n".join(lines)

    def log_to(self, log: Any) -> None:
        """Log :meth:`describe`, one line per record (so every log view keeps the table's lines)."""
        for line in self.describe().splitlines():
            if line:
                log.info("%s", line)

    def to_xcom(self) -> dict[str, Any]:
        """A JSON-ready dict: the fields with their actions, the counts, the baseline and the text."""
        return {
            "ws_id": self.ws_id,
            "table": self.table,
            "record": self.record,
            "recorded_at": self.recorded_at,
            "baseline": BASELINE,
            "fields": [{"field": p.field, "action": p.action, "members": list(p.members)} for p in self.fields],
            "counts": self.counts,
            "undeclared": list(self.undeclared),
            "text": self.describe(),
        }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def declared_schema(value: Any, *, source: str) -> list[dict[str, Any]]:
    """The entries of a declared schema, checked before any request: from its JSON text, a
    ``{"fields": [...]}`` object, or the list of entries itself.

    :param source: where the schema came from, named in every error (``"the 'schema' param"``,
        ``"schema file /opt/schemas/incidents.json"``).
    :returns: the entries as JSON-ready dicts, ``{"field": name, "type": ..., "display_name":
        ..., "attributes": {...}}``, in the declared order.
    :raises BlinkInputError: naming the source, and the line and column of a JSON syntax error
        or the position of each wrong entry.
    """
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value, object_pairs_hook=_unique_members)
        except json.JSONDecodeError as err:
            raise BlinkInputError(
                f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
            ) from None
        except _RepeatedMember as err:
            raise BlinkInputError(f"{source} names {err.args[0]!r} twice in one object; name it once") from None
        except RecursionError:
            raise BlinkInputError(f"{source} nests too deeply to read") from None
    if isinstance(value, Mapping):
        if not isinstance(value.get("fields"), list):
            raise BlinkInputError(f"{source} is an object without a 'fields' list; give {{\"fields\": [entries]}}")
        value = value["fields"]
    if not isinstance(value, list):
        raise BlinkInputError(
            f"{source} is a {type(value).__name__}; give a list of entries or an object with a 'fields' list"
        )
    try:
        batch = validate_field_updates(value, require_type_and_name=True)
    except BlinkInputError as err:
        raise BlinkInputError(f"{source}: {err}") from None
    return [{"field": name, **update.to_body()} for name, update in batch]


def plan_fields(declared: Iterable[tuple[str, FieldUpdate]], recorded: Mapping[str, Any]) -> list[FieldPlan]:
    """Each declared field against its recorded body: ``add``, ``change`` or ``unchanged``."""
    plans = []
    for name, update in declared:
        before = recorded.get(name)
        if not isinstance(before, Mapping):
            plans.append(FieldPlan(name, ADD))
            continue
        members = differing_members(update.to_body(), before)
        plans.append(FieldPlan(name, CHANGE, tuple(members)) if members else FieldPlan(name, UNCHANGED))
    return plans


def differing_members(declared: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """The members of two field bodies that differ: ``type``, ``display_name``, and each attribute
    as ``attributes.<name>`` (an absent attribute and an absent ``attributes`` count as unset)."""
    members = [name for name in ("type", "display_name") if declared.get(name) != recorded.get(name)]
    after, before = declared.get("attributes") or {}, recorded.get("attributes") or {}
    if not isinstance(before, Mapping):
        before = {}
    names = sorted(set(after) | set(before))
    members += [f"attributes.{name}" for name in names if after.get(name) != before.get(name)]
    return members


def _canonical(blink: Any) -> Any:
    """A recorded Blink in canonical form (records before 0.2 hold the Base URL as it was spelt)."""
    try:
        return blink_host(blink) if isinstance(blink, str) else blink
    except ValueError:
        return blink


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
        """The Blink's canonical name (:func:`blinkops_provider.names.blink_host`), as recorded."""

    def read(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        """The recorded field bodies and when they were recorded; ``({}, None)`` when there is no
        record yet.

        :raises BlinkInputError: the file is not a record this provider wrote, or it is for
            another Blink, workspace or table.
        """
        path = storage_path(self.location, "record_path")
        if not path.exists():
            return {}, None
        where = f"the schema record at {self.location!r}"
        try:
            data = json.loads(path.read_bytes())
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
        owner = (_canonical(data.get("blink")), data.get("ws_id"), data.get("table"))
        if owner != (self.host, self.ws_id, self.table):
            raise BlinkInputError(
                f"{where} is for table {owner[2]!r} of workspace {owner[1]!r} at {owner[0]}, not {self.table!r} of "
                f"{self.ws_id!r} at {self.host}; give each table its own record_path (a folder ending in '/' does)"
            )
        fields = {str(name): body for name, body in data["fields"].items() if isinstance(body, dict)}
        recorded_at = data.get("recorded_at")
        return fields, recorded_at if isinstance(recorded_at, str) else None

    def write(self, fields: Mapping[str, Mapping[str, Any]], *, now: dt.datetime) -> None:
        """Replace the record with ``fields`` (name -> body sent), in one move."""
        data = {
            "format": RECORD_FORMAT,
            "blink": self.host,
            "ws_id": self.ws_id,
            "table": self.table,
            "recorded_at": now.astimezone(dt.UTC).isoformat(timespec="seconds"),
            "fields": dict(fields),
        }
        with replacing(storage_path(self.location, "record_path")) as out:
            out.write(json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8") + b"\n")

    def plan(self, declared: Sequence[tuple[str, FieldUpdate]]) -> tuple[SchemaPlan, dict[str, dict[str, Any]]]:
        """The plan for ``declared``, and the recorded bodies it was made against."""
        recorded, recorded_at = self.read()
        names = {name for name, _ in declared}
        plan = SchemaPlan(
            ws_id=self.ws_id,
            table=self.table,
            record=self.location,
            recorded_at=recorded_at,
            fields=tuple(plan_fields(declared, recorded)),
            undeclared=tuple(name for name in recorded if name not in names),
        )
        return plan, recorded
