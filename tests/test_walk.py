"""The catalogue walk (hooks/_walk.py): keyset pages, page checks, and exactness under change."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError, BlinkResponseError
from blinkops_provider.hooks._walk import _out_of_order, _rises_by_code_point, check_order
from blinkops_provider.rql import SortKey, position_filter
from tests.fake_listing import FakeListing
from tests.sandbox.reference import evaluate

LIST_URL = "https://blink.test/api/v1/connection_types"


def catalogue(size: int) -> list[dict[str, Any]]:
    return [{"id": f"ct-{i:05d}", "name": f"type-{i % 37:02d}", "oauth": i % 3 == 0} for i in range(size)]


def walk_ids(hook: Any, listing: FakeListing, **kwargs: Any) -> list[Any]:
    kwargs.setdefault("max_concurrency", 1)  # page by page unless a test says otherwise
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        return [item.get("id") for page in hook.walk_connection_types(**kwargs) for item in page.items]


# -- the queries it sends -------------------------------------------------------------------


def test_walks_every_page_in_order_after_the_last_id(hook: Any, all_output: Any) -> None:
    listing = FakeListing(catalogue(2500))
    assert walk_ids(hook, listing, page_size=1000) == [item["id"] for item in catalogue(2500)]
    assert listing.requests == [
        {"sort": ["id"], "limit": 1000, "offset": 0},
        {"sort": ["id"], "limit": 1000, "offset": 0, "filter": {"id": {"$gt": "ct-00999"}}},
        {"sort": ["id"], "limit": 1000, "offset": 0, "filter": {"id": {"$gt": "ct-01999"}}},
    ]
    output = all_output()
    assert "page 1/3: 1000 of 2500 connection types" in output
    assert "page 3/3: 2500 of 2500 connection types" in output


def test_user_sort_and_filter_travel_on_every_page(hook: Any) -> None:
    listing = FakeListing(catalogue(40))
    user_filter = {"name": {"$like": "type-0%"}}
    ids = walk_ids(hook, listing, filter=user_filter, sort=["-name"], page_size=4)
    assert ids == [d["id"] for d in evaluate(catalogue(40), user_filter, ["-name", "id"])]
    walk, check = listing.requests[:4], listing.requests[4:]
    assert all(q["sort"] == ["-name", "id"] and q["offset"] == 0 for q in walk)
    # After a sorted walk, one id-only listing checks that no type moved past the walk unseen.
    assert check == [{"sort": ["id"], "limit": 1000, "offset": 0, "filter": user_filter, "select": ["id"]}]
    assert listing.requests[0]["filter"] == user_filter
    second = listing.requests[1]["filter"]
    last = evaluate(catalogue(40), user_filter, ["-name", "id"])[3]
    # The user's filter travels once, ANDed with the position.
    assert second["$and"][0] == user_filter
    assert second["$and"][1]["$or"][0] == {"name": {"$lt": last["name"]}}
    assert second["$and"][1]["$or"][1] == {"name": {"$eq": last["name"]}, "id": {"$gt": last["id"]}}


@pytest.mark.parametrize(
    ("keys", "values", "expected"),
    [
        ([("id", False)], ("a",), {"id": {"$gt": "a"}}),
        ([("n", True), ("id", False)], (5, "a"), {"$or": [{"n": {"$lt": 5}}, {"n": {"$eq": 5}, "id": {"$gt": "a"}}]}),
        ([("b", False), ("id", False)], (False,), None),  # placeholder, replaced below
    ],
)
def test_position_filter(keys: list, values: tuple, expected: Any) -> None:
    sort_keys = [SortKey(n, d) for n, d in keys]
    if expected is None:  # booleans: false < true, and $eq stands for "after"
        assert position_filter(sort_keys, (False, "a")) == {
            "$or": [{"b": {"$eq": True}}, {"b": {"$eq": False}, "id": {"$gt": "a"}}]
        }
        assert position_filter(sort_keys, (True, "a")) == {"b": {"$eq": True}, "id": {"$gt": "a"}}
        return
    assert position_filter(sort_keys, values) == expected


def test_sort_on_a_boolean_walks_exactly(hook: Any) -> None:
    listing = FakeListing(catalogue(30))
    ids = walk_ids(hook, listing, sort=["-oauth"], page_size=4)
    assert ids == [d["id"] for d in evaluate(catalogue(30), None, ["-oauth", "id"])]


def test_select_without_the_keys_asks_for_them_and_drops_them(hook: Any) -> None:
    listing = FakeListing(catalogue(9))
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        items = [i for p in hook.walk_connection_types(select=["name"], sort=["name"], page_size=4) for i in p.items]
    assert all(q["select"] == ["name", "id"] for q in listing.requests if q["sort"] == ["name", "id"])
    assert items == [{"name": d["name"]} for d in evaluate(catalogue(9), None, ["name", "id"])]


def test_max_items_cuts_the_last_request(hook: Any) -> None:
    listing = FakeListing(catalogue(100))
    assert walk_ids(hook, listing, page_size=30, max_items=45) == [f"ct-{i:05d}" for i in range(45)]
    assert [q["limit"] for q in listing.requests] == [30, 15]


def test_max_items_zero_sends_nothing(hook: Any) -> None:
    listing = FakeListing(catalogue(10))
    assert walk_ids(hook, listing, max_items=0) == []
    assert listing.requests == []


# -- where it stops -----------------------------------------------------------------------


def test_a_full_last_page_is_confirmed_by_one_more_request(hook: Any, all_output: Any) -> None:
    """A full page is never proof of the end, even when total agrees: one more request, empty."""
    listing = FakeListing(catalogue(20))
    assert len(walk_ids(hook, listing, page_size=10)) == 20
    assert len(listing.requests) == 3
    assert "page 3" not in all_output()  # the confirming empty answer is not a page


def test_a_total_that_always_equals_the_page_loses_nothing(hook: Any) -> None:
    """350 types, page size 100, a server reporting total 100 on every page: a full page whose
    total equals its length is not taken as the end; the lying total ends in a clear error
    rather than in 100 of 350 types."""
    listing = FakeListing(catalogue(350))
    listing.total_override = [100] * 10
    with pytest.raises(BlinkApiError, match="empty page 5 but reports 100 more"):
        walk_ids(hook, listing, page_size=100)
    assert len(listing.requests) == 5


def test_empty_catalogue_is_one_request(hook: Any) -> None:
    listing = FakeListing([])
    assert walk_ids(hook, listing) == []
    assert len(listing.requests) == 1


def test_missing_total_stops_on_a_short_page(hook: Any) -> None:
    listing = FakeListing(catalogue(25))
    listing.report_total = False
    assert len(walk_ids(hook, listing, page_size=10)) == 25
    assert len(listing.requests) == 3


def test_an_empty_page_while_the_total_says_more_is_an_error(hook: Any) -> None:
    listing = FakeListing(catalogue(15))
    listing.total_override = [40, 30, 20]
    with pytest.raises(BlinkApiError, match="sent an empty page 3 but reports 20 more connection types"):
        walk_ids(hook, listing, page_size=10)
    assert len(listing.requests) == 3  # the second page was short, but the total said more


def test_a_server_ignoring_limit_still_gives_max_items_and_every_item_once(hook: Any) -> None:
    listing = FakeListing(catalogue(25))
    listing.ignore_limit = True
    assert walk_ids(hook, listing, page_size=10, max_items=15) == [f"ct-{i:05d}" for i in range(15)]
    assert walk_ids(hook, listing, page_size=10) == [f"ct-{i:05d}" for i in range(25)]


def test_a_total_that_changes_mid_walk_is_logged(hook: Any, all_output: Any) -> None:
    listing = FakeListing(catalogue(30))
    listing.before_request[2] = lambda items: items.append({"id": "ct-99999", "name": "new"})
    assert len(walk_ids(hook, listing, page_size=10)) == 31
    assert "the server reports 21 connection types still to come, 20 were expected" in all_output()


# -- the page checks ------------------------------------------------------------------------


def test_a_server_that_ignores_the_position_is_walked_by_offset(hook: Any, all_output: Any) -> None:
    listing = FakeListing(catalogue(50))
    listing.ignore_position = True
    assert walk_ids(hook, listing, page_size=10) == [item["id"] for item in catalogue(50)]
    # page 2 repeated page 1: not returned; the walk goes on by offset after the 10 it returned
    assert [q["offset"] for q in listing.requests] == [0, 0, 10, 20, 30, 40, 50]  # 50: a full last page confirmed
    assert all("filter" not in q for q in listing.requests[2:])
    output = all_output()
    assert "page 2 starts with 'ct-00000', which is not after the walk's position" in output
    assert "page 5/5: 50 of 50 connection types" in output
    assert "exactness while the catalogue changes is not guaranteed" in output


def test_a_server_that_ignores_the_position_with_a_user_filter_is_an_error(hook: Any) -> None:
    listing = FakeListing(catalogue(50))
    listing.ignore_position = True
    with pytest.raises(BlinkApiError, match=r"does not honour RQL conditions .* the filter cannot be trusted"):
        walk_ids(hook, listing, page_size=10, filter={"oauth": True})
    assert len(listing.requests) == 2


def test_a_server_that_moves_the_offset_is_an_error(hook: Any) -> None:
    listing = FakeListing(catalogue(50))
    listing.echo_offset = 10
    with pytest.raises(BlinkApiError, match="answered offset 10 when asked for offset 0"):
        walk_ids(hook, listing, page_size=10)


def test_hard_page_cap(hook: Any) -> None:
    hook.max_pages = 3
    listing = FakeListing(catalogue(100))
    with pytest.raises(BlinkApiError, match="stopped after 3 pages"):
        walk_ids(hook, listing, page_size=10)
    assert len(listing.requests) == 3


def test_a_page_ending_without_a_sort_value_stops_with_a_clear_error(hook: Any) -> None:
    items = catalogue(12)
    for item in items:
        if item["id"] == "ct-00004":
            del item["name"]
    listing = FakeListing(items)
    with pytest.raises(BlinkApiError, match=r"connection type 'ct-00004' has no 'name', which the walk sorts by"):
        walk_ids(hook, listing, sort=["name"], page_size=1)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "it has no 'results' array"),
        ({"data": [{"id": "a"}]}, "it has no 'results' array"),
        ([], "the body is a JSON list, not an object"),
        ({"results": {"id": "a"}}, "'results' is not an array"),
        ({"results": [{"id": "a"}, 3]}, r"results\[1\] is a JSON int, not an object"),
        ({"results": [None]}, r"results\[0\] is a JSON NoneType, not an object"),
        ({"results": [], "total": "5"}, "'total' is '5', not an integer"),
        ({"results": [], "total": 2.5}, "'total' is 2.5, not an integer"),
        ({"results": [], "limit": True}, "'limit' is True, not an integer"),
        ({"results": [], "offset": -1}, "'offset' is -1, not an integer"),
    ],
)
def test_a_page_of_the_wrong_shape_is_a_response_error(hook: Any, body: Any, problem: str) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, json=body)
        with pytest.raises(BlinkResponseError, match=problem):
            list(hook.walk_connection_types())


def test_a_page_that_is_not_json_is_a_response_error(hook: Any) -> None:
    with rm.Mocker() as m:
        m.get(LIST_URL, text="<html>")
        with pytest.raises(BlinkResponseError, match="is not JSON"):
            list(hook.walk_connection_types())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"page_size": 0}, "page_size must be an integer from 1 to 1000"),
        ({"page_size": 1001}, "page_size must be an integer from 1 to 1000"),
        ({"page_size": "10"}, "page_size must be an integer from 1 to 1000"),
        ({"max_items": -1}, "max_items must be None or an integer"),
        ({"sort": ["bad sort"]}, "sort item"),
    ],
)
def test_bad_walk_arguments_fail_before_any_request(hook: Any, kwargs: dict, message: str) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=message):
        hook.walk_connection_types(**kwargs)
    assert not m.called


# -- exactness under change -----------------------------------------------------------------


def mutate(rng: random.Random, serial: list[int], record: Any) -> Any:
    """A change between pages: deletes, inserts and updates (renames) at random places."""

    def change(items: list[dict[str, Any]]) -> None:
        for _ in range(rng.randint(1, 6)):
            action = rng.choice(("delete", "insert", "rename"))
            if action == "delete" and items:
                items.pop(rng.randrange(len(items)))
            elif action == "insert":
                serial[0] += 1
                items.insert(
                    rng.randrange(len(items) + 1),
                    {
                        "id": f"ct-{rng.randrange(100000):05d}-{serial[0]}",
                        "name": f"type-{rng.randrange(40):02d}",
                        "oauth": rng.random() < 0.5,
                    },
                )
            elif items:
                rng.choice(items)["name"] = f"type-{rng.randrange(40):02d}"
        record(items)

    return change


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize(
    ("sort", "user_filter", "select"),
    [
        (None, None, None),
        (["name"], None, None),
        (["-name", "oauth"], None, ["id"]),
        (None, {"oauth": True}, None),
        (["name"], {"$or": [{"oauth": True}, {"name": {"$lt": "type-10"}}]}, ["id", "oauth"]),
    ],
)
def test_every_item_that_exists_throughout_comes_exactly_once(
    hook: Any, seed: int, workers: int, sort: Any, user_filter: Any, select: Any
) -> None:
    rng = random.Random(seed)
    listing = FakeListing(catalogue(120))
    matching: list[set[str]] = []

    def record(items: list[dict[str, Any]]) -> None:
        matching.append({item["id"] for item in evaluate(items, user_filter)})

    record(listing.items)
    serial = [0]
    for n in range(2, 40):
        listing.before_request[n] = mutate(rng, serial, record)
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        pages = list(
            hook.walk_connection_types(
                sort=sort, filter=user_filter, select=select, page_size=7, max_concurrency=workers
            )
        )
    items = [item for page in pages for item in page.items]
    ids = [item.get("id") for item in items]
    if select is not None:  # the sort keys were not selected: the walk asked for them and dropped them
        assert all(set(item) <= set(select) for item in items)
    assert len(ids) == len(set(ids)), "an item came twice"
    throughout = set.intersection(*matching)
    missing = throughout - set(ids)
    assert not missing, f"{len(missing)} items that matched throughout were not returned"
    assert len(matching) > 3  # the catalogue did change between pages


# -- concurrency --------------------------------------------------------------------------------


def _counting_sessions(peak: dict[str, Any]) -> Any:
    """A session factory whose sessions count what they send, and from which threads."""
    import threading

    lock = threading.Lock()
    in_use: dict[int, int] = {}
    peak.update(per_session=0, sessions=0, threads=set(), sent=0)

    def tracked() -> Any:
        session = requests.Session()
        send = session.send

        def spy(*args: Any, **kwargs: Any) -> Any:
            with lock:
                in_use[id(session)] = in_use.get(id(session), 0) + 1
                peak["per_session"] = max(peak["per_session"], in_use[id(session)])
                peak["threads"].add(threading.get_ident())
                peak["sent"] += 1
            try:
                return send(*args, **kwargs)
            finally:
                with lock:
                    in_use[id(session)] -= 1

        session.send = spy
        peak["sessions"] += 1
        return session

    return tracked


def test_a_one_page_catalogue_is_one_request_on_one_session_without_a_thread(make_hook: Any) -> None:
    """Blink's real catalogue, a few hundred types: one request, on the caller's thread and
    session, at the default max_concurrency; no worker thread is started."""
    import threading

    peak: dict[str, Any] = {}
    hook = make_hook(session_factory=_counting_sessions(peak))
    before = {t.name for t in threading.enumerate()}
    with rm.Mocker() as m:
        m.get(LIST_URL, json=FakeListing(catalogue(300)))
        pages = list(hook.walk_connection_types())
        started = {t.name for t in threading.enumerate()} - before
    assert [len(page.items) for page in pages] == [300]
    assert (peak["sent"], peak["sessions"]) == (1, 1)
    assert peak["threads"] == {threading.get_ident()}
    assert not any(name.startswith("blink-walk") for name in started)


def test_the_next_page_is_asked_for_while_the_caller_has_this_one(hook: Any) -> None:
    """Once an answer shows more pages, the next one is on its way before the caller gets this
    one: when page 1 reaches the caller, page 2 has been asked for."""
    import threading

    listing = FakeListing(catalogue(25))
    page_2_asked = threading.Event()
    listing.before_request[2] = lambda items: page_2_asked.set()
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        walk = hook.walk_connection_types(page_size=10, max_items=25, max_concurrency=2)  # page by page
        first = next(walk)
        asked_while_holding_page_1 = page_2_asked.wait(30)  # the worker's request; the caller has not asked
        rest = list(walk)
    assert len(first.items) == 10 and asked_while_holding_page_1
    assert [item["id"] for page in [first, *rest] for item in page.items] == [i["id"] for i in catalogue(25)]
    assert len(listing.requests) == 3


def test_a_large_unsorted_walk_goes_by_id_ranges_each_type_once_in_order(hook: Any) -> None:
    """Past page 1, an id-ordered walk asks for several id ranges at once; whatever the probes
    found, every type comes once, in id order (no assertion on where the probes looked)."""
    listing = FakeListing(catalogue(95))
    assert walk_ids(hook, listing, page_size=10, max_concurrency=3) == [item["id"] for item in catalogue(95)]
    bounded = [q for q in listing.requests if "$lte" in json.dumps(q.get("filter"))]
    assert bounded, "the walk went page by page"


def test_a_range_that_grows_is_walked_on_and_nothing_comes_twice(hook: Any) -> None:
    listing = FakeListing(catalogue(40))

    def insert(items: list[dict[str, Any]]) -> None:  # 15 new types inside an early range
        items.extend({"id": f"ct-00015-{i:02d}", "name": "new", "oauth": False} for i in range(15))

    listing.before_request[4] = insert
    ids = walk_ids(hook, listing, page_size=10, max_concurrency=2)
    assert len(ids) == len(set(ids))
    assert {item["id"] for item in catalogue(40)} <= set(ids)
    assert ids == sorted(ids)


@pytest.mark.parametrize("value", [0, 33, "4", True, 2.0])
def test_bad_concurrency_fails_before_any_request(hook: Any, value: Any) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="max_concurrency must be an integer from 1 to 32"):
        hook.walk_connection_types(max_concurrency=value)
    assert not m.called


def test_no_session_is_used_by_two_threads_at_once(make_hook: Any) -> None:
    """The caller's thread and each worker that fetches ahead have their own session."""
    peak: dict[str, Any] = {}
    hook = make_hook(retry_delay=0.5, session_factory=_counting_sessions(peak))
    assert len(walk_ids(hook, FakeListing(catalogue(200)), page_size=10, max_concurrency=4)) == 200
    assert 2 <= peak["sessions"] <= 1 + 4
    assert peak["per_session"] == 1
    assert len(peak["threads"]) == peak["sessions"]


# -- the order check's fast path ------------------------------------------------------------------


def _random_value(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.7:
        return "".join(rng.choice("aAbB_-é0") for _ in range(rng.randint(0, 3)))
    if kind < 0.8:
        return rng.randint(-2, 2)
    if kind < 0.9:
        return rng.choice([True, False, None, 1.0])
    return [rng.randint(0, 1)]


@pytest.mark.parametrize("seed", range(40))
def test_the_order_check_fast_path_agrees_with_the_pair_by_pair_check(seed: int) -> None:
    """A page whose sort values rise strictly by code point is accepted at C speed; the check
    pair by pair (code point and case-insensitive) must find nothing wrong in any such page,
    and the whole check gives the same answer as the pair-by-pair one on every page."""
    rng = random.Random(seed)
    names = ["name", "id"][-rng.randint(1, 2) :]
    keys = [SortKey(name, descending=rng.random() < 0.2) for name in names]
    for _ in range(200):
        rows = [{name: _random_value(rng) for name in names} for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.5:  # mostly-ordered pages, as servers send them
            rows.sort(key=lambda row: tuple(str(row[n]) for n in names), reverse=keys[0].descending)
        after = tuple(_random_value(rng) for _ in names) if rng.random() < 0.5 else None
        slow = _out_of_order(rows, keys, after, 1)
        if _rises_by_code_point(rows, keys, after):
            assert slow is None, (rows, after)
        whole = check_order(rows, keys, after, 1)
        assert (whole is None) == (slow is None)
        if whole is not None and slow is not None:
            assert (whole.reason, whole.ignores_rql) == (slow.reason, slow.ignores_rql)


def test_the_fast_path_takes_the_common_id_ordered_page() -> None:
    rows = [{"id": f"ct-{i:04d}"} for i in range(1000)]
    assert _rises_by_code_point(rows, [SortKey("id", False)], ("ct-",))
    assert not _rises_by_code_point(rows[::-1], [SortKey("id", False)], None)
    assert not _rises_by_code_point(rows, [SortKey("id", True)], None)
    assert not _rises_by_code_point([{"id": 1}, {"id": 2}], [SortKey("id", False)], None)
