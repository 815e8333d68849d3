"""RQL evaluated by the sandbox, checked case by case against a brute-force evaluation in Python."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from blinkops_provider.sandbox import BlinkSandbox
from tests.sandbox.reference import evaluate

T0 = 1_767_225_600_000
ODD_ONES = [  # members missing or odd, for null semantics and LIKE edge cases
    {"id": "odd-1", "name": "zz_under%score", "plugin_name": None, "oauth_supported": None},
    {"id": "odd-2", "name": "ZZ upper", "display_name": "Ünïcode Name", "created_at": T0 + 5},
]

CASES = [
    pytest.param({}, id="everything"),
    pytest.param({"filter": {"name": "aws"}}, id="plain-equals"),
    pytest.param({"filter": {"name": {"$eq": "gcp"}}}, id="eq"),
    pytest.param({"filter": {"plugin_name": {"$neq": "aws"}}}, id="neq-skips-missing"),
    pytest.param({"filter": {"plugin_name": None}}, id="equals-null"),
    pytest.param({"filter": {"plugin_name": {"$neq": None}}}, id="neq-null"),
    pytest.param({"filter": {"oauth_supported": True}}, id="boolean"),
    pytest.param({"filter": {"created_at": {"$gte": T0 + 60_000 * 50, "$lt": T0 + 60_000 * 80}}}, id="range-anded"),
    pytest.param({"filter": {"created_at": {"$gt": T0 + 60_000 * 190}}}, id="gt"),
    pytest.param({"filter": {"created_at": {"$lte": T0 + 60_000 * 3}}}, id="lte"),
    pytest.param({"filter": {"display_name": {"$gt": "M"}}}, id="string-gt"),
    pytest.param({"filter": {"name": {"$like": "a%"}}}, id="like-prefix"),
    pytest.param({"filter": {"name": {"$like": "%-2"}}}, id="like-suffix"),
    pytest.param({"filter": {"name": {"$like": "_cp%"}}}, id="like-underscore"),
    pytest.param({"filter": {"name": {"$like": "zz%"}}}, id="like-is-case-sensitive"),
    pytest.param({"filter": {"name": {"$like": "AWS"}}}, id="like-no-match"),
    pytest.param({"filter": {"oauth_supported": False, "plugin_name": {"$like": "s%"}}}, id="fields-anded"),
    pytest.param({"filter": {"$or": [{"name": "aws"}, {"name": {"$like": "gcp%"}}]}}, id="or"),
    pytest.param(
        {
            "filter": {
                "$or": [{"plugin_name": "okta", "oauth_supported": True}, {"created_at": {"$lt": T0 + 60_000 * 2}}],
                "name": {"$neq": "azure"},
            }
        },
        id="or-with-and",
    ),
    pytest.param(
        {"filter": {"$or": [{"$or": [{"name": "aws"}, {"name": "jira"}]}, {"name": "slack"}]}}, id="nested-or"
    ),
    pytest.param({"sort": ["name"]}, id="sort-asc"),
    pytest.param({"sort": ["-name"]}, id="sort-desc"),
    pytest.param({"sort": ["+plugin_name", "-created_at"]}, id="sort-two-keys"),
    pytest.param({"sort": ["oauth_supported", "-display_name"]}, id="sort-bool-and-missing"),
    pytest.param({"select": ["id", "name"]}, id="select"),
    pytest.param({"select": ["metadata"], "filter": {"name": "aws"}}, id="select-nested"),
    pytest.param({"limit": 7, "offset": 0}, id="first-page"),
    pytest.param({"limit": 7, "offset": 196}, id="last-page"),
    pytest.param({"limit": 1000, "offset": 5000}, id="past-the-end"),
    pytest.param(
        {
            "filter": {"oauth_supported": False},
            "sort": ["-updated_at"],
            "select": ["id", "updated_at"],
            "limit": 20,
            "offset": 40,
        },
        id="all-together",
    ),
]


def get(sandbox: BlinkSandbox, q: Any) -> requests.Response:
    return requests.get(
        f"{sandbox.base_url}/connection_types",
        params={"q": q if isinstance(q, str) else json.dumps(q)},
        headers={"BLINK-API-KEY": sandbox.api_key},
        timeout=30,
    )


@pytest.mark.parametrize("query", CASES)
def test_sandbox_matches_brute_force(blink_sandbox: BlinkSandbox, query: dict[str, Any]) -> None:
    blink_sandbox.store.upsert_connection_types(ODD_ONES)
    docs = blink_sandbox.store.all_connection_types()
    response = get(blink_sandbox, query)
    assert response.status_code == 200, response.text
    page = response.json()
    limit = query.get("limit", 100)
    expected_all = evaluate(docs, query.get("filter"), query.get("sort"), query.get("select"))
    expected = expected_all[query.get("offset", 0) : query.get("offset", 0) + limit]
    assert page["total"] == len(expected_all)
    assert (page["limit"], page["offset"]) == (limit, query.get("offset", 0))
    assert page["results"] == expected


def test_cases_are_not_vacuous(blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.store.upsert_connection_types(ODD_ONES)
    docs = blink_sandbox.store.all_connection_types()
    sizes = {case.id: len(evaluate(docs, case.values[0].get("filter"))) for case in CASES if "filter" in case.values[0]}
    empty = {name for name, size in sizes.items() if size == 0}
    assert empty == {"like-no-match"}, sizes
    assert all(size < len(docs) for size in sizes.values())


@pytest.mark.parametrize(
    ("q", "message"),
    [
        ("not json", "q is not valid JSON"),
        ("[1, 2]", "q must be a JSON object"),
        ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"limit": 1001}, "limit: Input should be less than or equal to 1000"),
        ({"offset": -1}, "offset: Input should be greater than or equal to 0"),
        ({"filter": {"name": {"$in": ["a"]}}}, "unknown operator '$in'"),
        ({"sort": ["colour"]}, "sort: unknown field 'colour'"),
        ({"filter": {"colour": "red"}}, "filter: unknown field 'colour'"),
        ({"select": ["colour"]}, "select: unknown field(s) 'colour'"),
        ({"filter": {"created_at": "yesterday"}}, "a number field takes a number"),
        ({"filter": {"oauth_supported": {"$gt": 1}}}, "a boolean field takes true or false"),
        ({"filter": {"created_at": {"$like": "1%"}}}, "a number field takes a number"),
        ({"limt": 5}, "limt: Extra inputs are not permitted"),
    ],
)
def test_broken_queries_are_400_with_a_wrapper(blink_sandbox: BlinkSandbox, q: Any, message: str) -> None:
    response = get(blink_sandbox, q)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"status", "message", "details", "identifier", "data", "user_error"}
    assert body["status"] == 400
    assert message in f"{body['message']}: {body['details']}"


def test_missing_q_is_a_400(blink_sandbox: BlinkSandbox) -> None:
    response = requests.get(
        f"{blink_sandbox.base_url}/connection_types", headers={"BLINK-API-KEY": blink_sandbox.api_key}, timeout=30
    )
    assert response.status_code == 400
    assert response.json()["details"] == "q: Field required"


def test_default_catalogue_spans_auth_kinds_and_metadata(blink_sandbox: BlinkSandbox) -> None:
    docs = blink_sandbox.store.all_connection_types()
    assert len(docs) >= 200
    assert len({doc["id"] for doc in docs}) == len(docs)
    kinds = {doc["metadata"]["authentication"]["type"] for doc in docs}
    assert kinds == {"api-key", "oauth", "two-legged"}
    two_legged = next(doc for doc in docs if doc["metadata"]["authentication"]["type"] == "two-legged")
    assert two_legged["metadata"]["authentication"]["twoLeggedValues"]["extractor"]["accessKeyPath"]
    assert all(
        doc["methods"]
        and doc["metadata"]["validation"]
        and doc["metadata"]["pagination"]
        and doc["metadata"]["testConnection"]
        for doc in docs
    )
