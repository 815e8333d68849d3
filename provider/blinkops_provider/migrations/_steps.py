"""
How an approved plan is sent to Blink, in the order that can lose nothing.

Create the table (with its fields), add fields, change fields, change the table's display name or description, and
remove fields last. A failure before the removals sends no removal. Each batch is sent ``max_concurrency`` at a time
(``blinkops_provider.hooks._batch``); what Blink confirmed, Blink's names of the fields it added included, is
recorded, also when the apply is interrupted.

The plan speaks in actions; this module alone maps them to the hook's endpoints: ``create`` (the
table) to :meth:`~blinkops_provider.hooks.blink.BlinkHook.create_table`, an ``add`` against
Blink's fields to :meth:`~blinkops_provider.hooks.blink.BlinkHook.create_table_field`, a
``change`` (and an ``add`` planned against the record alone) to
:meth:`~blinkops_provider.hooks.blink.BlinkHook.update_table_field`, the table's ``change`` to
:meth:`~blinkops_provider.hooks.blink.BlinkHook.update_table`, and a ``remove`` to
:meth:`~blinkops_provider.hooks.blink.BlinkHook.delete_table_field`. The hook calls nothing back.

The batches' reports are merged, under the plan, into what the apply did to each declared field (:class:`ApplyResult`).
A backfill and a retype write into the rows through ``_data_steps``; this module says when they run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkBadRequestError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkNotFoundError,
    BlinkResponseError,
)
from blinkops_provider.hooks._batch import FieldUpdates, Send, run_batch, workers
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._backup import Backup, needs_backup, save_backup
from blinkops_provider.migrations._data_steps import Fill, Retype
from blinkops_provider.migrations._lock import SchemaRecord
from blinkops_provider.migrations._matching import field_body, field_update_of, without_checks
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan
from blinkops_provider.models import FieldUpdate, NewTable, TableField
from blinkops_provider.utils.states import Action, FieldOutcome
from blinkops_provider.utils.text import one_line, show


@dataclass
class ApplyResult(FieldUpdates):
    """
    Every declared field's outcome, keyed by the declared names.

    A :class:`~blinkops_provider.hooks.blink.FieldUpdates` (the same members and methods, read the same way) that also
    knows the plan it followed, so an outcome says ``added``, ``changed`` or ``removed`` where a batch says ``applied``.

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
    backup: str = ""
    """Where the apply saved what it changes and destroys, before its first write ("" when it wrote no backup)."""
    workflows: dict[str, list[str]] = field(default_factory=dict)
    """Per field, the ids of the Blink workflows its plan said the change breaks (#75)."""

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
        """
        Return Blink's name of each declared field where it is not the declared name, by declared name.

        Of a field this apply added (where Blink's answer or read gave it), and of one the plan found under another name
        (by its display name, or the record's note), whatever its outcome.
        """
        names = {row.field: row.blink_name for row in self.plan.fields if row.blink_name} if self.plan else {}
        names.update(self._added_names())
        return {name: names[name] for name in self.order if name in names}

    def _added_names(self) -> dict[str, str]:
        """Return Blink's name of each field this apply added, where Blink's answer or read gave it."""
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
        """
        Return what happened to a declared field.

        ``added``, ``changed``, ``removed``, ``retyped`` or ``unchanged`` (as planned, and confirmed by Blink or
        skipped),
        ``applied`` (confirmed, with no plan), ``failed`` (refused, or not sent) or ``unknown`` (sent, perhaps applied:
        in flight when interrupted, or answered with a 2xx that is not Blink's answer).
        """
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


class Steps:
    """
    One apply of ``plan`` to Blink through ``hook``, recorded in ``record``.

    :param recorded: the record's bodies when the plan was made.
    :param only_changed: leave out the fields the plan finds unchanged also when the plan was made
        against the record alone (Blink's fields unread): then, by default, they are sent again (an
        update is a full replacement, so that corrects a change made in Blink since). Against
        Blink's own fields, ``unchanged`` means Blink holds exactly the declaration: such a field
        is never sent, so a rerun writes nothing and Blink's record of who changed what stays.
    :param let_through: who let the plan through, for the record: ``{"approved_by",
        "approved_at"}``, or ``{"acknowledged": True}``.
    """

    def __init__(
        self,
        hook: BlinkHook,
        record: SchemaRecord,
        recorded: Mapping[str, Any],
        plan: SchemaPlan,
        only_changed: bool,
        max_concurrency: int,
        fail_fast: bool,
        let_through: Mapping[str, Any] | None = None,
        type_changes: Mapping[str, str] | None = None,
        *,
        held: list[TableField] | None = None,
    ) -> None:
        self.hook, self.record, self.recorded, self.plan = hook, record, recorded, plan
        self.held = held
        """The table's fields as Blink held them when the plan was made (None: unread): the backup saves them."""
        self.let_through = dict(let_through or {})
        self.max_concurrency, self.fail_fast = max_concurrency, fail_fast
        self.table_name = plan.table_plan.name or plan.table
        self.created = ""
        self.pool: ThreadPoolExecutor | None = None
        """The threads the batches are sent on, while :meth:`run` runs."""
        self.refused = {row.field: row.risk for row in plan.fields if row.action == Action.REFUSED}
        self.skipped = _skipped(plan, only_changed)
        self.unsent = frozenset(self.skipped)  # (looked up once per field)
        self.blink = {row.field: row.name_in_blink for row in plan.fields}
        """Blink's name of each declared field."""
        self.type_changes: Mapping[str, str] = type_changes or {}
        self.retyping: dict[str, str] = dict(record.retyping)
        """The new field of each retype in progress: the record's checkpoint."""
        self.backfilled: dict[str, int] = {}
        """The rows each declared field's backfill wrote."""
        self.not_found: dict[str, BlinkNotFoundError] = {}
        """Blink's names of the fields whose removal Blink answered with a 404."""
        self.backup: Backup | None = None
        """What the apply changes and destroys, saved before its first write (None: no backup written)."""

    def run(self) -> ApplyResult:
        """Send every step; the report of every field, after recording what Blink confirmed."""
        now = self.hook.clock.now
        self.backup = self._backup()  # before any write: what the apply changes and destroys, saved and read back
        done: list[FieldUpdates] = []
        try:
            with workers(self.max_concurrency) as self.pool:  # one set of threads (and connections) for every batch
                if self._send(done):  # the removals' 2xx confirmed by one read
                    done.append(self._confirm_removed(done.pop()))
        except BaseException as exc:
            partial = FieldUpdates.carried_by(exc)  # what the batch in flight knew
            so_far = self._report([*done, *([partial] if partial is not None else [])])
            self.complete(so_far, now(), raising=False).attach_to(exc)
            raise
        return self.complete(self._report(done), now(), raising=True)

    def _backup(self) -> Backup | None:
        """
        Return the backup a rollback of this apply reads (``_backup.save_backup``), None when none is written.

        None: the apply undoes nothing a rollback could (it only creates a table, or sends nothing), or there is no
        record to save beside and it destroys no value.

        :raises BlinkConfigurationError: it destroys values and there is no record to save them beside, or the
            backup cannot be written: nothing was sent.
        """
        if not needs_backup(self.plan) or (self.plan.unread and not self.plan.destroying):
            return None  # (planned against the record: a rollback, which reads Blink, could not read it either)
        if not self.record.location:
            if not self.plan.destroying:
                return None
            raise BlinkConfigurationError(
                f"plan {self.plan.fingerprint} destroys values (Blink has no undo) and there is no record_path to save "
                "them beside first: give record_path (a folder or object storage); nothing was sent"
            )
        prior = None
        if self.record.found:  # the record as it was before this apply: a rollback puts it back
            prior = {
                "fields": dict(self.recorded),
                "names": dict(self.record.names),
                "table_name": self.record.table_name,
                "approval": dict(self.record.approval),
            }
        return save_backup(self.hook, self.plan, self.record.location, self._held(), prior=prior)

    def _held(self) -> list[TableField]:
        """Return the table's fields as the plan read them, or (a plan made against the record) as the record holds."""
        if self.held is not None:
            return self.held
        made = [TableField.model_validate({"name": name, **body}) for name, body in self.recorded.items()]
        names = {field.name for field in made}
        return made + [TableField(name=row.name_in_blink) for row in self.plan.fields if row.name_in_blink not in names]

    def _send(self, done: list[FieldUpdates]) -> bool:
        """
        Send each step in turn, its report appended to ``done``.

        The table's creation, the adds, the changes, the table's own change, then the removals (only when every other
        step succeeded). Whether the removals were sent (their report last in ``done``, to confirm).
        """
        if self.plan.table_plan.action == Action.CREATE:
            done.append(self._create())
        done.append(self._add())
        self._backfill(done[-1])
        checks = self._checks_of_adds(done[-1])
        done[-1] = _checked_adds(done[-1], checks)
        done.append(self._change())
        self._change_table()
        return self._removing(done)

    def _removing(self, done: list[FieldUpdates]) -> bool:
        """
        Return the steps that remove a field, last, only when every other step succeeded.

        The retypes, then the removals (whether they were sent).
        """
        removals = [(row.field, FieldUpdate()) for row in self._rows(Action.REMOVE)]
        retypes = self._rows(Action.RETYPE)
        if any(not part.ok for part in done):
            why = "not sent: an earlier step of the apply failed, and a removal is only sent after every other step"
            done.append(_not_sent([name for name, _ in removals] + [row.field for row in retypes], why))
            return False
        done.append(self._retypes(retypes))
        if not done[-1].ok:
            why = "not sent: a retype failed, and a removal is only sent after every other step"
            done.append(_not_sent([name for name, _ in removals], why))
            return False
        done.append(self._batch(removals, lambda name, _: self._remove(self.blink[name]), "removed"))
        return True

    def _retypes(self, rows: Sequence[FieldPlan]) -> FieldUpdates:
        """Return each retype in turn (:meth:`_retype`): its rows copied on the apply's threads."""
        report = FieldUpdates(order=[row.field for row in rows])
        for row in rows:
            try:
                stored = self._retype(row)
            except BlinkApiError as err:
                report.failed[row.field] = err
                continue
            report.applied[row.field] = stored
            report.updated.append(stored)
        return report

    def _retype(self, row: FieldPlan) -> TableField:
        """
        Make a type change on the rows (``_data_steps.Retype``), resuming with the field the record's checkpoint names.

        The new field's name is checkpointed in the record as soon as it exists (:meth:`_new_field`), and dropped from
        it once the retype is done.
        """
        retype = Retype(
            self.hook,
            self.plan.ws_id,
            self.table_name,
            row,
            how=self.type_changes.get(row.field),
            new_field=self._new_field,
            remove=self._remove,
            workers=self.max_concurrency,
        )
        stored = retype.run(self.pool)  # type: ignore[arg-type]
        if retype.backfilled is not None:
            self.backfilled[row.field] = retype.backfilled
        self.retyping.pop(row.field, None)
        return stored

    def _new_field(self, declared: str, body: FieldUpdate) -> str:
        """
        Return the retype's new field.

        The one the record's checkpoint names, else the one shown as ``body``'s display name with its type (a retry
        after a lost checkpoint), else added now; its name is checkpointed in the record at once.
        """
        fields = self.hook.get_table_fields(self.plan.ws_id, self.table_name)
        named = self.record.retyping.get(declared)
        found = [f for f in fields if f.type == body.type and (f.name == named or f.display_name == body.display_name)]
        if found:
            self.hook.log.info("%s: resuming its retype with the new field %r", one_line(declared), found[0].name)
            name = str(found[0].name)
        else:
            made = self.hook.create_table_field(self.plan.ws_id, self.table_name, body)
            assert made is not None
            name = str(made.name)
        self.retyping[declared] = name
        self.record.write(
            self.recorded,
            now=self.hook.clock.now(),
            names=self.record.names,
            table_name=self.created or self.record.table_name,
            approval=self.let_through,
            retyping=self.retyping,
        )
        return name

    def _confirm_removed(self, removed: FieldUpdates) -> FieldUpdates:
        """
        Return the removals' report, each one Blink answered with a 2xx confirmed by one read of the table's fields.

        A field the read still lists was not removed (its 2xx was not Blink's answer: a proxy's page, say), so it is
        ``unknown``, never ``removed``.
        """
        if not removed.applied:
            return removed
        try:
            fields = self.hook.get_table_fields(self.plan.ws_id, self.table_name)
            listed: set[str | None] | None = {field.name for field in fields}
            why = ""
        except BlinkApiError as err:
            listed, why = None, f"Blink's fields read that confirms a removal failed: {err}"
        for name in [name for name in removed.applied if listed is None or self.blink[name] in listed]:
            del removed.applied[name]
            self._not_removed(removed, name, why)
        return removed

    def _not_removed(self, removed: FieldUpdates, name: str, why: str) -> None:
        """
        Report a removal the fields read contradicts (or could not confirm: ``why``).

        A 404 of a field Blink still lists failed; any other answer is ``unknown``.
        """
        held = self.blink[name]
        if not why and held in self.not_found:
            removed.failed[name] = self.not_found[held]
            return
        removed.unknown.append(name)
        removed.unconfirmed[name] = BlinkResponseError(
            why
            or f"its DELETE was answered with a 2xx (or a 404), but Blink's fields read still lists {held!r}: the "
            "answer was not Blink's, and the field and its values are still there"
        )

    def _backfill(self, added: FieldUpdates) -> None:
        """
        Fill the empty rows of each field the plan backfills.

        An added one under the name Blink gave it, once its add is confirmed; one turning ``required`` on, before its
        change is sent.
        """
        assert self.pool is not None
        for row in self.plan.fields:
            rows = (row.counts or {}).get("backfill")
            if row.backfill is None or not rows or row.action == Action.RETYPE:  # (a retype fills its new field)
                continue
            name = self.blink[row.field]
            if row.action == Action.ADD:
                stored = added.applied.get(row.field)
                if stored is None or not stored.name:
                    continue  # not added (its failure is reported), or not named: nothing to fill
                name = stored.name
            fill = Fill(self.hook, self.plan.ws_id, self.table_name, name, row.backfill, rows, self.max_concurrency)
            self.backfilled[row.field] = fill.run(self.pool)
            self.hook.log.info(
                "%s: backfilled %d row(s) with %s", one_line(row.field), self.backfilled[row.field], show(row.backfill)
            )

    def _change(self) -> FieldUpdates:
        """
        Send the fields to change (``PUT``), a batch.

        Every planned body but the adds Blink lacks and the fields skipped.
        """
        created = self.plan.against_blink  # (an add planned against the record alone is sent as the rest)
        changes = [
            (row.field, row.body)
            for row in self.plan.fields
            if row.body is not None
            and row.action != Action.RETYPE  # (its own step)
            and not (created and row.action == Action.ADD)
            and row.field not in self.unsent
        ]
        ws_id, put, blink = self.plan.ws_id, self.hook.update_table_field, self.blink
        what = "applied" if self.plan.unread else "changed"  # (against the record alone: sent as planned)
        return self._batch(changes, lambda name, body: put(ws_id, self.table_name, blink[name], body), what)

    def _change_table(self) -> None:
        """Send the table's own change (its display name or description), when the plan has one."""
        table, ws_id = self.plan.table_plan, self.plan.ws_id
        if table.action == Action.CHANGE and table.body is not None:
            self.hook.update_table(ws_id, self.table_name, table.body)
            self.hook.log.info(
                "Table %s/%s: %s changed", one_line(ws_id), one_line(self.table_name), ", ".join(table.members)
            )

    def _add(self) -> FieldUpdates:
        """Send the fields Blink lacks (``POST``), a batch; then find the ones Blink's answers left unnamed."""
        if self.created or not self.plan.against_blink:
            return FieldUpdates()  # (the table's creation added them; against the record, they are changes)
        adds = [(row.field, row.body) for row in self._rows(Action.ADD) if row.body is not None]
        ws_id, table = self.plan.ws_id, self.table_name
        post = self.hook.create_table_field
        bare = [(name, field_update_of(without_checks(body.to_body()))) for name, body in adds]
        added = self._batch(bare, lambda _, body: post(ws_id, table, body, read_unnamed=False), "added")
        return self._named(added, dict(adds))

    def _checks_of_adds(self, added: FieldUpdates) -> FieldUpdates:
        """
        Return the checks given to the fields just added (and filled) with ``required`` or ``is_unique``, a batch.

        A new field is added without its checks, its empty rows filled (:meth:`_backfill`), then given them: the order
        that works whatever Blink enforces on a table with rows.
        """
        checked = [
            (row.field, row.body)
            for row in self._rows(Action.ADD)
            if row.body is not None
            and (stored := added.applied.get(row.field)) is not None
            and stored.name
            and without_checks(row.body.to_body()) != row.body.to_body()
        ]
        names = {name: str(added.applied[name].name) for name, _ in checked}  # type: ignore[union-attr]
        ws_id, put = self.plan.ws_id, self.hook.update_table_field
        return self._batch(checked, lambda name, body: put(ws_id, self.table_name, names[name], body), "added")

    def _named(self, added: FieldUpdates, bodies: Mapping[str, FieldUpdate]) -> FieldUpdates:
        """
        Return the adds' report.

        Each field Blink's answer did not name found in one read of the table's fields (by its display name, shown
        once), however many there are.
        """
        unnamed = [name for name, stored in added.applied.items() if stored is None and name in bodies]
        if not unnamed:
            return added
        shown: dict[Any, list[TableField]] = {}
        for held in self.hook.get_table_fields(self.plan.ws_id, self.table_name):
            shown.setdefault(held.display_name, []).append(held)
        for name in unnamed:
            found = shown.get(bodies[name].display_name, [])
            if len(found) == 1:
                added.applied[name] = found[0]
                added.updated.append(found[0])
                continue
            del added.applied[name]  # a 2xx that names nothing, and a read that shows no one field: perhaps added
            added.unknown.append(name)
            added.unconfirmed[name] = BlinkResponseError(
                f"its POST's 2xx named no field, and Blink's fields read shows {len(found)} shown so "
                f"({bodies[name].display_name!r}): what was added cannot be told"
            )
        return added

    def _remove(self, name: str) -> None:
        """
        Remove Blink's field ``name``.

        A 2xx or a 404 (its DELETE was carried out and the answer lost, then the retry found nothing, or someone removed
        it since the plan) is a removal once the batch's one read of Blink's fields no longer lists it
        (:meth:`_confirm_removed`); anything else fails the field.
        """
        try:
            self.hook.delete_table_field(self.plan.ws_id, self.table_name, name)
        except BlinkNotFoundError as err:
            if err.status != 404:
                raise
            self.not_found[name] = err
            self.hook.log.info("%s: Blink answered 404 to its removal (confirmed by the fields read)", one_line(name))

    def _rows(self, action: str) -> list[FieldPlan]:
        return [row for row in self.plan.fields if row.action == action]

    def _batch(self, batch: Sequence[tuple[str, Any]], send: Send, what: str) -> FieldUpdates:
        if not batch:
            return FieldUpdates()
        limit, log = self.max_concurrency, self.hook.log
        return run_batch(
            batch, send, max_concurrency=limit, fail_fast=self.fail_fast, log=log, what=what, pool=self.pool
        )

    def _create(self) -> ApplyResult:
        """Create the table with its declared fields (one ``POST``); their names as Blink gave them."""
        table = self.plan.table_plan
        adds = [(row.field, row.body) for row in self._rows(Action.ADD) if row.body is not None]
        body = NewTable.model_validate({**(table.body or {}), "fields": [update for _, update in adds]})
        made = self.hook.create_table(self.plan.ws_id, body)
        self.table_name = self.created = made.name
        self.hook.log.info(
            "Created table %r in workspace %s (Blink named it %r)", body.display_name, self.plan.ws_id, made.name
        )
        shown = {field.display_name: field for field in self.hook.get_table_fields(self.plan.ws_id, made.name)}
        applied: dict[str, TableField | None] = {name: shown.get(update.display_name) for name, update in adds}
        updated = [f for f in applied.values() if f is not None]
        return ApplyResult(updated, order=[n for n, _ in adds], applied=applied, table_name=made.name)

    def _report(self, parts: Sequence[FieldUpdates]) -> ApplyResult:
        """Return every field's outcome, in the declared order, from the steps' reports."""
        refused: dict[str, BlinkApiError] = {
            name: BlinkBadRequestError(f"not sent: {why}") for name, why in self.refused.items()
        }
        # Sent as given, with neither Blink's fields nor a record to plan against: "applied", as Blink confirmed it.
        blind = bool(self.plan.unread) and not self.record.location
        order = [row.field for row in self.plan.fields]
        report = ApplyResult(failed=refused, order=order, plan=None if blind else self.plan, skipped=self.skipped)
        report.backfilled = self.backfilled
        report.backup = self.backup.location if self.backup is not None else ""
        report.workflows = self.plan.workflows_named
        return report.merge(parts)

    def complete(self, result: ApplyResult, now: Any, *, raising: bool) -> ApplyResult:
        """
        Return the report, after recording what Blink confirmed.

        A record that cannot be written fails the task (``raising``) or is logged (an interruption goes on up anyway);
        either way the report travels with the exception.
        """
        log = self.hook.log
        try:
            self._write(result, now)
        except Exception as err:
            if not raising:
                log.error("The schema record at %s was not updated: %s", self.record.location, type(err).__name__)
                return result
            if isinstance(err, BlinkConfigurationError):
                result.attach_to(err)
                raise
            why = str(err) if isinstance(err, BlinkInputError) else type(err).__name__
            error = BlinkApiError(
                f"the fields were sent, but the schema record at {self.record.location!r} could not be updated "
                f"({why}); the next plan would be wrong, so the task fails. A retry applies the schema again (safe: it "
                "plans against Blink first, updates are full replacements, and what was added or removed is found as "
                "it is) and records it"
            )
            result.attach_to(error)
            raise error from None
        return result

    def _write(self, result: ApplyResult, now: Any) -> None:
        """
        Write the record.

        It is written whenever it is missing or differs from what Blink confirmed (left alone when they agree, so a
        rerun that changes nothing keeps it as it is): the bodies Blink confirmed (an added field as Blink answered or
        listed it, with the defaults it filled in; a field left unchanged as Blink's read showed it), Blink's names
        where they are not the declared ones (a field found by its display name too, even when nothing was sent to
        Blink), and no entry for a field removed. Writing the record is not writing to Blink.
        """
        fields, names = self._content(result)
        table_name = self.created or self.record.table_name
        held = (
            (dict(self.recorded), dict(self.record.names), self.record.table_name)
            if self.record.found
            else ({}, {}, None)
        )
        unchanged = not result.applied and not self.backfilled and self.retyping == self.record.retyping
        if unchanged and (fields, names, table_name or None) == held:
            return  # the record already says what Blink confirmed (or there is nothing to say)
        self.record.write(
            fields,
            now=now,
            names=names,
            table_name=table_name,
            approval=self.let_through,
            backfilled=self.backfilled,
            retyping=self.retyping,
            backup=self.backup.location if self.backup is not None else "",
            workflows=self.plan.workflows_named,
        )

    def _content(self, result: ApplyResult) -> tuple[dict[str, Any], dict[str, str]]:
        """Return the record's fields and notes of Blink's names after this apply."""
        fields = dict(self.recorded)
        names = dict(self.record.names)
        for row in self.plan.fields:
            entry = self._recorded(row, result)
            if entry is None:
                continue
            body, given = entry
            if body is _GONE:
                fields.pop(row.field, None)
                names.pop(row.field, None)
                continue
            if body is not None:
                fields[row.field] = body
            if given and given != row.field:
                names[row.field] = given
        return fields, names

    def _recorded(self, row: FieldPlan, result: ApplyResult) -> tuple[Any, str] | None:
        """
        Return what the record takes of one row.

        Its body and Blink's name of it; ``_GONE`` for a field removed; None for nothing (not confirmed, and not seen
        unchanged in Blink's read).
        """
        if row.field in result.applied:
            if row.action == Action.REMOVE:
                return _GONE, ""
            stored = result.applied[row.field]
            given = getattr(stored, "name", None) if row.action in (Action.ADD, Action.RETYPE) else row.blink_name
            return _confirmed(row, stored), str(given or "")
        if row.field in self.unsent and not self.plan.unread and row.body is not None:
            return row.body.to_body(), row.blink_name  # Blink's read showed it holds exactly this: a baseline
        return None


def _skipped(plan: SchemaPlan, only_changed: bool) -> list[str]:
    """
    Return the fields not sent.

    Planned unchanged against Blink's fields (or, with ``only_changed``, against the record), and the tombstones of
    fields Blink no longer has.
    """
    return [
        row.field
        for row in plan.fields
        if row.action == Action.UNCHANGED and (row.body is None or only_changed or not plan.unread)
    ]


_GONE = object()
"""A record entry to drop: the field was removed."""


def _confirmed(row: FieldPlan, stored: TableField | None) -> dict[str, Any] | None:
    """
    Return what the record keeps of a field Blink confirmed.

    An added one as Blink answered or listed it (the defaults it filled in too), else the body sent (None: nothing
    sent).
    """
    if row.action in (Action.ADD, Action.RETYPE) and stored is not None:
        return field_body(stored)
    return row.body.to_body() if row.body is not None else None


def _checked_adds(added: FieldUpdates, checks: FieldUpdates) -> FieldUpdates:
    """Return the adds' report with the checks' outcome: an add whose checks Blink refused failed (its field stays)."""
    for name, err in checks.failed.items():
        added.applied.pop(name, None)
        added.failed[name] = BlinkApiError(f"added without its checks, then Blink refused them: {err}")
    for name in checks.unknown:
        added.applied.pop(name, None)
        added.unknown.append(name)
        added.unconfirmed[name] = checks.unconfirmed.get(name) or BlinkApiError("its checks' answer was not Blink's")
    for name, stored in checks.applied.items():
        if stored is not None:
            added.applied[name] = stored
    return added


def _not_sent(names: list[str], why: str) -> FieldUpdates:
    return FieldUpdates(failed={name: BlinkApiError(why) for name in names}, order=list(names))
