"""RQL evaluated by the sandbox, checked case by case against a brute-force evaluation in Python."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import requests

from blinkops_sandbox import BlinkSandbox
from tests.unit.sandbox.reference import evaluate

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
    pytest.param({"filter": {"created_at": 1767225600000.0}}, id="integral-float-on-integer-field"),
    pytest.param({"filter": {"$and": [{"name": {"$gte": "m"}}, {"oauth_supported": True}]}}, id="and"),
    pytest.param({"filter": {"name": {}, "oauth_supported": True}}, id="empty-predicates-beside-another"),
    pytest.param({"filter": {"$or": [], "plugin_name": "okta"}}, id="empty-or-beside-another"),
    pytest.param({"filter": {"$or": [{}, {"name": "aws"}], "plugin_name": {"$like": "o%"}}}, id="or-with-empty-term"),
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
        ({"limit": -1}, "limit must be 1 to 1000 (0 or none for 100), got -1"),
        ({"limit": 1001}, "limit must be 1 to 1000 (0 or none for 100), got 1001"),
        ({"limit": 10.0}, "limit must be a JSON integer, not a number (10.0)"),
        ({"offset": -1}, "offset must be 0 or more, got -1"),
        ({"filter": {"name": {"$in": ["a"]}}}, "'$in' does not apply to 'name' (a string field)"),
        ({"sort": ["colour"]}, "sort: unknown field 'colour'"),
        ({"sort": "name"}, "sort must be an array of field names, not a string"),
        ({"select": "name"}, "select must be an array of field names, not a string"),
        ({"filter": '{"name": "aws"}'}, "filter must be an object of conditions, not a string"),
        ({"filter": {"colour": "red"}}, "filter: unknown key 'colour'; allowed: $or, $and and the fields id, name"),
        ({"select": ["colour"]}, "select: unknown field(s) 'colour'"),
        ({"filter": {"name": None}}, "'name' is a string field and takes a string, not null"),
        (
            {"filter": {"created_at": "yesterday"}},
            "'created_at' is an integer field and takes an integer, not a string",
        ),
        ({"filter": {"created_at": 1.5}}, "'created_at' is an integer field and 1.5 has a fraction"),
        ({"filter": {"oauth_supported": {"$gt": True}}}, "'$gt' does not apply to 'oauth_supported' (a boolean field)"),
        ({"filter": {"created_at": {"$like": "1%"}}}, "'$like' does not apply to 'created_at' (an integer field)"),
        ({"limt": 5}, "unknown member(s) 'limt'; allowed: limit, offset, sort, select, filter"),
    ],
)
def test_broken_queries_are_400_with_a_wrapper(blink_sandbox: BlinkSandbox, q: Any, message: str) -> None:
    response = get(blink_sandbox, q)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"status", "message", "details", "identifier", "data", "user_error"}
    assert body["status"] == 400
    assert message in f"{body['message']}: {body['details']}"


UNSET = [
    "null",
    {"limit": 0},
    {"limit": None, "offset": None, "sort": None, "select": None, "filter": None},
    {"no_such_member": None},
    {"filter": {}},
]


@pytest.mark.parametrize("q", UNSET)
def test_unset_members_read_as_a8m_rql_reads_them(blink_sandbox: BlinkSandbox, q: Any) -> None:
    """``null`` and ``limit: 0`` mean "not given": the whole catalogue, 100 to a page, in insertion order."""
    response = get(blink_sandbox, q)
    assert response.status_code == 200, response.text
    page = response.json()
    assert (page["limit"], page["offset"], page["total"]) == (100, 0, len(blink_sandbox.store.connection_type_ids()))
    assert [doc["id"] for doc in page["results"]] == blink_sandbox.store.connection_type_ids()[:100]


def test_a_q_too_deep_for_the_json_parser_is_a_query_error(blink_sandbox: BlinkSandbox) -> None:
    """Past Python's recursion limit the JSON parser gives up: a 400 with a reason, not a 500."""
    depth = sys.getrecursionlimit() + 500  # the sandbox's thread parses under the same limit
    response = get(blink_sandbox, '{"filter": ' + '{"$and": [' * depth + "]}" * depth + "}")
    assert response.status_code == 400, response.text
    assert response.json()["details"] == "q nests too deeply; $or and $and may nest 64 deep"


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
