"""Conformance with a8m/rql, the parser Blink's RQL follows, case by case from its own tests.

Each case cites the a8m/rql test it comes from, as ``file: TestFunc / "case name"``. Those tests
use their own models. Here each is mapped onto the connection-type schema, with the structure of
the query and the reference's outcome unchanged:

* ``int`` fields (``Age``, ``ID``, ``Inty``) → ``created_at`` or ``updated_at``;
* ``string`` fields (``Name``, ``Address``, ``AddressName``) → ``name`` or ``plugin_name``;
* ``bool`` fields (``Admin``, ``Bool``) → ``oauth_supported``.

The catalogue mirrors the users of ``integration/rql_test.go``: 100 items, ``created_at`` 1 to
100, ``name`` ``user_<i>``, ``plugin_name`` ``address_<i>``, ``oauth_supported`` for even ``i``.
So its expected counts and id orders apply unchanged.

Cases whose model has a type the connection-type schema lacks are left out: nested structs,
floats, unsigned integers, ``time.Time`` with layouts, and custom column names. They are
``rql_test.go: TestParse`` / "nested model", "nested model with custom sep", "type alias",
"time", "time unix layout", "time custom layout", "mismatch time unix layout", "mismatch uint
type 2", "mismatch time type 1", "mismatch time type 2" and "custom column name". Also left out
are ``TestInit``, which builds parsers and parses no query, and "custom db symbols", which
repeats "naming columns".

Every case runs three ways:

* against the sandbox over HTTP. An accepted query must give the rows of the brute-force
  evaluator (``tests/unit/sandbox/reference.py``) and the reference's own counts and orders. A
  refused one must give a 400 with the error wrapper;
* against the client's check (``RQLQuery`` and the connection-type fields' types). It must
  accept or refuse as the reference does, unless the case says why not;
* with what the client would send for it, sent to the sandbox. It must give the same rows as the
  query itself, or be refused when the reference refuses the query.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.rql import connection_type_query
from blinkops_sandbox import BlinkSandbox
from tests.unit.sandbox.reference import evaluate

T1 = 958_492_860_000  # integration/rql_test.go: CreateTime + 1 minute, in epoch milliseconds
HOUR = 3_600_000
USERS = [
    {
        "id": f"u-{i:03d}",
        "name": f"user_{i}",
        "plugin_name": f"address_{i}",
        "oauth_supported": i % 2 == 0,
        "created_at": i,
        "updated_at": T1,
    }
    for i in range(1, 101)
]
NO_SCHEMA = "the client knows the types of the fields it models, not which fields Blink filters on; Blink answers 400"


@dataclass
class Case:
    source: str
    q: str
    accepted: bool
    client: str = "same"  # or "accepts: why", "refuses: why", "n/a: why"
    count: int | None = None  # integration/rql_test.go: AssertCount
    order: list[int] | None = None  # AssertMatchIDs: created_at of the rows, in order
    values: list[str] | None = None  # AssertSelect
    client_converts: bool = False  # the client turns the user's form into one Blink accepts


def case(source: str, query: Any, accepted: bool, **kwargs: Any) -> Any:
    q = query if isinstance(query, str) else json.dumps(query)
    slug = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")
    return pytest.param(Case(source, q, accepted, **kwargs), id=slug)


SIMPLE_FILTER = {
    "name": "user_12",
    "created_at": 12,
    "$or": [{"plugin_name": "address_12"}, {"plugin_name": "address_13"}],
    "$and": [
        {"created_at": {"$neq": 10}},
        {"created_at": {"$neq": 20}},
        {"$or": [{"created_at": 11}, {"created_at": 12}]},
    ],
}

CASES = [
    # rql_test.go: TestParse
    case('rql_test.go: TestParse / "simple test"', {"filter": SIMPLE_FILTER}, True, count=1),
    case(
        'rql_test.go: TestParse / "embed models"',
        {"filter": {k: v for k, v in SIMPLE_FILTER.items() if k != "$and"}},
        True,
        count=1,
    ),
    case('rql_test.go: TestParse / "ignore non-struct embedding"', {}, True, count=100),
    case(
        'rql_test.go: TestParse / "sql types 1"',
        {"filter": {"oauth_supported": True, "created_at": 2, "updated_at": T1}},
        True,
        count=1,
    ),
    case('rql_test.go: TestParse / "sql types 2"', {"filter": {"created_at": 1, "name": ""}}, True, count=0),
    case(
        'rql_test.go: TestParse / "valid operations"',
        {
            "filter": {
                "created_at": {"$gt": 10},
                "name": {"$like": "%1%"},
                "$or": [{"plugin_name": {"$eq": "address_11"}}, {"plugin_name": {"$neq": "address_12"}}],
            }
        },
        True,
    ),
    case(
        'rql_test.go: TestParse / "custom operation prefix" (Blink keeps the default "$")',
        {"filter": {"created_at": {"@gt": 5}}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "sort"',
        {"filter": {"created_at": {"$lte": 10}}, "sort": ["name", "-created_at", "+updated_at"]},
        True,
        order=[1, 10, 2, 3, 4, 5, 6, 7, 8, 9],
    ),
    case(
        'rql_test.go: TestParse / "sort with default sort field configured, and no sort in query"',
        {"filter": {"created_at": {"$lte": 5}}, "sort": []},
        True,
        order=[1, 2, 3, 4, 5],
    ),
    case(
        'rql_test.go: TestParse / "sort with default sort field configured, and sort specified in query"',
        {"filter": {"created_at": {"$lte": 5}}, "sort": ["-created_at"]},
        True,
        order=[5, 4, 3, 2, 1],
    ),
    case('rql_test.go: TestParse / "select one"', {"select": ["name"], "limit": 3}, True),
    case('rql_test.go: TestParse / "select many"', {"select": ["name", "created_at"], "limit": 3}, True),
    case(
        'rql_test.go: TestParse / "naming columns"',
        {"filter": {"id": "id", "name": "full_name", "plugin_name": "http_url"}},
        True,
        count=0,
    ),
    case(
        'rql_test.go: TestParse / "mismatch int type 1"',
        {"filter": {"created_at": "a8m", "name": 10}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "mismatch int type 2"',
        {"filter": {"created_at": 1.1}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "mismatch string type"',
        {"filter": {"name": 10}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "mismatch uint type 1"',
        {"filter": {"updated_at": "a8m"}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "mismatch bool type"',
        {"filter": {"oauth_supported": "false"}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "mismatch float type"',
        {"filter": {"created_at": "13"}},
        False,
    ),
    case(
        'rql_test.go: TestParse / "unrecognized fields"',
        {"filter": {"age": "a8m"}},
        False,
        client=f"accepts: {NO_SCHEMA}",
    ),
    case(
        'rql_test.go: TestParse / "field is not sortable"',
        {"sort": ["metadata"]},
        False,
        client=f"accepts: {NO_SCHEMA}",
    ),
    case(
        'rql_test.go: TestParse / "invalid operation"',
        {"filter": {"name": {"$gt": 10}}},
        False,
    ),
    case('rql_test.go: TestParse / "unrecognized operation"', {"filter": {"name": {"$regex": ".*"}}}, False),
    case('rql_test.go: TestParse / "limit and offset"', {"limit": 10, "offset": 4}, True, order=list(range(5, 15))),
    case('rql_test.go: TestParse / "invalid offset"', {"limit": 10, "offset": -14}, False),
    case('rql_test.go: TestParse / "invalid limit 1"', {"limit": -10}, False),
    case('rql_test.go: TestParse / "invalid limit 2" (Blink\'s largest limit is 1000)', {"limit": 2000}, False),
    # mapping_test.go: TestMapping
    case('mapping_test.go: TestMapping / "test simple mapping of column names"', {"filter": SIMPLE_FILTER}, True),
    case(
        'mapping_test.go: TestMapping / "test simple mapping of column values"',
        {"filter": {"name": "user_32", "created_at": 32, "$or": [{"created_at": 22}, {"created_at": 32}]}},
        True,
        count=1,
    ),
    # rql_custom_ops_test.go: TestParse2 adds $in and array values through custom operators;
    # Blink's parser has the default operators, which refuse both.
    case(
        'rql_custom_ops_test.go: TestParse2 / "custom conv/val func" ($in, default operators)',
        {"filter": {"created_at": {"$in": [2]}}},
        False,
    ),
    case(
        'rql_custom_ops_test.go: TestParse2 / "custom conv/val func" (array value, default operators)',
        {"filter": {"plugin_name": ["1"]}},
        False,
    ),
    # searching_test.go: TestSearching comes from a later a8m/rql than Blink documents; the Query
    # of rql.go has no "search" member, and an unknown member is refused.
    case('searching_test.go: TestSearching / "simple search of single column"', {"search": {"query": "foo"}}, False),
    # integration/rql_test.go: TestMySQL (created_at stands for ID; updated_at for the times)
    case("integration/rql_test.go: TestMySQL / AssertCount id 1", {"filter": {"created_at": 1}}, True, count=1),
    case("integration/rql_test.go: TestMySQL / AssertCount id 100", {"filter": {"created_at": 100}}, True, count=1),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount id $gt 50",
        {"filter": {"created_at": {"$gt": 50}}},
        True,
        count=50,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount id $lte 50",
        {"filter": {"created_at": {"$lte": 50}}},
        True,
        count=50,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount $or of id ranges",
        {"filter": {"$or": [{"created_at": {"$gt": 50}}, {"created_at": {"$lt": 50}}]}},
        True,
        count=99,
    ),
    case("integration/rql_test.go: TestMySQL / AssertCount name", {"filter": {"name": "user_1"}}, True, count=1),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount name $like user%",
        {"filter": {"name": {"$like": "user%"}}},
        True,
        count=100,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount name $like %10%",
        {"filter": {"name": {"$like": "%10%"}}},
        True,
        count=2,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount admin", {"filter": {"oauth_supported": True}}, True, count=50
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount address_name ??",
        {"filter": {"plugin_name": "??"}},
        True,
        count=0,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount address_name",
        {"filter": {"plugin_name": "address_1"}},
        True,
        count=1,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount created_at $gt",
        {"filter": {"updated_at": {"$gt": T1 - 60_000 - HOUR}}},
        True,
        count=100,
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertCount created_at $lte",
        {"filter": {"updated_at": {"$lte": T1 - 60_000 + HOUR}}},
        True,
        count=100,
    ),
    case("integration/rql_test.go: TestMySQL / AssertMatchIDs id 1", {"filter": {"created_at": 1}}, True, order=[1]),
    case(
        "integration/rql_test.go: TestMySQL / AssertMatchIDs $or",
        {"filter": {"$or": [{"created_at": 2}, {"created_at": 3}]}},
        True,
        order=[2, 3],
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertMatchIDs $or sorted -id",
        {"filter": {"$or": [{"created_at": 2}, {"created_at": 3}]}, "sort": ["-created_at"]},
        True,
        order=[3, 2],
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertMatchIDs $lte sorted -id",
        {"filter": {"created_at": {"$lte": 5}}, "sort": ["-created_at"]},
        True,
        order=[5, 4, 3, 2, 1],
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertSelect name",
        {"select": ["name"], "limit": 2},
        True,
        values=["user_1", "user_2"],
    ),
    case(
        "integration/rql_test.go: TestMySQL / AssertSelect address_name",
        {"select": ["plugin_name"], "limit": 2},
        True,
        values=["address_1", "address_2"],
    ),
    # Paths of rql.go and rql_easyjson.go that the tests above do not reach.
    case("rql.go: parseState.and / $and alone", {"filter": {"$and": [{"created_at": {"$gt": 98}}]}}, True, count=2),
    case("rql_easyjson.go: Query decode / filter {}", {"filter": {}}, True, count=100),
    case("rql.go: parseState.field / empty predicate object", {"filter": {"name": {}}}, True, count=100),
    case("rql.go: parseState.relOp / $or with no terms", {"filter": {"$or": []}}, True, count=100),
    case("rql.go: parseState.relOp / $and with no terms", {"filter": {"$and": []}}, True, count=100),
    case("rql.go: parseState.relOp / $or with an empty term", {"filter": {"$or": [{}, {"created_at": 1}]}}, True),
    case(
        "rql_easyjson.go: Query decode / q is null", "null", True, count=100, client="n/a: the client sends an object"
    ),
    case(
        "rql.go: ParseQuery / limit 0 means the default",
        {"limit": 0},
        True,
        count=100,
        client="refuses: Blink's docs say a limit is 1 to 1000",
    ),
    case(
        "rql_easyjson.go: Query decode / a member that is null is unset",
        {"limit": None, "offset": None, "sort": None, "select": None, "filter": None},
        True,
        count=100,
    ),
    case(
        "rql_easyjson.go: Query decode / an unknown member that is null is skipped",
        {"limt": None},
        True,
        client="refuses: an unknown name in RQLQuery is a typo to report, not a member to drop",
    ),
    case("rql_easyjson.go: Query decode / an unknown member", {"limt": 5}, False),
    case("rql_easyjson.go: Query decode / limit 10.0 is not an integer", {"limit": 10.0}, False),
    case("rql.go: validateInt / an integral float on an integer field", {"filter": {"created_at": 12.0}}, True),
    case("rql.go: validateString / null as a value", {"filter": {"name": None}}, False),
    case("rql.go: validateString / null in a predicate", {"filter": {"name": {"$neq": None}}}, False),
    case(
        "rql.go: GetSupportedOps / $like on an integer field",
        {"filter": {"created_at": {"$like": "1%"}}},
        False,
    ),
    case("rql.go: GetSupportedOps / $gt on a boolean field", {"filter": {"oauth_supported": {"$gt": True}}}, False),
    case("rql.go: parseState.and / $and must be an array", {"filter": {"$and": {"name": "user_1"}}}, False),
    case("rql.go: parseState.relOp / $or terms must be objects", {"filter": {"$or": ["user_1"]}}, False),
    case('rql.go: Parser.sort / sort field ""', {"sort": [""]}, False),
    case('rql.go: Parser.sort / sort field "-"', {"sort": ["-"]}, False),
    case(
        "rql_easyjson.go: Query decode / sort as a bare string",
        {"sort": "-created_at"},
        False,
        client="accepts: it turns a rendered string into a list before sending",
        client_converts=True,
    ),
    case(
        "rql_easyjson.go: Query decode / select as a bare string",
        {"select": "name"},
        False,
        client="accepts: it turns a rendered string into a list before sending",
        client_converts=True,
    ),
    case(
        "rql_easyjson.go: Query decode / filter as a string",
        {"filter": json.dumps({"name": "user_1"})},
        False,
        client="accepts: it parses a rendered JSON string before sending",
        client_converts=True,
    ),
]


@pytest.fixture(scope="module")
def users_sandbox() -> Iterator[BlinkSandbox]:
    with BlinkSandbox(connection_types=0) as sandbox:
        sandbox.store.upsert_connection_types(USERS)
        yield sandbox


def ask(sandbox: BlinkSandbox, q: str) -> requests.Response:
    return requests.get(
        f"{sandbox.base_url}/connection_types",
        params={"q": q},
        headers={"BLINK-API-KEY": sandbox.api_key},
        timeout=30,
    )


def expected_page(docs: list[dict[str, Any]], q: str) -> tuple[int, list[dict[str, Any]]]:
    """The total and the rows of an accepted query, by brute force."""
    query = {key: value for key, value in (json.loads(q) or {}).items() if value is not None}
    matching = evaluate(docs, query.get("filter"), query.get("sort"), query.get("select"))
    offset = query.get("offset", 0)
    return len(matching), matching[offset : offset + (query.get("limit") or 100)]


def client_param(q: str) -> str:
    """What the hook sends for a query (RQL's rules and the fields' types checked), or BlinkInputError."""
    return connection_type_query(**json.loads(q)).to_param()


@pytest.mark.parametrize("c", CASES)
def test_sandbox_accepts_and_answers_as_the_reference(users_sandbox: BlinkSandbox, c: Case) -> None:
    response = ask(users_sandbox, c.q)
    if not c.accepted:
        assert response.status_code == 400, response.text
        assert response.json()["identifier"] == "INVALID_QUERY"
        return
    assert response.status_code == 200, response.text
    page = response.json()
    total, rows = expected_page(users_sandbox.store.all_connection_types(), c.q)
    assert (page["total"], page["results"]) == (total, rows)
    if c.count is not None:
        assert page["total"] == c.count
    if c.order is not None:
        assert [row["created_at"] for row in page["results"]] == c.order
    if c.values is not None:
        assert [next(iter(row.values())) for row in page["results"]] == c.values


@pytest.mark.parametrize("c", [p for p in CASES if not p.values[0].client.startswith("n/a")])
def test_client_accepts_and_refuses_as_the_reference(c: Case) -> None:
    expected = client_accepts(c)
    try:
        client_param(c.q)
    except BlinkInputError:
        accepted = False
    else:
        accepted = True
    assert accepted == expected, c.client


def client_accepts(c: Case) -> bool:
    return c.accepted if c.client == "same" else c.client.startswith("accepts")


@pytest.mark.parametrize("c", [p for p in CASES if client_accepts(p.values[0])])
def test_what_the_client_sends_means_the_same(users_sandbox: BlinkSandbox, c: Case) -> None:
    sent = ask(users_sandbox, client_param(c.q))
    if c.accepted or c.client_converts:
        assert sent.status_code == 200, sent.text
        reference = c.q if c.accepted else client_param(c.q)
        total, rows = expected_page(users_sandbox.store.all_connection_types(), reference)
        assert (sent.json()["total"], sent.json()["results"]) == (total, rows)
    else:
        assert sent.status_code == 400, sent.text  # the client let it through; Blink refuses it


def test_the_table_is_not_vacuous(users_sandbox: BlinkSandbox) -> None:
    cases: list[Case] = [p.values[0] for p in CASES]
    docs = users_sandbox.store.all_connection_types()
    totals = [expected_page(docs, c.q)[0] for c in cases if c.accepted]
    assert 0 in totals and 100 in totals and any(0 < total < 100 for total in totals)
    assert sum(not c.accepted for c in cases) >= 20
    assert sum(c.client != "same" for c in cases) >= 6
    assert len(cases) >= 70
