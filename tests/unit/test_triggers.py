"""BlinkCatalogueChangeTrigger against the sandbox: no change, a change, a restart, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkAuthError, BlinkInputError, BlinkTransientError
from blinkops_provider.triggers import BlinkCatalogueChangeTrigger
from blinkops_sandbox import BlinkSandbox


class Stop(Exception):
    """Ends a test's polling (raised by the injected wait)."""


class Waits(list[float]):
    """The trigger's waits, recorded instead of slept; ``between`` runs after each poll, and the
    trigger is stopped after ``polls`` polls."""

    def __init__(self, polls: int, between: Callable[[int], None] = lambda poll: None) -> None:
        super().__init__()
        self.polls, self.between = polls, between

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        if len(self) >= self.polls:
            raise Stop
        self.between(len(self))


class Store:
    """The watched asset's state store (Airflow 3.3), in memory and shared across restarts."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = value


def events_of(trigger: BlinkCatalogueChangeTrigger) -> list[dict[str, Any]]:
    """Every event the trigger fires until its injected wait stops it."""

    async def collect() -> list[dict[str, Any]]:
        fired = []
        try:
            async for event in trigger.run():
                fired.append(event.payload)
        except Stop:
            pass
        return fired

    return asyncio.run(collect())


def saved(store: Store) -> Any:
    """The one fingerprint the trigger keeps in the watched asset's state store."""
    (value,) = store.values.values()
    return value


def fingerprint_now() -> str:
    """The catalogue's fingerprint as the trigger takes it: the baseline its first poll saves."""
    store = Store()
    trigger = BlinkCatalogueChangeTrigger(sleep=Waits(polls=1))
    trigger.asset_state_store = store  # type: ignore[attr-defined]
    assert events_of(trigger) == []
    return str(saved(store))


def change(sandbox: BlinkSandbox) -> None:
    sandbox.store.upsert_connection_types(
        [
            {
                "id": "ct-watched",
                "name": "watched",
                "display_name": "Watched",
                "plugin_name": "w",
                "oauth_supported": False,
            }
        ]
    )


def test_an_unchanged_catalogue_fires_nothing(blink_sandbox: BlinkSandbox) -> None:
    waits = Waits(polls=3)
    assert events_of(BlinkCatalogueChangeTrigger(poll_interval=30, sleep=waits)) == []
    assert waits == [30.0, 30.0, 30.0]
    assert len([r for r in blink_sandbox.requests if r["method"] == "GET"]) == 3  # one small request a poll


def test_a_change_fires_one_event(blink_sandbox: BlinkSandbox) -> None:
    before = fingerprint_now()
    waits = Waits(polls=4, between=lambda poll: change(blink_sandbox) if poll == 1 else None)
    (event,) = events_of(BlinkCatalogueChangeTrigger(poll_interval=30, sleep=waits))
    assert event["previous"] == before and event["fingerprint"] == fingerprint_now()
    assert event["fingerprint"].startswith("201:")  # one more type


def test_a_restarted_trigger_does_not_fire_again_and_sees_a_change_made_while_down(
    blink_sandbox: BlinkSandbox,
) -> None:
    store = Store()
    first = BlinkCatalogueChangeTrigger(
        sleep=Waits(polls=3, between=lambda p: change(blink_sandbox) if p == 1 else None)
    )
    first.asset_state_store = store  # what the triggerer sets on Airflow 3.3
    assert len(events_of(first)) == 1
    assert saved(store) == fingerprint_now()
    restarted = BlinkCatalogueChangeTrigger(sleep=Waits(polls=2))
    restarted.asset_state_store = store
    assert events_of(restarted) == []  # the change was already reported
    blink_sandbox.store.delete_connection_types(["ct-watched"])  # while the triggerer is down
    again = BlinkCatalogueChangeTrigger(sleep=Waits(polls=2))
    again.asset_state_store = store
    assert [event["fingerprint"].split(":")[0] for event in events_of(again)] == ["200"]


def test_failures_in_a_row_stop_the_trigger_and_a_success_resets_the_count() -> None:
    answers: list[Any] = [BlinkTransientError("503"), "1:a:x", BlinkTransientError("503"), BlinkTransientError("503")]

    def flaky(conn_id: str) -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return str(answer)

    waits = Waits(polls=10)
    trigger = BlinkCatalogueChangeTrigger(max_consecutive_failures=2, sleep=waits, fingerprint=flaky)
    with pytest.raises(BlinkTransientError):
        events_of(trigger)
    assert len(waits) == 3 and answers == []  # failed, succeeded, failed, then the second failure in a row


def test_a_refused_key_stops_the_trigger_at_once() -> None:
    def refused(conn_id: str) -> str:
        raise BlinkAuthError("no", status=401)

    waits = Waits(polls=10)
    with pytest.raises(BlinkAuthError):
        events_of(BlinkCatalogueChangeTrigger(max_consecutive_failures=5, sleep=waits, fingerprint=refused))
    assert waits == []


def test_it_serialises_without_its_test_seams_and_checks_its_arguments() -> None:
    path, kwargs = BlinkCatalogueChangeTrigger(blink_conn_id="b", poll_interval=60).serialize()
    assert path == "blinkops_provider.triggers.BlinkCatalogueChangeTrigger"
    assert kwargs == {"blink_conn_id": "b", "poll_interval": 60.0, "max_consecutive_failures": 5}
    assert BlinkCatalogueChangeTrigger(**kwargs).serialize() == (path, kwargs)
    with pytest.raises(BlinkInputError, match="poll_interval must be a finite number of seconds, 1 or more"):
        BlinkCatalogueChangeTrigger(poll_interval=0)
    with pytest.raises(BlinkInputError, match="max_consecutive_failures must be at least 1"):
        BlinkCatalogueChangeTrigger(max_consecutive_failures=0)


def test_a_blocking_state_store_is_read_and_written_off_the_event_loop(blink_sandbox: BlinkSandbox) -> None:
    """Airflow 3.3.0 and 3.3.1 give only ``get``/``set``: they run in a worker thread."""
    import threading

    loop_threads: set[int] = set()
    calls: list[tuple[str, bool]] = []

    class BlockingStore:
        values: dict[str, Any] = {}

        def get(self, key: str, default: Any = None) -> Any:
            calls.append(("get", threading.get_ident() in loop_threads))
            return self.values.get(key, default)

        def set(self, key: str, value: Any) -> None:
            calls.append(("set", threading.get_ident() in loop_threads))
            self.values[key] = value

    async def sleep(seconds: float) -> None:
        loop_threads.add(threading.get_ident())
        raise Stop

    trigger = BlinkCatalogueChangeTrigger(sleep=sleep)
    trigger.asset_state_store = BlockingStore()
    loop_threads.add(threading.get_ident())  # asyncio.run runs the loop in this thread
    assert events_of(trigger) == []
    assert calls == [("get", False), ("set", False)]


# -- hardening (#35): what the fingerprint sees, when it is saved, what stops the trigger -------------

LISTING = "https://blink.test/api/v1/connection_types"


def fingerprint_of(blink_conn: None, types: list[dict[str, Any]], reverse: bool = False) -> str:
    import requests_mock as rm

    served = sorted(types, key=lambda t: t["id"], reverse=reverse)
    with rm.Mocker() as m:
        m.get(LISTING, json={"results": served, "total": len(served), "offset": 0, "limit": 1000})
        return fingerprint_now()


BASE = [
    {"id": "ct-1", "name": "aws", "updated_at": 100},
    {"id": "ct-2", "name": "gcp", "updated_at": 200},
    {"id": "ct-3", "name": "okta", "updated_at": 300},
]


@pytest.mark.parametrize(
    "changed",
    [
        [BASE[0], BASE[2], {"id": "ct-9", "name": "new", "updated_at": 50}],  # one deleted, an older one added
        [BASE[0], {**BASE[1], "name": "renamed"}, BASE[2]],  # updated without a new updated_at
        [{"id": "ct-0", "name": "no date"}, *BASE],  # a type without updated_at (sorted first by some servers)
    ],
    ids=["deleted and added older", "updated in place", "missing updated_at"],
)
def test_every_change_to_the_set_of_types_or_to_any_member_moves_the_fingerprint(
    blink_conn: None, changed: list[dict[str, Any]]
) -> None:
    assert fingerprint_of(blink_conn, changed) != fingerprint_of(blink_conn, BASE)


def test_the_fingerprint_does_not_depend_on_the_servers_order(blink_conn: None) -> None:
    tied = [{**t, "updated_at": 100} for t in BASE]  # tied on updated_at, served in either order
    assert fingerprint_of(blink_conn, tied) == fingerprint_of(blink_conn, tied, reverse=True)


def test_the_fingerprint_is_saved_after_the_event_so_a_cancel_in_between_loses_no_change() -> None:
    store, seen = Store(), iter(["a", "b", "b"])
    trigger = BlinkCatalogueChangeTrigger(poll_interval=1, sleep=Waits(polls=9), fingerprint=lambda conn: next(seen))
    trigger.asset_state_store = store  # type: ignore[attr-defined]

    async def cancelled_at_the_event() -> None:
        run = trigger.run()
        await run.__anext__()  # the event for "b"
        await run.aclose()  # the trigger is cancelled before it goes on

    asyncio.run(cancelled_at_the_event())
    assert saved(store) == "a"  # not "b": the restarted trigger fires "b" again
    again = BlinkCatalogueChangeTrigger(poll_interval=1, sleep=Waits(polls=1), fingerprint=lambda conn: "b")
    again.asset_state_store = store  # type: ignore[attr-defined]
    assert events_of(again) == [{"fingerprint": "b", "previous": "a"}]


def test_a_failed_state_store_write_counts_as_a_failed_poll() -> None:
    class Broken(Store):
        async def aset(self, key: str, value: Any) -> None:
            raise OSError("the metadata database is away")

    trigger = BlinkCatalogueChangeTrigger(
        poll_interval=1, max_consecutive_failures=3, sleep=Waits(polls=9), fingerprint=lambda conn: "a"
    )
    trigger.asset_state_store = Broken()  # type: ignore[attr-defined]
    with pytest.raises(OSError, match="away"):
        events_of(trigger)


def test_a_connection_id_that_does_not_exist_stops_the_trigger_at_once_naming_it() -> None:
    from blinkops_provider.exceptions import BlinkConfigurationError

    waits = Waits(polls=9)
    trigger = BlinkCatalogueChangeTrigger(blink_conn_id="no_such_blink", poll_interval=60, sleep=waits)
    with pytest.raises(BlinkConfigurationError, match="the connection 'no_such_blink' does not exist"):
        events_of(trigger)
    assert waits == []  # not one more poll


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 0.5, "60", True])
def test_poll_interval_must_be_a_finite_duration(value: Any) -> None:
    with pytest.raises(BlinkInputError, match="poll_interval must be a finite number of seconds"):
        BlinkCatalogueChangeTrigger(poll_interval=value)
