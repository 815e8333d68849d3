"""The sandbox's table records over raw HTTP: find with Blink's query object, whole-record updates,
Blink's checks on a write, the seeded rows, and a removed field's values gone."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import requests

from blinkops_sandbox import DEMO_RECORDS, DEMO_ROWS, BlinkSandbox
from tests.unit.sandbox.test_api import admin

TABLE = "/workspace/ws-demo/table/Incidents"


def call(sandbox: BlinkSandbox, method: str, path: str, **kwargs: Any) -> requests.Response:
    headers = {"BLINK-API-KEY": sandbox.api_key}
    return requests.request(method, f"{sandbox.base_url}{path}", headers=headers, timeout=30, **kwargs)


def find(sandbox: BlinkSandbox, **query: Any) -> dict[str, Any]:
    response = call(sandbox, "GET", TABLE, params={"q": json.dumps(query)})
    assert response.status_code == 200, response.text
    return response.json()


def every_row(sandbox: BlinkSandbox, **query: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = find(sandbox, limit=50, offset=len(rows), **query)
        rows += page["results"]
        if len(rows) >= page["total"]:
            return rows


def test_the_seeded_rows_are_found_with_the_exact_total_while_the_estimate_stays_an_estimate(
    blink_sandbox: BlinkSandbox,
) -> None:
    page = find(blink_sandbox, limit=25, offset=0)
    assert (page["limit"], page["offset"], page["total"]) == (25, 0, len(DEMO_ROWS["Incidents"]))
    assert len(page["results"]) == 25
    listed = call(blink_sandbox, "GET", "/workspace/ws-demo/tables").json()["results"]
    estimate = next(t["estimated_records_count"] for t in listed if t["name"] == "Incidents")
    assert estimate == DEMO_RECORDS["Incidents"] != page["total"]
    rows = every_row(blink_sandbox)
    assert len({row["id"] for row in rows}) == len(DEMO_ROWS["Incidents"])
    assert {"id", "created_at", "updated_at", "created_by", "updated_by", "Title"} <= set(rows[0])


def test_the_seeded_rows_hold_empty_and_repeated_values_and_every_option(blink_sandbox: BlinkSandbox) -> None:
    rows = every_row(blink_sandbox)
    assert 0 < sum("Affected hosts" in row for row in rows) < len(rows)
    assert max(Counter(row["Title"] for row in rows).values()) > 1
    assert {row["Severity"] for row in rows} == {"Low", "Medium", "High"}
    assert {tag for row in rows for tag in row.get("Tags", [])} == {"phishing", "malware", "insider"}


def test_a_filter_counts_in_total_and_pages_by_offset(blink_sandbox: BlinkSandbox) -> None:
    high = [row for row in DEMO_ROWS["Incidents"] if row["Severity"] == "High"]
    page = find(blink_sandbox, limit=10, offset=5, filter={"Severity": "High"})
    assert page["total"] == len(high)
    assert [row["Title"] for row in page["results"]] == [row["Title"] for row in high[5:15]]
    either = find(blink_sandbox, limit=1, filter={"$or": [{"Severity": "High"}, {"Severity": {"$eq": "Low"}}]})
    assert either["total"] == sum(row["Severity"] in ("High", "Low") for row in DEMO_ROWS["Incidents"])
    impact = find(blink_sandbox, limit=1, filter={"Impact": {"$gte": 5}})
    assert impact["total"] == sum(row.get("Impact", 0) >= 5 for row in DEMO_ROWS["Incidents"])


@pytest.mark.parametrize(
    "query",
    [{"limit": 1001}, {"offset": -1}, {"filter": {"Nope": 1}}, {"filter": {"Title": {"$in": ["a"]}}}, {"page": 2}],
)
def test_a_query_blink_would_refuse_is_a_400_saying_why(blink_sandbox: BlinkSandbox, query: dict[str, Any]) -> None:
    response = call(blink_sandbox, "GET", TABLE, params={"q": json.dumps(query)})
    assert response.status_code == 400
    assert response.json()["message"] == "invalid records query"


def test_an_update_replaces_the_whole_record(blink_sandbox: BlinkSandbox) -> None:
    row = find(blink_sandbox, limit=1, filter={"Severity": "High"})["results"][0]
    assert "Risk" in row
    answer = call(blink_sandbox, "PUT", f"{TABLE}/{row['id']}", json={"Title": "Renamed", "Severity": "Low"})
    assert answer.status_code == 200, answer.text
    assert answer.json() == "ok"  # Blink's published answer: accepted, not what was stored
    again = call(blink_sandbox, "GET", f"{TABLE}/{row['id']}").json()
    assert again["Title"] == "Renamed" and again["Severity"] == "Low"
    assert "Risk" not in again  # left out: emptied
    assert again["created_at"] == row["created_at"] and again["updated_by"] != "seed@sandbox.blink"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"Severity": "Low"}, "'Title' is required"),
        ({"Title": "x", "Severity": "Urgent"}, "not among its options"),
        ({"Title": "x", "Nope": 1}, "not fields of the table"),
    ],
)
def test_a_record_blink_would_refuse_is_a_400(blink_sandbox: BlinkSandbox, body: dict[str, Any], why: str) -> None:
    response = call(blink_sandbox, "POST", TABLE, json=body)
    assert response.status_code == 400
    assert why in response.json()["details"]


def test_a_unique_fields_value_held_by_another_row_is_refused(blink_sandbox: BlinkSandbox) -> None:
    taken = next(row["Description"] for row in DEMO_ROWS["Incidents"] if "Description" in row)
    response = call(blink_sandbox, "POST", TABLE, json={"Title": "x", "Description": taken})
    assert response.status_code == 400 and "unique" in response.json()["details"]


def test_turning_is_unique_on_over_repeated_values_is_refused(blink_sandbox: BlinkSandbox) -> None:
    body = {"type": "text", "display_name": "Title", "attributes": {"required": True, "is_unique": True}}
    response = call(blink_sandbox, "PUT", f"{TABLE}/fields/Title", json=body)
    assert response.status_code == 400 and "cannot be unique" in response.json()["message"]


def test_a_removed_fields_values_are_gone_from_every_row(blink_sandbox: BlinkSandbox) -> None:
    assert call(blink_sandbox, "DELETE", f"{TABLE}/fields/Affected hosts").status_code == 200
    assert not any("Affected hosts" in row for row in every_row(blink_sandbox))
    again = {"type": "list", "display_name": "Affected hosts"}
    assert call(blink_sandbox, "POST", f"{TABLE}/fields", json=again).status_code == 200
    assert not any("affected_hosts" in row for row in every_row(blink_sandbox))


def test_create_get_and_delete_a_record(blink_sandbox: BlinkSandbox) -> None:
    made = call(blink_sandbox, "POST", TABLE, json={"Title": "New", "Tags": ["malware"]})
    assert made.status_code == 200, made.text
    assert made.json() == "OK"  # Blink's published answer is a string, not the record
    (found,) = find(blink_sandbox, filter={"Title": "New"})["results"]
    record_id = found["id"]
    assert call(blink_sandbox, "GET", f"{TABLE}/{record_id}").json()["Tags"] == ["malware"]
    deleted = call(blink_sandbox, "DELETE", f"{TABLE}/{record_id}")
    assert (deleted.status_code, deleted.json()) == (200, "ok")
    gone = call(blink_sandbox, "GET", f"{TABLE}/{record_id}")
    assert gone.status_code == 404 and gone.json()["message"] == "Can not find record"


def test_the_admin_loads_rows_all_or_none(blink_sandbox: BlinkSandbox) -> None:
    path = "/workspace/ws-demo/table/Users/rows"
    loaded = admin(blink_sandbox, "POST", path, json=[{"Name": "A"}, {"Name": "B", "Email": "b@x"}])
    assert loaded.status_code == 200 and loaded.json()["written"] == 2
    refused = admin(blink_sandbox, "POST", path, json=[{"Name": "C"}, {"Nope": 1}])
    assert refused.status_code == 400 and "record 1" in refused.json()["details"]
    names = [
        row["Name"]
        for row in call(blink_sandbox, "GET", "/workspace/ws-demo/table/Users", params={"q": "{}"}).json()["results"]
    ]
    assert names[-2:] == ["A", "B"] and "C" not in names


def test_faults_apply_to_the_record_routes(blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.set_faults(sequence=[503])
    assert call(blink_sandbox, "GET", TABLE, params={"q": "{}"}).status_code == 503
    assert call(blink_sandbox, "GET", TABLE, params={"q": "{}"}).status_code == 200


@pytest.mark.parametrize(
    ("q", "why"),
    [
        ('{"offset": 99999999999999999999999}', "beyond 64 bits"),
        ('{"filter": {"Impact": 99999999999999999999999}}', "beyond 64 bits"),
        ('{"filter": {"Title": "\\ud800"}}', "lone surrogate"),
        ("[" * 5000 + "]" * 5000, "nested too deep"),
        ('{"filter": {"Impact": ' + "9" * 5000 + "}}", "over 4300 digits"),
        (json.dumps({"filter": {"$or": [{"Title": f"t{n}"} for n in range(1001)]}}), "at most 500 conditions"),
        ('{"filter": {"Title": "x"}, "sort": ["+Nope"]}', "not a field of the table"),
    ],
    ids=["huge-offset", "huge-filter", "surrogate", "deep", "5000-digits", "long-or", "sort-unknown"],
)
def test_a_query_the_store_cannot_serve_is_the_wrappers_400_never_a_500(
    blink_sandbox: BlinkSandbox, q: str, why: str
) -> None:
    response = call(blink_sandbox, "GET", TABLE, params={"q": q})
    assert response.status_code == 400, response.text
    body = response.json()
    assert why in body["details"] and isinstance(body["details"], str)


@pytest.mark.parametrize(
    ("value", "why"),
    [("\ud800", "lone surrogate"), (99999999999999999999999, "beyond 64 bits")],
    ids=["surrogate", "huge"],
)
def test_a_value_the_store_cannot_hold_is_refused_before_anything_is_stored(
    blink_sandbox: BlinkSandbox, value: Any, why: str
) -> None:
    row = find(blink_sandbox, limit=1)["results"][0]
    raw = json.dumps({"Title": "x", "Description": value}).replace("\\\\", "\\")
    answer = call(blink_sandbox, "PUT", f"{TABLE}/{row['id']}", data=raw.encode())
    assert answer.status_code == 400 and why in answer.json()["details"]
    assert call(blink_sandbox, "GET", f"{TABLE}/{row['id']}").json()["Title"] == row["Title"]  # nothing stored
    assert len(every_row(blink_sandbox)) == len(DEMO_ROWS["Incidents"])  # every page still reads


def test_rows_come_in_the_order_sort_asks(blink_sandbox: BlinkSandbox) -> None:
    ids = [row["id"] for row in find(blink_sandbox, limit=50, sort=["+id"])["results"]]
    assert ids == sorted(ids)
    down = [row["id"] for row in find(blink_sandbox, limit=50, sort=["-id"])["results"]]
    assert down == sorted(down, reverse=True)


def test_an_errors_details_is_a_string_never_null(blink_sandbox: BlinkSandbox) -> None:
    gone = call(blink_sandbox, "GET", "/workspace/ws-demo/table/Nope/fields")
    assert gone.status_code == 404 and isinstance(gone.json()["details"], str)
