"""
### Blink table schema migration: plan, review, apply

One `BlinkTableMigration` task group applies the declared schema (the param `schema_file`, by
default `blink_table_schema_migration.json` beside this file) to one Blink table, as a migration tool does:
1. `migrate.schema` reads the declaration file and checks every entry (an error names the file and
   the entry or JSON position).
2. `migrate.plan` reads the table and its fields from Blink and plans each entry as `add`,
   `change` (merged with what Blink holds; flagged destructive when it loses data or turns a check
   on), `remove` (a tombstone `{"field": ..., "remove": true}`, with the rows that lose their
   values), `unchanged` or `refused`; it shows what changed in Blink since the last apply (drift).
   It writes nothing.
3. `migrate.apply` (on Airflow 3.1 and later) asks a person in Required Actions when the plan adds,
   changes, removes or refuses anything (the review policy `changes`), showing the plan it made
   with its fingerprint, removals and destructive changes first. Reject fails this task, naming
   who rejected which plan and when: nothing is applied, and the run is red.
4. On the answer, `migrate.apply` reads Airflow's record of it and applies exactly the plan shown:
   it plans again under the table's lock and refuses a plan that changed since. A removal is sent
   only on a person's Approve so read (its XCom and the schema record name who approved and when),
   or with the param `acknowledge_risks` (Airflow 2.11 has no review step).
5. `migrate.announce` (a teardown) gives the table's asset event for what a failed apply changed.

**Trigger** it with the params `ws_id` and `table`. **Adapt it**: set the Airflow Variable
`blink_schema_records` to where the records belong (a folder every worker reaches, or an
object-storage URI such as `s3://bucket/blink/records`; default `/tmp/blink_schema_records`).
See the docs' "BlinkTableMigration" page.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param

from blinkops_provider.task_groups import BlinkTableMigration

with DAG(
    dag_id="blink_table_schema_migration",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "ws_id": Param("ws-demo", type="string", minLength=1, description="Blink workspace id"),
        "table": Param("Incidents", type="string", minLength=1, description="Name of the table"),
        "schema_file": Param(
            "blink_table_schema_migration.json",
            type="string",
            description="The declared schema (a JSON file): a path relative to this DAG file's folder, or absolute",
        ),
        "review_policy": Param(
            "changes",
            enum=["always", "changes", "destructive", "never"],
            description="When a person approves: always; when anything changes; only when a change is refused or "
            "destructive; or never (a removal then needs acknowledge_risks)",
        ),
        "acknowledge_risks": Param(
            False,
            type="boolean",
            description="Apply the declared removals without a person's approval. With the review policy "
            "'changes' the review is still asked and says the removals are acknowledged; on Airflow 2.11, which "
            "has no review step, this is the only way a removal is applied",
        ),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:
    # [START howto_task_group_table_migration]
    BlinkTableMigration(
        "migrate",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        schema="{{ params.schema_file }}",  # by default blink_table_schema_migration.json, beside this file
        record_path="{{ var.value.get('blink_schema_records', '/tmp/blink_schema_records') }}/",
        review_policy="{{ params.review_policy }}",
        acknowledge_risks="{{ params.acknowledge_risks }}",
    )
    # [END howto_task_group_table_migration]
