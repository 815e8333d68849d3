"""The walk against servers no one here wrote: each honours less of RQL and paging than Blink's
docs promise. Every walk gives every item exactly once, or a clear error; never a silently short
or doubled result."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError
from tests.fake_blink import FakeCatalogue, catalogue, sent_query
from tests.unit.sandbox.reference import evaluate

LIST_URL = "https://blink.test/api/v1/connection_types"
SIZE = 2500


def walk(hook: Any, server: FakeCatalogue, **kwargs: Any) -> list[Any]:
    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        return [item.get("id") for page in hook.walk_connection_types(**kwargs) for item in page.items]


EVERY = [item["id"] for item in catalogue(SIZE)]


# -- 1. a server whose largest page is smaller than asked -------------------------------------------


@pytest.mark.parametrize(
    ("total", "echo_limit"),
    [("real", True), ("zero", True), ("page", True), ("none", True), ("real", False)],
)
def test_a_server_with_a_smaller_maximum_page_gives_every_item(hook: Any, total: str, echo_limit: bool) -> None:
    server = FakeCatalogue(catalogue(SIZE), max_page=100, total=total, echo_limit=echo_limit)
    assert walk(hook, server, page_size=1000) == EVERY


def test_a_server_capped_page_without_any_hint_ends_the_walk_only_when_the_total_agrees(hook: Any) -> None:
    """No limit echoed, and a total equal to the page: nothing says more exist. The walk believes
    the envelope, as it must; with a real total it goes on."""
    server = FakeCatalogue(catalogue(SIZE), max_page=100, total="real", echo_limit=False)
    assert walk(hook, server, page_size=1000) == EVERY
    assert all(q["limit"] == 100 for q in server.requests[1:])  # it learned the server's maximum


# -- 2. servers that do not sort or filter as asked ---------------------------------------------------


@pytest.mark.parametrize(
    "odd",
    [{"gte": True}, {"shuffle": True}, {"reverse": True}, {"ignore_filter": True, "ignore_sort": True}],
    ids=["$gt as $gte", "unsorted", "reversed", "offset only"],
)
def test_servers_that_do_not_honour_the_keyset_give_exact_results(
    hook: Any, all_output: Any, odd: dict[str, Any]
) -> None:
    server = FakeCatalogue(catalogue(SIZE), **odd)
    ids = walk(hook, server, page_size=1000)
    # every item, once, in id order: offset pages are put in id order (#35, #37), never returned reversed
    assert ids == EVERY
    assert len(ids) == len(set(ids)) == SIZE
    assert "paging by offset from here" in all_output()


def test_an_offset_only_server_gives_every_item_once_in_at_most_twice_the_minimal_requests(hook: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), ignore_filter=True, ignore_sort=True)
    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        pages = list(hook.walk_connection_types(page_size=1000))
    ids = [item["id"] for page in pages for item in page.items]
    assert ids == EVERY
    assert len(server.requests) <= 2 * 3
    assert {page.paging for page in pages[1:]} == {"offset"}


def test_an_unsorted_server_with_a_user_sort_gives_every_item_in_the_users_order(hook: Any) -> None:
    """The sort is the client's (#37): a server that does not sort cannot spoil it."""
    server = FakeCatalogue(catalogue(SIZE), shuffle=True)
    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        items = [item for page in hook.walk_connection_types(page_size=1000, sort=["-name"]) for item in page.items]
    assert [item["id"] for item in items] == [d["id"] for d in evaluate(catalogue(SIZE), None, ["-name", "id"])]


def test_a_server_that_ignores_the_filter_never_returns_unfiltered_types(hook: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), ignore_filter=True)
    with pytest.raises(BlinkApiError, match="the filter cannot be trusted"):
        walk(hook, server, page_size=1000, filter={"oauth": True})


def test_a_server_that_refuses_the_id_condition_is_walked_by_offset_with_the_filter(hook: Any, all_output: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), refuse_id_filter=True)
    ids = walk(hook, server, page_size=500, filter={"oauth": True})
    assert ids == [d["id"] for d in evaluate(catalogue(SIZE), {"oauth": True}, ["id"])]
    assert "it refused the id condition" in all_output()
    assert all(q["filter"] == {"oauth": True} for q in server.requests[2:])


def test_a_server_that_honours_neither_keyset_nor_offset_fails_fast(hook: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), ignore_filter=True, ignore_offset=True)
    with pytest.raises(BlinkApiError, match="honours neither the keyset condition nor offsets"):
        walk(hook, server, page_size=1000)
    assert len(server.requests) <= 3


# -- 3. ids -----------------------------------------------------------------------------------------


def test_the_same_id_twice_in_a_page_is_a_clear_error(hook: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), dup_in_page=True)
    with pytest.raises(BlinkApiError, match="sent id 'ct-00000' twice in page 1"):
        walk(hook, server, page_size=1000)


# -- 4. URL length ----------------------------------------------------------------------------------


def test_a_sorted_walk_whose_sort_values_move_gives_every_type_once_in_requests_under_4_kb(hook: Any) -> None:
    """A sorted, filtered walk whose types change their sort value during the walk: the walk goes
    by id, so each type comes once, and the client sorts what came; no URL passes 4 KB."""
    items = catalogue(1500)
    server = FakeCatalogue(items)
    long_filter = {"$or": [{"name": {"$like": f"type-{i:02d}%"}} for i in range(37)]}

    def move_all(items: list[dict[str, Any]]) -> None:  # every later type jumps before the position
        for item in items:
            item["name"] = "type-00" if item["id"] > "ct-00100" else item["name"]

    server.before_request[2] = move_all
    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        got = [
            i
            for page in hook.walk_connection_types(page_size=100, sort=["-name"], filter=long_filter)
            for i in page.items
        ]
    assert sorted(i["id"] for i in got) == sorted(i["id"] for i in items)
    assert [i["name"] for i in got] == sorted((i["name"] for i in got), reverse=True)
    assert max(len(urlsplit(url).query) for url in server.urls) < 4096 - len(LIST_URL)
    assert all(q["sort"] == ["id"] for q in server.requests)


def test_a_prefetched_walk_of_an_unchanged_catalogue_does_not_report_a_change(hook: Any, all_output: Any) -> None:
    """Each page's total is compared with what the page before it left."""
    server = FakeCatalogue(catalogue(SIZE))
    assert walk(hook, server, page_size=100) == EVERY
    output = all_output()
    assert "page 25/25: 2500 of 2500" in output
    assert "the catalogue changed" not in output


def test_a_catalogue_that_grows_during_a_walk_is_reported(hook: Any, all_output: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE))
    later = [{"id": f"cu-{i:05d}", "name": "late", "oauth": False} for i in range(30)]

    def grow(request: Any, context: Any) -> Any:
        if len(server.requests) == 12:  # mid-walk, after the position
            server.items.extend(later)
        return server(request, context)

    with rm.Mocker() as m:
        m.get(LIST_URL, json=grow)
        ids = [item.get("id") for page in hook.walk_connection_types(page_size=100) for item in page.items]
    assert sorted(set(ids)) == ids and ids[: len(EVERY)] == EVERY
    assert "the catalogue changed during the walk" in all_output()


def test_a_shuffled_server_that_honours_the_filter_is_walked_by_offset_with_it(hook: Any, all_output: Any) -> None:
    """A server that filters as asked but does not sort: its pages are out of order, which says
    nothing against the filter. The walk goes on by offset with the filter, and says why."""
    server = FakeCatalogue(catalogue(SIZE), shuffle=True)
    ids = walk(hook, server, page_size=500, filter={"oauth": True})
    assert ids == [d["id"] for d in evaluate(catalogue(SIZE), {"oauth": True}, ["id"])]
    output = all_output()
    assert "is not in the requested order" in output and "paging by offset from here" in output
    assert "does not honour RQL conditions" not in output


def test_pages_served_in_reverse_come_back_in_id_order_after_the_offset_fallback(hook: Any, all_output: Any) -> None:
    server = FakeCatalogue(catalogue(SIZE), reverse=True)
    assert walk(hook, server, page_size=250) == EVERY
    assert "paging by offset from here" in all_output()


@pytest.mark.parametrize("claimed", [None, 600])
def test_an_offset_server_that_does_not_sort_by_id_loses_no_type(hook: Any, claimed: int | None) -> None:
    """#43 item 14: a server that honours limit and offset but orders ids its own way (ct-0 ...
    ct-999 numerically, not as text) and ignores the id condition: the offset fallback drops
    exactly the ids already returned, so every type comes once."""
    items = [{"id": f"ct-{n}", "name": f"t{n}"} for n in range(1000)]

    def server(request: Any, context: Any) -> dict[str, Any]:
        q = sent_query(request)
        page = items[q.get("offset", 0) : q.get("offset", 0) + q["limit"]]
        return {"limit": q["limit"], "offset": q.get("offset", 0), "total": claimed or len(items), "results": page}

    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        got = [item["id"] for page in hook.walk_connection_types(page_size=100) for item in page.items]
    if claimed is None:
        assert sorted(got) == sorted(item["id"] for item in items) and len(got) == len(set(got))
    else:  # a total smaller than what it holds: every type it sends still comes once
        assert len(got) == len(set(got)) >= claimed


def test_an_offset_server_that_repeats_itself_still_fails_clearly(hook: Any) -> None:
    items = [{"id": f"ct-{n}", "name": f"t{n}"} for n in range(300)]

    def server(request: Any, context: Any) -> dict[str, Any]:
        q = sent_query(request)
        return {"limit": q["limit"], "offset": q.get("offset", 0), "total": 300, "results": items[: q["limit"]]}

    with rm.Mocker() as m:
        m.get(LIST_URL, json=server)
        with pytest.raises(BlinkApiError, match="only types already returned"):
            list(hook.walk_connection_types(page_size=100))
