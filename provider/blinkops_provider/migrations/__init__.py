"""
Schema migrations of Blink tables: plan, review, apply, fleets, locks, and adoption.

The public names are below (``__all__``); the docs' guides use them (see the API reference). The
task groups are the usual way in: :class:`~blinkops_provider.task_groups.BlinkTableMigration` and
:class:`~blinkops_provider.task_groups.BlinkSchemaFleet` plan, ask for a review and apply, with
:class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` doing the plan
(``plan_only``) and the apply. ``blink-schema`` pulls a live table's declaration
(:func:`pull_schema`), and lists and releases locks. In code: :func:`plan` and :func:`apply`
of one :class:`ApplyRequest`. The migrations read nothing of Airflow's task context, DAG or
XCom: the operators read the review's answer and the holder, and hand them in.

The private modules hold the parts (the declaration is read and checked by
``blinkops_provider.models``, which imports no Airflow): the plan, how its entries are matched to
Blink's fields, the merge and the risk rules (``_plan``); the table's rows, counted, and the
conversions of a retype (``_rows``); the table's lock and the record of the last apply beside it,
and where both are kept (``_lock``); the plan as people read it, who may let it through, and the
fleet's review and summary (``_review``); the request and the apply (``_apply``); the order it
sends in, the backfill and the copy, and its result (``_steps``); the command line and a live
table as a declaration (``_cli``).
"""

from __future__ import annotations

from blinkops_provider.migrations._apply import ApplyRequest, apply, apply_schema, declared_schema, plan, plan_schema
from blinkops_provider.migrations._cli import pull_schema
from blinkops_provider.migrations._lock import Holder, LockInfo, SchemaRecord, force_unlock, held_locks, record_location
from blinkops_provider.migrations._plan import FieldPlan, SchemaPlan, TablePlan
from blinkops_provider.migrations._review import (
    check_review_policy,
    fleet_review,
    fleet_summary,
    plan_markdown,
    review_needed,
)
from blinkops_provider.migrations._steps import ApplyResult
from blinkops_provider.models import Declaration

__all__ = [
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
