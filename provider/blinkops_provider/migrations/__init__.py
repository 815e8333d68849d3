"""Schema migrations of Blink tables: plan, review, apply, fleets, locks, and adoption.

The public names are below (``__all__``); the docs' guides use them (see the API reference). The
task groups are the usual way in: :class:`~blinkops_provider.task_groups.BlinkTableMigration` and
:class:`~blinkops_provider.task_groups.BlinkSchemaFleet` plan, ask for a review and apply, with
:class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` doing the plan
(``plan_only``) and the apply. ``blink-schema`` pulls a live table's declaration
(:func:`pull_schema`), and lists and releases locks. The private modules hold the parts: the
declaration (``_declaration``), how its entries are matched to Blink's fields (``_identity``),
the plan and its risk rules (``_plan``), the record of the last apply (``_record``), the table's
lock (``_lock``, kept by ``_lockfiles``), the apply (``_apply``) and the order it sends in
(``_steps``), who may let a plan through (``_review``: the review policies, and the answer
Airflow recorded), the fleet's review and summary (``_fleet``), the apply's report
(``_report``), and a live table as a declaration (``_pull``).
"""

from __future__ import annotations

from blinkops_provider.migrations._apply import apply_schema, declared_schema, plan_schema
from blinkops_provider.migrations._declaration import Declaration
from blinkops_provider.migrations._fleet import fleet_review, fleet_summary
from blinkops_provider.migrations._lock import Holder, LockInfo, force_unlock, held_locks
from blinkops_provider.migrations._plan import FieldPlan, SchemaPlan, TablePlan
from blinkops_provider.migrations._pull import pull_schema
from blinkops_provider.migrations._record import SchemaRecord, record_location
from blinkops_provider.migrations._result import ApplyResult

__all__ = [
    "ApplyResult",
    "Declaration",
    "FieldPlan",
    "Holder",
    "LockInfo",
    "SchemaPlan",
    "SchemaRecord",
    "TablePlan",
    "apply_schema",
    "declared_schema",
    "fleet_review",
    "fleet_summary",
    "force_unlock",
    "held_locks",
    "plan_schema",
    "pull_schema",
    "record_location",
]

# What the operators and the task groups use besides the public names (they import nothing below
# this front door): re-exported for them, not part of the public API.
from blinkops_provider.migrations._apply import approved_plan as approved_plan
from blinkops_provider.migrations._declaration import read_declaration as read_declaration
from blinkops_provider.migrations._report import ApplyReport as ApplyReport
from blinkops_provider.migrations._report import grouped as grouped
from blinkops_provider.migrations._report import not_applied as not_applied
from blinkops_provider.migrations._review import REJECTED_IN_REVIEW as REJECTED_IN_REVIEW
from blinkops_provider.migrations._review import approval_from_review as approval_from_review
from blinkops_provider.migrations._review import check_review_policy as check_review_policy
from blinkops_provider.migrations._review import chosen as chosen
from blinkops_provider.migrations._review import rejection as rejection
from blinkops_provider.migrations._review import review_needed as review_needed
from blinkops_provider.migrations._review import who_let_through as who_let_through

for _public in (
    ApplyResult,
    Declaration,
    FieldPlan,
    Holder,
    LockInfo,
    SchemaPlan,
    SchemaRecord,
    TablePlan,
):  # documented (and referred to) here
    _public.__module__ = __name__
