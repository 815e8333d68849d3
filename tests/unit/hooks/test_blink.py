"""The hook's endpoints: URL building, bodies, the q parameter, pagination, test_connection.

The hook's records methods (#64 item 1): every row exactly once or an error, exact counts, and a
whole-record update checked against what was asked; against the sandbox and the tests' own fake.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import (
    BlinkAuthError,
    BlinkInputError,
    BlinkNotFoundError,
    BlinkReadUnavailableError,
    BlinkResponseError,
)
from blinkops_provider.hooks.blink import BlinkHook, matches_filter
from blinkops_provider.models import FieldType, FieldUpdate, TableField
from blinkops_sandbox import DEMO_ROWS, BlinkSandbox
from tests.conftest import API_KEY, set_connection
from tests.fake_blink import BASE, FakeBlink, blink_field, sent_query

LIST_URL = f"{BASE}/connection_types"
UPDATE = {"type": "single-select", "display_name": "Plan", "attributes": {"options": ["a", "b"]}}
FIELD = {"id": "f-1", "name": "a?b#c", "type": "single-select", "display_name": "Plan", "created_at": 1}


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
        "filter": {"name": {"$like": "aws%"}},
        "sort": ["-name"],
        "select": ["id", "name"],
        "limit": 10,
        "offset": 20,
    }
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
    assert "check its API key (password) and its header name (extra header_name, now 'BLINK-API-KEY')" in message


def test_test_connection_refused_points_at_base_url(make_hook: Any) -> None:
    hook = make_hook(retry_limit=2)
    with rm.Mocker() as m:
        m.get(LIST_URL, exc=requests.ConnectionError("refused"))
        ok, message = hook.test_connection()
    assert not ok
    assert "could not reach blink.test" in message
    assert f"Base URL (host), now {BASE}" in message
    assert message.lower().count("base url (host)") == 1  # the advice, once (#44 item 9)


def test_test_connection_404_points_at_base_url(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=404, text="no such path")
        ok, message = hook.test_connection()
    assert not ok and f"check its Base URL (host), now {BASE}" in message
    assert message.lower().count("base url") == 1


def test_a_404_before_blink_ever_answered_points_at_the_base_url_and_names_the_connection(hook: Any) -> None:
    """A wrong Base URL path (``/apii/v1``) makes every call 404: the error says where to look,
    not only that a field was not found (#44 item 7)."""
    with rm.Mocker() as m:
        m.put(f"{BASE}/workspace/w/table/T/fields/Tags", status_code=404, json={"message": "not found"})
        with pytest.raises(BlinkNotFoundError) as caught:
            hook.update_table_field("w", "T", "Tags", {"type": "text", "display_name": "Tags"})
    message = str(caught.value)
    assert "not found: field 'Tags' of table 'T'" in message
    assert (
        f"no request on the connection 'blink_default' has been answered yet: check its Base URL (host), now {BASE}"
        in message
    )


def test_a_404_after_blink_answered_blames_the_call_only(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json={"results": [], "total": 0})
        m.put(f"{BASE}/workspace/w/table/T/fields/Tags", status_code=404, json={"message": "not found"})
        hook.list_connection_types(limit=1)
        with pytest.raises(BlinkNotFoundError) as caught:
            hook.update_table_field("w", "T", "Tags", {"type": "text", "display_name": "Tags"})
    assert "Base URL" not in str(caught.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_in_a_task_names_the_connection_id(make_hook: Any, status: int) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, status_code=status, json={"message": "denied"})
        with pytest.raises(BlinkAuthError) as caught:
            make_hook().list_connection_types(limit=1)
    assert "Blink refused the API key of the connection 'blink_default'" in str(caught.value)
    assert "extra header_name, now 'BLINK-API-KEY'" in str(caught.value)


def test_test_connection_without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from blinkops_provider.hooks.blink import BlinkHook

    set_connection(monkeypatch, "tmpx7Qz2", password=None)
    ok, message = BlinkHook("tmpx7Qz2").test_connection()
    assert not ok
    assert message == "the connection has no API key: put it in the password field (labelled 'API key' in the UI)"


def test_test_connection_does_not_name_airflows_temporary_connection_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow tests a connection under a random id; a task's error still names the real one."""
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.hooks.blink import BlinkHook

    set_connection(monkeypatch, "tmpx7Qz2", password="key\u00e9\u20ac")
    ok, message = BlinkHook("tmpx7Qz2").test_connection()
    assert not ok
    assert "tmpx7Qz2" not in message
    assert message.startswith("the API key of the connection cannot be sent in a header: character 5 is not latin-1")
    with pytest.raises(BlinkConfigurationError, match="the API key of the connection 'tmpx7Qz2' cannot be sent"):
        BlinkHook("tmpx7Qz2").base_url  # noqa: B018


def test_hook_signatures_are_the_documented_ones() -> None:
    import inspect

    from blinkops_provider.hooks.blink import BlinkHook

    def shape(function: Any) -> list[tuple[str, str, Any]]:
        return [(p.name, p.kind.name, p.default) for p in list(inspect.signature(function).parameters.values())[1:]]

    empty = inspect.Parameter.empty
    assert shape(BlinkHook.__init__) == [
        ("blink_conn_id", "POSITIONAL_OR_KEYWORD", "blink_default"),
        ("timeout", "KEYWORD_ONLY", None),
        ("retry_limit", "KEYWORD_ONLY", 3),
        ("retry_delay", "KEYWORD_ONLY", 1.0),
        ("clock", "KEYWORD_ONLY", None),
        ("session_factory", "KEYWORD_ONLY", requests.Session),
    ]
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
        *query,
        ("page_size", "KEYWORD_ONLY", 1000),
        ("max_items", "KEYWORD_ONLY", None),
    ]
    assert shape(BlinkHook.walk_connection_types) == [
        *query,
        ("page_size", "KEYWORD_ONLY", 1000),
        ("max_items", "KEYWORD_ONLY", None),
    ]
    assert (BlinkHook.conn_type, BlinkHook.default_conn_name, BlinkHook.conn_name_attr) == (
        "blink",
        "blink_default",
        "blink_conn_id",
    )


def test_the_hook_sends_blinks_published_example_body_unchanged(hook: Any) -> None:
    import requests_mock as rm

    from tests.unit.test_models import DOCS_BODY

    with rm.Mocker() as m:
        m.put(rm.ANY, json={"id": "f", "name": "Test", **DOCS_BODY})
        hook.update_table_field("ws-1", "Table 1", "Test", DOCS_BODY)
    assert m.request_history[0].json() == DOCS_BODY


def test_a_403_names_the_workspace_and_the_role_the_keys_user_needs(hook: Any) -> None:
    import requests_mock as rm

    from blinkops_provider.exceptions import BlinkAuthError

    with rm.Mocker() as m:
        m.register_uri(rm.ANY, rm.ANY, status_code=403, json={"message": "forbidden"})
        for call in (
            lambda: hook.update_table_field("ws-7", "T", "F", {"type": "text", "display_name": "F"}),
            lambda: hook.get_table_fields("ws-7", "T"),
            lambda: hook.list_tables("ws-7"),
        ):
            with pytest.raises(
                BlinkAuthError, match=r"is valid, but its user has no workspace role in workspace 'ws-7'.*Contributor"
            ) as e:
                call()
            assert e.value.status == 403 and API_KEY not in str(e.value)


def test_the_table_reads_return_what_blink_holds(hook: Any) -> None:
    import requests_mock as rm

    from tests.fake_blink import FakeBlink, blink_field

    with rm.Mocker() as m:
        FakeBlink({"T": [blink_field("A", "status", required=True, later="kept")]}).mount(m)
        fields = hook.get_table_fields("ws-1", "T")
        tables = hook.list_tables("ws-1")
    assert [f.name for f in fields] == ["id", "created_at", "updated_at", "created_by", "updated_by", "A"]
    assert fields[0].attributes == {"system": True, "protected": True} and fields[0].type == "sys-id"
    assert fields[-1].type == "status" and fields[-1].attributes == {"required": True, "later": "kept"}
    assert [(t.name, t.display_name) for t in tables] == [("T", "T")]


@pytest.mark.parametrize("status", [404, 405])
def test_a_read_blink_does_not_serve_is_told_apart_from_a_missing_table(hook: Any, status: int) -> None:
    import requests_mock as rm

    from blinkops_provider.exceptions import BlinkNotFoundError, BlinkReadUnavailableError
    from tests.fake_blink import FakeBlink, blink_field

    with rm.Mocker() as m:
        blink = FakeBlink({"T": [blink_field("A", "text")]}).mount(m)
        blink.fields_status = status
        with pytest.raises(BlinkReadUnavailableError, match=f"Blink answered {status} to the read") as e:
            hook.get_table_fields("ws-1", "T")
        assert not isinstance(e.value, BlinkNotFoundError)
        blink.fields_status = None
        with pytest.raises(BlinkNotFoundError, match="no table 'Gone' in workspace 'ws-1'"):
            hook.get_table_fields("ws-1", "Gone")
        m.get(rm.ANY, status_code=405)
        with pytest.raises(BlinkReadUnavailableError):
            hook.list_tables("ws-1")


def test_a_read_that_names_a_field_twice_is_refused(hook: Any) -> None:
    import requests_mock as rm

    from blinkops_provider.exceptions import BlinkResponseError

    field = {"name": "A", "type": "text"}
    with rm.Mocker() as m:
        m.get(rm.ANY, json={"results": [field, field]})
        with pytest.raises(BlinkResponseError, match=r"names the field\(s\) 'A' more than once"):
            hook.get_table_fields("ws-1", "T")


# -- the table routes of #48: add a field, remove one, create a table, edit a table ----------------

NEW = {"type": "long-text", "display_name": "Root cause"}


def test_create_table_field_posts_without_a_name_and_returns_blinks_name(hook: Any) -> None:
    with rm.Mocker() as m:
        m.post(f"{BASE}/workspace/ws-1/table/Q1%2FQ2%20plans/fields", json={"name": "root_cause_1", **NEW})
        made = hook.create_table_field("ws-1", "Q1/Q2 plans", NEW)
        assert m.last_request.json() == NEW and "name" not in m.last_request.json()
    assert made.name == "root_cause_1"


def test_create_table_field_reads_the_fields_once_when_the_answer_does_not_name_it(hook: Any) -> None:
    with rm.Mocker() as m:
        m.post(f"{BASE}/workspace/ws-1/table/T/fields", text="")
        read = m.get(f"{BASE}/workspace/ws-1/table/T/fields", json={"results": [{"name": "rc", **NEW}]})
        assert hook.create_table_field("ws-1", "T", NEW).name == "rc"
        assert read.call_count == 1


def test_create_table_field_checks_its_body_before_any_request(hook: Any) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="type and display_name are required"):
        hook.create_table_field("ws-1", "T", {"display_name": "x"})
    assert m.call_count == 0


@pytest.mark.parametrize("status", [404, 405])
def test_a_route_blink_does_not_serve_is_named(hook: Any, status: int) -> None:
    with rm.Mocker() as m:
        m.delete(rm.ANY, status_code=status, json={"status": status, "message": "Not Found"})
        with pytest.raises(
            BlinkNotFoundError, match=rf"Blink answered {status} to DELETE /workspace/ws-1/table/T/fields/F"
        ):
            hook.delete_table_field("ws-1", "T", "F")


def test_a_post_is_not_sent_again_after_a_5xx_but_is_after_a_429(hook: Any, sleeps: Any) -> None:
    with rm.Mocker() as m:
        post = m.post(f"{BASE}/workspace/ws-1/table/T/fields", status_code=502, json={"status": 502})
        with pytest.raises(Exception, match="502"):
            hook.create_table_field("ws-1", "T", NEW)
        assert post.call_count == 1
        post = m.post(
            f"{BASE}/workspace/ws-1/table/T/fields",
            [{"status_code": 429, "headers": {"Retry-After": "2"}, "json": {}}, {"json": {"name": "rc", **NEW}}],
        )
        assert hook.create_table_field("ws-1", "T", NEW).name == "rc"
        assert post.call_count == 2 and 2.0 in sleeps


def test_create_table_and_update_table(hook: Any) -> None:
    body = {"display_name": "Reviews", "description": "d", "fields": [NEW]}
    with rm.Mocker() as m:
        m.post(f"{BASE}/workspace/ws-1/table", json={"table": {"name": "reviews_1", "display_name": "Reviews"}})
        assert hook.create_table("ws-1", body).name == "reviews_1"
        assert m.last_request.json() == {"display_name": "Reviews", "description": "d", "options": [], "fields": [NEW]}
        m.put(f"{BASE}/workspace/ws-1/table/reviews_1", json={"table": {"name": "reviews_1", "display_name": "R"}})
        edited = hook.update_table("ws-1", "reviews_1", {"display_name": "R", "settings": {"color": "red"}})
        assert edited.display_name == "R"
        assert m.last_request.json() == {"display_name": "R", "description": "", "settings": {"color": "red"}}
    with pytest.raises(BlinkInputError, match="invalid new table"):
        hook.create_table("ws-1", {"display_name": "", "fields": []})


@pytest.mark.parametrize(
    ("extra", "said"),
    [({"total": 3}, "total 3"), ({"next": "/page/2"}, "next '/page/2'"), ({"has_more": True}, "has_more True")],
)
def test_a_fields_answer_that_says_it_is_partial_is_a_clear_error(hook: Any, extra: Any, said: str) -> None:
    """#50 item 5: never read one page as the whole table (a field on a later page would be added twice)."""
    from blinkops_provider.exceptions import BlinkResponseError

    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws-1/table/T/fields", json={"results": [{"name": "a"}, {"name": "b"}], **extra})
        with pytest.raises(BlinkResponseError, match=rf"holds 2 fields but says it is partial \({said}\)"):
            hook.get_table_fields("ws-1", "T")
        m.get(f"{BASE}/workspace/ws-1/table/T/fields", json={"results": [{"name": "a"}], "total": 1, "next": None})
        assert [field.name for field in hook.get_table_fields("ws-1", "T")] == ["a"]


ROWS = DEMO_ROWS["Incidents"]


def finds(sandbox: BlinkSandbox) -> list[dict[str, Any]]:
    return [entry for entry in sandbox.requests if entry["method"] == "GET" and entry["path"].endswith("Incidents")]


def test_every_row_is_walked_once_page_by_page(blink_sandbox: BlinkSandbox) -> None:
    rows = list(BlinkHook().iter_records("ws-demo", "Incidents", page_size=7))
    assert sorted(row["Title"] for row in rows) == sorted(row["Title"] for row in ROWS)
    assert [row["id"] for row in rows] == sorted(row["id"] for row in rows)  # in the order asked: by id
    assert len({row["id"] for row in rows}) == len(ROWS)
    assert len(finds(blink_sandbox)) == -(-len(ROWS) // 7)


def test_a_filter_walks_and_counts_only_the_matching_rows(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    high = [row for row in ROWS if row["Severity"] == "High"]
    found = list(hook.iter_records("ws-demo", "Incidents", where={"Severity": "High"}))
    assert sorted(row["Title"] for row in found) == sorted(row["Title"] for row in high)
    blink_sandbox.log.clear()
    assert hook.count_records("ws-demo", "Incidents", '{"Severity": {"$eq": "High"}}') == len(high)
    assert len(finds(blink_sandbox)) == 1  # counted from Blink's total: one request


def test_get_and_update_send_and_answer_the_whole_record(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    first = next(hook.iter_records("ws-demo", "Incidents", page_size=1))
    row = hook.get_record("ws-demo", "Incidents", first["id"])
    assert row == first
    assert hook.update_record("ws-demo", "Incidents", row["id"], {**row, "Title": "Changed"}) == {}  # "ok"
    changed = hook.get_record("ws-demo", "Incidents", row["id"])  # what was stored: read
    assert changed["Title"] == "Changed" and changed["Severity"] == row["Severity"]
    sent = [e for e in blink_sandbox.requests if e["method"] == "PUT"][-1]
    assert sent["body"]["Severity"] == row["Severity"]  # the whole record went
    assert "id" not in sent["body"] and "created_at" not in sent["body"]  # Blink's own members are Blink's


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (lambda hook: list(hook.iter_records("ws-1", "T", where=["a"])), "where must be an object"),
        (lambda hook: list(hook.iter_records("ws-1", "T", where="{nope")), "where must be a JSON object"),
        (lambda hook: list(hook.iter_records("ws-1", "T", page_size=0)), "page_size must be an integer from 1"),
        (lambda hook: hook.count_records("ws-1", "", None), "table must be a non-empty string"),
        (lambda hook: hook.update_record("ws-1", "T", "r1", ["x"]), "record must be an object"),
        (lambda hook: hook.get_record("ws-1", "T", None), "record_id must be a record's id"),
    ],
)
def test_bad_input_is_refused_before_any_request(make_hook: Any, call: Any, why: str) -> None:
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=why):
            call(make_hook())
        assert m.call_count == 0


def fake(rows: int, **odd: Any) -> FakeBlink:
    blink = FakeBlink({"T": [blink_field("Name", "text")]})
    blink.records["T"] = [{"id": f"r{n}", "Name": f"row {n}"} for n in range(rows)]
    for name, value in odd.items():
        setattr(blink, name, value)
    return blink


def test_without_a_total_the_walk_ends_at_the_first_short_page_and_counts_by_walking(make_hook: Any) -> None:
    blink = fake(23, give_total=False)
    with rm.Mocker() as m:
        blink.mount(m)
        hook = make_hook()
        assert [row["id"] for row in hook.iter_records("ws-1", "T", page_size=5)] == sorted(f"r{n}" for n in range(23))
        assert hook.count_records("ws-1", "T") == 23


def page_server(pages: list[dict[str, Any]]) -> Any:
    answers = iter(pages)
    return lambda request, context: next(answers)


def rows(*ids: str) -> list[dict[str, Any]]:
    return [{"id": i} for i in ids]


@pytest.mark.parametrize(
    ("pages", "why"),
    [
        ([{"results": rows("a"), "total": 3}], "short walk"),
        ([{"results": rows("a", "b"), "total": 4}, {"results": rows("b", "c"), "total": 4}], "repeats a row"),
        (
            [{"results": rows("a", "b"), "total": 4}, {"results": rows("c", "d"), "total": 5}],
            "changed while it was read",
        ),
        ([{"results": rows("a", "b", "c"), "total": 3}], "more than the 2 asked"),
        ([{"results": rows("a", "a"), "total": 2}], "repeats a row"),
        ([{"results": [{"Name": "no id"}], "total": 1}], "without an id"),
        ([{"results": rows("a", "b"), "total": 2, "offset": 5}], "answered limit None offset 5"),
        ([{"results": rows("a", "b"), "total": 3}, {"results": [], "total": 3}], "short walk"),
    ],
)
def test_a_short_doubled_or_moving_walk_is_an_error(make_hook: Any, pages: list[Any], why: str) -> None:
    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws-1/table/T", json=page_server(pages))
        with pytest.raises(BlinkResponseError, match=why) as caught:
            list(make_hook().iter_records("ws-1", "T", page_size=2))
    assert API_KEY not in str(caught.value)


def test_a_count_whose_page_contradicts_its_total_is_an_error(make_hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws-1/table/T", json={"results": [], "total": 4})
        with pytest.raises(BlinkResponseError, match="said 4 rows but answered 0"):
            make_hook().count_records("ws-1", "T")


@pytest.mark.parametrize("status", [404, 405])
def test_a_records_read_not_served_is_said_so(make_hook: Any, status: int) -> None:
    with rm.Mocker() as m:
        fake(3, records_status=status).mount(m)
        with pytest.raises(BlinkReadUnavailableError) as caught:
            make_hook().count_records("ws-1", "T")
    assert caught.value.status == status


@pytest.mark.parametrize(
    "answer",
    [{"json": "ok"}, {"text": "OK"}, {"text": ""}, {"json": {}}, {"json": {"id": "r2"}}, {"json": []}],
    ids=["published-string", "plain-text", "empty", "empty-object", "another-id", "list"],
)
def test_an_update_answered_as_blinks_spec_publishes_is_accepted_not_read(make_hook: Any, answer: Any) -> None:
    """Blink's published answer to TableUpdateRecord is a string: accepted, never an error, never the stored record."""
    route = f"{BASE}/workspace/ws-1/table/T/r1"
    with rm.Mocker() as m:
        m.put(route, **answer)
        assert make_hook().update_record("ws-1", "T", "r1", {"id": "r1", "Name": "x"}) == {}
    assert m.call_count == 1


def test_an_update_answered_with_the_record_returns_it(make_hook: Any) -> None:
    route = f"{BASE}/workspace/ws-1/table/T/r1"
    with rm.Mocker() as m:
        m.put(route, json={"id": "r1", "Name": "x"})
        assert make_hook().update_record("ws-1", "T", "r1", {"Name": "x"}) == {"id": "r1", "Name": "x"}


def test_an_update_sends_the_tables_fields_only_never_blinks_system_members(make_hook: Any) -> None:
    route = f"{BASE}/workspace/ws-1/table/T/r1"
    record = {"id": "r1", "created_at": 1, "created_by": "a", "updated_at": 2, "updated_by": "b", "Name": "x", "N": 2}
    with rm.Mocker() as m:
        m.put(route, json="ok")
        make_hook().update_record("ws-1", "T", "r1", record)
        assert m.request_history[0].json() == {"Name": "x", "N": 2}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1, 2}, object()], ids=["nan", "inf", "set", "object"])
def test_an_update_with_a_value_json_cannot_carry_is_refused_before_any_request(make_hook: Any, value: Any) -> None:
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match="'Score' is not a JSON value") as caught:
            make_hook().update_record("ws-1", "T", "r1", {"Name": "x", "Score": value})
        assert m.call_count == 0
    assert "Base URL" not in str(caught.value)


def test_a_count_whose_row_contradicts_the_filter_is_an_error_not_a_count(make_hook: Any) -> None:
    """A proxy that drops the filter answers every row's total; the row it answers shows it."""
    with rm.Mocker() as m:
        answer = {"results": [{"id": "r1", "Severity": "Low"}], "total": 90, "limit": 1, "offset": 0}
        m.get(f"{BASE}/workspace/ws-1/table/T", json=answer)
        with pytest.raises(BlinkResponseError, match="does not match the filter"):
            make_hook().count_records("ws-1", "T", {"Severity": "High"})
        answer["results"] = [{"id": "r1", "Severity": "High"}]
        assert make_hook().count_records("ws-1", "T", {"Severity": "High"}) == 90


@pytest.mark.parametrize(
    ("row", "where", "verdict"),
    [
        ({"A": 1}, {"A": 1}, True),
        ({"A": 1}, {"A": {"$gt": 1}}, False),
        ({"A": 1}, {"A": {"$gte": 1, "$lt": 3}}, True),
        ({"A": "x"}, {"$or": [{"A": "y"}, {"A": "x"}]}, True),
        ({"A": "x"}, {"$or": [{"A": "y"}, {"A": "z"}]}, False),
        ({"A": "x"}, {"$or": [{"A": "y"}, {"A": {"$like": "x%"}}]}, None),
        ({"A": "1"}, {"A": 1}, None),
        ({}, {"A": "x"}, False),
        ({}, {"A": {"$neq": "x"}}, True),
        ({"A": "x", "B": 2}, {"$and": [{"A": "x"}, {"B": {"$lte": 1}}]}, False),
    ],
)
def test_a_row_is_told_to_match_a_filter_only_where_it_can_be(row: Any, where: Any, verdict: Any) -> None:
    assert matches_filter(row, where) is verdict


def test_every_walk_of_the_rows_asks_for_an_order_by_id(make_hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws-1/table/T", json={"results": rows("a"), "total": 1, "limit": 2, "offset": 0})
        list(make_hook().iter_records("ws-1", "T", page_size=2))
        make_hook().count_records("ws-1", "T")
    assert [json.loads(r.qs["q"][0])["sort"] for r in m.request_history] == [["+id"], ["+id"]]


def test_ids_and_names_are_percent_encoded_and_the_query_is_blinks(make_hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws%201/table/Q1%2FQ2", json={"results": [], "total": 0, "limit": 1, "offset": 0})
        m.get(f"{BASE}/workspace/ws%201/table/Q1%2FQ2/r%2F1", json={"id": "r/1"})
        hook = make_hook()
        assert hook.count_records("ws 1", "Q1/Q2", {"Name": "é"}) == 0
        sent = json.loads(m.request_history[0].qs["q"][0])
        assert sent == {"limit": 1, "offset": 0, "filter": {"name": "é"}, "sort": ["+id"]}
        assert hook.get_record("ws 1", "Q1/Q2", "r/1") == {"id": "r/1"}
