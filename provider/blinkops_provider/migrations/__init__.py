"""Schema migrations of Blink tables, through this front door: the declaration (:mod:`.declaration`),
how its entries are matched to Blink's fields (:mod:`.identity`), the plan and its risk rules
(:mod:`.plan`), the record of the last apply (:mod:`.record`), the table's lock (:mod:`.lock`,
kept by :mod:`.lockfiles`), the apply (:mod:`.apply`) and the order it sends in (:mod:`.steps`).
The operators orchestrate these; :class:`~blinkops_provider.hooks.blink.BlinkHook`
is the Blink API client they send through. ``blink-schema`` (:mod:`.cli`) lists and releases locks.
"""

from __future__ import annotations

from blinkops_provider.migrations.apply import apply_schema, approved_plan, declared_schema, plan_schema
from blinkops_provider.migrations.declaration import Declaration, read_declaration
from blinkops_provider.migrations.fleet import (
    REVIEW_POLICIES,
    check_review_policy,
    fleet_review,
    fleet_summary,
    let_through,
    review_needed,
)
from blinkops_provider.migrations.lock import (
    Holder,
    LockInfo,
    TableLock,
    force_unlock,
    held_locks,
    unlock_command,
)
from blinkops_provider.migrations.plan import (
    ADD,
    BASELINE,
    CHANGE,
    CREATE,
    RECORD_BASELINE,
    REFUSED,
    REMOVE,
    UNCHANGED,
    FieldPlan,
    SchemaPlan,
    TablePlan,
    differing_members,
    make_plan,
    plan_fields,
    plan_table,
)
from blinkops_provider.migrations.record import SchemaRecord, record_location
from blinkops_provider.migrations.report import ApplyReport, grouped, not_applied
from blinkops_provider.migrations.review import REJECTED_IN_REVIEW, fail_if_rejected, review_decision

__all__ = [
    "ADD",
    "BASELINE",
    "CHANGE",
    "CREATE",
    "RECORD_BASELINE",
    "REFUSED",
    "REJECTED_IN_REVIEW",
    "REMOVE",
    "REVIEW_POLICIES",
    "UNCHANGED",
    "ApplyReport",
    "Declaration",
    "FieldPlan",
    "Holder",
    "LockInfo",
    "SchemaPlan",
    "SchemaRecord",
    "TableLock",
    "TablePlan",
    "apply_schema",
    "approved_plan",
    "check_review_policy",
    "declared_schema",
    "differing_members",
    "fail_if_rejected",
    "fleet_review",
    "fleet_summary",
    "force_unlock",
    "grouped",
    "held_locks",
    "let_through",
    "make_plan",
    "not_applied",
    "plan_fields",
    "plan_schema",
    "plan_table",
    "read_declaration",
    "record_location",
    "review_decision",
    "review_needed",
    "unlock_command",
]
