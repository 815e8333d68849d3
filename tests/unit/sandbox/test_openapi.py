"""The sandbox's OpenAPI document (as it serves it) against api-spec.md: paths, parameters and schemas."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_sandbox import BlinkSandbox

ROOT = Path(__file__).resolve().parents[3]
SPEC_CANDIDATES = [
    os.environ.get("BLINK_API_SPEC", ""),
    ROOT.parent / "shared/spec/api-spec.md",
    ROOT / "tests/data/api-spec.md",
]


def spec_text() -> str:
    for candidate in SPEC_CANDIDATES:
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_text()
    raise AssertionError(f"api-spec.md not found in {SPEC_CANDIDATES}")


def section(text: str, heading: str) -> str:
    """The text under a heading, up to the next heading of any level."""
    match = re.search(rf"^#+ {re.escape(heading)}.*?$(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    assert match, heading
    return match.group(1)


def tables(block: str) -> Iterator[list[list[str]]]:
    """Markdown tables of a block, as rows of cells (header and rule left out)."""
    rows: list[list[str]] = []
    for line in [*block.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            yield rows[2:]
            rows = []


def first_column(block: str, index: int = 0) -> set[str]:
    return {row[0].strip("`") for row in list(tables(block))[index]}


def notes_members(block: str, field: str, index: int = 0) -> set[str]:
    """Members a Notes cell lists as `name` (type ...)."""
    (notes,) = [row[-1] for row in list(tables(block))[index] if row[0] == field]
    return set(re.findall(r"`(\w+)` \(", notes))


@pytest.fixture(scope="module")
def spec() -> str:
    return spec_text()


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    with BlinkSandbox(connection_types=0) as sandbox:
        served = requests.get(f"{sandbox.base_url}/openapi.json", timeout=30)
    served.raise_for_status()
    return dict(served.json())


def properties(openapi: dict[str, Any], schema: str) -> set[str]:
    return set(openapi["components"]["schemas"][schema]["properties"])


NOTES = ROOT.parent / "shared/spec/api-notes.md"
TABLE_READS = {"/api/v1/workspace/{ws_id}/tables", "/api/v1/workspace/{ws_id}/table/{table}/fields"}
"""Blink's table reads, which api-notes.md gives from Blink's own tool (not in api-spec.md)."""


def test_paths_and_methods_match_the_spec_and_blinks_table_reads(spec: str, openapi: dict[str, Any]) -> None:
    put_path = re.search(r"\| Path \| `([^`]+)` \|", section(spec, "4.1")).group(1)  # type: ignore[union-attr]
    get_path = re.search(r"\| Path \| `([^`]+)` \|", section(spec, "4.2")).group(1)  # type: ignore[union-attr]
    writes = {
        "/api/v1/workspace/{ws_id}/table": {"post"},
        "/api/v1/workspace/{ws_id}/table/{table}": {"put", "get", "post"},  # the table's edit; records: #64
        "/api/v1/workspace/{ws_id}/table/{table}/{record_id}": {"get", "put", "delete"},  # api-notes.md, records
        "/api/v1/workspace/{ws_id}/playbooks": {"get"},  # api-notes.md, workflows (#75)
        "/api/v1/workspace/{ws_id}/playbooks/{id}": {"get"},
    }
    assert set(openapi["paths"]) == {f"/api/v1{put_path}", f"/api/v1{get_path}", *TABLE_READS, *writes}
    assert set(openapi["paths"][f"/api/v1{put_path}"]) == {"put", "delete"}  # DELETE: api-notes.md (#48)
    for path, methods in writes.items():
        assert set(openapi["paths"][path]) == methods
    assert set(openapi["paths"][f"/api/v1{get_path}"]) == {"get"}
    if NOTES.is_file():  # beside a checkout of the project, as in CI
        notes = NOTES.read_text()
        for path in TABLE_READS:
            assert f"`GET {path.removeprefix('/api/v1')}` " in notes
    fields = "/api/v1/workspace/{ws_id}/table/{table}/fields"
    for path in TABLE_READS:
        assert set(openapi["paths"][path]) == ({"get", "post"} if path == fields else {"get"})
    if NOTES.is_file():
        for route in ("`POST /workspace/{ws_id}/table`", "`PUT /workspace/{ws_id}/table/{table}`"):
            assert route in NOTES.read_text()
        assert "`POST .../table/{table}/fields`" in notes and "`DELETE .../table/{table}/fields/{field}`" in notes
        assert (
            "`GET /workspace/{ws_id}/playbooks?q=<JSON>`" in notes
            and "`GET /workspace/{ws_id}/playbooks/{id}`" in notes
        )
    assert openapi["paths"][f"/api/v1{put_path}"]["put"]["operationId"] == "UpdateField"


def test_put_parameters_body_and_responses(spec: str, openapi: dict[str, Any]) -> None:
    operation = next(iter(p for p in openapi["paths"].values() if "put" in p))["put"]
    segments = {row[0].strip("`{}") for row in next(tables(section(spec, "4.1").split("Path parameters")[1]))}
    params = {(p["name"], p["in"], p["required"], p["schema"]["type"]) for p in operation["parameters"]}
    assert params == {(name, "path", True, "string") for name in segments}
    assert operation["requestBody"]["required"] is True
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/FieldUpdate")
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/TableField")
    assert operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorWrapper")
    assert "422" not in operation["responses"]


def test_listing_takes_q_and_answers_the_envelope(spec: str, openapi: dict[str, Any]) -> None:
    operation = openapi["paths"]["/api/v1/connection_types"]["get"]
    assert [(p["name"], p["in"], p["required"]) for p in operation["parameters"]] == [("q", "query", True)]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ConnectionTypePage"
    )
    envelope = {row[0] for row in list(tables(section(spec, "4.2")))[1]}
    assert properties(openapi, "ConnectionTypePage") == envelope == {"limit", "offset", "total", "results"}


def test_api_key_header(spec: str, openapi: dict[str, Any]) -> None:
    published = re.search(r"header `(\w+)-API-KEY`", section(spec, "5. Authentication")).group(0)  # type: ignore[union-attr]
    assert published == "header `SERVICE-API-KEY`"  # the brand is Blink: BLINK-API-KEY
    (scheme,) = openapi["components"]["securitySchemes"].values()
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "BLINK-API-KEY"}
    for path in openapi["paths"].values():
        for operation in path.values():
            assert operation["security"] == [{"APIKeyHeader": []}]


@pytest.mark.parametrize(
    ("heading", "table", "schema"),
    [
        ("2.1 Table field", 0, "TableField"),
        ("2.4 Connection type (", 0, "ConnectionType"),
        ("2.5 Connection type metadata", 0, "ConnectionTypeMetadata"),
        ("2.5 Connection type metadata", 1, "Authentication"),
        ("2.5 Connection type metadata", 2, "TwoLeggedValues"),
        ("2.6 Connection type method", 0, "ConnectionTypeMethod"),
        ("7. Errors", 0, "ErrorWrapper"),
    ],
)
def test_schemas_have_the_members_of_the_spec(
    spec: str, openapi: dict[str, Any], heading: str, table: int, schema: str
) -> None:
    assert properties(openapi, schema) == first_column(section(spec, heading.rstrip(" (")), table)


@pytest.mark.parametrize(
    ("heading", "table", "field", "schema"),
    [
        ("2.3 Field update attributes", 0, "table_reference", "TableReference"),
        ("2.5 Connection type metadata", 0, "pagination", "Pagination"),
        ("2.5 Connection type metadata", 0, "testConnection", "TestConnection"),
        ("2.5 Connection type metadata", 0, "validation", "Validation"),
        ("2.5 Connection type metadata", 1, "keys", "AuthenticationKey"),
        ("2.5 Connection type metadata", 2, "actionToRunParamValues", "ActionToRunParamValues"),
        ("2.5 Connection type metadata", 2, "extractor", "Extractor"),
    ],
)
def test_nested_schemas_have_the_members_the_notes_name(
    spec: str, openapi: dict[str, Any], heading: str, table: int, field: str, schema: str
) -> None:
    assert properties(openapi, schema) == notes_members(section(spec, heading), field, table)


def test_the_update_has_the_spec_members_and_those_blinks_own_tool_sends(spec: str, openapi: dict[str, Any]) -> None:
    assert properties(openapi, "FieldUpdate") == first_column(section(spec, "2.2 Field update settings")) | {
        "description"
    }
    assert properties(openapi, "FieldAttributes") == first_column(section(spec, "2.3 Field update attributes")) | {
        "required",
        "is_unique",
    }


def test_expiry_and_field_types(spec: str, openapi: dict[str, Any]) -> None:
    extractor_notes = next(row[-1] for row in list(tables(section(spec, "2.5")))[2] if row[0] == "extractor")
    expiry = set(re.findall(r"`(\w+)` (?:integer|string)", extractor_notes))
    assert properties(openapi, "ExtractorExpiry") == expiry == {"defaultExpiry", "path", "type"}
    one_of = re.search(r"One of: ([^.|]+)\.", section(spec, "2.2")).group(1)  # type: ignore[union-attr]
    types = openapi["components"]["schemas"]["FieldType"]["enum"]
    assert {value.strip() for value in one_of.split(",")} < set(types) and len(types) == 18
    if NOTES.is_file():
        listed = re.search(r"Field types a user can create \(18\): ([^.]+)\.", NOTES.read_text().replace("\n  ", " "))
        assert listed is not None and types == [value.strip() for value in listed.group(1).split(",")]


def test_committed_spec_copy_is_current() -> None:
    copy = (ROOT / "tests/data/api-spec.md").read_text()
    shared = ROOT.parent / "shared/spec/api-spec.md"
    assert copy.startswith("# Workflow-Automation Platform REST API")
    if shared.is_file():  # beside a checkout of the project, as in CI
        assert copy == shared.read_text(), "tests/data/api-spec.md is stale: copy ../shared/spec/api-spec.md"
