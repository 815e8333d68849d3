"""
### Blink schema fleet: a plan per table, one review, an apply per table

One `BlinkSchemaFleet` task group migrates a folder of declared schemas, one file per table,
`<folder>/<ws_id>/<table>.json` (the param `folder`, by default `blink_schema_fleet` beside this
file; the format of `blink_table_schema_migration.json`):
1. `fleet.tables` reads the folder and checks every declaration; an error names the file.
2. `fleet.plan` plans each table (one mapped task per table).
3. `fleet.review` (Airflow 3.1 and later) asks a person once for all the plans, when the review
   policy (`review_policy`: `always`, `changes` by default, `destructive` or `never`) says so: a
   summary first, the tables with refused or destructive changes first. Reject fails it.
4. `fleet.apply` applies each table's plan (one mapped task per table, in the pool
   `blink_applies`, the fleet's limit on concurrent applies across workers). A table whose plan
   removes fields asks a person to approve those removals in its apply (Airflow keeps each task's
   record of an answer for that task alone), unless `acknowledge_risks`. A table whose apply fails
   does not stop the others.
5. `fleet.summary` says which tables were applied, unchanged, failed (and why), stale or rejected,
   and fails the run when any failed or went stale, or the review rejected the plans.

Create the pool first (`airflow pools set blink_applies 4 "Blink schema applies"`): a task in a
pool that does not exist is never scheduled (`make airflow-ui` and `make demo` create it). Keep the
records (the Variable `blink_schema_records`) on a folder every worker shares or on object storage
(`s3://aws_conn_id@bucket/blink/records`). See the docs' "BlinkSchemaFleet" page.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param

from blinkops_provider.task_groups import BlinkSchemaFleet

with DAG(
    dag_id="blink_schema_fleet",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "folder": Param(
            "blink_schema_fleet",
            type="string",
            description="The folder of declared schemas, <ws_id>/<table>.json, relative to this DAG file's folder",
        ),
        "review_policy": Param(
            "changes",
            enum=["always", "changes", "destructive", "never"],
            description="When a person approves: always; when anything changes; only when a change is refused or "
            "destructive; or never (a removal then needs acknowledge_risks)",
        ),
        "acknowledge_risks": Param(
            False, type="boolean", description="Apply the declared removals without a person's approval"
        ),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:
    # [START howto_task_group_schema_fleet]
    BlinkSchemaFleet(
        "fleet",
        folder="{{ params.folder }}",  # by default blink_schema_fleet/ beside this file: <ws_id>/<table>.json
        record_path="{{ var.value.get('blink_schema_records', '/tmp/blink_schema_records') }}/",
        review_policy="{{ params.review_policy }}",
        acknowledge_risks="{{ params.acknowledge_risks }}",
        pool="blink_applies",
    )
    # [END howto_task_group_schema_fleet]
