"""
### Blink table schema migration

Applies a declared schema to the fields of one Blink table: `blink_table_schema_migration.json`
beside this file lists each field with its type, display name and attributes. Every field is one
mapped `UpdateTableFieldOperator` task (named after the field in the grid), so a field that fails
shows as one red task while the others still apply; `summarise` reports what was applied and
fails the run if any field failed.

**Trigger** it by hand with the params `ws_id` (workspace id) and `table` (table name), and
optionally `schema_file` (another declaration, same format).

**Adapt it**: point `schema_file` at your own declaration. Each entry needs `field`, `type`
(the field's current type: Blink refuses to change it) and `display_name`; `attributes` is
optional (`default_value`, `include_time`, `options`, `table_reference`). A field update replaces
the field's settings, so declare everything you want to keep. The `blink_default` connection is
used; set `blink_conn_id` on the operator to use another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, get_current_context, task

from blinkops_provider.operators.tables import UpdateTableFieldOperator

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
        """Read the declaration and check every entry before any request is sent."""
        import json

        from blinkops_provider.exceptions import BlinkInputError
        from blinkops_provider.models import FieldUpdate, validate_input

        params = get_current_context()["params"]
        declared = json.loads(Path(params["schema_file"]).read_text())["fields"]
        updates = []
        for entry in declared:
            entry = dict(entry)
            name = entry.pop("field", None)
            if not isinstance(name, str) or not name.strip():
                raise BlinkInputError(f"every entry of {params['schema_file']} needs a 'field' name: {entry}")
            validate_input(FieldUpdate, entry, f"declaration of field {name!r}")
            updates.append(
                {
                    "field": name,
                    "field_type": entry["type"],
                    "display_name": entry.get("display_name"),
                    "attributes": entry.get("attributes"),
                }
            )
        return updates

    declared = load_schema()
    # [START howto_operator_update_table_field_mapped]
    applied = UpdateTableFieldOperator.partial(
        task_id="update_field",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        map_index_template="{{ task.field }}",
        retries=1,
    ).expand_kwargs(declared)
    # [END howto_operator_update_table_field_mapped]

    @task(trigger_rule="all_done")
    def summarise(declared: list[dict[str, Any]], applied: Any) -> dict[str, Any]:
        """Report what was applied; fail the run when any field failed."""
        from blinkops_provider.exceptions import BlinkApiError

        params = get_current_context()["params"]
        # Index, not iterate: iterating a mapped task's results probes one past the end, which
        # Airflow 3 logs as an error.
        done = {applied[i]["name"]: applied[i] for i in range(len(applied))}
        failed = [entry["field"] for entry in declared if entry["field"] not in done]
        print(f"Schema of {params['ws_id']}/{params['table']}: {len(done)} of {len(declared)} fields applied")
        for name, field in done.items():
            print(f"  {name}: {field.get('type')}, '{field.get('display_name')}', attributes {field.get('attributes')}")
        if failed:
            raise BlinkApiError(f"{len(failed)} field(s) failed to update: {', '.join(failed)}")
        return {"table": params["table"], "ws_id": params["ws_id"], "updated": sorted(done)}

    summarise(declared, applied.output)
