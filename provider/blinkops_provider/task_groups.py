"""
A reviewed migration in one line: task groups that plan, ask a person, and apply.

- :class:`BlinkTableMigration`: one table. ``plan`` → ``apply`` (on Airflow 3.1+ it asks a person
  first, when the review policy says so) → ``announce``.
- :class:`BlinkSchemaFleet`: many tables. ``tables`` → ``plan`` (one mapped task per table) →
  ``review`` (one for all) → ``to_apply`` → ``apply`` (one mapped task per table; each asks again
  only for removals not acknowledged) → ``summary``.

Each is a ``TaskGroup``: build it inside ``with DAG(...)``, and wire it like a task
(``group >> downstream``, or ``group.apply >> downstream``). The apply lets a removal through only
on a person's Approve read from Airflow's record of the answer to the review the apply itself
asked (a task may read no other task's record, and an XCom is a copy others may edit), or with
``acknowledge_risks``. On Airflow 2.11, which has no review step, the group is plan → apply, and a
removal needs ``acknowledge_risks``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AssetAlias,
    TaskGroup,
    XComArg,
    get_current_context,
    task,
)

from blinkops_provider.assets import TABLES_ALIAS, announce_applied
from blinkops_provider.exceptions import BlinkApiError, BlinkInputError
from blinkops_provider.migrations import check_review_policy, check_workflow_usage, declared_schema, fleet_summary
from blinkops_provider.operators._answer import chosen
from blinkops_provider.operators._hitl import review_step_available
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from blinkops_provider.utils.inputs import check_concurrency, check_lock_wait
from blinkops_provider.utils.states import Decision
from blinkops_provider.utils.text import one_line

__all__ = ["BlinkSchemaFleet", "BlinkTableMigration"]

_AFTER_REVIEW = "none_failed_min_one_success"
"""The apply's trigger rule below a review: it runs when the review approved or was not asked
(skipped), and not when it failed (a Reject)."""


def _dag_folder(group: TaskGroup) -> Path:
    """Return the folder of the DAG file that builds ``group`` (on the machine that parses it)."""
    fileloc = getattr(group.dag, "fileloc", None)
    return Path(fileloc).parent if fileloc else Path.cwd()


def _resolved(path: str, folder: str) -> Path:
    """Return a (rendered) path, relative ones against the DAG file's ``folder``."""
    given = Path(path)
    return given if given.is_absolute() else Path(folder) / given


def _templated(value: Any) -> bool:
    return isinstance(value, str) and "{{" in value


def _read_file(path: Path) -> Any:
    """Return a declaration file, checked: the error names the file, and the entry or JSON position."""
    try:
        text = path.read_bytes()
    except OSError as err:
        raise BlinkInputError(f"schema file {str(path)!r} cannot be read: {err.strerror}") from None
    return declared_schema(text, source=f"schema file {str(path)!r}")


def _asks(options: Mapping[str, Any]) -> bool:
    """
    Return whether the group has a review step.

    Airflow 3.1+, and a policy other than ``never`` (a templated policy is checked when the review runs).
    """
    return options["review_policy"] != "never" and review_step_available()


def _review(plan_task_id: str, options: Mapping[str, Any]) -> Any:
    """Return a fleet's one review of every plan, or None where there is none."""
    if not _asks(options):
        return None
    from blinkops_provider.operators._review import PlanReview

    return PlanReview(task_id="review", plan_task_id=plan_task_id, **_asking(options))


def _asking(options: Mapping[str, Any]) -> dict[str, Any]:
    """Return the review's arguments, for the task that asks."""
    keys = ("review_policy", "acknowledge_risks", "assigned_users", "notifiers", "response_timeout")
    return {key: options[key] for key in keys}


def _apply_operator(
    options: Mapping[str, Any], removals_only: bool = False
) -> tuple[type[UpdateTableFieldsOperator], dict[str, Any]]:
    """
    Return the apply's operator, and its review arguments.

    Where the group asks, the apply that asks a person itself and reads Airflow's record of the answer (a task may read
    no other task's); ``removals_only``: it asks only for removals not acknowledged (a fleet's, after its review).
    """
    if not _asks(options):
        return UpdateTableFieldsOperator, {}
    from blinkops_provider.operators._review import ReviewedApply

    asking = _asking(options)
    asking.pop("acknowledge_risks")  # (the apply's own argument)
    return ReviewedApply, {**asking, **({"removals_only": True} if removals_only else {})}


def _options(
    review_policy: str,
    assigned_users: Any,
    notifiers: Any,
    response_timeout: timedelta | None,
    acknowledge_risks: bool | str,
) -> dict[str, Any]:
    """Return the review options, checked when the DAG is parsed (no request)."""
    if response_timeout is not None and not isinstance(response_timeout, timedelta):
        raise BlinkInputError(f"response_timeout must be a datetime.timedelta or None, got {response_timeout!r}")
    if not isinstance(acknowledge_risks, (bool, str)):
        raise BlinkInputError(
            f"acknowledge_risks must be True, False or a template that renders one, got {acknowledge_risks!r}"
        )
    return {
        "review_policy": review_policy if _templated(review_policy) else check_review_policy(review_policy),
        "assigned_users": assigned_users,
        "notifiers": notifiers,
        "response_timeout": response_timeout,
        "acknowledge_risks": acknowledge_risks,
    }


class BlinkTableMigration(TaskGroup):  # type: ignore[misc]
    """
    Plan, review and apply a Blink table's declared schema, as one task group.

    Tasks (ids inside the group): ``schema`` (only when ``schema`` is a file: reads and checks
    it), ``plan`` (:class:`~blinkops_provider.operators.tables.UpdateTableFieldsOperator` with
    ``plan_only``), ``apply`` (exactly the planned plan; on Airflow 3.1+, unless
    ``review_policy="never"``, it first asks a person in Required Actions when the policy says so,
    showing the plan it will apply, and reads Airflow's record of the answer to its own review:
    a Reject fails it, naming who rejected which plan and when; an answer from someone not among
    ``assigned_users`` counts for nothing) and ``announce`` (a teardown: the table's asset event
    for what a failed apply did change). ``group.review`` is the task that asks: the apply
    itself, or None where there is no review step.

    :param group_id: the group's id.
    :param ws_id: the workspace id (templated).
    :param table: the table's name (templated).
    :param schema: the declaration (a list of entries, or an object with ``fields`` and the
        table's display name and description), a path to its JSON file (templated, so
        ``"{{ params.schema_file }}"`` works; a relative path is resolved against the DAG file's
        folder on the worker that runs the task), or an upstream task's ``XComArg``.
    :param record_path: where each table's record is kept (the drift baseline and the lock); a
        folder ending in ``/`` holds one record per table.
    :param review_policy: when a person approves: ``always``; ``changes`` (the default: when the
        plan adds, changes, removes or refuses anything); ``destructive`` (only when a change is
        refused or destructive, or a field is removed and ``acknowledge_risks`` is off); ``never``
        (no review step; a removal still needs ``acknowledge_risks``). A template
        (``"{{ params.review_policy }}"``) is checked when the review runs.
    :param assigned_users: who may answer the review (Airflow's ``HITLUser`` entries).
    :param notifiers: who is told that a review waits (Airflow notifiers).
    :param response_timeout: how long the review waits (a ``timedelta``); then the task fails.
    :param acknowledge_risks: apply removals without a person's approval. Under ``destructive``
        a plan whose only reason for review is a removal then goes straight to the apply; under
        ``always`` and ``changes`` the review is still asked, and says the removals are
        acknowledged. ``True``/``False``, or a template that renders one.
    :param workflow_usage: a change that breaks an active Blink workflow's step is ``review`` (destructive: it needs
        an Approve or ``acknowledge_risks``) or ``refuse`` (refused before any write, the workflows and steps named).
    :param create_table: create the table when Blink does not have it.
    :param lock_wait: seconds the apply waits for another apply of the table to finish.
    :param blink_conn_id: the ``blink`` connection.
    :param hook_params: keyword arguments for the hook.
    """

    def __init__(
        self,
        group_id: str,
        *,
        ws_id: str,
        table: str,
        schema: Any,
        record_path: str | None = None,
        review_policy: str = "changes",
        assigned_users: Any = None,
        notifiers: Any = None,
        response_timeout: timedelta | None = None,
        acknowledge_risks: bool | str = False,
        workflow_usage: str = "review",
        create_table: bool = False,
        lock_wait: float = 0,
        blink_conn_id: str = "blink_default",
        hook_params: dict[str, Any] | None = None,
    ) -> None:
        options = _options(review_policy, assigned_users, notifiers, response_timeout, acknowledge_risks)
        super().__init__(group_id=group_id, tooltip="Blink schema migration: plan, review, apply")
        common: dict[str, Any] = {
            "ws_id": ws_id,
            "table": table,
            "record_path": record_path,
            "create_table": create_table,
            "workflow_usage": check_workflow_usage(workflow_usage),
        }
        connection: dict[str, Any] = {"blink_conn_id": blink_conn_id, "hook_params": hook_params}
        with self:
            fields = self._fields(schema)
            self.plan = UpdateTableFieldsOperator(task_id="plan", fields=fields, plan_only=True, **common, **connection)
            applying, asking = _apply_operator(options)
            self.apply = applying(
                task_id="apply",
                fields=fields,
                plan=cast(Any, self.plan.output),  # the plan, and nothing else: the apply plans again, refuses another
                acknowledge_risks=acknowledge_risks,
                lock_wait=lock_wait,
                **asking,
                **common,
                **connection,
            )
            self.review = self.apply if asking else None
            """The task that asks a person: the apply itself (it reads Airflow's record of the answer to
            its own review), or None where there is no review step."""
            self.plan >> self.apply
            self.announce = _announce(self.apply.output, blink_conn_id).operator  # the task (as the docs say)
            self.apply >> self.announce.as_teardown()

    def _fields(self, schema: Any) -> Any:
        """Return the declaration as the plan and the apply take it: a file is read by a task of its own."""
        if isinstance(schema, (XComArg, list, dict)):
            return schema
        if not isinstance(schema, (str, os.PathLike)):
            raise BlinkInputError(
                f"schema must be a list of entries, an object with 'fields', a path to a JSON file, or an upstream "
                f"task's XComArg; got {type(schema).__name__}"
            )

        @task(task_id="schema")  # type: ignore[untyped-decorator,misc,unused-ignore]
        def read_schema(path: str, folder: str) -> Any:
            """
            Return the declaration file (its path templated), read and checked on the worker.

            A relative path is the DAG file's folder's.
            """
            return _read_file(_resolved(path, folder))

        return read_schema(os.fspath(schema), str(_dag_folder(self)))


def _announce(report: Any, blink_conn_id: str) -> Any:
    @task(task_id="announce", outlets=[AssetAlias(TABLES_ALIAS)])  # type: ignore[untyped-decorator,misc,unused-ignore]
    def announce(report: dict[str, Any] | None) -> str:
        """
        Announce the table's asset event for what a failed apply did change in Blink.

        A failed task emits none; a successful apply announced itself. Say what it announced, or why nothing.
        """
        context = get_current_context()
        if announce_applied(context["outlet_events"], report, blink_conn_id=blink_conn_id):
            where = one_line(f"{report['ws_id']}/{report['table']}")  # type: ignore[index]
            said = f"announced the asset event of {where}, which the failed apply changed"
        elif not isinstance(report, Mapping):
            said = "nothing to announce: the apply did not run (rejected, or an earlier task failed)"
        elif report.get("failed") or report.get("unknown"):
            said = "nothing to announce: the failed apply changed no field"
        else:
            said = "nothing to announce here: the apply succeeded and announced its own event, or changed nothing"
        logging.getLogger("airflow.task").info("Announce: %s", said)
        return said

    return announce(report)


class BlinkSchemaFleet(TaskGroup):  # type: ignore[misc]
    """
    Plan many tables, ask one review for all, and apply each table as a mapped task.

    Tasks (ids inside the group): ``tables`` (the declarations, checked), ``plan`` (one mapped
    task per table), ``review`` (Airflow 3.1+, unless ``review_policy="never"``: one review of
    every plan; a Reject applies nothing), ``to_apply`` (each table with its plan), ``apply`` (one
    mapped task per table; one whose plan removes fields that ``acknowledge_risks`` does not
    acknowledge asks a person to approve them itself and reads Airflow's record of that answer,
    since a task may read no other task's), ``summary`` (applied, unchanged,
    failed, stale or rejected; fails the run when a table failed or went stale, or the review
    rejected the plans).

    :param tables: a list of ``{"ws_id", "table", "fields"}`` (``fields``: a declaration).
    :param folder: a folder of ``<ws_id>/<table>.json`` declaration files (templated; a relative
        path is resolved against the DAG file's folder), each name encoded as the record folder
        encodes it (``%2F`` for ``/``; as ``blink-schema pull --all`` writes them); give
        ``tables`` or ``folder``.
    :param pool: the Airflow pool of the applies (the fleet's limit on concurrent applies across
        workers); the default pool when None.
    :param max_concurrency: requests in flight at once within one table's apply (1 to 32).

    The other parameters are :class:`BlinkTableMigration`'s.
    """

    def __init__(
        self,
        group_id: str,
        *,
        tables: Sequence[Mapping[str, Any]] | None = None,
        folder: str | os.PathLike[str] | None = None,
        record_path: str | None = None,
        review_policy: str = "changes",
        assigned_users: Any = None,
        notifiers: Any = None,
        response_timeout: timedelta | None = None,
        acknowledge_risks: bool | str = False,
        workflow_usage: str = "review",
        create_table: bool = False,
        lock_wait: float = 0,
        blink_conn_id: str = "blink_default",
        hook_params: dict[str, Any] | None = None,
        pool: str | None = None,
        max_concurrency: int = 8,
    ) -> None:
        options = _options(review_policy, assigned_users, notifiers, response_timeout, acknowledge_risks)
        _check_fleet(tables, folder, max_concurrency, lock_wait)
        super().__init__(group_id=group_id, tooltip="Blink schema fleet: a plan per table, one review, applies")
        common: dict[str, Any] = {
            "record_path": record_path,
            "create_table": create_table,
            "workflow_usage": check_workflow_usage(workflow_usage),
        }
        connection: dict[str, Any] = {"blink_conn_id": blink_conn_id, "hook_params": hook_params}
        given = [dict(entry) for entry in tables] if tables is not None else None
        with self:
            self.tables = _tables_task(given, None if folder is None else os.fspath(folder), str(_dag_folder(self)))
            self.plan = UpdateTableFieldsOperator.partial(
                task_id="plan", plan_only=True, fail_on_refusal=False, **common, **connection
            ).expand_kwargs(self.tables)
            self.review = _review(self.plan.task_id, options)
            self.to_apply = _to_apply(self.tables, self.plan.output)
            if self.review is not None:
                self.plan >> self.review >> self.to_apply
            extra = {"pool": pool} if pool else {}
            applying, asking = _apply_operator(options, removals_only=True)  # (after the fleet's review)
            self.apply = applying.partial(
                task_id="apply",
                max_concurrency=max_concurrency,
                retries=1,
                acknowledge_risks=acknowledge_risks,
                **asking,
                lock_wait=lock_wait,
                **extra,
                **common,
                **connection,
            ).expand_kwargs(self.to_apply)
            review_id = self.review.task_id if self.review is not None else None
            self.summary = _summary(self.tables, self.plan.output, self.apply.task_id, review_id)
            self.apply >> self.summary


def _check_fleet(tables: Any, folder: Any, max_concurrency: Any, lock_wait: Any) -> None:
    """
    Check a fleet's own arguments.

    Checked when the DAG is parsed (its mapped applies are built only when they run, after the plans and a person's
    review).

    :raises BlinkInputError: neither or both of ``tables`` and ``folder``; a range not kept.
    """
    check_concurrency(max_concurrency)
    check_lock_wait(lock_wait)
    if (tables is None) == (folder is None):
        raise BlinkInputError("give BlinkSchemaFleet either tables (a list of {ws_id, table, fields}) or folder")


def _tables_task(given: list[dict[str, Any]] | None, folder: str | None, dag_folder: str) -> Any:
    @task(task_id="tables")  # type: ignore[untyped-decorator,misc,unused-ignore]
    def tables(folder: str | None, dag_folder: str) -> list[dict[str, Any]]:
        """
        Return each table with its checked declaration.

        ``{"ws_id", "table", "fields"}``, from ``tables`` or from the (templated) ``folder``, a relative one being the
        DAG file's folder's.
        """
        if folder is None:
            return [_checked_table(entry, n) for n, entry in enumerate(given or ())]
        root = _resolved(folder, dag_folder)
        found = [
            {"ws_id": unquote(path.parent.name), "table": unquote(path.stem), "fields": _read_file(path)}
            for path in sorted(root.glob("*/*.json"))
        ]
        if not found:
            raise BlinkInputError(f"no declared schema in {str(root)!r}: give <ws_id>/<table>.json files")
        return found

    return tables(folder, dag_folder)


def _checked_table(entry: Mapping[str, Any], n: int) -> dict[str, Any]:
    """Return one of ``tables``, checked: the error names its position."""
    for key in ("ws_id", "table"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise BlinkInputError(f"tables[{n}] needs {key!r} (text); each table is {{'ws_id', 'table', 'fields'}}")
    return {
        "ws_id": entry["ws_id"],
        "table": entry["table"],
        "fields": declared_schema(entry.get("fields"), source=f"tables[{n}] ({entry['ws_id']}/{entry['table']})"),
    }


def _to_apply(tables: Any, plans: Any) -> Any:
    @task(task_id="to_apply", trigger_rule=_AFTER_REVIEW)  # type: ignore[untyped-decorator,misc,unused-ignore]
    def to_apply(tables: list[dict[str, Any]], plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return each table's declaration with its plan, the one its apply must find again."""
        by_table = {(plan["ws_id"], plan["table"]): plan for plan in plans}
        return [{**table, "plan": by_table[(table["ws_id"], table["table"])]} for table in tables]

    return to_apply(tables, plans)


def _summary(tables: Any, plans: Any, apply_id: str, review_id: str | None) -> Any:
    @task(task_id="summary", trigger_rule="all_done")  # type: ignore[untyped-decorator,misc,unused-ignore]
    def summary(tables: list[dict[str, Any]], plans: list[dict[str, Any]]) -> dict[str, Any]:
        """
        Return which tables were applied, unchanged, failed (and why), stale or rejected.

        Fails the run if any failed or went stale, or if the review rejected the plans.
        """
        ti = get_current_context()["ti"]
        answer = ti.xcom_pull(task_ids=review_id, map_indexes=-1) if review_id else None
        rejected = Decision.REJECT in chosen(answer)
        results = [None if rejected else ti.xcom_pull(task_ids=apply_id, map_indexes=n) for n in range(len(tables))]
        outcome = fleet_summary(tables, results, rejected=rejected, plans=list(plans))
        for line in outcome["text"].splitlines():
            logging.getLogger("airflow.task").info("%s", line)
        if rejected:
            raise AirflowFailException(outcome["text"].replace("\n", " ") + ". Change the schemas and trigger again.")
        if outcome["failed"] or outcome["stale"]:
            ti.xcom_push(key="fleet", value=outcome)
            raise BlinkApiError(outcome["text"].splitlines()[0] + " See this task's log and each apply's.")
        return outcome

    return summary(tables, plans)
