"""
The states of a migration, each named once.

What a plan does to a field or a table (:class:`Action`), what an apply did to a field (:class:`FieldOutcome`), what
became of a table in a fleet (:class:`TableOutcome`), and a review's answer (:class:`Decision`).

Each is a ``str`` Enum whose members are their values (``Action.ADD == "add"``, ``str()`` and
f-strings show ``add``): the XComs, records and log lines keep the same text and JSON, and a
member read back from an XCom compares equal to the string it was written as.
"""

from __future__ import annotations

from enum import StrEnum


class _State(StrEnum):
    """A state: a string, shown as its value (``str()`` and f-strings are the stdlib's)."""


class Action(_State):
    """What a plan does to a field (or, ``CREATE`` and ``CHANGE``, to the table)."""

    ADD = "add"
    CHANGE = "change"
    UNCHANGED = "unchanged"
    REFUSED = "refused"
    REMOVE = "remove"
    RETYPE = "retype"
    """A type change done as Blink says: a new field of the new type, the values copied, the old
    field removed, the new one given the old one's display name."""
    CREATE = "create"
    """The table's action when Blink does not have it and ``create_table=True``."""


FIELD_ACTIONS = (Action.ADD, Action.CHANGE, Action.UNCHANGED, Action.REFUSED, Action.REMOVE, Action.RETYPE)
"""The actions a plan gives a field."""

REMOVING = (Action.REMOVE, Action.RETYPE)
"""The actions that remove a field from Blink: they pass the removal gate (an approval in review,
or ``acknowledge_risks``)."""


class FieldOutcome(_State):
    """What an apply did to a declared field, in the order a summary line counts them."""

    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"
    RETYPED = "retyped"
    UNCHANGED = "unchanged"
    APPLIED = "applied"
    """Confirmed by Blink, with no plan to say how (sent blind)."""
    FAILED = "failed"
    UNKNOWN = "unknown"
    """Sent, perhaps applied, without Blink's answer."""


class TableOutcome(_State):
    """What became of a table in an apply, as a fleet's summary reads it."""

    APPLIED = "applied"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    STALE = "stale"
    REJECTED = "rejected"


class Decision(_State):
    """A review's answer: the options Airflow's review offers."""

    APPROVE = "Approve"
    REJECT = "Reject"


REJECTED_IN_REVIEW = "rejected in review: nothing was applied"
"""How a rejected review's message begins (the fleet's summary tells a rejection by it)."""
