"""What an apply of one table tells: one log line per field that was not left unchanged, the
summary its task pushes to XCom (on every way out, and what a fleet's summary reads), and the
error that ends a batch that did not apply every field."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

from blinkops_provider._states import FieldOutcome, TableOutcome
from blinkops_provider._text import one_line
from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkAuthError,
    BlinkInputError,
    BlinkLockedError,
    BlinkStalePlanError,
)
from blinkops_provider.migrations import ApplyResult
from blinkops_provider.retry_policy import batch_error

OUTCOMES = tuple(FieldOutcome)
"""A field's outcomes, in the order the summary line counts them."""

WHY_CHARS = 80
"""The most characters of one field's reason the task's final error shows (the log has it whole)."""

SHOWN_FIELDS = 20
"""The most fields the final error names one by one."""


def grouped(outcomes: dict[str, str]) -> dict[str, list[str]]:
    """Field names by outcome (``{"added": [...], "changed": [...], ...}``), in the declared order."""
    groups: dict[str, list[str]] = {}
    for name, outcome in outcomes.items():
        groups.setdefault(outcome, []).append(name)
    return groups


def _table_outcome(counts: Counter[str], exc: BaseException | None) -> str:
    """The table's outcome for a fleet: ``failed`` (a field failed, or unknown, or the task did),
    ``applied`` (a field sent), else ``unchanged``."""
    if exc is not None or counts[FieldOutcome.FAILED] or counts[FieldOutcome.UNKNOWN]:
        return TableOutcome.FAILED
    sent = (FieldOutcome.ADDED, FieldOutcome.CHANGED, FieldOutcome.REMOVED, FieldOutcome.RETYPED, FieldOutcome.APPLIED)
    return TableOutcome.APPLIED if any(counts[outcome] for outcome in sent) else TableOutcome.UNCHANGED


def _why(name: str, result: ApplyResult) -> str:
    """A field the batch did not apply, with why in a few words: ``'Tags' (404: not found)``."""
    unclear = result.unconfirmed.get(name)
    error = unclear or result.failed.get(name)
    if error is None:
        return f"{one_line(name)!r} ({'in flight when interrupted' if name in result.unknown else 'not sent'})"
    why = one_line(f"{error.status}: {error.message}" if error.status else str(error.message))
    why = f"unknown: {why}" if unclear is not None else why
    if isinstance(error, BlinkAuthError):  # the workspace and the role it lacks: said whole (#50 item 3)
        return f"{one_line(name)!r} ({why})"
    return f"{one_line(name)!r} ({why if len(why) <= WHY_CHARS else why[: WHY_CHARS - 1] + '…'})"


def not_applied(result: ApplyResult) -> BlinkApiError:
    """The error that ends a batch that did not apply every field: each field and why, and the
    class :func:`~blinkops_provider.retry_policy.batch_error` gives it (whether a retry helps)."""
    missing = [*result.failed, *result.not_sent, *result.unknown]
    more = f" and {len(missing) - SHOWN_FIELDS} more" if len(missing) > SHOWN_FIELDS else ""
    names = ", ".join(_why(name, result) for name in missing[:SHOWN_FIELDS]) + more
    return batch_error(f"{len(missing)} of {len(result.order)} field(s) not applied: {names}", result.failed.values())


@dataclass(frozen=True)
class ApplyReport:
    """The report of one table's apply, logged to ``log``."""

    ws_id: str
    table: str
    log: logging.Logger | Any
    fail_fast: bool = False

    def summary(
        self,
        result: ApplyResult,
        *,
        let_through: dict[str, Any] | None = None,
        exc: BaseException | None = None,
        rate_limited: int = 0,
    ) -> dict[str, Any]:
        """Log the outcome, keyed by the declared names: a summary line, then one line per field
        added, changed, failed or unknown (unchanged fields are counted, not listed); the XCom
        summary. Linear in the number of fields."""
        outcomes = result.outcomes()
        counts = Counter(outcomes.values())
        self._log_tally(result, counts)
        stopped = self._stopped_by(result, exc)
        failed = [
            failure
            for name in result.order
            if outcomes[name] != FieldOutcome.UNCHANGED
            and (failure := self._log_field(name, outcomes[name], result, stopped))
        ]
        if counts[FieldOutcome.UNCHANGED]:
            self.log.info("  (%d field(s) unchanged)", counts[FieldOutcome.UNCHANGED])
        named = {"names": result.names(), **({"table_name": result.table_name} if result.table_name else {})}
        named |= {"backfilled": dict(result.backfilled)} if result.backfilled else {}
        return {
            **self._head([name for name in result.order if name in result.applied], failed, list(result.unknown)),
            "outcomes": {name: str(outcome) for name, outcome in outcomes.items()},  # plain text: JSON
            **named,
            **self.fleet_facts(let_through, exc, _table_outcome(counts, exc), rate_limited),
        }

    def _log_tally(self, result: ApplyResult, counts: Counter[str]) -> None:
        """The summary line: ``Schema of ws/table: n of m fields applied (k changed, ...)``."""
        tally = ", ".join(f"{counts[word]} {word}" for word in OUTCOMES if counts[word])
        self.log.info(
            "Schema of %s/%s: %d of %d fields applied (%s)",
            one_line(self.ws_id),
            one_line(self.table),
            len(result.applied) + len(result.skipped),
            len(result.order),
            tally,
        )

    def failed(
        self,
        result: ApplyResult | None,
        *,
        let_through: dict[str, Any] | None = None,
        exc: BaseException,
        rate_limited: int = 0,
    ) -> dict[str, Any]:
        """The XCom of an apply that ``exc`` ended: what was known then (``result``, or what the
        exception carries), or an apply that sent nothing (stale, locked, unreachable)."""
        known = result or ApplyResult.carried_by(exc)
        if known is not None:
            return self.summary(known, let_through=let_through, exc=exc, rate_limited=rate_limited)
        outcome = TableOutcome.STALE if isinstance(exc, BlinkStalePlanError) else TableOutcome.FAILED
        return {**self._head([], [], []), "outcomes": {}, **self.fleet_facts(let_through, exc, outcome, rate_limited)}

    def _head(self, updated: list[str], failed: list[dict[str, Any]], unknown: list[str]) -> dict[str, Any]:
        return {"ws_id": self.ws_id, "table": self.table, "updated": updated, "failed": failed, "unknown": unknown}

    @staticmethod
    def fleet_facts(
        let_through: dict[str, Any] | None, exc: BaseException | None, outcome: str, rate_limited: int
    ) -> dict[str, Any]:
        """What a fleet's summary reads of an apply: its outcome, its rate-limit waits, who let its
        plan through (``approved_by`` and ``approved_at``, or ``acknowledged``), and why it failed
        (a provider error's scrubbed text)."""
        facts: dict[str, Any] = {"outcome": str(outcome), "rate_limited": rate_limited, **(let_through or {})}
        if exc is not None:
            shown = str(exc) if isinstance(exc, (BlinkApiError, BlinkInputError, BlinkLockedError)) else ""
            facts["error"] = f"{type(exc).__name__}: {shown}"[:2000].rstrip(": ")  # room for the unlock command
        return facts

    def _stopped_by(self, result: ApplyResult, exc: BaseException | None = None) -> str:
        """Why fields were left unsent: the key refused, ``fail_fast``, an earlier step's failure
        (an error of Blink's or the provider's), or an interruption (a timeout, a signal)."""
        auth = next((error for error in result.failed.values() if isinstance(error, BlinkAuthError)), None)
        if auth is not None:
            return "Blink refused the API key (401)" if auth.status != 403 else "the key lacks the workspace role (403)"
        if self.fail_fast:
            return "fail_fast stopped the batch"
        failed_step = isinstance(exc, (BlinkApiError, BlinkInputError))
        return "an earlier step of the apply failed" if failed_step else "the task was interrupted"

    def _log_field(self, name: str, outcome: str, result: ApplyResult, stopped: str) -> dict[str, Any] | None:
        """Log one field's line; a failed field's XCom entry (None for any other)."""
        if name in result.applied:
            self._log_applied(name, outcome, result)
            return None
        if outcome == FieldOutcome.UNKNOWN:
            unclear = result.unconfirmed.get(name)
            why = f"sent, but {unclear.message}" if unclear is not None else "in flight when the task was interrupted"
            self.log.warning("  %s: unknown: %s (perhaps applied; not recorded)", one_line(name), one_line(why))
            return None
        error = result.failed.get(name)
        status = error.status if error is not None else None
        message = str(error.message) if error is not None else f"not sent: {stopped}"
        if error is not None and error.details and error.details != error.message:
            message = f"{message} ({error.details})"
        self.log.error("  %s: failed%s: %s", one_line(name), f" with {status}" if status else "", one_line(message))
        return {"field": name, "status": status, "message": message}

    def _log_applied(self, name: str, outcome: str, result: ApplyResult) -> None:
        stored = result.applied[name]
        if outcome == FieldOutcome.REMOVED:
            self.log.info("  %s: removed, with its values", one_line(name))
            return
        if outcome == FieldOutcome.RETYPED and stored is not None:
            self.log.info("  %s: retyped to %s (Blink's name is now %r)", one_line(name), stored.type, stored.name)
            return
        if outcome == FieldOutcome.ADDED and stored is not None and stored.name != name:
            self.log.info(
                "  %s: added (%s, %r; Blink's name is %r)",
                one_line(name),
                stored.type,
                stored.display_name,
                stored.name,
            )
            return
        members = result.plan.members(name) if result.plan is not None else ()
        detail = f"; {', '.join(members)}" if members else ""
        if stored is None:
            self.log.info("  %s: %s%s (Blink confirmed it, 2xx, without showing it)", one_line(name), outcome, detail)
        else:
            self.log.info("  %s: %s (%s, %r%s)", one_line(name), outcome, stored.type, stored.display_name, detail)
