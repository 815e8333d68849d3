"""A Blink of the tests' own for requests-mock, written from ``api-notes.md`` ("Blink's table
endpoints as Blink's own code uses them"), not from the sandbox or the client's models.

- ``GET /workspace/{ws}/tables`` and ``GET /workspace/{ws}/table/{t}/fields`` answer
  ``{"results": [...]}``; every table has Blink's five system fields (``system``/``protected``).
- ``PUT .../fields/{f}`` replaces the field's whole attribute set, resets ``display_name`` and
  ``description`` when left out, never changes a type (400), and 404s an unknown field.

- ``POST .../table/{t}/fields`` adds a field and names it by a rule of this fake's own, not the
  sandbox's (``<letters of the display name, lower case>_<n>``, n counting the table's fields), and
  answers the field (or ``{}`` with ``answer_names=False``, as Blink's tool never reads it).
- ``DELETE .../fields/{f}`` removes a field; a ``system``/``protected`` one is a 400.
- ``POST /workspace/{ws}/table`` creates a table (named ``tbl_<letters>``) with its fields;
  ``PUT /workspace/{ws}/table/{t}`` edits its display name, description and settings.

``FakeBlink(tables).mount(m)`` on a ``requests_mock.Mocker``; ``puts`` holds each PUT's
``(table, field, body)``, ``posts``, ``deletes``, ``created`` and ``table_puts`` the other writes;
``fields_status`` makes the fields read answer 404 or 405; ``rows`` holds each table's
``estimated_records_count`` (absent: Blink does not say).
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import unquote, urlsplit

BASE = "https://blink.test/api/v1"
SYSTEM = [
    ("id", "sys-id"),
    ("created_at", "sys-time"),
    ("updated_at", "sys-time"),
    ("created_by", "sys-record-modifier"),
    ("updated_by", "sys-record-modifier"),
]


def blink_field(name: str, kind: str, display_name: str | None = None, **attributes: Any) -> dict[str, Any]:
    """A field as Blink answers it."""
    return {
        "id": f"fld-{name}",
        "name": name,
        "type": kind,
        "display_name": display_name or name,
        "description": attributes.pop("description", ""),
        "attributes": attributes,
        "updated_by": "seed@blink.test",
        "updated_at": 1_767_225_600_000,
    }


class FakeBlink:
    def __init__(self, tables: dict[str, list[dict[str, Any]]], ws_id: str = "ws-1") -> None:
        self.ws_id = ws_id
        self.tables = {
            name: {f["name"]: f for f in [*(blink_field(n, k, system=True, protected=True) for n, k in SYSTEM), *fs]}
            for name, fs in copy.deepcopy(tables).items()
        }
        self.puts: list[tuple[str, str, dict[str, Any]]] = []
        self.posts: list[tuple[str, dict[str, Any]]] = []
        self.deletes: list[tuple[str, str]] = []
        self.created: list[dict[str, Any]] = []
        self.table_puts: list[tuple[str, dict[str, Any]]] = []
        self.reads = 0
        self.fields_status: int | None = None
        self.answer_names = True
        self.post_status: int | None = None
        self.rows: dict[str, int] = {}
        self.meta: dict[str, dict[str, Any]] = {
            name: {"display_name": name, "description": "", "settings": {"color": "blue"}} for name in self.tables
        }

    def mount(self, m: Any) -> FakeBlink:
        ws = re.escape(self.ws_id)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/tables$"), json=self._tables)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields$"), json=self._fields)
        m.put(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields/[^/]+$"), json=self._put)
        m.post(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields$"), json=self._post)
        m.delete(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields/[^/]+$"), json=self._delete)
        m.post(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table$"), json=self._create)
        m.put(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+$"), json=self._edit)
        return self

    def _name(self, display_name: str, taken: Any) -> str:
        """This fake's naming rule (not the sandbox's): the letters, lower case, and a count."""
        return f"{re.sub(r'[^a-z]', '', display_name.lower()) or 'f'}_{len(taken) + 1}"

    def _post(self, request: Any, context: Any) -> dict[str, Any]:
        table = self._segments(request)[-2]
        body = request.json()
        self.posts.append((table, body))
        fields = self.tables[table]
        if self.post_status is not None:
            context.status_code = self.post_status
            return {"status": self.post_status, "message": "refused by the test"}
        if body.get("type") in ("single-select", "multi-select") and not (body.get("attributes") or {}).get("options"):
            context.status_code = 400
            return {"status": 400, "message": "a select needs options"}
        name = self._name(body["display_name"], fields)
        fields[name] = {
            **blink_field(name, body["type"], body["display_name"]),
            "attributes": body.get("attributes") or {},
        }
        fields[name]["description"] = body.get("description") or ""
        return copy.deepcopy(fields[name]) if self.answer_names else {}

    def _delete(self, request: Any, context: Any) -> dict[str, Any]:
        *_, table, _, field = self._segments(request)
        self.deletes.append((table, field))
        held = self.tables.get(table, {}).get(field)
        if held is None:
            context.status_code = 404
            return {"status": 404, "message": f"field {field} not found"}
        if held["attributes"].get("system") or held["attributes"].get("protected"):
            context.status_code = 400
            return {"status": 400, "message": "a system field cannot be removed"}
        del self.tables[table][field]
        return {}

    def _create(self, request: Any, context: Any) -> dict[str, Any]:
        body = request.json()
        self.created.append(body)
        name = f"tbl_{re.sub(r'[^a-z]', '', body['display_name'].lower())}"
        self.tables[name] = {f["name"]: f for f in (blink_field(n, k, system=True, protected=True) for n, k in SYSTEM)}
        self.meta[name] = {
            "display_name": body["display_name"],
            "description": body.get("description") or "",
            "settings": {},
        }
        for entry in body.get("fields") or []:
            fname = self._name(entry["display_name"], self.tables[name])
            self.tables[name][fname] = {
                **blink_field(fname, entry["type"], entry["display_name"]),
                "attributes": entry.get("attributes") or {},
            }
        return {"table": {"name": name, **self.meta[name]}} if self.answer_names else {}

    def _edit(self, request: Any, context: Any) -> dict[str, Any]:
        table = self._segments(request)[-1]
        body = request.json()
        self.table_puts.append((table, body))
        self.meta[table].update(body)
        return {"table": {"name": table, **self.meta[table]}}

    def field(self, table: str, name: str) -> dict[str, Any]:
        return self.tables[table][name]

    def change_in_ui(self, table: str, name: str, who: str = "alice@blink.test", **attributes: Any) -> None:
        """A change made in Blink's UI, out of band."""
        field = self.tables[table][name]
        field["attributes"].update(attributes)
        field["updated_by"], field["updated_at"] = who, field["updated_at"] + 60_000

    def _segments(self, request: Any) -> list[str]:
        return [unquote(part) for part in urlsplit(request.url).path.split("/")]  # request.path is lowercased

    def _tables(self, request: Any, context: Any) -> dict[str, Any]:
        return {
            "results": [
                {"name": name, "id": f"tbl-{name}", **self.meta[name], **self._count(name)} for name in self.tables
            ]
        }

    def _count(self, table: str) -> dict[str, Any]:
        return {"estimated_records_count": self.rows[table]} if table in self.rows else {}

    def _fields(self, request: Any, context: Any) -> dict[str, Any]:
        self.reads += 1
        table = self._segments(request)[-2]
        if self.fields_status is not None:
            context.status_code = self.fields_status
            return {"status": self.fields_status, "message": "not served"}
        if table not in self.tables:
            context.status_code = 404
            return {"status": 404, "message": f"table {table} not found"}
        return {"results": list(copy.deepcopy(self.tables[table]).values())}

    def _put(self, request: Any, context: Any) -> dict[str, Any]:
        *_, table, _, field = self._segments(request)
        body = request.json()
        self.puts.append((table, field, body))
        held = self.tables.get(table, {}).get(field)
        if held is None:
            context.status_code = 404
            return {"status": 404, "message": f"field {field} not found"}
        if body.get("type", "text") != held["type"]:
            context.status_code = 400
            return {"status": 400, "message": "changing the type is not allowed"}
        held.update(
            display_name=body.get("display_name") or field,
            description=body.get("description") or "",
            attributes={k: v for k, v in (body.get("attributes") or {}).items() if k not in ("system", "protected")},
        )
        return copy.deepcopy(held)


TABLE_READS = re.compile(r"/workspace/[^/]+/(tables|table/[^/]+/fields)$")
"""Blink's table reads, on any host."""


def without_table_reads(m: Any, status: int = 404) -> Any:
    """Make ``m`` a Blink that does not serve the table reads (the plan then falls back to the
    record of the last apply, as against a tenant or proxy without them)."""
    m.get(TABLE_READS, status_code=status, json={"status": status, "message": "Not Found"})
    return m
