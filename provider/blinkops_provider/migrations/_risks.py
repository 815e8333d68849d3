"""
The risk rules of a migration, in one table: which rows each change needs counted, and how it is judged with them.

A change that touches data is judged from the rows, counted, never from Blink's estimate (:data:`RISK_RULES`, one
entry per rule):

- a removal deletes the values of the rows that hold one (a field empty in every row loses nothing, and is not
  destructive);
- ``required`` turned on fails the rows without a value: refused unless the entry declares a ``backfill`` that fills
  them first; a new required field on a table with rows, likewise;
- ``is_unique`` turned on fails the rows whose values repeat: refused, the repeats named;
- an option dropped from a select orphans the rows that use it: destructive, counted;
- a reference moved to another table breaks the links, and ``required`` dropped loses a check: destructive, whatever
  the rows hold;
- a retype copies every value into a new field of the new type (``_conversions``): refused when a value does not
  convert (``copy``), or when the new field's checks would fail on the rows it will hold.

The planner drafts each field's :class:`Change`, asks :func:`needs_of` which rows to count (``_rows``), and
:func:`judge` judges each change with them: its risk (what a reviewer reads), its refusal, its counts, and whether it
is destructive, each read from the rules here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from blinkops_provider.migrations._conversions import conversion
from blinkops_provider.migrations._rows import FieldRows, Need, RowFacts
from blinkops_provider.utils.states import Action
from blinkops_provider.utils.text import show

SHOWN_REPEATS = 20
"""The most repeated (or unconverted) values a refusal names."""


@dataclass(frozen=True)
class Change:
    """
    One field's change as the planner drafted it, before its rows are judged.

    :ivar field: the declared name.
    :ivar name: Blink's name of the field (the key of its rows' values).
    :ivar action: ``add``, ``change``, ``retype`` or ``remove``.
    :ivar before: the field as Blink holds it, as a body (``{}`` for an add).
    :ivar after: the body sent (the new field of a retype; ``{}`` for a removal).
    :ivar backfill: the declared value that fills the field's empty rows (None: none).
    :ivar how: a retype's declared ``type_change`` (``copy`` or ``copy_or_empty``).
    """

    field: str
    name: str
    action: Action
    before: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    after: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    backfill: Any = None
    how: str | None = None


@dataclass(frozen=True)
class Judged:
    """
    A change judged with the rows.

    :ivar risk: why it is destructive, or what it does to the rows ("" when nothing).
    :ivar refusal: why it is refused ("" when it is not).
    :ivar counts: what was counted (the plan's XCom row shows them).
    :ivar destroys: whether it destroys values or a check (the plan's Destructive section).
    :ivar rows: a removal's rows that lose their values (counted, or Blink's estimate).
    """

    risk: str = ""
    refusal: str = ""
    counts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    destroys: bool = False
    rows: int | None = None


@dataclass(frozen=True)
class RiskRule:
    """
    One risk rule: when it applies to a change, which rows it needs counted, and how it judges them.

    :ivar name: what the rule is about, as a reviewer says it (``"required on"``).
    """

    name: str
    applies: Callable[[Change], bool]
    needs: Callable[[Change], Need | None]
    judges: Callable[[Change, RowFacts], Judged]


def attribute(body: Mapping[str, Any], name: str) -> Any:
    """Return one attribute of a field's body (None when unset)."""
    attributes = body.get("attributes")
    return attributes.get(name) if isinstance(attributes, Mapping) else None


def _turned_on(change: Change, check: str) -> bool:
    return attribute(change.after, check) is True and attribute(change.before, check) is not True


def options_removed(after: Mapping[str, Any], before: Mapping[str, Any]) -> list[Any]:
    """Return the options of a select that the change drops."""
    old, new = attribute(before, "options"), attribute(after, "options")
    kept = new if isinstance(new, list) else []
    return [option for option in old if option not in kept] if isinstance(old, list) else []


def _target(reference: Any) -> Any:
    return reference.get("table_name") if isinstance(reference, Mapping) else reference


def _reference_moves(change: Change) -> bool:
    old, new = attribute(change.before, "table_reference"), attribute(change.after, "table_reference")
    return old is not None and _target(new) != _target(old)  # the displayed field alone breaks nothing


# -- how each rule judges --------------------------------------------------------------------


def _removal_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge a removal: the rows that lose their values (a field empty in every row loses nothing)."""
    if facts.counted:
        filled = facts.field_rows(change.name).filled
        counts: dict[str, Any] = {"rows": facts.total, "with_value": filled}
        if not filled:
            said = f"holds no value in any of the {facts.total} rows (counted): nothing is lost"
            return Judged(risk=said, counts=counts, rows=0)
        return Judged(f"deletes values in {filled} of {facts.total} rows, permanently", "", counts, True, filled)
    rows = facts.estimate
    count = "an unknown number of rows (Blink does not say how many)" if rows is None else f"about {rows} rows"
    count = "no rows, by Blink's estimate (0)" if rows == 0 else count
    unread = f" (the rows could not be read: {facts.unread}; {'an estimate' if rows is not None else 'not counted'})"
    said = f"deletes its values in {count}{unread if facts.unread else ''}, permanently"
    counts = {"estimate": rows, **({"unread": facts.unread} if facts.unread else {})}
    return Judged(risk=said, counts=counts, destroys=True, rows=rows)


def _required_on_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge ``required`` turned on: the rows without a value, filled by a backfill or refused."""
    if not facts.counted:
        return Judged(f"required turned on (not checked: the rows could not be read: {facts.unread})", destroys=True)
    missing = facts.total - facts.field_rows(change.name).filled  # type: ignore[operator]
    counts: dict[str, Any] = {"rows": facts.total, "empty": missing}
    if not missing:
        return Judged(counts=counts)
    if change.backfill is not None:
        return Judged(counts={**counts, "backfill": missing})
    why = (
        f"required turned on, but {missing} of {facts.total} rows have no value (counted). Declare "
        '"backfill": VALUE on the entry to fill them first, fill them in Blink, or leave required out'
    )
    return Judged(refusal=why, counts=counts)


def _repeats_said(repeats: list[tuple[Any, int]]) -> str:
    named = ", ".join(f"{show(value)} ×{n}" for value, n in repeats[:SHOWN_REPEATS])  # noqa: RUF001
    return named + (f" and {len(repeats) - SHOWN_REPEATS} more" if len(repeats) > SHOWN_REPEATS else "")


def _repeated(repeats: list[tuple[Any, int]]) -> list[dict[str, Any]]:
    return [{"value": value, "rows": n} for value, n in repeats[:SHOWN_REPEATS]]


def _unique_on_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge ``is_unique`` turned on: the values that repeat, refused and named."""
    if not facts.counted:
        return Judged(f"is_unique turned on (not checked: the rows could not be read: {facts.unread})", destroys=True)
    repeats = facts.field_rows(change.name).repeats()
    counts: dict[str, Any] = {"rows": facts.total, "repeated": _repeated(repeats)}
    if not repeats:
        return Judged(counts=counts)
    why = (
        f"is_unique turned on, but {len(repeats)} value(s) repeat in {sum(n for _, n in repeats)} of {facts.total} "
        f"rows (counted): {_repeats_said(repeats)}. Make them unique in Blink first, or leave is_unique out"
    )
    return Judged(refusal=why, counts=counts)


def _options_dropped_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge options dropped from a select: the rows that use them are orphaned."""
    removed = options_removed(change.after, change.before)
    if not facts.counted:
        said = ", ".join(map(show, removed))
        why = f"the rows could not be read: {facts.unread}" if facts.unread else "the rows were not read"
        return Judged(f"options removed: {said} (values using them are orphaned; not counted: {why})", destroys=True)
    use = facts.field_rows(change.name).options
    counts = {"rows": facts.total, "options": {str(option): use[option] for option in removed}}
    used = [option for option in removed if use[option]]
    if not used:
        return Judged(counts=counts)
    said = ", ".join(f"{show(option)} (in {use[option]} of {facts.total} rows)" for option in used)
    return Judged(f"options removed: {said}: those values are orphaned", counts=counts, destroys=True)


def _reference_moved_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge a reference moved to another table: its links break, whatever the rows hold."""
    old, new = attribute(change.before, "table_reference"), attribute(change.after, "table_reference")
    return Judged(f"the reference moves from {show(old)} to {show(new)} (existing links break)", destroys=True)


def _required_dropped_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge ``required`` turned off: a check is lost."""
    return Judged("required dropped (a check is lost: rows may be saved without a value)", destroys=True)


def _add_judged(change: Change, facts: RowFacts) -> Judged:
    """Judge a new field on a table with rows: required needs a backfill, and a unique one cannot take one."""
    backfill, total = change.backfill, facts.total
    if attribute(change.after, "is_unique") is True and backfill is not None and (total or 0) > 1:
        why = (
            f"a new unique field whose backfill {show(backfill)} would be written into all {total} rows "
            "(counted): they would repeat. Leave is_unique out, or the backfill"
        )
        return Judged(refusal=why, counts={"rows": total})
    if attribute(change.after, "required") is True and facts.counted and total and backfill is None:
        why = (
            f"a new required field on a table with {total} rows (counted): each would be left without a "
            'value. Declare "backfill": VALUE on the entry to fill them, or leave required out'
        )
        return Judged(refusal=why, counts={"rows": total, "empty": total})
    return Judged(counts={"rows": total, "backfill": total} if facts.counted and backfill is not None else {})


def _retype_judged(change: Change, facts: RowFacts) -> Judged:
    """
    Judge a declared type change.

    Refused when the pair never converts, when the rows cannot be read, (``copy``) when a value does not convert, when
    the new field is ``required`` and rows would be left empty with no ``backfill``, or when it is ``is_unique`` and
    converted values repeat; else the retype's steps, counted. (The new field gets its checks after the copy.)
    """
    source, target = str(change.before.get("type")), str(change.after.get("type"))
    said, converter = conversion(source, target)
    if converter is None:
        return Judged(refusal=f"{source} → {target} is {said} (docs: Migrating data, the conversion table)")
    if not facts.counted:
        return _uncounted_retype(f"{source} → {target}", said, facts)
    counted = facts.field_rows(change.name)
    failing = counted.unconverted()
    failed = sum(n for _, n in failing)
    named = ", ".join(f"{show(value)}" + (f" ×{n}" if n > 1 else "") for value, n in failing[:SHOWN_REPEATS])  # noqa: RUF001
    counts: dict[str, Any] = {
        "rows": facts.total,
        "with_value": counted.filled,
        "converted": counted.filled - failed,
        "not_converted": failed,
        "values": [{"value": value, "rows": n} for value, n in failing[:SHOWN_REPEATS]],
    }
    refusals = []
    if failed and change.how == "copy":
        refusals.append(
            f"{source} → {target}: {failed} of {counted.filled} rows hold a value that does not convert ({said}): "
            f'{named}. Fix them in Blink, or declare "type_change": "copy_or_empty" to leave those rows empty'
        )
    empties = facts.total - (counted.filled - failed)  # type: ignore[operator]
    refusals += _retype_checks(change, counted, facts, empties, counts)
    if refusals:
        return Judged(refusal="; ".join(refusals), counts=counts)
    lost = f" ({failed} do not convert: {named}; left empty)" if failed else ""
    filled = f", fill {empties} empty rows with {show(change.backfill)}" if counts.get("backfill") else ""
    checks = [check for check in ("required", "is_unique") if attribute(change.after, check) is True]
    checked = f", then give it {' and '.join(checks)}" if checks else ""
    risk = (
        f"{source} → {target}: add the new field, copy {counted.filled - failed} rows{lost}{filled}{checked}, remove "
        f"the old field, give the new one its display name. Workflows that use the field's name {change.name!r} must "
        "use Blink's new name"
    )
    return Judged(risk=risk, counts=counts, destroys=True)


def _retype_checks(
    change: Change, counted: FieldRows, facts: RowFacts, empties: int, counts: dict[str, Any]
) -> list[str]:
    """
    Return why the new field's checks would fail on the rows it will hold after the copy (``counts`` told of them).

    ``required``: rows left empty (empty now, or not converting) with no ``backfill``; ``is_unique``: converted values
    that repeat, or a backfill written into more than one row.
    """
    refusals = []
    if attribute(change.after, "required") is True and empties:
        counts["empty"] = empties
        if change.backfill is None:
            refusals.append(
                f"the new field is required, but {empties} of {facts.total} rows would have no value after the copy "
                '(counted). Declare "backfill": VALUE on the entry to fill them, fill them in Blink first, or declare '
                '"required": false'
            )
        else:
            counts["backfill"] = empties
    if attribute(change.after, "is_unique") is True:
        repeats = counted.repeats()
        counts["repeated"] = _repeated(repeats)
        if repeats:
            refusals.append(
                f"the new field is unique, but {len(repeats)} converted value(s) repeat in "
                f"{sum(n for _, n in repeats)} of {facts.total} rows (counted): {_repeats_said(repeats)}. Make them "
                'unique in Blink first, or declare "is_unique": false'
            )
        if change.backfill is not None and empties > 1:
            refusals.append(
                f"the new field is unique, but its backfill {show(change.backfill)} would be written into {empties} "
                "rows"
            )
    return refusals


def _uncounted_retype(pair: str, said: str, facts: RowFacts) -> Judged:
    """Judge a retype whose rows were not read: refused where Blink does not serve the read (a copy needs it)."""
    if facts.unread:
        why = f"the rows could not be read: {facts.unread}"
        return Judged(refusal=f"{pair} copies the values, which needs the rows read ({why})")
    return Judged(risk=f"{pair}: {said}; not counted yet", destroys=True)


def _retype_need(change: Change) -> Need:
    """Return a retype's need: every value of the field, tried against the new type."""
    options = tuple(attribute(change.after, "options") or ())
    retype = (str(change.before.get("type")), str(change.after.get("type")), options)
    return Need(change.name, filled=True, unique=attribute(change.after, "is_unique") is True, retype=retype)


def _is(action: Action) -> Callable[[Change], bool]:
    return lambda change: change.action == action


RISK_RULES: tuple[RiskRule, ...] = (
    RiskRule("removal", _is(Action.REMOVE), lambda change: Need(change.name, filled=True), _removal_judged),
    RiskRule("retype", _is(Action.RETYPE), _retype_need, _retype_judged),
    RiskRule(
        "add",
        _is(Action.ADD),
        lambda change: (
            Need(change.name) if attribute(change.after, "required") is True or change.backfill is not None else None
        ),
        _add_judged,
    ),
    RiskRule(
        "option dropped",
        lambda change: change.action == Action.CHANGE and bool(options_removed(change.after, change.before)),
        lambda change: Need(
            change.name,
            options=tuple(options_removed(change.after, change.before)),
            multi=change.after.get("type") == "multi-select",
        ),
        _options_dropped_judged,
    ),
    RiskRule(
        "reference moved",
        lambda change: change.action == Action.CHANGE and _reference_moves(change),
        lambda change: None,
        _reference_moved_judged,
    ),
    RiskRule(
        "required on",
        lambda change: change.action == Action.CHANGE and _turned_on(change, "required"),
        lambda change: Need(change.name, filled=True),
        _required_on_judged,
    ),
    RiskRule(
        "is_unique on",
        lambda change: change.action == Action.CHANGE and _turned_on(change, "is_unique"),
        lambda change: Need(change.name, unique=True),
        _unique_on_judged,
    ),
    RiskRule(
        "required dropped",
        lambda change: (
            change.action == Action.CHANGE
            and attribute(change.before, "required") is True
            and attribute(change.after, "required") is not True
        ),
        lambda change: None,
        _required_dropped_judged,
    ),
)
"""Every risk rule, in the order a change's risks and refusals are said."""


def needs_of(changes: Iterable[Change]) -> list[Need]:
    """Return what the rules need counted of the rows for ``changes``: one need per field, merged."""
    needs: dict[str, Need] = {}
    for change in changes:
        for rule in RISK_RULES:
            need = rule.needs(change) if rule.applies(change) else None
            if need is not None:
                needs[need.name] = needs[need.name].merged(need) if need.name in needs else need
    return list(needs.values())


def judge(change: Change, facts: RowFacts) -> Judged:
    """Return ``change`` judged with the rows by every rule that applies: risks and refusals joined, counts merged."""
    judged = [rule.judges(change, facts) for rule in RISK_RULES if rule.applies(change)]
    counts: dict[str, Any] = {}
    for one in judged:
        counts.update(one.counts)
    return Judged(
        risk="; ".join(one.risk for one in judged if one.risk),
        refusal="; ".join(one.refusal for one in judged if one.refusal),
        counts=counts,
        destroys=any(one.destroys for one in judged),
        rows=next((one.rows for one in judged if change.action == Action.REMOVE), None),
    )


MENTIONS = "mentions"
"""A workflow step breaks when it mentions the field at all: a removal, a retype (the old name goes), an option
dropped."""
WRITES = "writes"
"""A step breaks when it writes the field: ``is_unique`` turned on."""
ADDS_ROWS = "adds rows"
"""A step breaks when it adds whole rows without the field: ``required`` turned on (by a change, or an add)."""


def step_breaks(change: Change) -> tuple[str, ...]:
    """
    Return how a workflow step that uses the table breaks under ``change`` (:data:`MENTIONS`, ...).

    None for a change that steps cannot notice (a display name, a description: steps name fields by their names).
    """
    kinds = []
    if change.action in (Action.REMOVE, Action.RETYPE) or (
        change.action == Action.CHANGE and options_removed(change.after, change.before)
    ):
        kinds.append(MENTIONS)
    if change.action in (Action.ADD, Action.CHANGE) and _turned_on(change, "required"):
        kinds.append(ADDS_ROWS)
    if change.action == Action.CHANGE and _turned_on(change, "is_unique"):
        kinds.append(WRITES)
    return tuple(kinds)
