from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.rql import OPERATORS, RQLQuery, connection_type_query


def test_cli_example_is_compact_json() -> None:
    query = RQLQuery(limit=25, offset=0, filter={"name": {"$gt": "k8s"}})
    assert query.to_param() == '{"filter":{"name":{"$gt":"k8s"}},"limit":25,"offset":0}'
    assert json.loads(query.to_param()) == {"limit": 25, "offset": 0, "filter": {"name": {"$gt": "k8s"}}}


def test_empty_query_is_an_empty_object() -> None:
    assert RQLQuery().to_param() == "{}"


@pytest.mark.parametrize(
    "filter_",
    [
        {"name": "aws"},
        {"oauth_supported": True, "created_at": {"$gte": 1, "$lt": 10}},
        {"name": {"$like": "a%"}, "plugin_name": {"$neq": "aws"}},
        {"$and": [{"name": {"$gte": "a"}}, {"$or": [{"n": 1}, {"n": 2}]}]},
        {"$or": [{"name": "aws"}, {"name": {"$like": "gcp%"}}]},
        {"$or": [{"$or": [{"a": 1}]}, {"b": {"$eq": 2.5}}], "c": "x"},
        {"metadata.authentication.type": "api-key"},
        {"n": {"$eq": 1, "$neq": 2, "$gt": 0, "$lt": 9, "$gte": 0, "$lte": 9}},
    ],
)
def test_valid_filters(filter_: dict) -> None:
    assert RQLQuery(filter=filter_).to_dict()["filter"] == filter_


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"limit": 1001}, "limit: Input should be less than or equal to 1000"),
        ({"limit": "10"}, "limit: Input should be a valid integer"),
        ({"limit": True}, "limit: Input should be a valid integer"),
        ({"offset": -1}, "offset: Input should be greater than or equal to 0"),
        ({"filter": {"name": {"$in": ["a"]}}}, "unknown operator '$in'; allowed: " + ", ".join(OPERATORS)),
        ({"filter": {"$not": [{"a": 1}]}}, "'$not' is not allowed here; $or and $and combine conditions"),
        ({"filter": {"name": None}}, "filter on 'name': null is not a value RQL can compare (equals)"),
        ({"filter": {"name": {"$neq": None}}}, "null is not a value RQL can compare ($neq)"),
        ({"filter": {"name": ["a", "b"]}}, "there is no $in: use $or"),
        ({"filter": {"name": {"$like": 5}}}, "$like takes a string pattern"),
        ({"filter": {"n": {"$gt": True}}}, "$gt takes a number or a string"),
        ({"filter": {"n": {"$eq": [1]}}}, "$eq takes a string, number or boolean, not list"),
        ({"filter": {"$or": {"a": 1}}}, "$or takes an array of condition objects, not dict"),
        ({"filter": {"$and": "x"}}, "$and takes an array of condition objects, not str"),
        ({"filter": {"$or": [{"a": {"$nope": 1}}]}}, "unknown operator '$nope'"),
        ({"filter": {"$or": ["a"]}}, "filter.$or[0] must be an object of conditions"),
        ({"filter": {"$and": [{}, 1]}}, "filter.$and[1] must be an object of conditions"),
        ({"filter": {"1abc": 1}}, "'1abc' is not a field name"),
        ({"filter": "{not json"}, "filter is not valid JSON"),
        ({"filter": "[1]"}, "filter must be an object of conditions, not list"),
        ({"sort": ["~name"]}, "sort item '~name' must be a field name"),
        ({"sort": [5]}, "sort item 5 must be a field name"),
        ({"select": ["ok", "not ok"]}, "'not ok' is not a field name"),
        ({"limt": 5}, "limt: Extra inputs are not permitted"),
    ],
)
def test_invalid_queries_say_what_is_wrong(members: dict, expected: str) -> None:
    with pytest.raises(BlinkInputError) as err:
        connection_type_query(**members)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("filter_", "sent"),
    [
        ({}, None),
        ("{}", None),
        ({"name": {}}, None),
        ({"$or": []}, None),
        ({"$and": []}, None),
        ({"$or": [{}]}, None),
        ({"$or": [{"name": {}}, {"name": "aws"}]}, None),
        ({"name": "aws", "plugin_name": {}}, {"name": "aws"}),
        ({"name": "aws", "$or": []}, {"name": "aws"}),
        ({"$and": [{}, {"name": "aws"}], "$or": [{"$and": []}, {"n": 1}]}, {"$and": [{"name": "aws"}]}),
        ({"$or": [{"n": 1, "m": {}}, {"n": 2}]}, {"$or": [{"n": 1}, {"n": 2}]}),
    ],
)
def test_parts_that_set_no_condition_are_accepted_and_not_sent(filter_: Any, sent: Any) -> None:
    query = RQLQuery(filter=filter_)
    assert query.filter == sent
    assert json.loads(query.to_param()).get("filter") == sent


def nested(depth: int) -> str:
    return '{"$or": [' * depth + '{"name": "x"}' + "]}" * depth


def test_or_and_and_nest_at_most_as_deep_as_the_refusal_says() -> None:
    with pytest.raises(BlinkInputError, match=r"nests too deeply to read \(\$or and \$and: \d+ deep\)") as refused:
        connection_type_query(filter=nested(1_000))
    deepest = int(re.search(r"(\d+) deep", str(refused.value))[1])  # type: ignore[index]
    assert RQLQuery(filter=nested(deepest)).filter is not None
    with pytest.raises(BlinkInputError, match=f"may nest {deepest} deep, no deeper"):
        connection_type_query(filter=nested(deepest + 1))
    with pytest.raises(BlinkInputError, match="nests too deeply to read"):
        connection_type_query(filter=nested(100_000))


def test_direct_construction_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"allowed: \$eq"):
        RQLQuery(filter={"a": {"$regex": "x"}})


def test_sort_and_select_accept_rendered_strings() -> None:
    query = RQLQuery(sort="-updated_at, name", select='["id", "name"]', filter='{"name": "aws"}')
    assert query.to_dict() == {
        "sort": ["-updated_at", "name"],
        "select": ["id", "name"],
        "filter": {"name": "aws"},
    }
    assert RQLQuery(sort="+name").sort == ["+name"]


def test_non_ascii_values_stay_readable() -> None:
    assert RQLQuery(filter={"name": "Zürich"}).to_param() == '{"filter":{"name":"Zürich"}}'


@pytest.mark.parametrize(
    ("filter_", "message"),
    [
        ({"created_at": 1.5}, "'created_at' is an integer field, so it takes an integer, not 1.5"),
        ({"created_at": {"$gte": "2026-01-01"}}, "'created_at' is an integer field, so it takes an integer"),
        ({"$or": [{"name": 10}]}, "filter.$or[0]: 'name' is a string field, so it takes a string, not 10"),
        ({"oauth_supported": "true"}, "'oauth_supported' is a boolean field, so it takes a boolean"),
        ({"oauth_supported": {"$like": "t%"}}, "$like does not apply to 'oauth_supported', a boolean field"),
        ({"updated_at": {"$like": "17%"}}, "$like does not apply to 'updated_at', an integer field"),
    ],
)
def test_the_hook_refuses_a_value_of_the_wrong_type_before_sending(
    blink_conn: None, filter_: dict, message: str
) -> None:
    """The API contract gives the connection-type fields' types; Blink's parser refuses a mismatch."""
    from blinkops_provider.hooks.blink import BlinkHook

    hook = BlinkHook()
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=re.escape(message)):
        hook.list_connection_types(filter=filter_)
    assert not m.called


def test_whole_floats_and_fields_the_contract_does_not_type_are_sent(blink_conn: None) -> None:
    from blinkops_provider.hooks.blink import BlinkHook

    flt = {"created_at": 1000.0, "metadata.kind": 5, "name": {"$like": "a%"}, "oauth_supported": {"$neq": True}}
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json={"total": 0, "results": []})
        BlinkHook().list_connection_types(filter=flt)
        (request,) = m.request_history
    assert json.loads(parse_qs(urlsplit(request.url).query)["q"][0])["filter"] == flt
