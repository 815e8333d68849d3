"""
### Blink table rollback: undo one apply of a schema migration, reviewed

Blink has no undo, so each apply of `blink_table_schema_migration` saves what it changes and destroys first, beside
the table's record (`<record>.backups/<plan id>.jsonl`). This DAG puts one apply's backup back into the table:
1. `rollback` plans from Blink's live state: the fields the apply removed (or retyped away) re-created with their
   saved definitions and their values written back by record id; the changed fields put back (a person's later edit
   kept and counted); the fields the apply added removed, after saving their values (so a rollback can be undone
   too).
2. On Airflow 3.1 and later it asks a person in Required Actions, showing that plan (the review policy `always`);
   Approve carries out exactly the plan shown, Reject sends nothing and fails the run. On Airflow 2.11 a rollback
   that removes fields holding values needs the param `acknowledge_risks`.

**Trigger** it with the params `ws_id`, `table` and `apply` (the plan id of the apply to undo, as
`blink-schema backups` lists it; empty: the newest apply). See the docs' "Undoing a migration" page.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param

from blinkops_provider.operators.rollback import RollbackTableOperator

with DAG(
    dag_id="blink_table_rollback",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "ws_id": Param("ws-demo", type="string", minLength=1, description="Blink workspace id"),
        "table": Param("Incidents", type="string", minLength=1, description="Name of the table"),
        "apply": Param(
            "",
            type="string",
            description="The plan id of the apply to undo (16 hex digits, as blink-schema backups lists it); "
            "empty: the newest apply",
        ),
        "review_policy": Param(
            "always",
            enum=["always", "changes", "destructive", "never"],
            description="When a person approves the rollback: always (the default); only when it removes fields "
            "holding values; or never (such a rollback then needs acknowledge_risks)",
        ),
        "acknowledge_risks": Param(
            False,
            type="boolean",
            description="Remove the fields the apply added, holding values, without a person's approval (their "
            "values are saved first); on Airflow 2.11, which has no review step, the only way",
        ),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:
    # [START howto_operator_rollback]
    RollbackTableOperator(
        task_id="rollback",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        apply="{{ params.apply }}",
        record_path="{{ var.value.get('blink_schema_records', '/tmp/blink_schema_records') }}/",
        review_policy="{{ params.review_policy }}",
        acknowledge_risks="{{ params.acknowledge_risks }}",
    )
    # [END howto_operator_rollback]
