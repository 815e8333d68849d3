"""
### Blink schema fleet: a plan per table, one review, an apply per table

Migrates a folder of declared schemas, one file per table, `<ws_id>/<table>.json` (the
format of `blink_table_schema_migration.json`), across workers:
1. `tables` reads the folder (`folder`, relative to this file's folder on the worker, by default
   `blink_schema_fleet/`) and checks every declaration; an error names the file.
2. `plan` plans each table (dynamic task mapping: one mapped task per table).
3. `review_text` builds one review of every plan (`blinkops_provider.migrations.fleet_review`):
   a summary first, the tables with refused or destructive changes first, the unchanged ones in
   one line, then each changed table's rows; and says whether the review policy
   (`review_policy`: `always`, `changes` by default, or `risky`) needs a person.
4. `review` (Airflow 3.1 and later) asks a person once, when the policy says so.
5. `apply` applies each table's approved plan (one mapped task per table, in the pool
   `blink_applies`, the fleet's limit on concurrent applies across workers): a table whose
   apply fails does not stop the others. Each plan records the policy that let it through.
6. `summary` says which tables were applied, unchanged, failed (and why) or stale, and counts the
   rate-limit (429) waits; it fails the run when a table failed or was stale, or when the review
   rejected the plans (then nothing was applied).

Create the pool first (`airflow pools set blink_applies 4 "Blink schema applies"`): a task in a
pool that does not exist is never scheduled (`make airflow-ui` and `make demo` create it, and the
fleet's tables in the sandbox). Keep the records (the Variable
`blink_schema_records`) on a folder every worker shares or on object storage
(`s3://aws_conn_id@bucket/blink/records`): under an executor of several machines a worker-local
location is refused. See the docs' "Fleets of tables".
"""

from __future__ import annotations

import logging
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, AirflowFailException, Param, get_current_context, task

from blinkops_provider.operators.tables import UpdateTableFieldsOperator

try:  # Airflow 3.1+: the human-in-the-loop approval
    from airflow.providers.standard.operators.hitl import ApprovalOperator
except Exception:  # ImportError, or the provider's "needs Airflow 3.1+"
    ApprovalOperator = None

RECORD_PATH = "{{ var.value.get('blink_schema_records', '/tmp/blink_schema_records') }}/"

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
            enum=["always", "changes", "risky"],
            description="When a person approves: always, when anything changes, or only when a change is refused "
            "or destructive",
        ),
    },
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def tables() -> list[dict[str, Any]]:
        """Each table of the folder with its checked declaration: ``{"ws_id", "table", "fields"}``."""
        from pathlib import Path

        from blinkops_provider.exceptions import BlinkInputError
        from blinkops_provider.migrations import declared_schema

        root = Path(__file__).parent / get_current_context()["params"]["folder"]
        found = [
            {
                "ws_id": path.parent.name,
                "table": path.stem,
                "fields": declared_schema(path.read_bytes(), source=f"schema file {str(path)!r}"),
            }
            for path in sorted(root.glob("*/*.json"))
        ]
        if not found:
            raise BlinkInputError(f"no declared schema in {str(root)!r}: give <ws_id>/<table>.json files")
        return found

    declared = tables()
    plan = UpdateTableFieldsOperator.partial(task_id="plan", record_path=RECORD_PATH, plan_only=True).expand_kwargs(
        declared
    )

    @task
    def review_text(plans: list[dict[str, Any]]) -> dict[str, Any]:
        """One review of every table's plan, and whether the review policy needs a person."""
        from blinkops_provider.migrations import fleet_review, review_needed

        plans, policy = list(plans), get_current_context()["params"]["review_policy"]
        return {"text": fleet_review(plans), "policy": policy, "needs_review": review_needed(plans, policy)}

    @task(trigger_rule="none_failed_min_one_success")
    def approved(
        declared: list[dict[str, Any]], plans: list[dict[str, Any]], review: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Each table's declaration with its plan, the one the apply must find again, marked
        with the policy that let it through."""
        from blinkops_provider.migrations import let_through

        by_table = {(p["ws_id"], p["table"]): p for p in plans}

        def reviewed(plan: dict[str, Any]) -> bool:
            """A person approved it when the policy asked one. Airflow 2.11 has no review step: its
            plans go on as before, but one that removes a field is refused (#48)."""
            removes = any(row.get("action") == "remove" for row in plan["fields"])
            return bool(review["needs_review"]) and (ApprovalOperator is not None or not removes)

        return [
            {
                **table,
                "plan": let_through(
                    plan := by_table[(table["ws_id"], table["table"])], policy=review["policy"], reviewed=reviewed(plan)
                ),
            }
            for table in declared
        ]

    @task(trigger_rule="all_done")
    def summary(tables: list[dict[str, Any]], plans: list[dict[str, Any]]) -> dict[str, Any]:
        """Which tables were applied, unchanged, failed (and why) or stale; fails the run if any
        failed or went stale, or if the review rejected the plans (Airflow then skips the applies)."""
        from blinkops_provider.exceptions import BlinkApiError
        from blinkops_provider.migrations import fleet_summary, review_decision

        ti = get_current_context()["ti"]
        rejected = review_decision(ti) == "rejected"  # a Reject leaves only the skip of the applies
        results = [None if rejected else ti.xcom_pull(task_ids="apply", map_indexes=n) for n in range(len(tables))]
        outcome = fleet_summary(tables, results, rejected=rejected, plans=list(plans))
        for line in outcome["text"].splitlines():
            logging.getLogger("airflow.task").info("%s", line)
        if rejected:
            raise AirflowFailException(outcome["text"].replace("\n", " ") + ". Change the schemas and trigger again.")
        if outcome["failed"] or outcome["stale"]:
            ti.xcom_push(key="fleet", value=outcome)
            raise BlinkApiError(outcome["text"].splitlines()[0] + " See this task's log and each apply's.")
        return outcome

    review = review_text(plan.output)
    to_apply = approved(declared, plan.output, review)
    apply = UpdateTableFieldsOperator.partial(
        task_id="apply", record_path=RECORD_PATH, max_concurrency=8, retries=1, pool="blink_applies"
    ).expand_kwargs(to_apply)

    if ApprovalOperator is not None:

        @task.short_circuit(ignore_downstream_trigger_rules=False)
        def needs_review(review: dict[str, Any]) -> bool:
            """Ask a person only when the review policy says so."""
            return bool(review["needs_review"])

        ask = ApprovalOperator(
            task_id="review",
            subject="Apply the fleet's plans?",
            body="{{ ti.xcom_pull(task_ids='review_text')['text'] }}\n\n"
            "Approve applies exactly these plans; Reject applies nothing and fails the run.",
        )
        needs_review(review) >> ask >> to_apply
        # A teardown: the review's Reject skips every task downstream of it but teardowns, so the
        # summary still runs, says so and fails the run.
        done = summary(declared, plan.output).as_teardown(on_failure_fail_dagrun=True)
        ask >> done
        apply >> done
    else:
        apply >> summary(declared, plan.output)
