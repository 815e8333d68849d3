"""What an apply did to each declared field: the client's batches, merged, under the plan."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider._states import FieldOutcome
from blinkops_provider.exceptions import BlinkApiError
from blinkops_provider.migrations._plan import SchemaPlan
from blinkops_provider.models import TableField


@dataclass
class ApplyResult:
    """Every declared field's outcome, keyed by the declared names.

    :ivar updated: the fields as Blink stored them (those whose answer could be read).
    :ivar failed: field name -> the error it ended with (refused by the plan, by Blink, or not sent).
    :ivar not_sent: fields never sent (``fail_fast`` stopped a batch, or it was interrupted).
    :ivar order: every field name, as declared.
    :ivar applied: field name -> the field as Blink stored it, or None when the call returns
        nothing (a removal).
    :ivar unknown: fields sent, perhaps applied, without Blink's answer: in flight when the apply
        was interrupted, or in ``unconfirmed``.
    :ivar unconfirmed: field name -> why its 2xx answer confirmed nothing (not Blink's JSON, or an
        add that Blink's fields read then did not show once).
    :ivar plan: the plan the apply followed; None when it was sent blind (neither Blink's fields nor
        a record to plan against), so that a confirmed field is ``applied``.
    :ivar skipped: fields not sent because the plan found them unchanged.
    :ivar table_name: Blink's name of the table this apply created (empty when it created none).
    """

    updated: list[TableField] = field(default_factory=list)
    failed: dict[str, BlinkApiError] = field(default_factory=dict)
    not_sent: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    applied: dict[str, TableField | None] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    unconfirmed: dict[str, BlinkApiError] = field(default_factory=dict)
    plan: SchemaPlan | None = None
    skipped: list[str] = field(default_factory=list)
    table_name: str = ""

    def merge(self, parts: Iterable[Any]) -> ApplyResult:
        """Add the outcomes of ``parts``: the client's batch reports (``BlinkHook.run_batch``) or
        other results, which have the same members."""
        for part in parts:
            self.updated += part.updated
            self.failed.update(part.failed)
            self.not_sent += part.not_sent
            self.applied.update(part.applied)
            self.unknown += part.unknown
            self.unconfirmed.update(part.unconfirmed)
            self.table_name = self.table_name or getattr(part, "table_name", "")
        return self

    def names(self) -> dict[str, str]:
        """Blink's name of each field this apply added, by declared name (where Blink's answer or
        read gave it)."""
        return {
            name: stored.name
            for name in self.order
            if (stored := self.applied.get(name)) is not None
            and stored.name
            and self.outcome(name) == FieldOutcome.ADDED
        }

    @property
    def ok(self) -> bool:
        """Whether every field was applied, or skipped as unchanged."""
        return not self.failed and not self.not_sent and not self.unknown

    def outcome(self, name: str) -> str:
        """What happened to a declared field: ``added``, ``changed``, ``removed`` or ``unchanged``
        (as planned, and confirmed by Blink or skipped), ``applied`` (confirmed, with no plan),
        ``failed`` (refused, or not sent) or ``unknown`` (sent, perhaps applied: in flight when
        interrupted, or answered with a 2xx that is not Blink's answer)."""
        return self._outcome(name, set(self.skipped), set(self.unknown))

    def outcomes(self) -> dict[str, str]:
        """Every declared field's :meth:`outcome`, in the declared order (linear in the fields)."""
        skipped, unknown = set(self.skipped), set(self.unknown)
        return {name: self._outcome(name, skipped, unknown) for name in self.order}

    def attach_to(self, exc: BaseException) -> None:
        """Let ``exc``, which interrupted the apply, carry what was known then (:meth:`carried_by`)."""
        exc.field_updates = self  # type: ignore[attr-defined]

    @staticmethod
    def carried_by(exc: BaseException) -> ApplyResult | None:
        """What an interrupted apply knew (the fields in flight then as ``unknown``), or None."""
        carried = getattr(exc, "field_updates", None)
        return carried if isinstance(carried, ApplyResult) else None

    def _outcome(self, name: str, skipped: set[str], unknown: set[str]) -> str:
        if name in self.applied:
            return self.plan.done(name) if self.plan is not None else FieldOutcome.APPLIED
        if name in skipped:
            return "unchanged"
        return FieldOutcome.UNKNOWN if name in unknown else FieldOutcome.FAILED
