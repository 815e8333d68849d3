"""`make demo`: run both example DAGs end to end with `airflow dags test`, then say what happened.

Against the embedded Blink sandbox by default; against a real tenant when BLINK_BASE_URL and
BLINK_API_KEY are set (the schema migration then also needs BLINK_WS_ID and BLINK_TABLE, and
changes that table's fields as blink_table_schema_migration.json declares).

Uses the AIRFLOW_HOME it is given (the Makefile's is .airflow/ in the repository), starting each
run from a fresh metadata DB and fresh snapshots, so running it again needs no clean-up.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DAGS = ROOT / "example_dags"
"""The DAGs this launcher runs (dev/ holds the launchers, apart from the product)."""
MIGRATION = "blink_table_schema_migration"
SYNC = "blink_connection_types_nightly_sync"
FLEET = "blink_schema_fleet"
ROLLBACK = "blink_table_rollback"
REVIEWER = "demo-reviewer"


class DemoFailed(Exception):
    pass


def say(text: str) -> None:
    print(text, flush=True)


def run(title: str, command: list[str], env: dict[str, str], log: Path) -> None:
    """Run a command with its output in ``log``; on failure show the log's end."""
    started = time.monotonic()
    say(f"- {title} ...")
    with log.open("w") as out:
        done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = log.read_text().splitlines()[-40:]
        say("\n".join(f"    | {line}" for line in tail))
        raise DemoFailed(f"{title} failed (exit {done.returncode}); full log: {log}")
    say(f"  done in {seconds:.0f} s (log: {log})")


def rollback(
    sandbox: Any,
    target: tuple[str, str],
    before: Any,
    env: dict[str, str],
    logs: Path,
    reviewed: bool,
    unasked: dict[str, str],
) -> None:
    """Run the rollback example on the migration's first apply, and check the table is as it was before it."""
    ws_id, table = target
    airflow = [sys.executable, "-m", "airflow"]
    backups = sorted((Path(env["AIRFLOW_VAR_BLINK_SCHEMA_RECORDS"]) / ws_id).glob(f"{table}.json.backups/*.jsonl"))
    say(f"- The first apply's backup, written before its first write: {backups[0] if backups else 'NONE'}")
    conf = json.dumps({"ws_id": ws_id, "table": table, "acknowledge_risks": not reviewed, **unasked})
    log = logs / f"{ROLLBACK}.log"
    test = [*airflow, "dags", "test", ROLLBACK, dt.datetime.now(dt.UTC).isoformat(), "-c", conf]
    with approving(reviewed):
        run(f"Rollback of that apply: plan, review, put back ({ROLLBACK})", test, env, log)
    for line in rollback_summary(log):
        say(f"    {line}")
    after = table_state(sandbox, ws_id, table)
    if after != before:
        raise DemoFailed(f"after the rollback, {ws_id}/{table} is not as it was before the apply: see {log}")
    say(
        f"    {ws_id}/{table} is as it was before the apply: {len(after[0])} fields, {len(after[1])} rows' values equal"
    )


def check_connection(env: dict[str, str]) -> None:
    """Fail in seconds, saying what to fix, rather than in the DAGs' retries."""
    from blinkops_provider.hooks.blink import BlinkHook

    os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = env["AIRFLOW_CONN_BLINK_DEFAULT"]
    ok, message = BlinkHook().test_connection()
    if not ok:
        raise DemoFailed(f"the Blink connection does not work: {message}")
    say(f"- {message}")


def change_catalogue(sandbox: Any) -> dict[str, list[str]]:
    """What a day at Blink might bring: 3 types added, 2 removed, 4 changed; returns their ids."""
    docs = {doc["id"]: doc for doc in sandbox.store.all_connection_types()}
    ids = {
        "added": [f"ct-new-{i}" for i in range(3)],
        "removed": ["ct-000010", "ct-000011"],
        "changed": ["ct-000001", "ct-000002", "ct-000003", "ct-000004"],
    }
    sandbox.store.upsert_connection_types(
        {
            "id": type_id,
            "name": f"new-integration-{i}",
            "display_name": f"New integration {i}",
            "plugin_name": "new",
            "oauth_supported": False,
        }
        for i, type_id in enumerate(ids["added"])
    )
    sandbox.store.delete_connection_types(ids["removed"])
    sandbox.store.upsert_connection_types(
        {**docs[i], "display_name": docs[i]["display_name"] + " v2", "updated_at": docs[i]["updated_at"] + 1}
        for i in ids["changed"]
    )
    return ids


def migration_summary(log: Path, *, per_field: bool) -> list[str]:
    """The migration's account of itself, taken from its log: the plan (its summary line, and with
    ``per_field`` its table), then UpdateTableFieldsOperator's 'Schema of ...' line (and one line
    per field)."""
    summary: list[str] = []
    patterns = [
        (r"(Plan [0-9a-f]{16} for \S+: .*\))", False),
        (r"\s{2}([^\s\]|][^:]*: (?:add|change|change \(destructive\)|remove:|retype:) .*?)(?:\s+\[airflow|$)", True),
        (r"(The table \(.*?)(?:\s+\[airflow|$)", True),
        (r"(Workflows it breaks) \(", False),
        (r"\s{2}([^\s\]|][^:]*\((?:add|change|remove|retype)\): .*?)(?:\s+\[airflow|$)", False),
        (r"(Plan [0-9a-f]{16} (?:approved by .*? in review.*?|removes \d+ field.*?))(?:\s+\[airflow|$)", False),
        (r"(Plan [0-9a-f]{16}: the values of .*? saved at \S+)", False),
        (r"(?:\] |INFO - )([^\[\]:]+: backfilled \d+ row\(s\) .*?)(?:\s+\[airflow|$)", False),
        (r"(Schema of \S+: \d+ of \d+ fields applied.*?)(?:\s+\[airflow|$)", False),
        (
            r"\s{2}([^\s\]|][^:]*: (?:added|changed|removed|retyped|unchanged|applied|failed).*?)(?:\s+\[airflow|$)",
            True,
        ),
    ]
    plans, last = 0, None
    for line in log.read_text(errors="replace").splitlines():
        for number, (pattern, detail) in enumerate(patterns):
            found = re.search(pattern, line)
            if not found:
                continue
            if found.group(1) == last:  # Airflow 2.11's `dags test` prints each task log line twice
                break
            last = found.group(1)
            plans += number == 0
            shown = plans == 1 or number > 4  # the plan task's plan (the apply logs it again)
            if shown and (per_field or not detail):
                summary.append(f"  {found.group(1)}" if detail else found.group(1))
            break
    return summary


@contextlib.contextmanager
def approving(reviewed: bool) -> Iterator[None]:
    """While a DAG test runs (Airflow 3.3), approve each review that waits, as the person
    ``demo-reviewer``: through the handler of Airflow's REST call for a person's answer
    (dev/reviewer.py), never by marking the review task successful."""
    if not reviewed:
        yield
        return
    sys.path.insert(0, str(ROOT))
    from dev.reviewer import reviewing

    with reviewing(option="Approve", user=REVIEWER):
        yield


def fields_as_declared(sandbox: Any, ws_id: str, table: str, records: Path) -> dict[str, Any]:
    """What Blink now holds of the declaration: how many declared fields are as declared, of how
    many; the checks Blink held that the declaration leaves out and the migration kept (``Title
    required``); Blink's names of the fields the migration added; and the removed fields gone."""
    declared = json.loads((EXAMPLE_DAGS / f"{MIGRATION}.json").read_text())["fields"]
    named = json.loads((records / ws_id / f"{table}.json").read_text()).get("names", {})
    stored = {field["name"]: field for field in sandbox.store.fields(ws_id, table)}
    matching, kept, removed = 0, [], []
    entries = [entry for entry in declared if not entry.get("remove")]
    for entry in declared:
        if entry.get("remove"):
            removed += [entry["field"]] if entry["field"] not in stored else []
            continue
        field, attributes = stored[named.get(entry["field"], entry["field"])], entry.get("attributes", {})
        held = {name: field["attributes"].get(name) for name in attributes}
        matching += (field["type"], field["display_name"], held) == (entry["type"], entry["display_name"], attributes)
        kept += [
            f"{entry['field']} {word}"
            for check, word in (("required", "required"), ("is_unique", "unique"))
            if check not in attributes and field["attributes"].get(check) is True
        ]
    retyped = [entry["field"] for entry in entries if entry.get("type_change")]
    found = {"matching": matching, "declared": len(entries), "kept": kept, "named": named, "removed": removed}
    backfilled = json.loads((records / ws_id / f"{table}.json").read_text()).get("backfilled", {})
    return {**found, "retyped": retyped, "backfilled": backfilled}


def table_state(sandbox: Any, ws_id: str, table: str) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The table as a person sees it: each field's definition, and each row's values, by display name (the names
    Blink gives re-created fields apart)."""
    fields = [f for f in sandbox.store.fields(ws_id, table) if not (f.get("attributes") or {}).get("system")]
    shown = {f["name"]: f["display_name"] for f in fields}
    defined = sorted(
        json.dumps(
            [f["display_name"], f["type"], f.get("description") or "", f.get("attributes") or {}], sort_keys=True
        )
        for f in fields
    )
    rows = sandbox.store.find_records(ws_id, table, json.dumps({"limit": 1000}))["results"]
    values = {
        row["id"]: {shown[k]: v for k, v in row.items() if k in shown and v not in (None, "", [])} for row in rows
    }
    return defined, values


def rollback_summary(log: Path) -> list[str]:
    """The rollback's account of itself, from its log: its plan's summary line and steps, and what it did."""
    said: list[str] = []
    seen: set[str] = (
        set()
    )  # (Airflow 2.11's `dags test` prints each line twice; the plan is logged before and under the lock)
    for line in log.read_text(errors="replace").splitlines():
        found = re.search(r"(Rollback [0-9a-f]{16} (?:of apply|of apply .*? done:).*?)(?:\s+\[airflow|$)", line)
        step = re.search(r"^- ([^:]+: (?:re-create|restore|remove|unchanged).*?)(?:\s+\[airflow|$)", line)
        found = found or step
        if found and found.group(1) not in seen:
            seen.add(found.group(1))
            said.append(f"  {found.group(1)}" if step else found.group(1))
    return said


def main() -> int:
    home = Path(os.environ.get("AIRFLOW_HOME") or ROOT / ".airflow").resolve()
    tenant_url, tenant_key = os.environ.get("BLINK_BASE_URL"), os.environ.get("BLINK_API_KEY")
    on_tenant = bool(tenant_url and tenant_key)
    snapshots = home / "blink_snapshots"
    logs = home / "demo-logs"
    records = home / "blink_schema_records"
    for stale in (home / "airflow.db", snapshots, records, logs):  # a fresh start every time
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    logs.mkdir(parents=True)
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_VAR_BLINK_SNAPSHOT_ROOT": str(snapshots),
        "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(records),
    }
    airflow = [sys.executable, "-m", "airflow"]
    today = dt.datetime.now(dt.UTC).date()
    days = [str(today - dt.timedelta(days=1)), str(today)]
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    sandbox = None
    started = time.monotonic()
    try:
        run("Creating the Airflow metadata DB (SQLite)", [*airflow, "db", "migrate"], env, logs / "db-migrate.log")
        if on_tenant:
            say(f"- Running against the Blink tenant at {tenant_url} (BLINK_BASE_URL), not the sandbox")
            host = tenant_url
            conn = {"conn_type": "blink", "host": host, "password": tenant_key}
            ws_id, table = os.environ.get("BLINK_WS_ID"), os.environ.get("BLINK_TABLE")
        else:
            from blinkops_sandbox import BlinkSandbox

            sandbox = BlinkSandbox().start()
            say(f"- Blink sandbox started at {sandbox.base_url} (seeded: workspace ws-demo, 200 connection types)")
            conn = json.loads(sandbox.connection_json())
            ws_id, table = "ws-demo", "Incidents"
        env["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(conn)
        check_connection(env)

        # Airflow 3.3's `dags test` waits for the review's answer, which the demo gives as a person's is
        # recorded. Airflow 2.11 has no review step, and 3.1's `dags test` cannot run one (its test
        # supervisor does not serve the review's read of the answer): there, the DAG's params ask no
        # one (review_policy never) and acknowledge the removal.
        line = tuple(int(part) for part in version("apache-airflow").split(".")[:2])
        reviewed = line >= (3, 3)
        unasked = {} if reviewed else {"review_policy": "never"}
        unrun = [] if reviewed or line < (3, 1) else ["-c", json.dumps(unasked)]
        before = table_state(sandbox, ws_id, table) if sandbox is not None else None
        if ws_id and table:
            conf = json.dumps({"ws_id": ws_id, "table": table, "acknowledge_risks": not reviewed, **unasked})
            now = dt.datetime.now(dt.UTC).replace(microsecond=0)
            for number, when in enumerate((now - dt.timedelta(minutes=1), now), start=1):
                log = logs / f"{MIGRATION}-{number}.log"
                # The plan's review is answered here as a person's answer is recorded (Airflow 3.1+).
                test = [*airflow, "dags", "test", MIGRATION, when.isoformat(), "-c", conf]
                with approving(reviewed):
                    run(
                        f"Schema migration of {ws_id}/{table}, run {number}: plan, review, apply ({MIGRATION})",
                        test,
                        env,
                        log,
                    )
                summary = migration_summary(log, per_field=number == 1)
                for line in summary:
                    say(f"    {line}")
                if sandbox is not None and number == 1 and not any("(pb-triage, active)" in one for one in summary):
                    raise DemoFailed(f"the plan named no workflow its retype breaks ('Triage new incidents'): {log}")
            if sandbox is not None:  # the apply undone, then applied again (its backup, a reviewed rollback)
                rollback(sandbox, (ws_id, table), before, env, logs, reviewed, unasked)
                again = [*airflow, "dags", "test", MIGRATION, dt.datetime.now(dt.UTC).isoformat(), "-c", conf]
                log = logs / f"{MIGRATION}-3.log"
                with approving(reviewed):
                    run(f"Schema migration of {ws_id}/{table} again, after the rollback ({MIGRATION})", again, env, log)
                for line in migration_summary(log, per_field=False)[-1:]:
                    say(f"    {line}")
        else:
            say(f"- Skipping {MIGRATION}: set BLINK_WS_ID and BLINK_TABLE to migrate a table of your tenant")

        if sandbox is not None:  # the fleet example as it ships: its tables, made as a user would, and its pool
            for path in sorted((EXAMPLE_DAGS / "blink_schema_fleet").glob("*/*.json")):
                sandbox.create_table(path.parent.name, path.stem, json.loads(path.read_text()))
            run(
                "Creating the fleet's pool",
                [*airflow, "pools", "set", "blink_applies", "4", "Blink applies"],
                env,
                logs / "pool.log",
            )
            log = logs / f"{FLEET}.log"
            with approving(reviewed):
                run(
                    f"The fleet example: a plan per table, one review, an apply per table ({FLEET})",
                    [*airflow, "dags", "test", FLEET, *unrun],
                    env,
                    log,
                )
            fleet = next((line for line in log.read_text().splitlines() if "Fleet of " in line), "")
            summary = fleet[fleet.index("Fleet of ") :].split(" [airflow")[0] if fleet else f"no summary: see {log}"
            say(f"    {summary}")

        run(
            f"Catalogue sync for {days[0]} ({SYNC})",
            [*airflow, "dags", "test", SYNC, days[0]],
            env,
            logs / f"{SYNC}-{days[0]}.log",
        )
        if sandbox is not None:
            changes = change_catalogue(sandbox)
            say("- Changed the sandbox's catalogue: " + ", ".join(f"{len(ids)} {how}" for how, ids in changes.items()))
        run(
            f"Catalogue sync for {days[1]} ({SYNC})",
            [*airflow, "dags", "test", SYNC, days[1]],
            env,
            logs / f"{SYNC}-{days[1]}.log",
        )

        folder = snapshots / "connection_types" / SYNC  # the nightly sync's own folder
        snapshots_made = sorted(p for p in folder.glob("*.json") if not p.name.endswith(".diff.json"))
        latest = json.loads(snapshots_made[-1].read_text())  # each run's own snapshot; names sort as runs do
        diff = json.loads(snapshots_made[-1].with_suffix(".diff.json").read_text())["counts"]
        say("")
        say(f"Demo finished in {time.monotonic() - started:.0f} s" + (f" against {tenant_url}" if on_tenant else ""))
        if sandbox is not None:
            held = fields_as_declared(sandbox, ws_id, table, records)  # type: ignore[arg-type]
            as_declared = f"{held['matching']} of {held['declared']} fields of {ws_id}/{table}"
            say(f"  Fields updated:   {as_declared} now as declared")
            said = ", ".join(f"{name} as {blink!r}" for name, blink in held["named"].items()) or "none"
            say(f"  Added or retyped, with the name Blink gave it: {said}")
            say(f"  Removed with its values: {', '.join(held['removed']) or 'none'}")
            rows = sandbox.store.find_records(ws_id, table, json.dumps({"limit": 1000}))["results"]
            for name in held["retyped"]:
                new = held["named"][name]
                copied = sum(row.get(new) is not None for row in rows)
                say(f"  Retyped: {name}, now Blink's {new!r}, its values copied in {copied} of {len(rows)} rows")
            for name, count in held["backfilled"].items():
                say(f"  Backfilled: {name}, in {count} rows")
            say(f"  Kept as Blink held them: {', '.join(held['kept']) or 'nothing'} (the declaration leaves these out)")
        elif ws_id and table:
            say(f"  Fields updated:   see {logs}/{MIGRATION}-*.log")
        say(f"  Catalogue size:   {len(latest)} connection types on {days[1]}")
        say(
            f"  Diff {days[0]} -> {days[1]}: {diff['added']} added, {diff['removed']} removed, "
            f"{diff['changed']} changed, {diff['unchanged']} unchanged"
        )
        say(f"  Snapshots:        {folder}/ (one per run: <when>__<run id>.json and .diff.json)")
        if ws_id and table:
            record = records / ws_id / f"{table}.json"
            say(f"  Schema record:    {record} (the last apply: the plan's drift baseline)")
            approval = json.loads(record.read_text()).get("approval", {}) if record.exists() else {}
            if approval.get("approved_by"):
                say(f"  Approved:         by {approval['approved_by']} at {approval['approved_at']} (Airflow's review)")
            elif approval.get("acknowledged"):
                say("  Approved:         no review; the DAG acknowledged the removal (acknowledge_risks)")
        say(f"  Logs:             {logs}/")
        return 0
    except DemoFailed as err:
        say(f"\nDemo failed: {err}")
        return 1
    except KeyboardInterrupt:
        say("\nDemo interrupted.")
        return 130
    finally:
        if sandbox is not None:
            sandbox.stop()
            say("- Blink sandbox stopped")


if __name__ == "__main__":
    raise SystemExit(main())
