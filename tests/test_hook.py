"""The hook's endpoints: URL building, bodies, the q parameter, pagination, test_connection."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError
from blinkops_provider.models import FieldType, FieldUpdate, TableField
from tests.conftest import set_connection

BASE = "https://blink.test/api/v1"
LIST_URL = f"{BASE}/connection_types"
UPDATE = {"type": "single-select", "display_name": "Plan", "attributes": {"options": ["a", "b"]}}
FIELD = {"id": "f-1", "name": "a?b#c", "type": "single-select", "display_name": "Plan", "created_at": 1}


def sent_query(request: Any) -> dict[str, Any]:
    (q,) = parse_qs(urlsplit(request.url).query)["q"]
    return json.loads(q)


@pytest.mark.parametrize(
    ("ws_id", "table", "field", "path"),
    [
        ("ws-1", "Incidents", "Severity", "/workspace/ws-1/table/Incidents/fields/Severity"),
        ("ws-1", "Q1/Q2 plans", "a?b#c", "/workspace/ws-1/table/Q1%2FQ2%20plans/fields/a%3Fb%23c"),
        ("ws 1", "Table 1", "100%", "/workspace/ws%201/table/Table%201/fields/100%25"),
        ("ws-1", "Zürich", "..x", "/workspace/ws-1/table/Z%C3%BCrich/fields/..x"),
    ],
)
def test_update_encodes_every_segment(hook: Any, ws_id: str, table: str, field: str, path: str) -> None:
    with rm.Mocker() as m:
        m.put(BASE + path, json=FIELD)
        result = hook.update_table_field(ws_id, table, field, UPDATE)
        request = m.last_request
    assert urlsplit(request.url).path == "/api/v1" + path
    assert urlsplit(request.url).query == ""
    assert request.json() == UPDATE
    assert request.headers["Content-Type"] == "application/json"
    assert isinstance(result, TableField)
    assert result.name == "a?b#c"


def test_update_accepts_a_model(hook: Any) -> None:
    update = FieldUpdate(type=FieldType.DATE, display_name="Due")
    with rm.Mocker() as m:
        m.put(f"{BASE}/workspace/w/table/t/fields/f", json={"id": "x", "type": "date"})
        hook.update_table_field("w", "t", "f", update)
        assert m.last_request.json() == {"type": "date", "display_name": "Due"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("", "t", "f"), "ws_id must be a non-empty string"),
        (("w", "   ", "f"), "table must be a non-empty string"),
        (("w", "t", None), "field must be a non-empty string"),
        (("w", "t", 7), "field must be a non-empty string"),
        (("w", "..", "f"), "table cannot be '..'"),
        (("w", "t", "."), "field cannot be '.'"),
    ],
)
def test_bad_names_fail_before_any_request(hook: Any, args: tuple, message: str) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=message):
        hook.update_table_field(*args, UPDATE)
    assert not m.called


def test_bad_update_fails_before_any_request(hook: Any) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="unknown member 'opitons'"):
        hook.update_table_field("w", "t", "f", {"type": "text", "attributes": {"opitons": []}})
    assert not m.called


def test_list_sends_the_rql_object_in_q(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json={"limit": 10, "offset": 20, "total": 25, "results": [{"id": "a"}]})
        page = hook.list_connection_types(
            filter={"name": {"$like": "aws%"}}, sort=["-name"], select=["id", "name"], limit=10, offset=20
        )
        request = m.last_request
    assert sent_query(request) == {
        "filter": {"name": {"$like": "aws%"}}, "sort": ["-name"], "select": ["id", "name"],
        "limit": 10, "offset": 20,
    }  # fmt: skip
    assert "q=%7B%22filter%22%3A" in request.url  # compact JSON, percent-encoded
    assert (page.total, page.results[0].id) == (25, "a")


def test_list_defaults_to_the_largest_page(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json={"results": []})
        hook.list_connection_types()
        assert sent_query(m.last_request) == {"limit": 1000, "offset": 0}


def test_bad_query_fails_before_any_request(hook: Any) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"unknown operator '\$in'"):
        hook.list_connection_types(filter={"name": {"$in": ["a"]}})
    assert not m.called


# -- pagination ---------------------------------------------------------------------------


class Catalogue:
    """A fake listing endpoint over a list of items, with knobs for misbehaviour."""

    def __init__(self, size: int) -> None:
        self.items = [{"id": f"ct-{i:05d}", "name": f"type-{i}"} for i in range(size)]
        self.total_override: list[int] = []  # totals to report, page by page
        self.repeat_first_page = False
        self.ignore_offset = False
        self.echo_offset: int | None = None
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        q = sent_query(request)
        self.requests.append(q)
        offset = 0 if self.ignore_offset or (self.repeat_first_page and len(self.requests) > 1) else q["offset"]
        results = self.items[offset : offset + q["limit"]]
        if "select" in q:
            results = [{k: v for k, v in item.items() if k in q["select"]} for item in results]
        total = self.total_override.pop(0) if self.total_override else len(self.items)
        echoed = self.echo_offset if self.echo_offset is not None else q["offset"]
        if self.ignore_offset:
            echoed = 0
        return {"limit": q["limit"], "offset": echoed, "total": total, "results": results}


def walk(hook: Any, catalogue: Catalogue, **kwargs: Any) -> list[str]:
    with rm.Mocker() as m:
        m.get(LIST_URL, json=catalogue)
        return [item.id for item in hook.iter_connection_types(**kwargs)]


def test_walks_every_page_in_order(hook: Any, all_output: Any) -> None:
    catalogue = Catalogue(2500)
    ids = walk(hook, catalogue, page_size=1000)
    assert ids == [item["id"] for item in catalogue.items]
    assert [(q["offset"], q["limit"]) for q in catalogue.requests] == [(0, 1000), (1000, 1000), (2000, 1000)]
    output = all_output()
    assert "page 1/3: 1000 of 2500 connection types" in output
    assert "page 3/3: 2500 of 2500 connection types" in output


def test_exact_multiple_stops_at_the_total(hook: Any) -> None:
    catalogue = Catalogue(20)
    assert len(walk(hook, catalogue, page_size=10)) == 20
    assert len(catalogue.requests) == 2


def test_empty_catalogue_is_one_request(hook: Any) -> None:
    catalogue = Catalogue(0)
    assert walk(hook, catalogue) == []
    assert len(catalogue.requests) == 1


def test_query_travels_on_every_page(hook: Any) -> None:
    catalogue = Catalogue(5)
    walk(hook, catalogue, filter={"name": {"$like": "type%"}}, sort=["name"], page_size=2)
    assert all(q["filter"] == {"name": {"$like": "type%"}} and q["sort"] == ["name"] for q in catalogue.requests)


def test_max_items_cuts_the_last_request(hook: Any) -> None:
    catalogue = Catalogue(100)
    assert walk(hook, catalogue, page_size=30, max_items=45) == [f"ct-{i:05d}" for i in range(45)]
    assert [(q["offset"], q["limit"]) for q in catalogue.requests] == [(0, 30), (30, 15)]


def test_a_server_ignoring_limit_still_gives_max_items_and_every_item_once(hook: Any) -> None:
    items = [{"id": f"x{i}"} for i in range(25)]

    def answer(request: Any, context: Any) -> dict[str, Any]:
        q = sent_query(request)
        return {"offset": q["offset"], "total": 25, "results": items[q["offset"] :]}  # limit ignored

    with rm.Mocker() as m:
        m.get(LIST_URL, json=answer)
        assert [i.id for i in hook.iter_connection_types(page_size=10, max_items=15)] == [f"x{i}" for i in range(15)]
        assert [i.id for i in hook.iter_connection_types(page_size=10)] == [f"x{i}" for i in range(25)]


def test_max_items_zero_sends_nothing(hook: Any) -> None:
    catalogue = Catalogue(10)
    assert walk(hook, catalogue, max_items=0) == []
    assert catalogue.requests == []


def test_total_shrinking_mid_walk_stops_early(hook: Any) -> None:
    catalogue = Catalogue(30)
    catalogue.total_override = [30, 15]
    assert len(walk(hook, catalogue, page_size=10)) == 20
    assert len(catalogue.requests) == 2


def test_total_growing_mid_walk_is_followed(hook: Any) -> None:
    catalogue = Catalogue(30)
    catalogue.total_override = [10, 30, 30]
    assert len(walk(hook, catalogue, page_size=10)) == 10  # first page said 10: done
    catalogue = Catalogue(30)
    catalogue.total_override = [20, 30, 30]
    assert len(walk(hook, catalogue, page_size=10)) == 30


def test_empty_page_before_the_total_stops(hook: Any) -> None:
    catalogue = Catalogue(15)
    catalogue.total_override = [40, 40, 40]
    assert len(walk(hook, catalogue, page_size=10)) == 15
    assert len(catalogue.requests) == 3  # the third page came back empty


def test_repeated_page_is_an_error_not_a_loop(hook: Any) -> None:
    catalogue = Catalogue(50)
    catalogue.repeat_first_page = True
    catalogue.echo_offset = None
    with rm.Mocker() as m:
        m.get(LIST_URL, json=catalogue)
        pages = hook.iter_connection_types(page_size=10)
        with pytest.raises(BlinkApiError, match="sent the same page again at offset 10"):
            list(pages)
    assert len(catalogue.requests) == 2


def test_ignored_offset_is_an_error(hook: Any) -> None:
    catalogue = Catalogue(50)
    catalogue.ignore_offset = True
    with pytest.raises(BlinkApiError, match="answered offset 0 when asked for offset 10"):
        walk(hook, catalogue, page_size=10)


def test_hard_page_cap(hook: Any) -> None:
    hook.max_pages = 3
    catalogue = Catalogue(100)
    with pytest.raises(BlinkApiError, match="stopped after 3 pages"):
        walk(hook, catalogue, page_size=10)
    assert len(catalogue.requests) == 3


def test_select_is_sent_and_results_are_projected(hook: Any) -> None:
    catalogue = Catalogue(3)
    with rm.Mocker() as m:
        m.get(LIST_URL, json=catalogue)
        items = list(hook.iter_connection_types(select=["name"]))
    assert catalogue.requests[0]["select"] == ["name"]
    assert [item.to_json_dict() for item in items] == [
        {"name": "type-0"},
        {"name": "type-1"},
        {"name": "type-2"},
    ]


def test_missing_total_stops_on_a_short_page(hook: Any) -> None:
    items = [{"id": f"x{i}"} for i in range(25)]

    def answer(request: Any, context: Any) -> dict[str, Any]:
        q = sent_query(request)
        return {"results": items[q["offset"] : q["offset"] + q["limit"]]}

    with rm.Mocker() as m:
        m.get(LIST_URL, json=answer)
        assert len(list(hook.iter_connection_types(page_size=10))) == 25
        assert m.call_count == 3


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"page_size": 0}, "page_size must be an integer from 1 to 1000"),
    ({"page_size": 1001}, "page_size must be an integer from 1 to 1000"),
    ({"page_size": "10"}, "page_size must be an integer from 1 to 1000"),
    ({"max_items": -1}, "max_items must be None or an integer"),
    ({"sort": ["bad sort"]}, "sort item"),
])  # fmt: skip
def test_bad_walk_arguments_fail_before_any_request(hook: Any, kwargs: dict, message: str) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=message):
        next(hook.iter_connection_types(**kwargs))
    assert not m.called


# -- test_connection ----------------------------------------------------------------------


def test_test_connection_success(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json={"limit": 1, "offset": 0, "total": 212, "results": [{"id": "a"}]})
        ok, message = hook.test_connection()
        assert sent_query(m.last_request) == {"limit": 1, "offset": 0}
    assert ok
    assert message == f"Connected to {BASE}: 212 connection types visible."


def test_test_connection_401_points_at_key_and_header(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=401, json={"status": 401, "message": "invalid api key"})
        ok, message = hook.test_connection()
    assert not ok
    assert "401: invalid api key" in message
    assert "Check the API key (password) and the header name (extra api_key_header, now 'BLINK-API-KEY')" in message


def test_test_connection_refused_points_at_base_url(make_hook: Any) -> None:
    hook = make_hook(retry_limit=2)
    with rm.Mocker() as m:
        m.get(LIST_URL, exc=requests.ConnectionError("refused"))
        ok, message = hook.test_connection()
    assert not ok
    assert "could not reach blink.test" in message
    assert f"Check the Base URL (host), now '{BASE}'" in message


def test_test_connection_404_points_at_base_url(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=404, text="no such path")
        ok, message = hook.test_connection()
    assert not ok and "Check the Base URL" in message


def test_test_connection_without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from blinkops_provider.hooks.blink import BlinkHook

    set_connection(monkeypatch, password=None)
    ok, message = BlinkHook().test_connection()
    assert not ok and "no API key" in message


def test_hook_signatures_are_the_documented_ones() -> None:
    import inspect

    from blinkops_provider.hooks.blink import BlinkHook

    def shape(function: Any) -> list[tuple[str, str, Any]]:
        return [(p.name, p.kind.name, p.default) for p in list(inspect.signature(function).parameters.values())[1:]]

    empty = inspect.Parameter.empty
    assert shape(BlinkHook.__init__) == [
        ("blink_conn_id", "POSITIONAL_OR_KEYWORD", "blink_default"), ("timeout", "KEYWORD_ONLY", None),
        ("retry_limit", "KEYWORD_ONLY", 3), ("retry_delay", "KEYWORD_ONLY", 1.0),
    ]  # fmt: skip
    assert shape(BlinkHook.update_table_field) == [
        (name, "POSITIONAL_OR_KEYWORD", empty) for name in ("ws_id", "table", "field", "update")
    ]
    query = [("filter", "KEYWORD_ONLY", None), ("sort", "KEYWORD_ONLY", None), ("select", "KEYWORD_ONLY", None)]
    assert shape(BlinkHook.list_connection_types) == [
        *query,
        ("limit", "KEYWORD_ONLY", 1000),
        ("offset", "KEYWORD_ONLY", 0),
    ]
    assert shape(BlinkHook.iter_connection_types) == [
        *query, ("page_size", "KEYWORD_ONLY", 1000), ("max_items", "KEYWORD_ONLY", None),
    ]  # fmt: skip
    assert (BlinkHook.conn_type, BlinkHook.default_conn_name, BlinkHook.conn_name_attr) == (
        "blink", "blink_default", "blink_conn_id",
    )  # fmt: skip
