"""A Blink of the tests' own for requests-mock, written from ``api-notes.md`` ("Blink's table
endpoints as Blink's own code uses them") and the API spec, not from the sandbox or the client's
models: the one in-process fake, for what the sandbox cannot do (misbehave on demand, name fields
by another rule, change between two requests). Everything else runs against the sandbox.

The catalogue (:class:`FakeCatalogue`): ``GET /connection_types`` answered from a list of items,
each query evaluated by the brute-force RQL of ``tests/unit/sandbox/reference.py`` (so keyset pages
are right), honouring as much of RQL and paging as it is told to.

The tables (:class:`FakeBlink`):

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

The records (#64): ``records`` holds each table's rows (``{"id": ..., field: value}``), served by
``GET .../table/{t}?q=`` (``{limit, offset, results, total}``; equality filters only; no ``total``
with ``give_total=False``; ``records_status`` answers the find with it), ``GET`` and ``PUT
.../table/{t}/{id}`` (the whole row replaced; ``record_puts`` logs each). ``after_find`` runs after
each find is answered: a test changes a row there, between a reader's walk and its write.
A record write answers ``record_answer``: Blink's published string ``"ok"`` by default (None: the
record, as the sandbox once did); ``lose_writes`` answers the next writes "ok" without keeping them;
``by_update`` lists rows by their last update unless the find asks for a sort (``+id``).
"""

from __future__ import annotations

import copy
import json
import random
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.unit.sandbox.reference import evaluate

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
        self.records: dict[str, list[dict[str, Any]]] = {name: [] for name in self.tables}
        self.record_puts: list[tuple[str, str, dict[str, Any]]] = []
        self.finds = 0
        self.records_status: int | None = None
        self.give_total = True
        self.after_find: Callable[[], None] | None = None
        self.record_answer: Any = "ok"
        """What a record write answers: Blink's published string by default; ``None``: the record written."""
        self.lose_writes = 0
        """The next record writes answered "ok" but not kept (a write's answer says accepted, not stored)."""
        self.by_update = False
        """List rows by last update (not by id) unless the find asks for a sort."""
        self.updates = 0
        self.touched: dict[str, int] = {}
        self.meta: dict[str, dict[str, Any]] = {
            name: {"display_name": name, "description": "", "settings": {"color": "blue"}} for name in self.tables
        }
        self.workflows: list[dict[str, Any]] = []
        """The workspace's workflows (Blink's playbooks): :func:`workflow` makes one."""
        self.workflows_status: int | None = None
        """The status the workflows read answers instead (403, 404, 405: Blink refuses it)."""
        self.workflow_reads = 0

    def mount(self, m: Any) -> FakeBlink:
        ws = re.escape(self.ws_id)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/tables$"), json=self._tables)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields$"), json=self._fields)
        m.put(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields/[^/]+$"), json=self._put)
        m.post(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields$"), json=self._post)
        m.delete(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/fields/[^/]+$"), json=self._delete)
        m.post(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table$"), json=self._create)
        m.put(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+$"), json=self._edit)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/?]+(\?.*)?$"), json=self._find)
        one = re.compile(rf"{re.escape(BASE)}/workspace/{ws}/table/[^/]+/(?!fields$)[^/?]+$")
        m.get(one, json=self._record)
        m.put(one, json=self._put_record)
        m.get(re.compile(rf"{re.escape(BASE)}/workspace/{ws}/playbooks(\?.*)?$"), json=self._playbooks)
        return self

    def _playbooks(self, request: Any, context: Any) -> dict[str, Any]:
        """One page of the workflows, as PlaybookFindByFilter answers: ``{limit, offset, total, results}``."""
        self.workflow_reads += 1
        if self.workflows_status is not None:
            context.status_code = self.workflows_status
            return {"error": "refused"}
        q = sent_query(request)
        limit, offset = int(q.get("limit", 100)), int(q.get("offset", 0))
        page = self.workflows[offset : offset + limit]
        return {"limit": limit, "offset": offset, "total": len(self.workflows), "results": page}

    def _find(self, request: Any, context: Any) -> dict[str, Any]:
        self.finds += 1
        table = self._segments(request)[-1]
        if self.records_status is not None:
            context.status_code = self.records_status
            return {"status": self.records_status, "message": "not served"}
        q = json.loads(parse_qs(urlsplit(request.url).query)["q"][0])
        wanted = {k: v["$eq"] if isinstance(v, dict) else v for k, v in (q.get("filter") or {}).items()}
        rows = [r for r in self.records[table] if all(r.get(k) == v for k, v in wanted.items())]
        if q.get("sort") == ["+id"]:
            rows.sort(key=lambda r: str(r["id"]))
        elif self.by_update:
            rows.sort(key=lambda r: self.touched.get(r["id"], 0))
        limit, offset = q.get("limit") or 25, q.get("offset") or 0
        page = {"limit": limit, "offset": offset, "results": copy.deepcopy(rows[offset : offset + limit])}
        if self.after_find is not None:
            self.after_find()
        return {**page, "total": len(rows)} if self.give_total else page

    def _record(self, request: Any, context: Any) -> dict[str, Any]:
        *_, table, record_id = self._segments(request)
        row = next((r for r in self.records.get(table, []) if r["id"] == record_id), None)
        if row is None:
            context.status_code = 404
            return {"status": 404, "message": "Can not find record"}
        return copy.deepcopy(row)

    def _put_record(self, request: Any, context: Any) -> dict[str, Any]:
        *_, table, record_id = self._segments(request)
        body = request.json()
        self.record_puts.append((table, record_id, body))
        rows = self.records.get(table, [])
        at = next((n for n, r in enumerate(rows) if r["id"] == record_id), None)
        if at is None:
            context.status_code = 404
            return {"status": 404, "message": "Can not find record"}
        if self.lose_writes:
            self.lose_writes -= 1
            return self.record_answer if self.record_answer is not None else copy.deepcopy(rows[at])
        kept = {k: v for k, v in body.items() if k in self.tables[table] and v not in (None, "", [])}
        self.updates += 1
        rows[at] = {"id": record_id, **kept}
        self.touched[record_id] = self.updates
        return self.record_answer if self.record_answer is not None else copy.deepcopy(rows[at])

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
        for row in self.records.get(table, []):
            row.pop(field, None)
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


def field_json(request: Any, context: Any) -> dict[str, Any]:
    """What Blink answers a field update (``PUT .../fields/{f}``), for a test that needs no more of
    Blink: the field as sent, under the name its path gives."""
    name = request.path.rsplit("/", 1)[-1]
    return {"id": f"fld-{name}", "name": name, **request.json()}


def catalogue(size: int) -> list[dict[str, Any]]:
    """A catalogue of ``size`` connection types: ids in order, 37 names, every third with OAuth."""
    return [{"id": f"ct-{i:05d}", "name": f"type-{i % 37:02d}", "oauth": i % 3 == 0} for i in range(size)]


def sent_query(request: Any) -> dict[str, Any]:
    """The RQL object a request carried in ``q``."""
    (q,) = parse_qs(urlsplit(request.url).query)["q"]
    return dict(json.loads(q))


class FakeCatalogue:
    """``m.get(LIST_URL, json=FakeCatalogue(items, **odd))``: Blink's connection-type listing, or a
    server that honours less of it, as told (each knob is also an attribute, to flip mid-walk).

    :ivar before_request: ``{n: change}``: ``change(items)`` runs before the n-th request
        (1-based) is answered, to change the catalogue between pages.
    :ivar ignore_filter: answer as if no filter was sent (a server that ignores the walk's position).
    :ivar ignore_sort: answer in the items' own order. ``shuffle``, ``reverse``: each page so.
    :ivar ignore_offset: answer every request from the first match. ``ignore_limit``: every
        match from the offset on. ``max_page``: at most this many rows, whatever the limit.
    :ivar gte: read ``$gt`` as ``$gte``. ``dup_in_page``: the page's second row is its first again.
    :ivar refuse_id_filter: a 400 to a filter on ``id``.
    :ivar echo_offset: the offset to answer with instead of the one sent. ``echo_limit``: whether
        a page says its limit (the rows served, with ``max_page``; else the one sent).
    :ivar total: ``real`` (the matches), ``zero``, ``page`` (the rows served) or ``none`` (not
        said). ``total_override``: totals to report, request by request, instead.
    :ivar requests: each query received; ``urls`` each URL.
    """

    def __init__(self, items: list[dict[str, Any]], **odd: Any) -> None:
        self.items = items
        self.requests: list[dict[str, Any]] = []
        self.urls: list[str] = []
        self.before_request: dict[int, Callable[[list[dict[str, Any]]], None]] = {}
        self.total_override: list[int] = []
        self.echo_offset: int | None = odd.pop("echo_offset", None)
        self.echo_limit: bool = odd.pop("echo_limit", True)
        self.total: str = odd.pop("total", "real")
        self.max_page: int | None = odd.pop("max_page", None)
        self.ignore_limit: bool = odd.pop("ignore_limit", False)
        self.ignore_filter: bool = odd.pop("ignore_filter", False)
        self.ignore_sort: bool = odd.pop("ignore_sort", False)
        self.ignore_offset: bool = odd.pop("ignore_offset", False)
        self.gte: bool = odd.pop("gte", False)
        self.shuffle: bool = odd.pop("shuffle", False)
        self.reverse: bool = odd.pop("reverse", False)
        self.dup_in_page: bool = odd.pop("dup_in_page", False)
        self.refuse_id_filter: bool = odd.pop("refuse_id_filter", False)
        assert not odd, f"unknown knobs: {odd}"
        self.random = random.Random(7)
        self._lock = threading.Lock()  # one request at a time, as a database transaction would

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        with self._lock:
            self.urls.append(request.url)
            q = sent_query(request)
            self.requests.append(q)
            if self.refuse_id_filter and '"id"' in json.dumps(q.get("filter")):
                context.status_code = 400
                return {"message": "field id is not filterable"}
            change = self.before_request.get(len(self.requests))
            if change is not None:
                change(self.items)
            return self._page(q)

    def _page(self, q: dict[str, Any]) -> dict[str, Any]:
        flt = None if self.ignore_filter else q.get("filter")
        matching = evaluate(
            self.items,
            _gt_as_gte(flt) if self.gte else flt,
            None if self.ignore_sort else q.get("sort"),
            q.get("select"),
        )
        offset, limit = 0 if self.ignore_offset else q.get("offset", 0), q.get("limit", 100)
        served = limit if self.max_page is None else min(limit, self.max_page)
        rows = matching[offset:] if self.ignore_limit else matching[offset : offset + served]
        self._disorder(rows)
        page: dict[str, Any] = {
            "offset": q.get("offset", 0) if self.echo_offset is None else self.echo_offset,
            "results": rows,
        }
        if self.echo_limit:
            page["limit"] = limit if self.max_page is None else served
        total = (
            self.total_override.pop(0)
            if self.total_override
            else {"real": len(matching), "zero": 0, "page": len(rows)}.get(self.total)
        )
        if total is not None:
            page["total"] = total
        return page

    def _disorder(self, rows: list[dict[str, Any]]) -> None:
        if self.shuffle:
            self.random.shuffle(rows)
        if self.reverse:
            rows.reverse()
        if self.dup_in_page and len(rows) > 1:
            rows[1] = rows[0]


def _gt_as_gte(condition: Any) -> Any:
    if isinstance(condition, dict):
        return {("$gte" if k == "$gt" else k): _gt_as_gte(v) for k, v in condition.items()}
    if isinstance(condition, list):
        return [_gt_as_gte(v) for v in condition]
    return condition


def workflow(wf_id: str, name: str, steps: list[dict[str, Any]] | str, *, active: bool = True) -> dict[str, Any]:
    """A workflow as Blink's playbooks read answers it: its steps as YAML (or the definition's text as given)."""
    import yaml

    definition = steps if isinstance(steps, str) else yaml.safe_dump({"name": name, "steps": steps}, sort_keys=False)
    return {
        "id": wf_id,
        "name": name,
        "active": active,
        "type": "playbook",
        "updated_at": "2026-11-01T00:00:00Z",
        "updated_by": "builder@blink.test",
        "playbook": definition,
    }


def step(step_id: str, action: str, table: str | None = "incidents", **inputs: Any) -> dict[str, Any]:
    """One step of a workflow's definition."""
    return {"id": step_id, "action": action, "inputs": ({"table": table} if table is not None else {}) | inputs}
