"""How a batch of field updates is scheduled: ``max_concurrency`` at a time, reported per field."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any

import requests

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError
from blinkops_provider.hooks._workers import WorkerPool
from blinkops_provider.models import FieldUpdate, TableField

__all__ = ["FieldUpdates", "check_concurrency", "run_batch"]


@dataclass
class FieldUpdates:
    """What :meth:`BlinkHook.update_table_fields` did, in the given order.

    :ivar updated: the fields as Blink stored them.
    :ivar failed: field name -> the error that update ended with.
    :ivar not_sent: fields never sent, because ``fail_fast`` stopped the batch.
    :ivar order: every field name, as given.
    """

    updated: list[TableField]
    failed: dict[str, BlinkApiError]
    not_sent: list[str]
    order: list[str]

    @property
    def ok(self) -> bool:
        """Whether every update was applied."""
        return not self.failed and not self.not_sent


def check_concurrency(value: Any) -> None:
    """:raises BlinkInputError: ``max_concurrency`` is not an integer from 1 to 32."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 32:
        raise BlinkInputError(f"max_concurrency must be an integer from 1 to 32, got {value!r}")


Put = Callable[..., TableField]
"""``put(name, update, session=...)``: one field update on the request path."""


def run_batch(
    batch: Sequence[tuple[str, FieldUpdate]],
    put: Put,
    new_session: Callable[[], requests.Session],
    *,
    max_concurrency: int,
    fail_fast: bool,
    log: logging.Logger | Any,
) -> FieldUpdates:
    """Send every update of ``batch`` through ``put``, ``max_concurrency`` at a time.

    One that fails does not stop the others unless ``fail_fast``: then no new update starts, and
    those in flight finish. Progress is logged as updates complete (``120/200 fields applied``).
    """
    outcome: dict[str, TableField | BlinkApiError] = {}
    queued = iter(batch)
    total, failures, step = len(batch), 0, max(1, len(batch) // 10)
    stopping = False
    with WorkerPool(min(max_concurrency, max(total, 1)), new_session, "blink-fields") as pool:
        pending: dict[Future[TableField], str] = {}

        def fill() -> None:
            while not stopping and len(pending) < max_concurrency:
                entry = next(queued, None)
                if entry is None:
                    return
                pending[pool.submit(put, *entry)] = entry[0]

        fill()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                name = pending.pop(future)
                try:
                    outcome[name] = future.result()
                except BlinkApiError as err:
                    outcome[name] = err
                    failures += 1
                    stopping = stopping or fail_fast
                if len(outcome) % step == 0 or len(outcome) == total:
                    failed = f", {failures} failed" if failures else ""
                    log.info("%d/%d fields applied%s", len(outcome) - failures, total, failed)
            fill()
    order = [name for name, _ in batch]
    done = [(name, outcome[name]) for name in order if name in outcome]
    return FieldUpdates(
        updated=[result for _, result in done if isinstance(result, TableField)],
        failed={name: result for name, result in done if isinstance(result, BlinkApiError)},
        not_sent=[name for name in order if name not in outcome],
        order=order,
    )
