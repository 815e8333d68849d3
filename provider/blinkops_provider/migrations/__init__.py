"""Schema migrations of Blink tables: plan, review, apply, fleets and locks.

The public names are below (``__all__``); the docs' guides use them (see the API reference). The
operators are the usual way in: :class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator`
plans (``plan_only``) and applies, and the example DAGs add the review. ``blink-schema`` lists and
releases locks. The private modules hold the parts: the declaration (``_declaration``), how its
entries are matched to Blink's fields (``_identity``), the plan and its risk rules (``_plan``), the
record of the last apply (``_record``), the table's lock (``_lock``, kept by ``_lockfiles``), the
apply (``_apply``) and the order it sends in (``_steps``), the fleet's review (``_fleet``,
``_review``) and the apply's report (``_report``).
"""

from __future__ import annotations

from blinkops_provider.migrations._apply import apply_schema, declared_schema, plan_schema
from blinkops_provider.migrations._fleet import (
    check_review_policy,
    fleet_review,
    fleet_summary,
    let_through,
    review_needed,
)
from blinkops_provider.migrations._lock import force_unlock, held_locks
from blinkops_provider.migrations._record import SchemaRecord, record_location
from blinkops_provider.migrations._review import fail_if_rejected, review_decision

__all__ = [
    "SchemaRecord",
    "apply_schema",
    "check_review_policy",
    "declared_schema",
    "fail_if_rejected",
    "fleet_review",
    "fleet_summary",
    "force_unlock",
    "held_locks",
    "let_through",
    "plan_schema",
    "record_location",
    "review_decision",
    "review_needed",
]

# What the operators use besides the public names (they import nothing below this front door):
# re-exported for them, not part of the public API.
from blinkops_provider.migrations._apply import approved_plan as approved_plan
from blinkops_provider.migrations._declaration import Declaration as Declaration
from blinkops_provider.migrations._declaration import read_declaration as read_declaration
from blinkops_provider.migrations._lock import Holder as Holder
from blinkops_provider.migrations._report import ApplyReport as ApplyReport
from blinkops_provider.migrations._report import grouped as grouped
from blinkops_provider.migrations._report import not_applied as not_applied
from blinkops_provider.migrations._result import ApplyResult as ApplyResult
