"""
### Blink table schema migration: plan, review, apply

Applies a declared schema to the fields of one Blink table, the way a migration tool does:
1. `load_schema` reads the declaration: the `schema` param (JSON in the trigger form) when given,
   else the file `schema_file` (by default `blink_table_schema_migration.json` beside this file,
   found relative to the DAG file's folder on the worker that runs the task).
   Every entry is checked here; an error names the source and the entry or JSON position.
2. `plan` checks that Blink accepts the connection's key, reads the table and its fields from
   Blink, matches each declared entry to Blink's field (by name, by the name Blink gave a field
   this DAG added, then by display name), and logs each as `add` (a field Blink lacks, with the
   body it will POST), `change` (merged with what Blink holds: what the declaration leaves out,
   such as `required` or `is_unique`, is kept; flagged destructive when it removes select options,
   moves a reference, or turns a check on or off), `remove` (a tombstone `{"field": ..., "remove":
   true}`, with how many rows lose their values), `unchanged`, or `refused` (a type change, a
   system field). The table's declared description is planned too. What changed in Blink since
   the last apply (the record) is shown as drift. It writes nothing. The plan has a fingerprint.
3. `needs_review` lets the plan go to `review` only when it adds, changes, removes or refuses something.
4. `review` (Airflow 3.1 and later) waits for a person to approve the plan, shown in the UI's
   Required Actions with refused and destructive changes (removals first) first. Rejecting it
   skips the apply. `reviewed` hands the apply the plan with the review's answer. On Airflow 2.11
   the plan goes straight on, and a removal is applied only with the param `acknowledge_risks`.
5. `apply_schema` applies exactly the reviewed plan: under the table's lock it plans again and,
   if Blink, the record or the schema changed since the review, fails and sends nothing; a
   removal no person approved is refused unless `acknowledge_risks`. Then it creates, adds
   (Blink names the new field; the record keeps that name), changes (every declared field but
   the refused ones, 16 at a time: a field update is a full replacement, so sending an unchanged
   one again corrects drift) and removes last, reports each field as `added`, `changed`,
   `removed`, `unchanged` or `failed`, and records what Blink confirmed. Its XCom holds
   `{"ws_id", "table", "updated", "failed", "unknown", "outcomes"}`, pushed also when it fails.
6. `review_outcome` fails, naming the plan, when the review rejected it: the run is red, and its
   message says "rejected in review: nothing was applied" (Airflow's Reject only skips the apply).
7. `announce` (a teardown of the apply: it runs whatever the apply's outcome, and the run's state
   stays the apply's) gives the table's asset event for what a failed apply did change in Blink,
   from its XCom (`blinkops_provider.assets.announce_applied`): a failed task emits no asset event.

**Trigger** it with the params `ws_id` and `table`, and `schema` or `schema_file`.

**Adapt it**: set the Airflow Variable `blink_schema_records` to where the records belong (a
folder every worker reaches, or an object-storage URI such as `s3://bucket/blink/records`;
default `/tmp/blink_schema_records`): one file per table, `<ws_id>/<table>.json`, each name
percent-encoded as one segment (`/` and `..` too), so no name leaves the folder or shares a file. Each entry
needs `field`, `type` (a field's type never changes: add a new field, copy, remove the old one)
and `display_name`; `description` and `attributes` are optional (`required`, `is_unique`,
`default_value`, `include_time`, `options`, `table_reference`); `{"field": ..., "remove": true}`
removes a field with its values. The file's `description` is the table's. Set
`only_changed=True` on `apply_schema` to send only what the plan adds, changes or removes, and
`create_table=True` on both operators to create a table Blink does not have. Give `review`
`assigned_users` (who may approve) and `notifiers` (who is told). The `blink_default`
connection is used; set `blink_conn_id` on the operators to use another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, AssetAlias, Param, get_current_context, task

from blinkops_provider.assets import TABLES_ALIAS
from blinkops_provider.operators.tables import UpdateTableFieldsOperator

try:  # Airflow 3.1+: the human-in-the-loop approval (the standard provider refuses to import before)
    from airflow.providers.standard.operators.hitl import ApprovalOperator
except Exception:  # ImportError, or the provider's "needs Airflow 3.1+"
    ApprovalOperator = None

SCHEMA_FILE = "blink_table_schema_migration.json"  # beside this file, wherever a worker has the DAGs folder
RECORDS = "{{ var.value.get('blink_schema_records', '/tmp/blink_schema_records') }}"
RECORD_PATH = RECORDS + "/"  # a folder: each table's record is <ws_id>/<table>.json inside it, names encoded

with DAG(
    dag_id="blink_table_schema_migration",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "ws_id": Param("ws-demo", type="string", minLength=1, description="Blink workspace id"),
        "table": Param("Incidents", type="string", minLength=1, description="Name of the table"),
        "schema": Param(
            None,
            type=["null", "object", "array"],
            description='The declared schema as JSON, {"fields": [...]} or the list of entries; '
            "when empty, schema_file is read",
        ),
        "acknowledge_risks": Param(
            False,
            type="boolean",
            description="Apply the declared removals without a person's approval (Airflow 2.11 has no review step)",
        ),
        "schema_file": Param(
            SCHEMA_FILE,
            type="string",
            description="The declared schema (a JSON file): a path relative to this DAG file's folder, or absolute",
        ),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def load_schema() -> list[dict[str, Any]]:
        """The declaration, checked (the error names the param or file, and the position)."""
        from blinkops_provider.exceptions import BlinkInputError
        from blinkops_provider.migrations import declared_schema

        params = get_current_context()["params"]
        if params.get("schema"):
            return declared_schema(params["schema"], source="the 'schema' param")
        path = Path(__file__).parent / params["schema_file"]  # this worker's DAGs folder (an absolute path stays)
        try:
            text = path.read_bytes()
        except OSError as err:
            raise BlinkInputError(f"schema file {str(path)!r} cannot be read: {err.strerror}") from None
        return declared_schema(text, source=f"schema file {str(path)!r}")

    schema = load_schema()

    # [START howto_operator_plan_table_fields]
    plan = UpdateTableFieldsOperator(
        task_id="plan",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        fields=schema,
        record_path=RECORD_PATH,
        plan_only=True,
    )
    # [END howto_operator_plan_table_fields]

    if ApprovalOperator is not None:
        # [START howto_review_plan]
        @task.short_circuit(ignore_downstream_trigger_rules=False)
        def needs_review(plan: dict[str, Any]) -> bool:
            """Ask a person only when the plan adds, changes, removes or refuses something."""
            return bool(plan["has_changes"])

        review = ApprovalOperator(
            task_id="review",
            subject="Apply plan {{ ti.xcom_pull(task_ids='plan')['fingerprint'] }} to "
            "{{ params.ws_id }}/{{ params.table }}?",
            body="{{ ti.xcom_pull(task_ids='plan')['text'] }}\n\n"
            "Approve applies exactly this plan; Reject applies nothing and fails the run.",
        )

        @task(trigger_rule="none_failed_min_one_success")  # also when the review was not needed
        def reviewed(plan: dict[str, Any]) -> dict[str, Any]:
            """The plan with the review's answer, which the apply checks before any removal: a
            plan with changes was put to a person, and a Reject skips this task."""
            from blinkops_provider.migrations import let_through

            return let_through(plan, policy="changes", reviewed=bool(plan["has_changes"]))

        @task
        def review_outcome(plan: dict[str, Any]) -> str:
            """Fail, naming the plan, when the review rejected it (Airflow records a Reject only as
            the skip of the apply): the run is then red, and this task's log says that nothing was
            applied. Approved, or not asked: its decision."""
            from blinkops_provider.migrations import fail_if_rejected

            rejected = f"plan {plan['fingerprint']} of {plan['ws_id']}/{plan['table']}"
            return fail_if_rejected(get_current_context()["ti"], rejected)

        to_apply = reviewed(plan.output)
        needs_review(plan.output) >> review >> to_apply
        # A teardown: the review's Reject skips every task downstream of it but teardowns; its
        # failure fails the run.
        review >> review_outcome(plan.output).as_teardown(on_failure_fail_dagrun=True)
        # [END howto_review_plan]
    else:
        to_apply = plan.output  # Airflow 2.11: no review step (a removal then needs acknowledge_risks)

    # [START howto_operator_update_table_fields]
    apply_schema = UpdateTableFieldsOperator(
        task_id="apply_schema",
        ws_id="{{ params.ws_id }}",
        table="{{ params.table }}",
        fields=schema,
        record_path=RECORD_PATH,
        plan=to_apply,  # the reviewed plan, and nothing else
        acknowledge_risks="{{ params.acknowledge_risks }}",  # removals need this or a person's approval
        max_concurrency=16,
        retries=1,
    )
    # [END howto_operator_update_table_fields]

    # [START howto_announce_applied]
    @task(outlets=[AssetAlias(TABLES_ALIAS)])
    def announce(report: dict[str, Any] | None) -> bool:
        """The table's asset event for what a failed apply did change in Blink (a failed task
        emits none; a successful apply announced itself): downstream DAGs still learn of it."""
        from blinkops_provider.assets import announce_applied

        return announce_applied(get_current_context()["outlet_events"], report)

    # A teardown runs once the apply is done, whatever its outcome, and leaves the run's state to it.
    apply_schema >> announce(apply_schema.output).as_teardown()
    # [END howto_announce_applied]
