"""The catalogue walk (the hook's walk module): keyset pages, page checks, and exactness under change."""

from __future__ import annotations

import random
from typing import Any

import pytest
import requests
import requests_mock as rm
from airflow.providers.common.compat.sdk import AirflowFailException

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError, BlinkResponseError, BlinkUnsupportedServerError
from blinkops_provider.rql import sort_items
from tests.fake_blink import FakeCatalogue, catalogue
from tests.unit.sandbox.reference import evaluate

LIST_URL = "https://blink.test/api/v1/connection_types"

KEPT_IDS = 50_000
"""The ids a walk by id keeps for a fallback to offsets, as ``BlinkHook.walk_connection_types`` says."""


def walk_ids(hook: Any, listing: FakeCatalogue, **kwargs: Any) -> list[Any]:
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        return [item.get("id") for page in hook.walk_connection_types(**kwargs) for item in page.items]


# -- the queries it sends -------------------------------------------------------------------


def test_walks_every_page_in_order_after_the_last_id(hook: Any, all_output: Any) -> None:
    listing = FakeCatalogue(catalogue(2500))
    assert walk_ids(hook, listing, page_size=1000) == [item["id"] for item in catalogue(2500)]
    assert listing.requests == [
        {"sort": ["id"], "limit": 1000, "offset": 0},
        {"sort": ["id"], "limit": 1000, "offset": 0, "filter": {"id": {"$gt": "ct-00999"}}},
        {"sort": ["id"], "limit": 1000, "offset": 0, "filter": {"id": {"$gt": "ct-01999"}}},
    ]
    output = all_output()
    assert "page 1/3: 1000 of 2500 connection types" in output
    assert "page 3/3: 2500 of 2500 connection types" in output


def test_a_user_sort_is_the_clients_and_the_filter_travels_on_every_page(hook: Any) -> None:
    """The walk pages by id with the user's filter; the sort is applied once every page is in (#37)."""
    listing = FakeCatalogue(catalogue(40))
    user_filter = {"name": {"$like": "type-0%"}}
    ids = walk_ids(hook, listing, filter=user_filter, sort=["-name"], page_size=4)
    assert ids == [d["id"] for d in evaluate(catalogue(40), user_filter, ["-name", "id"])]
    assert all(q["sort"] == ["id"] and q["offset"] == 0 for q in listing.requests)
    assert listing.requests[0]["filter"] == user_filter
    last = evaluate(catalogue(40), user_filter, ["id"])[3]
    assert listing.requests[1]["filter"] == {"$and": [user_filter, {"id": {"$gt": last["id"]}}]}


def test_sort_on_a_boolean_and_on_several_keys_sorts_like_the_reference(hook: Any) -> None:
    for sort in (["-oauth"], ["oauth", "-name"], ["+name", "-id"]):
        ids = walk_ids(hook, FakeCatalogue(catalogue(30)), sort=sort, page_size=4)
        assert ids == [d["id"] for d in evaluate(catalogue(30), None, [*sort, "id"])], sort


def test_sort_items_puts_missing_values_last_and_mixed_types_apart() -> None:
    items = [{"id": "c", "n": None}, {"id": "b", "n": "x"}, {"id": "a", "n": 2}, {"id": "d"}, {"id": "e", "n": 1}]
    sort_items(items, ["n"])
    assert [i["id"] for i in items] == ["e", "a", "b", "c", "d"]
    sort_items(items, ["-n"])
    assert [i["id"] for i in items] == ["c", "d", "b", "a", "e"]


def test_select_without_the_id_asks_for_it_and_drops_it(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(9))
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        items = [i for p in hook.walk_connection_types(select=["name"], sort=["name"], page_size=4) for i in p.items]
    assert all(q["select"] == ["name", "id"] for q in listing.requests)
    assert items == [{"name": d["name"]} for d in evaluate(catalogue(9), None, ["name", "id"])]


def test_max_items_cuts_the_last_request(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(100))
    assert walk_ids(hook, listing, page_size=30, max_items=45) == [f"ct-{i:05d}" for i in range(45)]
    assert [q["limit"] for q in listing.requests] == [30, 15]


def test_max_items_zero_sends_nothing(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(10))
    assert walk_ids(hook, listing, max_items=0) == []
    assert listing.requests == []


# -- where it stops -----------------------------------------------------------------------


def test_a_full_last_page_is_confirmed_by_one_more_request(hook: Any, all_output: Any) -> None:
    """A full page is never proof of the end, even when total agrees: one more request, empty."""
    listing = FakeCatalogue(catalogue(20))
    assert len(walk_ids(hook, listing, page_size=10)) == 20
    assert len(listing.requests) == 3
    assert "page 3" not in all_output()  # the confirming empty answer is not a page


def test_a_total_that_always_equals_the_page_loses_nothing(hook: Any) -> None:
    """350 types, page size 100, a server reporting total 100 on every page: a full page whose
    total equals its length is not taken as the end; the lying total ends in a clear error
    rather than in 100 of 350 types."""
    listing = FakeCatalogue(catalogue(350))
    listing.total_override = [100] * 10
    with pytest.raises(BlinkApiError, match="empty page 5 but reports 100 more"):
        walk_ids(hook, listing, page_size=100)
    assert len(listing.requests) == 5


def test_empty_catalogue_is_one_request(hook: Any) -> None:
    listing = FakeCatalogue([])
    assert walk_ids(hook, listing) == []
    assert len(listing.requests) == 1


def test_missing_total_stops_on_a_short_page(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(25))
    listing.total = "none"
    assert len(walk_ids(hook, listing, page_size=10)) == 25
    assert len(listing.requests) == 3


def test_an_empty_page_while_the_total_says_more_is_an_error(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(15))
    listing.total_override = [40, 30, 20]
    with pytest.raises(BlinkApiError, match="sent an empty page 3 but reports 20 more connection types"):
        walk_ids(hook, listing, page_size=10)
    assert len(listing.requests) == 3  # the second page was short, but the total said more


def test_a_server_ignoring_limit_still_gives_max_items_and_every_item_once(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(25))
    listing.ignore_limit = True
    assert walk_ids(hook, listing, page_size=10, max_items=15) == [f"ct-{i:05d}" for i in range(15)]
    assert walk_ids(hook, listing, page_size=10) == [f"ct-{i:05d}" for i in range(25)]


def test_a_total_that_changes_mid_walk_is_logged(hook: Any, all_output: Any) -> None:
    listing = FakeCatalogue(catalogue(30))
    listing.before_request[2] = lambda items: items.append({"id": "ct-99999", "name": "new"})
    assert len(walk_ids(hook, listing, page_size=10)) == 31
    assert "the server reports 21 connection types still to come, 20 were expected" in all_output()


# -- the page checks ------------------------------------------------------------------------


def test_a_server_that_ignores_the_position_is_walked_by_offset(hook: Any, all_output: Any) -> None:
    listing = FakeCatalogue(catalogue(50))
    listing.ignore_filter = True
    assert walk_ids(hook, listing, page_size=10) == [item["id"] for item in catalogue(50)]
    # page 2 repeated page 1: not returned; the walk goes on by offset after the 10 it returned
    assert [q["offset"] for q in listing.requests] == [0, 0, 10, 20, 30, 40, 50]  # 50: a full last page confirmed
    assert all("filter" not in q for q in listing.requests[2:])
    output = all_output()
    assert "page 2 starts with 'ct-00000', which is not after the walk's position" in output
    assert "page 5/5: 50 of 50 connection types" in output
    assert "exactness while the catalogue changes is not guaranteed" in output


def test_a_server_that_ignores_the_position_with_a_user_filter_is_an_error(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(50))
    listing.ignore_filter = True
    with pytest.raises(
        BlinkUnsupportedServerError, match=r"does not honour RQL conditions .* the filter cannot be trusted"
    ) as caught:
        walk_ids(hook, listing, page_size=10, filter={"oauth": True})
    assert len(listing.requests) == 2
    assert isinstance(caught.value, AirflowFailException)  # #56 item 12: no retry can change the server


def test_past_kept_ids_the_walk_keeps_none_and_a_later_fallback_is_an_error(hook: Any) -> None:
    """A walk by id keeps at most KEPT_IDS ids, as the hook's docstring says, so its memory stays flat; a server that
    stops honouring the condition after that fails, naming why, instead of risking doubles."""
    size = KEPT_IDS + 2000
    listing = FakeCatalogue(catalogue(size))
    pages = -(-KEPT_IDS // 1000) + 1  # the first page past KEPT_IDS, the last by id
    listing.before_request[pages + 1] = lambda items: setattr(listing, "ignore_filter", True)
    with pytest.raises(BlinkApiError, match=f"after {pages * 1000:,} connection types .* up to {KEPT_IDS:,}"):
        walk_ids(hook, listing, page_size=1000)
    assert len(listing.requests) == pages + 1  # nothing by offset


def test_a_walk_by_id_past_kept_ids_returns_every_type_once(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(KEPT_IDS + 1500))
    assert walk_ids(hook, listing, page_size=1000) == [item["id"] for item in catalogue(KEPT_IDS + 1500)]


def test_a_server_that_moves_the_offset_is_an_error(hook: Any) -> None:
    listing = FakeCatalogue(catalogue(50))
    listing.echo_offset = 10
    with pytest.raises(BlinkUnsupportedServerError, match="answered offset 10 when asked for offset 0"):
        walk_ids(hook, listing, page_size=10)


def test_hard_page_cap(hook: Any) -> None:
    hook.max_pages = 3
    listing = FakeCatalogue(catalogue(100))
    with pytest.raises(BlinkApiError, match="stopped after 3 pages"):
        walk_ids(hook, listing, page_size=10)
    assert len(listing.requests) == 3


def test_a_type_without_the_sort_member_is_sorted_last(hook: Any) -> None:
    """The client sorts (#37): a type that lacks the member sorts after those that have it."""
    items = catalogue(12)
    for item in items:
        if item["id"] == "ct-00004":
            del item["name"]
    ids = walk_ids(hook, FakeCatalogue(items), sort=["name"], page_size=1)
    assert ids[-1] == "ct-00004" and sorted(ids) == [i["id"] for i in items]


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
    hook: Any, seed: int, sort: Any, user_filter: Any, select: Any
) -> None:
    rng = random.Random(seed)
    listing = FakeCatalogue(catalogue(120))
    matching: list[set[str]] = []

    def record(items: list[dict[str, Any]]) -> None:
        matching.append({item["id"] for item in evaluate(items, user_filter)})

    record(listing.items)
    serial = [0]
    for n in range(2, 40):
        listing.before_request[n] = mutate(rng, serial, record)
    with rm.Mocker() as m:
        m.get(LIST_URL, json=listing)
        pages = list(hook.walk_connection_types(sort=sort, filter=user_filter, select=select, page_size=7))
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


@pytest.mark.parametrize("sort", [None, ["name"], ["-name", "oauth"]])
def test_a_one_page_catalogue_is_one_request_on_one_session_without_a_thread(make_hook: Any, sort: Any) -> None:
    """Blink's real catalogue, a few hundred types: one request, on the caller's thread and
    session, with and without a user sort; no worker thread is started."""
    import threading

    peak: dict[str, Any] = {}
    hook = make_hook(session_factory=_counting_sessions(peak))
    before = threading.active_count()
    with rm.Mocker() as m:
        m.get(LIST_URL, json=FakeCatalogue(catalogue(300)))
        pages = list(hook.walk_connection_types(sort=sort))
        started = threading.active_count() - before
    assert [len(page.items) for page in pages] == [300]
    assert (peak["sent"], peak["sessions"]) == (1, 1)
    assert peak["threads"] == {threading.get_ident()}
    assert started <= 0
