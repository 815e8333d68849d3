"""
Event-driven scheduling on Blink (Airflow 3.0 and later).

:class:`BlinkCatalogueChangeTrigger` fires when the connection-type catalogue changes, for an ``AssetWatcher``.

It polls cheaply: one request for one item, the most recently updated type, and the catalogue's
``total``. The fingerprint ``<total>:<newest updated_at>:<its id>`` changes when a type is added,
removed or updated. The request runs in a worker thread (the hook is synchronous), never on the
triggerer's event loop.

The last fingerprint seen is kept in the watched asset's state store on Airflow 3.3 and later,
so a restarted triggerer neither fires again for a change it already reported nor misses one
made while it was down. Before 3.3 it is kept in memory: after a restart the first poll only
takes the baseline, and a change made while the triggerer was down is seen by the next scheduled
sync instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from blinkops_provider.exceptions import BlinkAuthError, BlinkConfigurationError, BlinkInputError
from blinkops_provider.utils.inputs import check_seconds

__all__ = ["BlinkCatalogueChangeTrigger"]

_STATE_KEY = "blinkops.catalogue_fingerprint"
"""The key of the last fingerprint in the watched asset's state store."""

try:  # Airflow 3.0+: triggers for event-driven scheduling
    from airflow.triggers.base import BaseEventTrigger, TriggerEvent  # type: ignore[attr-defined]
except ImportError:  # Airflow 2.11: the class imports, and an AssetWatcher cannot use it there
    from airflow.triggers.base import BaseTrigger as BaseEventTrigger  # type: ignore[assignment]
    from airflow.triggers.base import TriggerEvent


class BlinkCatalogueChangeTrigger(BaseEventTrigger):  # type: ignore[misc,valid-type]
    """
    Fires a ``TriggerEvent`` when Blink's connection-type catalogue changes.

    :param blink_conn_id: the ``blink`` connection to poll.
    :param poll_interval: seconds between polls (at least 1; default 300).
    :param max_consecutive_failures: polls that may fail in a row before the trigger stops with
        the last error (default 5: about ``5 x poll_interval`` of outage). A refused key or an
        unusable connection stops it at once.
    :param sleep: how the trigger waits between polls (tests inject one; not serialized).
    :param fingerprint: how it reads the catalogue's fingerprint, given the connection id,
        synchronously (tests inject one; not serialized). Default: one small listing.
    """

    def __init__(
        self,
        *,
        blink_conn_id: str = "blink_default",
        poll_interval: float = 300.0,
        max_consecutive_failures: int = 5,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        fingerprint: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        check_seconds(poll_interval, "poll_interval", low=1, high=86400)
        if isinstance(max_consecutive_failures, bool) or not isinstance(max_consecutive_failures, int):
            raise BlinkInputError(f"max_consecutive_failures must be a whole number, got {max_consecutive_failures!r}")
        if max_consecutive_failures < 1:
            raise BlinkInputError(f"max_consecutive_failures must be at least 1, got {max_consecutive_failures}")
        self.blink_conn_id = blink_conn_id
        self.poll_interval = float(poll_interval)
        self.max_consecutive_failures = max_consecutive_failures
        self._sleep = asyncio.sleep if sleep is None else sleep
        self._fingerprint = _catalogue_fingerprint if fingerprint is None else fingerprint

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "blink_conn_id": self.blink_conn_id,
                "poll_interval": self.poll_interval,
                "max_consecutive_failures": self.max_consecutive_failures,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until the fingerprint differs from the last one seen, then fire once per change."""
        last = await self._load()
        failures = 0
        while True:
            try:
                current = await asyncio.to_thread(self._fingerprint, self.blink_conn_id)
                if last is None:
                    self.log.info("Watching the catalogue of %r from %s", self.blink_conn_id, current)
                    await self._save(current)
                elif current != last:
                    self.log.info("The catalogue changed: %s -> %s", last, current)
                    yield TriggerEvent({"fingerprint": current, "previous": last})  # type: ignore[no-untyped-call]
                    # saved after the event: a cancel in between fires it again (a duplicate sync is
                    # harmless), never loses it
                    await self._save(current)
                last = current
            except (BlinkAuthError, BlinkConfigurationError) as err:
                self.log.error("Stopping: the connection %r cannot be used: %s", self.blink_conn_id, err)
                raise
            except Exception as err:
                failures += 1
                if failures >= self.max_consecutive_failures:
                    self.log.error(
                        "Stopping after %d failed polls in a row of the catalogue of %r: %s",
                        failures,
                        self.blink_conn_id,
                        err,
                    )
                    raise
                self.log.warning(
                    "Poll %d of %d in a row failed: %s; trying again in %g s",
                    failures,
                    self.max_consecutive_failures,
                    err,
                    self.poll_interval,
                )
            else:
                failures = 0
            await self._sleep(self.poll_interval)

    async def _load(self) -> str | None:
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return None
        try:
            if hasattr(store, "aget"):  # Airflow 3.3.2+; before, only the blocking API, run off the loop
                value = await store.aget(_STATE_KEY, default=None)
            else:
                value = await asyncio.to_thread(store.get, _STATE_KEY, default=None)
        except ValueError:  # the store needs the trigger to watch exactly one asset
            return None
        return value if isinstance(value, str) else None

    async def _save(self, fingerprint: str) -> None:
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return
        try:
            if hasattr(store, "aset"):
                await store.aset(_STATE_KEY, fingerprint)
            else:
                await asyncio.to_thread(store.set, _STATE_KEY, fingerprint)
        except ValueError:
            self.log.warning("The fingerprint is kept in memory: the trigger watches more than one asset")


def _catalogue_fingerprint(blink_conn_id: str) -> str:
    """
    Return ``<count>:<digest>``.

    How many connection types there are, and a digest of every one of them, id and content, in id order: any type added,
    removed or changed in any member moves it, and the server's order does not (one request at Blink's size: the
    catalogue is one page).

    :raises BlinkApiError: the listing failed (after the hook's retries).
    """
    from blinkops_provider.hooks.blink import BlinkHook

    digest, count = hashlib.sha256(), 0
    items = [item for page in BlinkHook(blink_conn_id).walk_connection_types() for item in page.items]
    for item in sorted(items, key=lambda item: str(item.get("id"))):
        digest.update(
            json.dumps(item, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
        )
        digest.update(b"\n")
        count += 1
    return f"{count}:{digest.hexdigest()[:32]}"
