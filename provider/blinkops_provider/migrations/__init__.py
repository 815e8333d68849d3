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

A plan is read as a person reads it with :func:`plan_text` and :func:`log_plan`, pushed as an XCom with
:func:`plan_xcom`, shown in a review or a pull request with :func:`plan_markdown`, and checked against the
approved one with :func:`check_approved`.

The private modules hold the parts (the declaration is read and checked by
``blinkops_provider.models``, which imports no Airflow): which of Blink's fields an entry is and the
body sent for it (``_matching``); the plan's types and identity (``_plan_types``); the planner
(``_plan``); the risk rules, one table (``_risks``); the table's rows, counted (``_rows``); the conversions
of a retype (``_conversions``);
the table's lock and the record of the last apply beside it (``_lock``); the gate: who may let a plan
through, and whether it is the approved one (``_review``); the plan and a fleet as people read them
(``_text``); the request and the apply (``_apply``); the order it sends in, the backfill and the copy,
and its result (``_steps``); what it writes into the rows (``_data_steps``); a live table as a declaration
(``_pull``); the backup an apply writes before its first write (``_backup``) and the rollback that puts it back
(``_rollback``, :func:`plan_rollback` and :func:`rollback` of a :class:`RollbackRequest`). The command line is
``blinkops_provider.cli``.
"""

from __future__ import annotations

from blinkops_provider.migrations._apply import ApplyRequest, apply, apply_schema, declared_schema, plan, plan_schema
from blinkops_provider.migrations._backup import Backup, list_backups, prune_backups
from blinkops_provider.migrations._lock import Holder, LockInfo, SchemaRecord, force_unlock, held_locks, record_location
from blinkops_provider.migrations._plan_types import FieldPlan, SchemaPlan, TablePlan, WorkflowUse
from blinkops_provider.migrations._pull import pull_schema
from blinkops_provider.migrations._review import check_approved, check_review_policy, review_needed
from blinkops_provider.migrations._rollback import (
    RollbackPlan,
    RollbackRequest,
    RollbackResult,
    RollbackStep,
    plan_rollback,
    rollback,
)
from blinkops_provider.migrations._steps import ApplyResult
from blinkops_provider.migrations._text import (
    fleet_review,
    fleet_summary,
    log_plan,
    plan_markdown,
    plan_text,
    plan_xcom,
)
from blinkops_provider.migrations._usage import WORKFLOW_USAGE, check_workflow_usage
from blinkops_provider.models import Declaration

__all__ = [
    "WORKFLOW_USAGE",
    "ApplyRequest",
    "ApplyResult",
    "Backup",
    "Declaration",
    "FieldPlan",
    "Holder",
    "LockInfo",
    "RollbackPlan",
    "RollbackRequest",
    "RollbackResult",
    "RollbackStep",
    "SchemaPlan",
    "SchemaRecord",
    "TablePlan",
    "WorkflowUse",
    "apply",
    "apply_schema",
    "check_approved",
    "check_review_policy",
    "check_workflow_usage",
    "declared_schema",
    "fleet_review",
    "fleet_summary",
    "force_unlock",
    "held_locks",
    "list_backups",
    "log_plan",
    "plan",
    "plan_markdown",
    "plan_rollback",
    "plan_schema",
    "plan_text",
    "plan_xcom",
    "prune_backups",
    "pull_schema",
    "record_location",
    "review_needed",
    "rollback",
]
