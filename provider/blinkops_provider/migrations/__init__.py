"""Schema migrations of Blink tables: plan, review, apply, fleets, locks, and adoption.

The public names are below (``__all__``); the docs' guides use them (see the API reference). The
task groups are the usual way in: :class:`~blinkops_provider.task_groups.BlinkTableMigration` and
:class:`~blinkops_provider.task_groups.BlinkSchemaFleet` plan, ask for a review and apply, with
:class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` doing the plan
(``plan_only``) and the apply. ``blink-schema`` pulls a live table's declaration
(:func:`pull_schema`), and lists and releases locks. The private modules hold the parts (the
declaration is read and checked by ``blinkops_provider._declaration``, which imports no Airflow):
how its entries are matched to Blink's fields (``_identity``),
the plan and its risk rules (``_plan``), the record of the last apply (``_record``), the table's
lock (``_lock``, kept by ``_lockfiles``), the apply (``_apply``) and the order it sends in
(``_steps``), who may let a plan through (``_review``: the review policies, and the answer
Airflow recorded), the fleet's review and summary (``_fleet``), the apply's report
(``_report``), and a live table as a declaration (``_pull``).
"""

from __future__ import annotations

from blinkops_provider._declaration import Declaration
from blinkops_provider.migrations._apply import ApplyRequest, apply, apply_schema, declared_schema, plan, plan_schema
from blinkops_provider.migrations._fleet import fleet_review, fleet_summary
from blinkops_provider.migrations._lock import Holder, LockInfo, force_unlock, held_locks
from blinkops_provider.migrations._plan import FieldPlan, SchemaPlan, TablePlan
from blinkops_provider.migrations._pull import pull_schema
from blinkops_provider.migrations._record import SchemaRecord, record_location
from blinkops_provider.migrations._result import ApplyResult
from blinkops_provider.migrations._review import REVIEW_POLICIES, check_review_policy, plan_markdown, review_needed

__all__ = [
    "REVIEW_POLICIES",
    "ApplyRequest",
    "ApplyResult",
    "Declaration",
    "FieldPlan",
    "Holder",
    "LockInfo",
    "SchemaPlan",
    "SchemaRecord",
    "TablePlan",
    "apply",
    "apply_schema",
    "check_review_policy",
    "declared_schema",
    "fleet_review",
    "fleet_summary",
    "force_unlock",
    "held_locks",
    "plan",
    "plan_markdown",
    "plan_schema",
    "pull_schema",
    "record_location",
    "review_needed",
]
