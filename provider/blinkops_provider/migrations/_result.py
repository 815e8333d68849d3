"""What an apply did to each declared field: the batches' reports, merged, under the plan."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider._batch import FieldUpdates
from blinkops_provider._states import FieldOutcome
from blinkops_provider.migrations._plan import SchemaPlan


@dataclass
class ApplyResult(FieldUpdates):
    """Every declared field's outcome, keyed by the declared names: a
    :class:`~blinkops_provider.hooks.blink.FieldUpdates` (the same members and methods, read the
    same way) that also knows the plan it followed, so an outcome says ``added``, ``changed`` or
    ``removed`` where a batch says ``applied``.

    A field is ``failed`` when it was refused by the plan, by Blink, or not sent; ``unconfirmed``
    holds also an add that Blink's fields read then did not show once.

    :ivar plan: the plan the apply followed; None when it was sent blind (neither Blink's fields nor
        a record to plan against), so that a confirmed field is ``applied``.
    :ivar skipped: fields not sent because the plan found them unchanged.
    :ivar table_name: Blink's name of the table this apply created (empty when it created none).
    :ivar backfilled: the rows each declared field's backfill filled, by declared name.
    :ivar let_through: what let the plan through: ``{"approved_by", "approved_at"}`` (a person's
        Approve), ``{"acknowledged": True}`` (``acknowledge_risks``), or nothing.
    """

    plan: SchemaPlan | None = None
    skipped: list[str] = field(default_factory=list)
    table_name: str = ""
    backfilled: dict[str, int] = field(default_factory=dict)
    let_through: dict[str, Any] = field(default_factory=dict)
    """The rows each declared field's backfill filled."""

    def merge(self, parts: Iterable[FieldUpdates]) -> ApplyResult:
        """Add the outcomes of ``parts``: the batches' reports, or other results."""
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
        """Blink's name of each declared field where it is not the declared name, by declared name:
        of a field this apply added (where Blink's answer or read gave it), and of one the plan found
        under another name (by its display name, or the record's note), whatever its outcome."""
        names = {row.field: row.blink_name for row in self.plan.fields if row.blink_name} if self.plan else {}
        names.update(self._added_names())
        return {name: names[name] for name in self.order if name in names}

    def _added_names(self) -> dict[str, str]:
        """Blink's name of each field this apply added, where Blink's answer or read gave it."""
        classify = self._classifier()
        return {
            name: stored.name
            for name in self.order
            if (stored := self.applied.get(name)) is not None
            and stored.name
            and classify(name) in (FieldOutcome.ADDED, FieldOutcome.RETYPED)
        }

    @property
    def ok(self) -> bool:
        """Whether every field was applied, or skipped as unchanged."""
        return super().ok

    def outcome(self, name: str) -> str:
        """What happened to a declared field: ``added``, ``changed``, ``removed`` or ``unchanged``
        (as planned, and confirmed by Blink or skipped), ``applied`` (confirmed, with no plan),
        ``failed`` (refused, or not sent) or ``unknown`` (sent, perhaps applied: in flight when
        interrupted, or answered with a 2xx that is not Blink's answer)."""
        return super().outcome(name)

    def _classifier(self) -> Callable[[str], str]:
        batch, skipped, plan, applied = super()._classifier(), set(self.skipped), self.plan, self.applied

        def classify(name: str) -> str:
            if name in applied and plan is not None:
                return plan.done(name)
            if name not in applied and name in skipped:
                return FieldOutcome.UNCHANGED
            return batch(name)

        return classify
