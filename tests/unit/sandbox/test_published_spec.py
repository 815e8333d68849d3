"""The sandbox against the Table operations of Blink's published spec, with Schemathesis (#72).

``tests/data/blink-table-records.swagger.yaml`` is that fragment of Blink's spec, written from the
facts in ``api-notes.md``. Schemathesis generates requests from it (half of them aimed at a real
table and its real records) and checks each answer: never a 500, and every answer what the spec
says, but for what the spec cannot describe, each named in :data:`NOT_DESCRIBED`.

The sandbox here is this module's own (its rows are written and deleted), never the session's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from blinkops_sandbox import BlinkSandbox

# Schemathesis and Hypothesis are imported by the tests that use them: the other Airflow lines
# (-m compat, whose environments do not install them) collect this module and run none of it.

SPEC = Path(__file__).resolve().parents[2] / "data" / "blink-table-records.swagger.yaml"
OPERATIONS = ["TableFindRecord", "TableCreateRecord", "TableGetRecord", "TableUpdateRecord", "TableDeleteRecord"]
NOT_DESCRIBED = {
    ("TableCreateRecord", 404): "the spec lists 200 and 400 for a create; a table that does not exist is a 404",
    ("TableCreateRecord", 401): "no operation documents 401, though all need the key (api-notes)",
}
"""The answers the published spec cannot describe: (operation, status) -> why the sandbox answers so."""
EXAMPLES = 120
REACHABLE = ("TableFindRecord", "TableGetRecord", "TableDeleteRecord")
"""The operations a generated request carries out on the real table (a create's or an update's body never fits)."""


def published_checks() -> list[Any]:
    """Return Schemathesis's checks of an answer against the spec: no 500, a status, type and body it lists."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[BlinkSandbox]:
    with BlinkSandbox() as served:
        yield served


def record_ids(sandbox: BlinkSandbox) -> list[str]:
    q = '{"limit": 1000, "sort": ["+id"]}'
    answer = requests.get(
        f"{sandbox.base_url}/workspace/ws-demo/table/Incidents",
        params={"q": q},
        headers={"BLINK-API-KEY": sandbox.api_key},
        timeout=30,
    )
    return [row["id"] for row in answer.json()["results"]]


@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_the_sandbox_answers_as_blinks_published_spec_says(sandbox: BlinkSandbox, operation_id: str) -> None:
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    schema = schemathesis.openapi.from_dict(yaml.safe_load(SPEC.read_text()))
    operation = schema.find_operation_by_id(operation_id)
    ids = record_ids(sandbox)
    seen: dict[int, int] = {}
    unexplained: list[str] = []

    @given(case=operation.as_strategy(), real=st.booleans(), which=st.integers(0, len(ids) - 1))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any, real: bool, which: int) -> None:
        if real:  # a real table and record, so that the answers are not all 404s
            case.path_parameters = {**(case.path_parameters or {}), "ws_id": "ws-demo", "table": "Incidents"}
            if "id" in case.path_parameters:
                case.path_parameters["id"] = ids[which]
        response = case.call(base_url=sandbox.base_url, headers={"BLINK-API-KEY": sandbox.api_key})
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:300]}"
        if (operation_id, response.status_code) in NOT_DESCRIBED:
            return
        try:
            case.validate_response(response, checks=published_checks())
        except Exception as failure:  # (Schemathesis's failure group): every one is listed at the end
            unexplained.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {failure}"[:500])

    run()
    assert unexplained == [], "\n".join(unexplained[:5])
    reached = 200 if operation_id in REACHABLE else 400  # (a generated body never fits the table's fields)
    assert seen.get(reached, 0) > 0, seen  # the real table was reached: the checks read real answers too


def test_a_record_written_as_blink_takes_it_is_answered_as_the_spec_says(sandbox: BlinkSandbox) -> None:
    """A create, an update and a delete that Blink carries out: each 200 answer is the published string."""
    import schemathesis

    schema = schemathesis.openapi.from_dict(yaml.safe_load(SPEC.read_text()))
    table = {"ws_id": "ws-demo", "table": "Incidents"}
    checks = published_checks()
    create = schema.find_operation_by_id("TableCreateRecord").Case(
        path_parameters=table, body={"Title": "From the spec", "Severity": "Low"}, media_type="application/json"
    )
    made = create.call(base_url=sandbox.base_url, headers={"BLINK-API-KEY": sandbox.api_key})
    create.validate_response(made, checks=checks)
    (row,) = [r for r in every_row(sandbox) if r.get("Title") == "From the spec"]
    one = {**table, "id": row["id"]}
    update = schema.find_operation_by_id("TableUpdateRecord").Case(
        path_parameters=one, body={"Title": "From the spec", "Severity": "High"}, media_type="application/json"
    )
    updated = update.call(base_url=sandbox.base_url, headers={"BLINK-API-KEY": sandbox.api_key})
    update.validate_response(updated, checks=checks)
    delete = schema.find_operation_by_id("TableDeleteRecord").Case(path_parameters=one)
    deleted = delete.call(base_url=sandbox.base_url, headers={"BLINK-API-KEY": sandbox.api_key})
    delete.validate_response(deleted, checks=checks)
    assert [made.status_code, updated.status_code, deleted.status_code] == [200, 200, 200]
    assert [made.json(), updated.json(), deleted.json()] == ["OK", "ok", "ok"]


def every_row(sandbox: BlinkSandbox) -> list[dict[str, Any]]:
    answer = requests.get(
        f"{sandbox.base_url}/workspace/ws-demo/table/Incidents",
        params={"q": '{"limit": 1000}'},
        headers={"BLINK-API-KEY": sandbox.api_key},
        timeout=30,
    )
    return list(answer.json()["results"])
