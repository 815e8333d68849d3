"""
How a batch of calls to Blink is scheduled: ``max_concurrency`` at a time, reported per field.

The hook's :meth:`~blinkops_provider.hooks.blink.BlinkHook.update_table_fields` and the
migrations' sender (``migrations._steps``) each hand it their endpoint calls; it calls nothing
else, so neither calls back into the other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self

from blinkops_provider.exceptions import BlinkApiError, BlinkAuthError, BlinkResponseError
from blinkops_provider.models import TableField
from blinkops_provider.utils.states import FieldOutcome

PROGRESS_FROM = 20
"""The smallest batch whose progress is logged on the way (every 10%); a smaller one logs its end."""


@dataclass
class FieldUpdates:
    """
    What :meth:`BlinkHook.update_table_fields` did, keyed by the declared field names.

    :ivar updated: the fields as Blink stored them (those whose answer could be read).
    :ivar failed: field name -> the error that update ended with.
    :ivar not_sent: fields never sent (``fail_fast`` stopped the batch, or it was interrupted).
    :ivar order: every field name, as declared.
    :ivar applied: field name -> the field as Blink stored it, or None when the call returns
        nothing (a removal, or an add whose answer did not name the field).
    :ivar unknown: fields sent, and perhaps applied, without Blink's answer: in flight when the
        batch was interrupted (a timeout, a signal), or answered with a 2xx that is not Blink's
        JSON (see ``unconfirmed``).
    :ivar unconfirmed: field name -> the
        :class:`~blinkops_provider.exceptions.BlinkResponseError` of a 2xx answer that is not
        Blink's (a proxy's HTML page, an empty or truncated body, a 204, a JSON list...): it says
        nothing of what Blink did, so the field is ``unknown``, never applied.
    """

    updated: list[TableField] = field(default_factory=list)
    failed: dict[str, BlinkApiError] = field(default_factory=dict)
    not_sent: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    applied: dict[str, TableField | None] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    unconfirmed: dict[str, BlinkApiError] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every update was applied."""
        return not self.failed and not self.not_sent and not self.unknown

    def outcome(self, name: str) -> str:
        """
        Return what happened to a field.

        ``applied`` (confirmed by Blink), ``failed`` (refused, or not sent) or ``unknown`` (in flight when interrupted,
        or a 2xx that is not Blink's answer).
        """
        return self._classifier()(name)

    def outcomes(self) -> dict[str, str]:
        """Return every declared field's :meth:`outcome`, in the declared order (linear in the fields)."""
        classify = self._classifier()
        return {name: classify(name) for name in self.order}

    def attach_to(self, exc: BaseException) -> None:
        """Let ``exc``, which interrupted the batch, carry what was known then (see :meth:`carried_by`)."""
        exc.field_updates = self  # type: ignore[attr-defined]

    @classmethod
    def carried_by(cls, exc: BaseException) -> Self | None:
        """
        Return what was known when ``exc`` interrupted a batch (a task timeout, a signal, a failed record).

        With the fields in flight then as ``unknown``; None for any other exception, or one that carries another kind of
        report.
        """
        carried = getattr(exc, "field_updates", None)
        return carried if isinstance(carried, cls) else None

    def _classifier(self) -> Callable[[str], str]:
        """Return the function that tells a field's outcome (the sets it looks in built once)."""
        unknown, applied = set(self.unknown), self.applied

        def classify(name: str) -> str:
            if name in applied:
                return FieldOutcome.APPLIED
            return FieldOutcome.UNKNOWN if name in unknown else FieldOutcome.FAILED

        return classify


Send = Callable[[str, Any], Any]
"""``send(name, body)``: one endpoint call for one field (each thread has its own session); it
returns the field as Blink stored it, or None when the call returns nothing."""


def run_batch(
    batch: Sequence[tuple[str, Any]],
    send: Send,
    *,
    max_concurrency: int,
    fail_fast: bool,
    log: logging.Logger | Any,
    what: str = "applied",
    pool: ThreadPoolExecutor | None = None,
) -> FieldUpdates:
    """
    Send every update of ``batch`` through ``send``, ``max_concurrency`` at a time.

    On the threads of ``pool`` (:func:`workers`, which several batches share so that each thread keeps its session and
    its connections), or of a pool of the batch's own.

    One that fails does not stop the others unless ``fail_fast``: then no new update starts, and
    those in flight finish. A 401 or 403 stops the batch the same way, whatever ``fail_fast``
    says: every other update would be refused too. Every outcome is keyed by the declared name,
    whatever the server echoes. Any exception of a worker is that field's failure, as a typed
    error. Progress is logged as updates complete (``120/200 fields applied``; ``what`` names the
    batch's kind: ``added``, ``changed``, ``removed``).

    An exception that interrupts the batch (a task timeout, a signal, Ctrl-C) goes on up,
    carrying what is known so far (:meth:`FieldUpdates.carried_by`), the fields in flight as
    ``unknown``; the calls not started are dropped and those in flight are not awaited.
    """
    batch_run = _Batch(batch, send, max_concurrency, fail_fast, log, what)
    if pool is not None:
        return batch_run.run(pool)
    with workers(min(max_concurrency, max(len(batch), 1))) as own:
        return batch_run.run(own)


@contextmanager
def workers(limit: int) -> Iterator[ThreadPoolExecutor]:
    """
    Up to ``limit`` threads for the batches sent in the ``with`` block, started as needed.

    On the way out they finish; when an exception interrupts the block, the calls not started are dropped and those in
    flight are not awaited.
    """
    pool = ThreadPoolExecutor(limit, thread_name_prefix="blink-fields")
    whole = False
    try:
        yield pool
        whole = True
    finally:
        pool.shutdown(wait=whole, cancel_futures=True)


class _Batch:
    """One run of :func:`run_batch`: what is in flight, and each field's outcome so far."""

    def __init__(
        self, batch: Sequence[tuple[str, Any]], send: Send, limit: int, fail_fast: bool, log: Any, what: str
    ) -> None:
        self.what = what
        self.queued = iter(batch)
        self.order = [name for name, _ in batch]
        self.send, self.limit, self.fail_fast, self.log = send, limit, fail_fast, log
        self.outcome: dict[str, TableField | BlinkApiError | None] = {}
        self.unclear = 0
        self.pending: dict[Future[TableField], str] = {}
        self.failures = 0
        self.stopping = self.refused = False
        # progress at most every 10% of a batch of PROGRESS_FROM fields or more; a smaller batch logs the end only
        self.step = -(-len(self.order) // 10) if len(self.order) >= PROGRESS_FROM else len(self.order) or 1

    def run(self, pool: ThreadPoolExecutor) -> FieldUpdates:
        try:
            self.fill(pool)
            while self.pending:
                finished, _ = wait(self.pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    self.settle(self.pending.pop(future), _finished_update(future))
                self.fill(pool)
        except BaseException as exc:
            self.report().attach_to(exc)
            raise
        return self.report()

    def fill(self, pool: ThreadPoolExecutor) -> None:
        while not self.stopping and len(self.pending) < self.limit:
            entry = next(self.queued, None)
            if entry is None:
                return
            self.pending[pool.submit(self.send, *entry)] = entry[0]

    def settle(self, name: str, result: TableField | BlinkApiError | None) -> None:
        self.outcome[name] = result
        total, done = len(self.order), len(self.outcome)
        if isinstance(result, BlinkApiError):
            unclear = _unconfirmed(result)
            self.unclear += unclear
            self.failures += not unclear
            self.stopping = self.stopping or self.fail_fast
        if isinstance(result, BlinkAuthError) and not self.refused:
            self.refused = self.stopping = True  # every other update would be refused the same way
            check = (
                ""
                if result.status == 403
                else "; check the connection's API key (password) and its header name (extra header_name)"
            )
            self.log.error(
                "%s: no further field is sent (%d already in flight, whose answers are awaited; %d not sent)%s",
                result.refusal(),
                len(self.pending),
                total - done - len(self.pending),
                check,
            )
        if done % self.step == 0 or done == total:  # (a smaller batch: its last one only)
            failed = f", {self.failures} failed" if self.failures else ""
            failed += f", {self.unclear} unknown (a 2xx that is not Blink's answer)" if self.unclear else ""
            self.log.info("%d/%d fields %s%s", done - self.failures - self.unclear, total, self.what, failed)

    def report(self) -> FieldUpdates:
        in_flight = set(self.pending.values())
        failed, applied, unconfirmed = self._outcomes()
        return FieldUpdates(
            updated=[result for result in applied.values() if result is not None],
            failed=failed,
            not_sent=[name for name in self.order if name not in self.outcome and name not in in_flight],
            order=self.order,
            applied=applied,
            unknown=[name for name in self.order if name in in_flight or name in unconfirmed],
            unconfirmed=unconfirmed,
        )

    def _outcomes(self) -> tuple[dict[str, BlinkApiError], dict[str, TableField | None], dict[str, BlinkApiError]]:
        """
        Return the fields done, in the declared order.

        Those that failed, those Blink confirmed, and those answered with a 2xx that is not Blink's answer.
        """
        failed: dict[str, BlinkApiError] = {}
        applied: dict[str, TableField | None] = {}
        unconfirmed: dict[str, BlinkApiError] = {}
        for name in self.order:
            if name in self.outcome:
                result = self.outcome[name]
                if isinstance(result, BlinkApiError):
                    (unconfirmed if _unconfirmed(result) else failed)[name] = result
                else:
                    applied[name] = result
        return failed, applied, unconfirmed


def _unconfirmed(result: Any) -> bool:
    """Return whether a call's outcome is a 2xx whose body is not Blink's answer: sent, perhaps applied."""
    return isinstance(result, BlinkResponseError) and result.status is not None and 200 <= result.status < 300


def _finished_update(future: Future[TableField]) -> TableField | BlinkApiError | None:
    """
    Return a finished update.

    The stored field (None when the call returns nothing), or the error, typed, whatever the worker raised (a 2xx that
    is not Blink's answer among them).
    """
    try:
        return future.result()
    except BlinkApiError as err:
        return err
    except Exception as err:  # a bug, or a library's surprise: this field's failure, not the batch's
        return BlinkApiError(f"the update failed in the provider ({type(err).__name__})")
