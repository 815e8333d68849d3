"""The hook's records methods (#64 item 1): every row exactly once or an error, exact counts, and a
whole-record update checked against what was asked; against the sandbox and the tests' own fake."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError, BlinkReadUnavailableError, BlinkResponseError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.sandbox import BlinkSandbox
from blinkops_provider.sandbox._seed import DEMO_ROWS
from tests.conftest import API_KEY
from tests.fake_blink import BASE, FakeBlink, blink_field

ROWS = DEMO_ROWS["Incidents"]


def finds(sandbox: BlinkSandbox) -> list[dict[str, Any]]:
    return [entry for entry in sandbox.requests if entry["method"] == "GET" and entry["path"].endswith("Incidents")]


def test_every_row_is_walked_once_page_by_page(blink_sandbox: BlinkSandbox) -> None:
    rows = list(BlinkHook().iter_records("ws-demo", "Incidents", page_size=7))
    assert [row["Title"] for row in rows] == [row["Title"] for row in ROWS]
    assert len({row["id"] for row in rows}) == len(ROWS)
    assert len(finds(blink_sandbox)) == -(-len(ROWS) // 7)


def test_a_filter_walks_and_counts_only_the_matching_rows(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    high = [row for row in ROWS if row["Severity"] == "High"]
    assert [row["Title"] for row in hook.iter_records("ws-demo", "Incidents", where={"Severity": "High"})] == [
        row["Title"] for row in high
    ]
    blink_sandbox.log.clear()
    assert hook.count_records("ws-demo", "Incidents", '{"Severity": {"$eq": "High"}}') == len(high)
    assert len(finds(blink_sandbox)) == 1  # counted from Blink's total: one request


def test_get_and_update_send_and_answer_the_whole_record(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    first = next(hook.iter_records("ws-demo", "Incidents", page_size=1))
    row = hook.get_record("ws-demo", "Incidents", first["id"])
    assert row == first
    changed = hook.update_record("ws-demo", "Incidents", row["id"], {**row, "Title": "Changed"})
    assert changed["Title"] == "Changed" and changed["Severity"] == row["Severity"]
    sent = [e for e in blink_sandbox.requests if e["method"] == "PUT"][-1]
    assert sent["body"]["Severity"] == row["Severity"]  # the whole record went


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
        assert [row["id"] for row in hook.iter_records("ws-1", "T", page_size=5)] == [f"r{n}" for n in range(23)]
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


def test_an_update_answered_by_something_else_is_unknown(make_hook: Any) -> None:
    route = f"{BASE}/workspace/ws-1/table/T/r1"
    for answer in ({"text": "<html>login</html>"}, {"json": {"id": "r2"}}, {"json": []}):
        with rm.Mocker() as m:
            m.put(route, **answer)
            with pytest.raises(BlinkResponseError):
                make_hook().update_record("ws-1", "T", "r1", {"id": "r1", "Name": "x"})


def test_ids_and_names_are_percent_encoded_and_the_query_is_blinks(make_hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(f"{BASE}/workspace/ws%201/table/Q1%2FQ2", json={"results": [], "total": 0, "limit": 1, "offset": 0})
        m.get(f"{BASE}/workspace/ws%201/table/Q1%2FQ2/r%2F1", json={"id": "r/1"})
        hook = make_hook()
        assert hook.count_records("ws 1", "Q1/Q2", {"Name": "é"}) == 0
        assert json.loads(m.request_history[0].qs["q"][0]) == {"limit": 1, "offset": 0, "filter": {"name": "é"}}
        assert hook.get_record("ws 1", "Q1/Q2", "r/1") == {"id": "r/1"}
