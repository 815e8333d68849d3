"""
What a plan knows of the table's rows, and the risk rules judged with them.

A change that touches data is judged from the rows, counted, never from Blink's estimate:

- a removal deletes the values of the rows that hold one (a field empty in every row loses
  nothing, and is not destructive);
- ``required`` turned on fails the rows without a value: refused unless the entry declares a
  ``backfill`` that fills them first; a new required field on a table with rows, likewise;
- ``is_unique`` turned on fails the rows whose values repeat: refused, the repeats named;
- an option dropped from a select orphans the rows that use it: destructive, counted;
- a reference moved to another table breaks the links, and ``required`` dropped loses a check:
  destructive, whatever the rows hold.

The rows are read once per plan (:func:`read_rows`: one walk of the table, or one request per
dropped option of a single select, counted from Blink's ``total``). Where Blink does not serve the
records read (404, 403, 405), a removal falls back to the table's ``estimated_records_count`` and
says so, and a check turned on stays destructive, said as not checked: a plan never says a count
it did not make.

How a value converts from one field type to another, for a retype (``"type_change"``).

One rule per pair of Blink's 18 user types: the value converts always, converts when it parses
(each value that does not is counted and named), or the pair is refused. :func:`table` renders the
rules as the Markdown table of ``docs/migrating_data.md`` (a test keeps the two the same).

Types whose values Blink publishes no form for (a reference's link, a user, a status, a button,
an attachment, an SLA, a vendor) convert to and from nothing: their values would be guessed.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from blinkops_provider._inputs import show
from blinkops_provider.exceptions import BlinkAuthError, BlinkReadUnavailableError
from blinkops_provider.models import FieldType

USER_TYPES = tuple(kind.value for kind in FieldType)
"""The field types a user can create, as Blink's tool lists them."""

OPAQUE = frozenset({"reference", "status", "user", "button", "attachment", "sla", "vendor", "vendors"})
"""Types whose values Blink publishes no form for: refused both ways."""
TEXT = frozenset({"text", "long-text"})
RISK_LEVELS = ("Low", "Medium", "High", "Critical")
"""The risk levels (the sandbox's and Blink's UI's)."""

Converter = Callable[[Any, Sequence[Any]], tuple[bool, Any]]


def _as_text(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, bool):
        return True, "true" if value else "false"
    if isinstance(value, list):
        return True, ", ".join(str(_as_text(item, options)[1]) for item in value)
    return True, str(value)


def _as_number(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, bool):
        return True, int(value)
    if isinstance(value, (int, float)):
        return True, value
    try:
        number = float(str(value).strip())
    except ValueError:
        return False, None
    if not math.isfinite(number):
        return False, None
    return True, int(number) if number.is_integer() and "." not in str(value) else number


def _as_checkbox(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    said = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if isinstance(value, bool):
        return True, value
    found = said.get(str(value).strip().lower())
    return (found is not None), found


def _as_risk(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    found = next((level for level in RISK_LEVELS if str(value).strip().lower() == level.lower()), None)
    return (found is not None), found


def _as_option(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    if isinstance(value, list):
        return (len(value) == 1 and value[0] in options), (value[0] if len(value) == 1 else None)
    shown = value if isinstance(value, str) else str(value)
    return (shown in options), shown


def _as_options(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    items = value if isinstance(value, list) else [value]
    return all(item in options for item in items), list(items)


def _as_list(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    return True, list(value) if isinstance(value, list) else [value]


def _as_date(value: Any, options: Sequence[Any]) -> tuple[bool, Any]:
    text = str(value).strip()
    try:
        dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
    except ValueError:
        return False, None
    return True, text


_SCALARS = TEXT | {"number", "duration", "risk-level", "checkbox", "single-select", "date"}
_RULES: dict[str, tuple[frozenset[str], str, Converter]] = {
    # target: (the sources it takes, how, the converter)
    "text": (_SCALARS | {"multi-select", "list"}, "as text (a list joined with ', ')", _as_text),
    "long-text": (_SCALARS | {"multi-select", "list"}, "as text (a list joined with ', ')", _as_text),
    "number": (TEXT | {"duration", "checkbox"}, "a number (text that is one; true 1, false 0)", _as_number),
    "duration": (TEXT | {"number"}, "a number (text that is one)", _as_number),
    "checkbox": (TEXT | {"number"}, "true/false, yes/no or 1/0", _as_checkbox),
    "risk-level": (TEXT | {"single-select"}, "one of Low, Medium, High, Critical", _as_risk),
    "single-select": (TEXT | {"risk-level", "number", "multi-select", "list"}, "one of the new options", _as_option),
    "multi-select": (TEXT | {"single-select", "risk-level", "list"}, "each among the new options", _as_options),
    "list": (TEXT | {"single-select", "risk-level", "number", "multi-select"}, "as a list", _as_list),
    "date": (TEXT, "an ISO 8601 date (YYYY-MM-DD, or with a time)", _as_date),
}


def rule(source: str, target: str) -> tuple[str, Converter | None]:
    """Return how a ``source`` value becomes a ``target`` one, and the converter (None: refused, and why)."""
    if source == target:
        return "the same type: not a retype", None
    for kind in (source, target):
        if kind in OPAQUE:
            return f"refused: Blink publishes no form of a {kind} value", None
        if kind not in USER_TYPES:
            return f"refused: {kind!r} is not a type a user can create", None
    sources, how, convert = _RULES.get(target, (frozenset(), "", _as_text))
    if source not in sources:
        return f"refused: a {source} value has no {target} form", None
    return how, convert


def convert(value: Any, source: str, target: str, options: Sequence[Any] = ()) -> tuple[bool, Any]:
    """Return ``value`` of a ``source`` field as a ``target`` one: ``(True, converted)``, or ``(False, None)``."""
    _, converter = rule(source, target)
    return converter(value, options) if converter is not None else (False, None)


def table() -> str:
    """
    Return the rules as a Markdown table.

    A row per source type, a column per target type; ``·`` the same type, ``✗`` refused, else a number into the list of
    ways below it.
    """
    ways: list[str] = []
    rows = []
    for source in USER_TYPES:
        cells = []
        for target in USER_TYPES:
            how, converter = rule(source, target)
            if source == target:
                cells.append("·")
            elif converter is None:
                cells.append("✗")
            else:
                ways += [] if how in ways else [how]
                cells.append(str(ways.index(how) + 1))
        rows.append(f"| {source} | {' | '.join(cells)} |")
    head = ["| from \\ to | " + " | ".join(USER_TYPES) + " |", "|---" * (len(USER_TYPES) + 1) + "|"]
    return "\n".join([*head, *rows, "", *(f"{n}. {how}" for n, how in enumerate(ways, start=1))])


SHOWN_REPEATS = 20
"""The most repeated values a refusal of ``is_unique`` names."""


def empty(value: Any) -> bool:
    """
    Return whether a record's value counts as empty.

    Missing, null, ``""`` or an empty list (Blink does not publish which it stores; all three are read as empty).
    """
    return value is None or value == "" or value == []


@dataclass(frozen=True)
class Need:
    """What the plan must know of one field's rows: ``name`` is Blink's name of the field."""

    name: str
    filled: bool = False
    unique: bool = False
    options: tuple[Any, ...] = ()
    multi: bool = False
    retype: tuple[str, str, tuple[Any, ...]] | None = None
    """For a retype: the field's type, the new type, and the new field's options."""

    @property
    def by_total(self) -> bool:
        """Whether Blink's ``total`` answers the need (no need of what only the rows' values tell)."""
        return not (self.filled or self.unique or self.retype or (self.options and self.multi))


@dataclass
class Tally:
    """One field's rows, counted: how many hold a value, the repeated values, the dropped options' use."""

    filled: int = 0
    values: Counter[str] = field(default_factory=Counter)
    shown: dict[str, Any] = field(default_factory=dict)
    options: Counter[Any] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    """For a retype: the values that do not convert (by ``repr``), with their rows."""

    def unconverted(self) -> list[tuple[Any, int]]:
        """Return the values that do not convert, the most held first."""
        held = sorted(self.failed.items(), key=lambda item: (-item[1], item[0]))  # (not the walk's order)
        return [(self.shown[key], n) for key, n in held]

    def repeats(self) -> list[tuple[Any, int]]:
        """Return the values held by more than one row, the most held first."""
        held = sorted(self.values.items(), key=lambda item: (-item[1], item[0]))  # (not the walk's order)
        return [(self.shown[key], n) for key, n in held if n > 1]


@dataclass(frozen=True)
class RowFacts:
    """
    The table's rows as the plan counted them.

    :ivar total: the rows counted (None: the rows could not be read, ``unread`` says why).
    :ivar estimate: Blink's ``estimated_records_count`` (None: Blink does not say).
    """

    total: int | None = None
    tallies: Mapping[str, Tally] = field(default_factory=dict)
    unread: str = ""
    estimate: int | None = None

    @property
    def counted(self) -> bool:
        return self.total is not None

    def of(self, name: str) -> Tally:
        return self.tallies.get(name) or Tally()


NOTHING_READ = RowFacts()
"""No row read: nothing in the plan needed them."""


def count_row(tallies: Mapping[str, Tally], needs: Sequence[Need], record: Mapping[str, Any]) -> None:
    """Count one row for every need (``tallies`` by the needs' names)."""
    for need in needs:
        value = record.get(need.name)
        if not empty(value):
            _count(tallies[need.name], need, value)


def _count(counted: Tally, need: Need, value: Any) -> None:
    """
    One row's value, counted as the need asks.

    For a retype, the value is tried against the new type first: one that does not convert is counted among the
    failures, and the repeats (``is_unique``) are those of the converted values, which the new field will hold.
    """
    counted.filled += 1
    if need.retype is not None:
        converts, converted = convert(value, *need.retype)
        if not converts:
            key = repr(value)
            counted.failed[key] += 1
            counted.shown.setdefault(key, value)
            return
        value = converted
    if need.unique:
        key = repr(_as_compared(value))
        counted.values[key] += 1
        counted.shown.setdefault(key, value)
    if need.options:
        held = value if isinstance(value, list) else [value]
        counted.options.update(option for option in need.options if option in held)


def _as_compared(value: Any) -> Any:
    """Return a value as a unique check compares it: a whole number the same whether held as 1 or 1.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def read_rows(hook: Any, ws_id: str, table: str, needs: Sequence[Need], estimate: int | None) -> RowFacts:
    """
    Return the rows the needs ask about.

    Counted from Blink's ``total`` (one request per option) when no need asks what only the rows' values tell, else by
    one walk of the table. Blink not serving the read (404, 403, 405) gives facts that say why, with the estimate.
    """
    if not needs:
        return NOTHING_READ
    try:
        total, tallies = 0, {need.name: Tally() for need in needs}
        if all(need.by_total for need in needs):
            total = hook.count_records(ws_id, table)
            for need in needs:
                for option in need.options:
                    tallies[need.name].options[option] = hook.count_records(ws_id, table, {need.name: option})
        else:
            for record in hook.iter_records(ws_id, table):  # one pass, counting every need
                total += 1
                count_row(tallies, needs, record)
    except (BlinkReadUnavailableError, BlinkAuthError) as err:
        return _unreadable(err, estimate)
    return RowFacts(total, tallies, estimate=estimate)


def _unreadable(err: BlinkReadUnavailableError | BlinkAuthError, estimate: int | None) -> RowFacts:
    """Facts that say why the rows could not be read (a 401 is not that: it goes on up)."""
    if isinstance(err, BlinkAuthError) and err.status != 403:
        raise err
    why = "no role to read them" if err.status == 403 else "not served"
    return RowFacts(unread=f"{err.status}: {why}", estimate=estimate)


def removal_said(facts: RowFacts, name: str) -> tuple[str, int | None, bool]:
    """Return a removal's risk, its rows, and whether it loses anything (a field empty in every row does not)."""
    if facts.counted:
        filled = facts.of(name).filled
        if not filled:
            return f"holds no value in any of the {facts.total} rows (counted): nothing is lost", 0, False
        return f"deletes values in {filled} of {facts.total} rows, permanently", filled, True
    rows = facts.estimate
    count = "an unknown number of rows (Blink does not say how many)" if rows is None else f"about {rows} rows"
    count = "no rows, by Blink's estimate (0)" if rows == 0 else count
    unread = f" (the rows could not be read: {facts.unread}; {'an estimate' if rows is not None else 'not counted'})"
    return f"deletes its values in {count}{unread if facts.unread else ''}, permanently", rows, True


@dataclass(frozen=True)
class Judged:
    """A change judged with the rows: why it is destructive (""), why refused (""), what was counted."""

    risk: str = ""
    refusal: str = ""
    counts: Mapping[str, Any] = field(default_factory=dict)


def judge_change(
    after: Mapping[str, Any], before: Mapping[str, Any], name: str, facts: RowFacts, backfill: Any = None
) -> Judged:
    """Return the risk rules of a change (``after`` the body sent, ``before`` Blink's field), with the rows."""
    risks, refusals, counts = _options_removed(after, before, name, facts)
    risks += _reference_moved(after, before)
    for check, said in (("required", _required_on), ("is_unique", _unique_on)):
        if _member(after, check) is True and _member(before, check) is not True:
            risk, refusal, counted = said(name, facts, backfill)
            risks += [risk] if risk else []
            refusals += [refusal] if refusal else []
            counts.update(counted)
    if _member(before, "required") is True and _member(after, "required") is not True:
        risks.append("required dropped (a check is lost: rows may be saved without a value)")
    return Judged("; ".join(risks), "; ".join(refusals), counts)


def judge_add(update_body: Mapping[str, Any], facts: RowFacts, backfill: Any = None) -> Judged:
    """Return a new field: required on a table with rows needs a backfill."""
    counts: dict[str, Any] = {}
    if facts.counted and backfill is not None:
        counts["backfill"] = facts.total
    if _member(update_body, "is_unique") is True and backfill is not None and (facts.total or 0) > 1:
        why = (
            f"a new unique field whose backfill {show(backfill)} would be written into all {facts.total} rows "
            "(counted): they would repeat. Leave is_unique out, or the backfill"
        )
        return Judged(refusal=why, counts={"rows": facts.total})
    if _member(update_body, "required") is True and facts.counted and facts.total and backfill is None:
        why = (
            f"a new required field on a table with {facts.total} rows (counted): each would be left without a "
            'value. Declare "backfill": VALUE on the entry to fill them, or leave required out'
        )
        return Judged(refusal=why, counts={"rows": facts.total, "empty": facts.total})
    return Judged(counts={"rows": facts.total, **counts} if counts else {})


def _required_on(name: str, facts: RowFacts, backfill: Any) -> tuple[str, str, dict[str, Any]]:
    if not facts.counted:
        return f"required turned on (not checked: the rows could not be read: {facts.unread})", "", {}
    missing = facts.total - facts.of(name).filled  # type: ignore[operator]
    counts: dict[str, Any] = {"rows": facts.total, "empty": missing}
    if not missing:
        return "", "", counts
    if backfill is not None:
        counts["backfill"] = missing
        return "", "", counts
    why = (
        f"required turned on, but {missing} of {facts.total} rows have no value (counted). Declare "
        '"backfill": VALUE on the entry to fill them first, fill them in Blink, or leave required out'
    )
    return "", why, counts


def _unique_on(name: str, facts: RowFacts, backfill: Any) -> tuple[str, str, dict[str, Any]]:
    if not facts.counted:
        return f"is_unique turned on (not checked: the rows could not be read: {facts.unread})", "", {}
    repeats = facts.of(name).repeats()
    counts: dict[str, Any] = {
        "rows": facts.total,
        "repeated": [{"value": v, "rows": n} for v, n in repeats[:SHOWN_REPEATS]],
    }
    if not repeats:
        return "", "", counts
    named = ", ".join(f"{show(value)} ×{n}" for value, n in repeats[:SHOWN_REPEATS])  # noqa: RUF001
    more = f" and {len(repeats) - SHOWN_REPEATS} more" if len(repeats) > SHOWN_REPEATS else ""
    rows = sum(n for _, n in repeats)
    why = (
        f"is_unique turned on, but {len(repeats)} value(s) repeat in {rows} of {facts.total} rows (counted): "
        f"{named}{more}. Make them unique in Blink first, or leave is_unique out"
    )
    return "", why, counts


def _options_removed(
    after: Mapping[str, Any], before: Mapping[str, Any], name: str, facts: RowFacts
) -> tuple[list[str], list[str], dict[str, Any]]:
    removed = options_removed(after, before)
    if not removed:
        return [], [], {}
    if not facts.counted:
        said = ", ".join(map(show, removed))
        why = f"the rows could not be read: {facts.unread}" if facts.unread else "the rows were not read"
        return [f"options removed: {said} (values using them are orphaned; not counted: {why})"], [], {}
    use = facts.of(name).options
    counts = {"rows": facts.total, "options": {str(option): use[option] for option in removed}}
    used = [option for option in removed if use[option]]
    if not used:
        return [], [], counts
    said = ", ".join(f"{show(option)} (in {use[option]} of {facts.total} rows)" for option in used)
    return [f"options removed: {said}: those values are orphaned"], [], counts


def options_removed(after: Mapping[str, Any], before: Mapping[str, Any]) -> list[Any]:
    """Return the options of a select that the change drops."""
    old, new = _member(before, "options"), _member(after, "options")
    kept = new if isinstance(new, list) else []
    return [option for option in old if option not in kept] if isinstance(old, list) else []


def _reference_moved(after: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    old_ref, new_ref = _member(before, "table_reference"), _member(after, "table_reference")
    if old_ref is not None and _target(new_ref) != _target(old_ref):  # the displayed field alone breaks nothing
        return [f"the reference moves from {show(old_ref)} to {show(new_ref)} (existing links break)"]
    return []


def _target(reference: Any) -> Any:
    return reference.get("table_name") if isinstance(reference, Mapping) else reference


def _member(body: Mapping[str, Any], attribute: str) -> Any:
    attributes = body.get("attributes")
    return attributes.get(attribute) if isinstance(attributes, Mapping) else None


def needs_of(rows: Iterable[Any], backfills: Mapping[str, Any]) -> list[Need]:
    """Return what each planned row needs to know of the rows (``rows``: the schema-only plan's field rows)."""
    return [need for row in rows if (need := _need(row, backfills)) is not None]


def _need(row: Any, backfills: Mapping[str, Any]) -> Need | None:
    body = row.body.to_body() if row.body is not None else {}
    if row.action == "remove":
        return Need(row.name_in_blink, filled=True)
    if row.action == "retype":
        return _retype_need(row, body)
    if row.action == "add":
        return Need(row.name_in_blink) if _member(body, "required") is True or row.field in backfills else None
    return _change_need(row, body) if row.action == "change" else None


def _sides(values: Iterable[tuple[str, Any, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the attributes that differ, before and after, from a plan row's ``values``."""
    changed = [(m.split(".", 1)[1], b, a) for m, b, a in values if m.startswith("attributes.")]
    return {m: b for m, b, _ in changed}, {m: a for m, _, a in changed}


def _retype_need(row: Any, body: Mapping[str, Any]) -> Need:
    """Return a retype's need: every value of the field, tried against the new type."""
    types = next((before, after) for member, before, after in row.values if member == "type")
    retype = (str(types[0]), str(types[1]), tuple(_member(body, "options") or ()))
    return Need(row.name_in_blink, filled=True, unique=_member(body, "is_unique") is True, retype=retype)


def _change_need(row: Any, body: Mapping[str, Any]) -> Need | None:
    """Return a change's need: the checks it turns on, and the options it drops."""
    before, after = _sides(row.values)
    on = [check for check in ("required", "is_unique") if after.get(check) is True and before.get(check) is not True]
    dropped = options_removed({"attributes": after}, {"attributes": before}) if "options" in after else []
    if not (on or dropped):
        return None
    multi = body.get("type") == "multi-select"
    return Need(row.name_in_blink, "required" in on, "is_unique" in on, tuple(dropped), multi)


def judge_retype(
    name: str, before: Mapping[str, Any], after: Mapping[str, Any], facts: RowFacts, how: str, backfill: Any = None
) -> Judged:
    """
    Return a declared type change.

    Refused when the pair never converts, when the rows cannot be read, (``copy``) when a value does not convert, when
    the new field is ``required`` and rows would be left empty with no ``backfill``, or when it is ``is_unique`` and
    converted values repeat; else the retype's plan, counted. (The new field gets its checks after the copy.)
    """
    source, target = str(before.get("type")), str(after.get("type"))
    said, converter = rule(source, target)
    if converter is None:
        return Judged(refusal=f"{source} → {target} is {said} (docs: Migrating data, the conversion table)")
    if not facts.counted:
        return _uncounted_retype(f"{source} → {target}", said, facts)
    counted = facts.of(name)
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
    if failed and how == "copy":
        refusals.append(
            f"{source} → {target}: {failed} of {counted.filled} rows hold a value that does not convert ({said}): "
            f'{named}. Fix them in Blink, or declare "type_change": "copy_or_empty" to leave those rows empty'
        )
    empties = facts.total - (counted.filled - failed)  # type: ignore[operator]
    refusals += _retype_checks(after, counted, facts, empties, backfill, counts)
    if refusals:
        return Judged(refusal="; ".join(refusals), counts=counts)
    lost = f" ({failed} do not convert: {named}; left empty)" if failed else ""
    filled = f", fill {empties} empty rows with {show(backfill)}" if counts.get("backfill") else ""
    checks = [check for check in ("required", "is_unique") if _member(after, check) is True]
    checked = f", then give it {' and '.join(checks)}" if checks else ""
    risk = (
        f"{source} → {target}: add the new field, copy {counted.filled - failed} rows{lost}{filled}{checked}, remove "
        f"the old field, give the new one its display name. Workflows that use the field's name {name!r} must use "
        "Blink's new name"
    )
    return Judged(risk=risk, counts=counts)


def _retype_checks(
    after: Mapping[str, Any], counted: Tally, facts: RowFacts, empties: int, backfill: Any, counts: dict[str, Any]
) -> list[str]:
    """
    Return why the new field's checks would fail on the rows it will hold after the copy (``counts`` told of them).

    ``required``: rows left empty (empty now, or not converting) with no ``backfill``; ``is_unique``: converted values
    that repeat, or a backfill written into more than one row.
    """
    refusals = []
    if _member(after, "required") is True and empties:
        counts["empty"] = empties
        if backfill is None:
            refusals.append(
                f"the new field is required, but {empties} of {facts.total} rows would have no value after the copy "
                '(counted). Declare "backfill": VALUE on the entry to fill them, fill them in Blink first, or declare '
                '"required": false'
            )
        else:
            counts["backfill"] = empties
    if _member(after, "is_unique") is True:
        repeats = counted.repeats()
        counts["repeated"] = [{"value": v, "rows": n} for v, n in repeats[:SHOWN_REPEATS]]
        if repeats:
            named = ", ".join(f"{show(value)} ×{n}" for value, n in repeats[:SHOWN_REPEATS])  # noqa: RUF001
            more = f" and {len(repeats) - SHOWN_REPEATS} more" if len(repeats) > SHOWN_REPEATS else ""
            refusals.append(
                f"the new field is unique, but {len(repeats)} converted value(s) repeat in "
                f"{sum(n for _, n in repeats)} of {facts.total} rows (counted): {named}{more}. Make them unique in "
                'Blink first, or declare "is_unique": false'
            )
        if backfill is not None and empties > 1:
            refusals.append(
                f"the new field is unique, but its backfill {show(backfill)} would be written into {empties} rows"
            )
    return refusals


def _uncounted_retype(pair: str, said: str, facts: RowFacts) -> Judged:
    """
    Return a retype whose rows were not read.

    Planned, to be counted (the first look), or refused (Blink does not serve the read: a copy needs it).
    """
    if facts.unread:
        why = f"the rows could not be read: {facts.unread}"
        return Judged(refusal=f"{pair} copies the values, which needs the rows read ({why})")
    return Judged(risk=f"{pair}: {said}; not counted yet")
