"""The sandbox's HTTP API: Blink's two endpoints under ``/api/v1`` and an admin API under ``/_sandbox``."""

from __future__ import annotations

import hmac
import json
from enum import Enum
from html import escape
from typing import Annotated, Any, Protocol
from urllib.parse import unquote

from fastapi import APIRouter, Body, Depends, FastAPI, Path, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import APIKeyHeader
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from blinkops_sandbox import __version__
from blinkops_sandbox._blink_api import API_PREFIX, DEFAULT_HEADER
from blinkops_sandbox._blink_models import (
    MARKERS,
    ConnectionTypePage,
    CreatedTable,
    ErrorWrapper,
    FieldList,
    FieldUpdate,
    NewTable,
    Playbook,
    PlaybookPage,
    TableEdit,
    TableField,
    TableList,
    declared_fields,
    errors_text,
)
from blinkops_sandbox._faults import FaultConfig, FaultInjector, RequestLog
from blinkops_sandbox._rql_sql import QueryError, parse_query
from blinkops_sandbox._store import SandboxStore, StoreError


class Served(Protocol):
    """What the application serves from (:class:`blinkops_sandbox._server.BlinkSandbox`)."""

    api_key: str
    admin_token: str
    store: SandboxStore
    faults: FaultInjector
    log: RequestLog

    @property
    def base_url(self) -> str: ...

    def reset(self) -> None: ...


_DOCS = (f"{API_PREFIX}/openapi.json", f"{API_PREFIX}/docs")
KEY_HEADER = DEFAULT_HEADER
ADMIN_HEADER = "X-Sandbox-Token"
SANDBOX_USER = "api-key-user@sandbox.blink"
UI_USER = "ui-user@sandbox.blink"
"""Who a change made through the admin API's field edit is recorded as, unless it says (as in Blink's UI)."""

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorWrapper, "description": description}
    for status, description in (
        (400, "The request was refused; the error wrapper says why."),
        (401, "The API key is missing or wrong."),
        (404, "The workspace, table or field does not exist."),
    )
}


class ApiError(Exception):
    """An error answered with Blink's error wrapper."""

    def __init__(self, status: int, message: str, details: str | None = None, identifier: str | None = None):
        super().__init__(message)
        self.status, self.message, self.details, self.identifier = status, message, details, identifier


def wrapper_response(
    status: int, message: str, details: str | None = None, identifier: str | None = None
) -> JSONResponse:
    """Return Blink's error wrapper, every member present (``details`` a string, as Blink's spec types it)."""
    body = ErrorWrapper(status=status, message=message, details=details or "", identifier=identifier)
    return JSONResponse({**dict.fromkeys(ErrorWrapper.model_fields), **body.model_dump(mode="json")}, status)


def _as_json(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """
    Return the headers with the body declared JSON: Blink reads a body as JSON whatever its Content-Type.

    Blink's own docs update a field with ``Content-Type: */*``, which FastAPI would not parse.
    """
    return [(name, value) for name, value in headers if name.lower() != b"content-type"] + [
        (b"content-type", b"application/json")
    ]


TABLE_PAGE = "/_sandbox/ui/{ws_id}/tables/{table}"
"""The sandbox's page of a table (Blink's UI shows a table; Blink publishes no address for it)."""

_RAW_PATHS = ("/_sandbox/workspace/", "/_sandbox/ui/")


def _table_html(store: SandboxStore, ws_id: str, table: str) -> str:
    """Return a table's page: its display name, its fields and how many rows it holds (no values)."""
    try:
        entry = next((t for t in store.tables(ws_id) if t["name"] == table), None)
    except StoreError:
        entry = None
    if entry is None:
        title = f"No table {table!r} in workspace {ws_id!r}"
        return f"<!doctype html><title>{escape(title)}</title><h1>{escape(title)}</h1>"
    rows = store.find_records(ws_id, table, '{"limit": 1}')["total"]
    lines = "".join(
        f"<tr><td>{escape(f['name'])}</td><td>{escape(str(f.get('display_name') or ''))}</td>"
        f"<td>{escape(str(f.get('type') or ''))}</td>"
        f"<td>{'yes' if f.get('attributes', {}).get('required') else ''}</td></tr>"
        for f in store.fields(ws_id, table)
    )
    title = f"{entry['display_name']} ({ws_id}/{table}): Blink sandbox"
    return (
        f"<!doctype html><title>{escape(title)}</title><h1>{escape(entry['display_name'])}</h1>"
        f"<p>Table <code>{escape(table)}</code> in workspace <code>{escape(ws_id)}</code>: {rows} rows.</p>"
        "<table><tr><th>Field</th><th>Display name</th><th>Type</th><th>Required</th></tr>"
        f"{lines}</table>"
    )


class ApiGate:
    """
    In front of the API routes: the key check, then routing on the undecoded path.

    The key is checked before the body is read, so a bad key is a 401 whatever the body. Routing
    on the raw path keeps an encoded ``/`` inside its segment (names such as ``Q1/Q2 plans``);
    the endpoints decode their parameters. Any body is read as JSON, as Blink does.
    """

    def __init__(self, app: Any, sandbox: Served) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(_RAW_PATHS) and scope.get("raw_path"):
            scope = {**scope, "path": scope["raw_path"].decode("latin-1").split("?", 1)[0]}  # '/' in a name stays
        if scope["type"] == "http" and scope["path"].startswith(API_PREFIX) and not scope["path"].startswith(_DOCS):
            key = dict(scope["headers"]).get(KEY_HEADER.lower().encode())
            if not key:
                denied = wrapper_response(
                    401, f"missing {KEY_HEADER} header", f"send the API key in {KEY_HEADER}", "UNAUTHORIZED"
                )
            elif not hmac.compare_digest(key, self.sandbox.api_key.encode()):
                denied = wrapper_response(401, "invalid API key", None, "UNAUTHORIZED")
            else:
                denied = None
            if denied is not None:
                await denied(scope, receive, send)
                return
            raw = scope.get("raw_path")
            if raw:
                scope = {**scope, "path": raw.decode("latin-1").split("?", 1)[0]}
            scope = {**scope, "headers": _as_json(scope["headers"])}
        await self.app(scope, receive, send)


def _openapi_without_422(app: FastAPI) -> dict[str, Any]:
    """Return the OpenAPI document, without FastAPI's 422: invalid requests are 400s with the error wrapper."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        document = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        for operation in (op for path in document["paths"].values() for op in path.values()):
            operation["responses"].pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            document["components"]["schemas"].pop(name, None)
        app.openapi_schema = document
    return app.openapi_schema


def create_app(sandbox: Served) -> FastAPI:
    """Return the FastAPI application of a sandbox (wrap it in the sandbox's fault middleware to serve it)."""
    app = FastAPI(
        title="Blink API (sandbox)",
        version=__version__,
        description="A local emulator of Blink's table reads, its field update and its connection-type listing.",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.include_router(_api_router(sandbox))
    app.include_router(_admin_router(sandbox))

    @app.get("/_sandbox/health", include_in_schema=False)
    def health() -> Any:
        return {"status": "ok", "base_url": sandbox.base_url}

    @app.get(TABLE_PAGE.format(ws_id="{ws_id}", table="{table}"), include_in_schema=False)
    def table_page(ws_id: str, table: str) -> Any:
        return HTMLResponse(_table_html(sandbox.store, unquote(ws_id), unquote(table)))

    app.add_middleware(ApiGate, sandbox=sandbox)
    app.openapi = lambda: _openapi_without_422(app)  # type: ignore[method-assign]
    _handle_errors(app)
    return app


def _api_router(sandbox: Served) -> APIRouter:
    """Return Blink's endpoints: the field update, the table reads, the connection-type listing."""
    api_key_scheme = APIKeyHeader(name=KEY_HEADER, auto_error=False, description="A Blink API key.")

    def require_key(key: str | None = Security(api_key_scheme)) -> None:
        """Declare the key for the OpenAPI document; ApiGate has checked it already."""

    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(require_key)], responses=_ERRORS)

    @api.put(
        "/workspace/{ws_id}/table/{table}/fields/{field}",
        response_model=TableField,
        response_model_exclude_unset=True,
        operation_id="UpdateField",
        tags=["Tables"],
        summary="Update a field of a table",
    )
    def update_field(ws_id: str, table: str, field: str, update: Annotated[FieldUpdate, Body()]) -> Any:
        """
        Replace a field's display name, description, type and attributes, as a whole.

        Every member and attribute left out is reset.
        """
        return sandbox.store.update_field(unquote(ws_id), unquote(table), unquote(field), update, SANDBOX_USER)

    _table_writes(api, sandbox)

    @api.get(
        "/workspace/{ws_id}/tables",
        response_model=TableList,
        operation_id="ListTables",
        tags=["Tables"],
        summary="List the tables of a workspace",
    )
    def list_tables(ws_id: str) -> Any:
        """Return the workspace's tables: ``name`` is what the table paths take."""
        return {"results": sandbox.store.tables(unquote(ws_id))}

    @api.get(
        "/workspace/{ws_id}/table/{table}/fields",
        response_model=FieldList,
        response_model_exclude_unset=True,
        operation_id="ListFields",
        tags=["Tables"],
        summary="List the fields of a table",
    )
    def list_fields(ws_id: str, table: str) -> Any:
        """Return the table's fields, Blink's five system fields first."""
        unread = sandbox.faults.config.fields_read_status
        if unread is not None:
            raise ApiError(unread, "Not Found" if unread == 404 else "Method Not Allowed", None, "SANDBOX_FAULT")
        return {"results": sandbox.store.table_fields(unquote(ws_id), unquote(table))}

    @api.get(
        "/connection_types",
        response_model=ConnectionTypePage,
        operation_id="ListConnectionTypes",
        tags=["Connections"],
        summary="List connection types",
    )
    def list_connection_types(
        q: Annotated[str, Query(description='RQL query as JSON, e.g. {"limit": 25, "offset": 0, "filter": {...}}')],
    ) -> Any:
        """Return one page of the connection-type catalogue matching the RQL query in ``q``."""
        try:
            query = parse_query(q)
        except QueryError as err:
            raise ApiError(400, "invalid RQL query", str(err), "INVALID_QUERY") from None
        return Response(sandbox.store.list_connection_types(query), media_type="application/json")

    _workflow_routes(api, sandbox)
    _records_routes(api, sandbox)  # last: ``.../fields`` is the fields read, never a record id
    return api


_STATUS_PHRASES = {403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _workflow_routes(api: APIRouter, sandbox: Served) -> None:
    """Blink's workflows (playbooks): the paged find and one by id."""
    tags: list[str | Enum] = ["Playbooks"]

    def refused() -> None:
        status = sandbox.faults.config.workflows_read_status
        if status is not None:
            raise ApiError(status, _STATUS_PHRASES[status], None, "SANDBOX_FAULT")

    @api.get(
        "/workspace/{ws_id}/playbooks",
        response_model=PlaybookPage,
        operation_id="PlaybookFindByFilter",
        tags=tags,
        summary="Find workflows",
    )
    def find_playbooks(
        ws_id: str,
        q: Annotated[str | None, Query(description='{"limit": 25, "offset": 0}')] = None,
    ) -> Any:
        """Return one page of the workspace's workflows, ``{limit, offset, total, results}``, with definitions."""
        refused()
        try:
            query = json.loads(q) if q else {}
        except ValueError:
            query = None
        limit, offset = (query.get("limit", 25), query.get("offset", 0)) if isinstance(query, dict) else (0, -1)
        if not (_whole(limit) and _whole(offset) and 1 <= limit <= 1000 and offset >= 0):
            raise ApiError(400, "invalid query", 'q is {"limit": 1..1000, "offset": 0 or more}', "INVALID_QUERY")
        return sandbox.store.find_workflows(unquote(ws_id), limit, offset)

    @api.get(
        "/workspace/{ws_id}/playbooks/{id}",
        response_model=Playbook,
        operation_id="PlaybookGetById",
        tags=tags,
        summary="Get a workflow",
    )
    def get_playbook(ws_id: str, pb_id: Annotated[str, Path(alias="id")]) -> Any:
        """Return one workflow with its definition."""
        refused()
        return sandbox.store.get_workflow(unquote(ws_id), unquote(pb_id))


def _table_writes(api: APIRouter, sandbox: Served) -> None:
    """Blink's table writes beyond the field update: add and remove a field, create and edit a table."""

    @api.post(
        "/workspace/{ws_id}/table/{table}/fields",
        response_model=TableField,
        response_model_exclude_unset=True,
        operation_id="CreateField",
        tags=["Tables"],
        summary="Add a field to a table",
    )
    def create_field(ws_id: str, table: str, body: Annotated[FieldUpdate, Body()]) -> Any:
        """
        Add a field.

        ``type`` and ``display_name`` are required, and the field's ``name`` is derived from ``display_name`` (the
        sandbox's rule: lower case, ``_`` between words, ``_2`` when taken; Blink's own rule is not published).
        """
        return sandbox.store.add_field(unquote(ws_id), unquote(table), body, SANDBOX_USER)

    @api.delete(
        "/workspace/{ws_id}/table/{table}/fields/{field}",
        operation_id="DeleteField",
        tags=["Tables"],
        summary="Remove a field and its values",
    )
    def delete_field(ws_id: str, table: str, field: str) -> Any:
        """
        Remove a field and its values in every row, irreversibly.

        Blink's system and protected fields cannot be removed (400).
        """
        sandbox.store.delete_field(unquote(ws_id), unquote(table), unquote(field))
        return {}

    @api.post(
        "/workspace/{ws_id}/table",
        response_model=CreatedTable,
        operation_id="CreateTable",
        tags=["Tables"],
        summary="Create a table with its fields",
    )
    def create_table(ws_id: str, body: Annotated[NewTable, Body()]) -> Any:
        """Create a table: its ``name`` and its fields' names are derived from their display names."""
        made = sandbox.store.create_table(
            unquote(ws_id), body.display_name, body.description or "", body.fields, SANDBOX_USER
        )
        return {"table": made}

    @api.put(
        "/workspace/{ws_id}/table/{table}",
        response_model=CreatedTable,
        operation_id="UpdateTable",
        tags=["Tables"],
        summary="Edit a table's display name, description and settings",
    )
    def update_table(ws_id: str, table: str, body: Annotated[TableEdit, Body()]) -> Any:
        """Replace the table's display name, description and settings as given."""
        made = sandbox.store.update_table(
            unquote(ws_id), unquote(table), body.display_name, body.description or "", body.settings or {}
        )
        return {"table": made}


def _records_routes(api: APIRouter, sandbox: Served) -> None:
    """
    Blink's table records: find (with ``q``), create, get, update (the whole record) and delete.

    Registered after the fields routes, so ``.../fields`` is never taken for a record id.
    """
    tags: list[str | Enum] = ["Table records"]

    @api.get("/workspace/{ws_id}/table/{table}", operation_id="TableFindRecord", tags=tags, summary="Find records")
    def find_records(
        ws_id: str,
        table: str,
        q: Annotated[str, Query(description='{"limit": 25, "offset": 0, "filter": {...}}; filter is optional')],
    ) -> Any:
        """
        Return the rows matching ``filter``, one page.

        ``{limit, offset, results, total}``, ``total`` counting every matching row.
        """
        return sandbox.store.find_records(unquote(ws_id), unquote(table), q)

    @api.post("/workspace/{ws_id}/table/{table}", operation_id="TableCreateRecord", tags=tags, summary="Add a record")
    def create_record(ws_id: str, table: str, body: Annotated[Any, Body()]) -> Any:
        """Create a row; its values by field name. Blink's published answer is a string: ``"OK"``, not the row."""
        sandbox.store.create_records(unquote(ws_id), unquote(table), [body], SANDBOX_USER)
        return "OK"

    @api.get("/workspace/{ws_id}/table/{table}/{record_id}", operation_id="TableGetRecord", tags=tags)
    def get_record(ws_id: str, table: str, record_id: str) -> Any:
        """Return one row."""
        return sandbox.store.get_record(unquote(ws_id), unquote(table), unquote(record_id))

    @api.put("/workspace/{ws_id}/table/{table}/{record_id}", operation_id="TableUpdateRecord", tags=tags)
    def update_record(ws_id: str, table: str, record_id: str, body: Annotated[Any, Body()]) -> Any:
        """Replace the whole row: a field the body leaves out is emptied. Answers ``"ok"``, as Blink publishes."""
        sandbox.store.update_record(unquote(ws_id), unquote(table), unquote(record_id), body, SANDBOX_USER)
        return "ok"

    @api.delete("/workspace/{ws_id}/table/{table}/{record_id}", operation_id="TableDeleteRecord", tags=tags)
    def delete_record(ws_id: str, table: str, record_id: str) -> Any:
        """Remove one row. Answers ``"ok"``, as Blink publishes."""
        sandbox.store.delete_record(unquote(ws_id), unquote(table), unquote(record_id))
        return "ok"


def _admin_router(sandbox: Served) -> APIRouter:
    """Return the sandbox's own endpoints (faults, the request log, tables and types), behind its admin token."""

    def require_admin(request: Request) -> None:
        token = request.headers.get(ADMIN_HEADER, "")
        if not hmac.compare_digest(token.encode(), sandbox.admin_token.encode()):
            raise ApiError(401, f"missing or wrong {ADMIN_HEADER} header", None, "UNAUTHORIZED")

    admin = APIRouter(prefix="/_sandbox", dependencies=[Depends(require_admin)], include_in_schema=False)

    @admin.get("/faults")
    def get_faults() -> Any:
        return sandbox.faults.config.model_dump()

    @admin.post("/faults")
    def set_faults(config: FaultConfig) -> Any:
        sandbox.faults.configure(config)
        return config.model_dump()

    @admin.delete("/faults")
    def clear_faults() -> Any:
        sandbox.faults.configure(FaultConfig())
        return sandbox.faults.config.model_dump()

    @admin.get("/requests")
    def get_requests() -> Any:
        return sandbox.log.entries()

    @admin.delete("/requests")
    def clear_requests() -> Any:
        sandbox.log.clear()
        return []

    @admin.post("/reset")
    def reset() -> Any:
        sandbox.reset()
        return {"connection_types": len(sandbox.store.connection_type_ids())}

    @admin.put("/connection_types")
    def upsert_connection_types(docs: list[dict[str, Any]]) -> Any:
        return {"written": sandbox.store.upsert_connection_types(docs)}

    @admin.delete("/connection_types/{type_id}")
    def delete_connection_type(type_id: str) -> Any:
        if not sandbox.store.delete_connection_types([type_id]):
            raise ApiError(404, f"connection type {type_id!r} not found")
        return {"deleted": type_id}

    _admin_tables(admin, sandbox)
    return admin


def _admin_tables(admin: APIRouter, sandbox: Served) -> None:
    """Serve the admin API's tables: one made with names given exactly (for seeding), its fields, its row count."""

    @admin.put("/workspace/{ws_id}/table/{table}")
    def create_table(ws_id: str, table: str, declared: dict[str, Any]) -> Any:
        """
        Create a table with its fields.

        Declared as a schema is (``{"fields": [{"field", "type", "display_name", "attributes"}]}``), so a fleet can be
        set up as a user would.
        """
        entries = declared.get("fields")
        if not isinstance(entries, list) or not entries:
            raise ApiError(400, 'give the table\'s fields: {"fields": [{"field", "type", "display_name"}, ...]}')
        try:
            fields = declared_fields(entries)
        except ValueError as err:
            raise ApiError(400, "invalid fields", str(err)) from None
        sandbox.store.add_table(unquote(ws_id), unquote(table), fields)
        return {"ws_id": unquote(ws_id), "table": unquote(table), "fields": [f["name"] for f in fields]}

    @admin.put("/workspace/{ws_id}/table/{table}/records")
    def set_records(ws_id: str, table: str, given: dict[str, Any]) -> Any:
        """Set the table's ``estimated_records_count``: ``{"estimated_records_count": n}``."""
        count = given.get("estimated_records_count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ApiError(400, 'give {"estimated_records_count": n}, n a whole number of 0 or more')
        return sandbox.store.set_records(unquote(ws_id), unquote(table), count)

    @admin.put("/workspace/{ws_id}/playbooks")
    def put_workflows(ws_id: str, given: list[Any]) -> Any:
        """
        Add or change workflows (``blink-sandbox put-workflows``): ``[{"id"?, "name", "active"?, "playbook"}]``.

        All or none; recorded as changed by a person in Blink's UI.
        """
        if not all(isinstance(entry, dict) for entry in given):
            raise ApiError(400, 'give a list of workflows: [{"name": ..., "playbook": "<YAML>", "active": true}]')
        return {"written": sandbox.store.put_workflows(unquote(ws_id), given, UI_USER)}

    @admin.post("/workspace/{ws_id}/table/{table}/rows")
    def put_rows(ws_id: str, table: str, given: list[Any]) -> Any:
        """
        Load rows at once (``blink-sandbox put-records``), each checked as Blink checks a new record.

        All written, or none.
        """
        made = sandbox.store.create_records(unquote(ws_id), unquote(table), given, UI_USER)
        return {"written": len(made), "ids": [row["id"] for row in made]}

    @admin.get("/workspace/{ws_id}/table/{table}/fields")
    def table_fields(ws_id: str, table: str) -> Any:
        return sandbox.store.fields(unquote(ws_id), unquote(table))

    @admin.patch("/workspace/{ws_id}/table/{table}/fields/{field}")
    def edit_field(ws_id: str, table: str, field: str, given: dict[str, Any]) -> Any:
        """
        Return a change made as a person makes it in Blink's UI.

        Only the members given change (``display_name``, ``description``, ``attributes``, each attribute given replacing
        Blink's), the rest is kept, and ``by`` (default ``UI_USER``) is recorded as who changed it.
        """
        allowed = {"display_name", "description", "attributes", "by"}
        unknown = sorted(set(given) - allowed)
        if unknown or not isinstance(given.get("attributes", {}), dict):
            raise ApiError(400, f"give some of {sorted(allowed)}, attributes an object; got {sorted(given)}")
        by = given.get("by") or UI_USER
        if not isinstance(by, str):
            raise ApiError(400, "by is the text of who made the change, e.g. alice@example.com")
        ws, name, member = unquote(ws_id), unquote(table), unquote(field)
        current = sandbox.store.get_field(ws, name, member)
        kept = {k: v for k, v in current["attributes"].items() if k not in MARKERS}
        merged = {
            "type": current["type"],
            "display_name": given.get("display_name", current["display_name"]),
            "description": given.get("description", current["description"]),
            "attributes": {**kept, **given.get("attributes", {})},
        }
        try:
            update = FieldUpdate.model_validate(merged)
        except ValidationError as err:
            raise ApiError(400, "invalid field change", errors_text(err.errors())) from None
        return sandbox.store.update_field(ws, name, member, update, by)


def _handle_errors(app: FastAPI) -> None:
    """Every error answered in Blink's error wrapper."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return wrapper_response(exc.status, exc.message, exc.details, exc.identifier)

    @app.exception_handler(StoreError)
    async def store_error(request: Request, exc: StoreError) -> JSONResponse:  # what the store refuses, as Blink would
        return wrapper_response(exc.status, exc.message, exc.details, exc.identifier)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{**error, "loc": tuple(error["loc"])[1:] or error["loc"]} for error in exc.errors()]
        return wrapper_response(400, "invalid request", errors_text(errors), "INVALID_REQUEST")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return wrapper_response(exc.status_code, str(exc.detail), None, "HTTP_ERROR")

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        return wrapper_response(500, "internal sandbox error", type(exc).__name__, "INTERNAL")
