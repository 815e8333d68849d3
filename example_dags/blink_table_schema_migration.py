"""
### Blink table schema migration

Applies a declared schema to the fields of one Blink table: `blink_table_schema_migration.json`
beside this file lists each field with its type, display name and attributes. One
`UpdateTableFieldsOperator` task checks every entry first (nothing is sent if any is wrong), then
applies them 16 at a time; a failing field does not stop the others. Its log ends with one line
per field, and its XCom holds `{"ws_id", "table", "updated", "failed", "unknown"}`, pushed also when the
task fails.

**Trigger** it by hand with the params `ws_id` (workspace id) and `table` (table name), and
optionally `schema_file` (another declaration, same format).

**Adapt it**: point `schema_file` at your own declaration. Each entry needs `field`, `type`
(the field's current type: Blink refuses to change it) and `display_name`; `attributes` is
optional (`default_value`, `include_time`, `options`, `table_reference`). A field update replaces
the field's settings, so declare everything you want to keep. For one task per field instead
(one red task per failing field, at the cost of a worker per field), map
`UpdateTableFieldOperator` over the entries: see the operator's documentation. The
`blink_default` connection is used; set `blink_conn_id` on the operator to use another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, get_current_context, task

from blinkops_provider.operators.tables import UpdateTableFieldsOperator

SCHEMA_FILE = Path(__file__).with_name("blink_table_schema_migration.json")  # read when the task runs

with DAG(
    dag_id="blink_table_schema_migration",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "ws_id": Param("ws-demo", type="string", minLength=1, description="Blink workspace id"),
        "table": Param("Incidents", type="string", minLength=1, description="Name of the table"),
        "schema_file": Param(str(SCHEMA_FILE), type="string", description="The declared schema (JSON)"),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def load_schema() -> list[dict[str, Any]]:
        """Read the declaration (the operator checks every entry before any request)."""
        import json

        params = get_current_context()["params"]
        fields: list[dict[str, Any]] = json.loads(Path(params["schema_file"]).read_text())["fields"]
        return fields

    # [START howto_operator_update_table_fields]
    apply_schema = UpdateTableFieldsOperator(
        task_id="apply_schema",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        fields=load_schema(),
        max_concurrency=16,
        retries=1,
    )
    # [END howto_operator_update_table_fields]
