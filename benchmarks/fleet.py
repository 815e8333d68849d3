"""A fleet of tables through Airflow's scheduler: time per table at 20 and 100 tables.

    python benchmarks/fleet.py            # 20 and 100 tables of 10 fields, 2 interleaved rounds
    python benchmarks/fleet.py --smoke    # 3 and 6 tables, one round, for CI

Needs Debian's PostgreSQL and the ``celery`` dependency group (for its PostgreSQL driver): ``make
bench-fleet`` installs both. Set-up, with ``dev/celery_demo.py``'s machinery: PostgreSQL
as the metadata database, Airflow 3's api-server, scheduler and DAG processor with this machine's
executor (``LocalExecutor``, parallelism 8, the example's pool ``blink_applies`` of 4), the
example DAG ``blink_schema_fleet`` (review policy ``destructive``: no person in the loop), records in a
local folder, and a Blink sandbox that adds 20 ms to every request (a 20 ms round trip). Every
installed module is compiled to bytecode first, outside every clock.

Each run of the fleet applies new display names to every field of every table, so each table has
10 changes. Its time is the DAG run's, from queued to ended, as PostgreSQL records it.

The peer: the same work without Airflow's scheduling, one table after another in one fresh
process that imports Airflow and the provider before its clock: ``UpdateTableFieldsOperator``
with ``plan_only=True``, then given that plan, as the fleet's tasks run it. The ratio of the two
is what Airflow's per-task cost adds. The target: the fleet's time per table at 100 tables within
1.3x of that at 20.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "dev")]

import celery_demo as demo  # noqa: E402  (the machinery of make celery-demo)
from catalogue_sync import compile_bytecode  # noqa: E402

WS = "ws-bench"


def table_name(index: int) -> str:
    return f"Bench {index:03d}"


def peer(base: str, key: str, records: str, folder: str) -> None:
    """The child process of the peer: each table planned then applied, one after another."""
    import logging

    import airflow.sdk.execution_time.task_runner  # noqa: F401  (imported before the clock, as in a task)

    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    logging.getLogger("airflow.task").setLevel(logging.WARNING)
    os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps({"conn_type": "blink", "host": base, "password": key})
    schemas = [(path.stem, json.loads(path.read_text())["fields"]) for path in sorted(Path(folder, WS).glob("*.json"))]
    started = time.perf_counter()
    applied = 0
    for table, fields in schemas:
        common = {"ws_id": WS, "table": table, "fields": fields, "record_path": f"{records}/", "max_concurrency": 8}
        plan = UpdateTableFieldsOperator(task_id="plan", plan_only=True, **common).execute({})
        applied += len(UpdateTableFieldsOperator(task_id="apply", plan=plan, **common).execute({})["updated"])
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "tables": len(schemas), "applied": applied}))


def run_peer(sandbox: Any, records: Path, folder: Path, count: int) -> float:
    command = [sys.executable, __file__, "--peer", sandbox.url, str(records), str(folder)]
    env = {**os.environ, "BLINK_BENCH_KEY": sandbox.api_key}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise demo.DemoFailed(f"the peer failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if (result["tables"], result["applied"]) != (count, count * 10):
        raise demo.DemoFailed(f"the peer applied {result} of {count} tables of 10 fields")
    return float(result["seconds"])


def run_fleet(airflow: Any, folder: Path, run_id: str, count: int) -> float:
    airflow.run(run_id, {"folder": str(folder), "review_policy": "destructive"})
    state = airflow.finished(run_id, timeout=3600)
    summary = airflow.xcom(run_id, "fleet.summary") or {}
    if state != "success" or len(summary.get("applied", [])) != count:
        raise demo.DemoFailed(f"the fleet run {run_id} ended {state}: {summary.get('text')}")
    (seconds,) = airflow.query(
        "SELECT EXTRACT(EPOCH FROM end_date - queued_at) FROM dag_run WHERE dag_id = %s AND run_id = %s",
        demo.FLEET,
        run_id,
    )[0]
    tasks = airflow.query(
        "SELECT task_id, count(*), avg(duration) FROM task_instance WHERE dag_id = %s AND run_id = %s "
        "AND task_id IN ('plan', 'apply') GROUP BY task_id ORDER BY task_id DESC",
        demo.FLEET,
        run_id,
    )
    spent = ", ".join(f"{n} {task_id} tasks of {float(mean):.2f} s each" for task_id, n, mean in tasks)
    print(f"    where it goes: {spent} (start to end, as Airflow records each)", flush=True)
    return float(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="3 and 6 tables, one round, for CI")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the full run (default 2)")
    args = parser.parse_args()
    sizes, rounds = ((3, 6), 1) if args.smoke else ((20, 100), args.rounds)

    from blinkops_sandbox import BlinkSandbox

    compile_bytecode()
    home = (ROOT / ".airflow-bench-fleet").resolve()
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    services = demo.Services(home)
    sandbox = BlinkSandbox().start()
    services.stoppers.append(sandbox.stop)
    records = home / "records"
    try:
        database = demo.start_postgres(services)
        for index in range(max(sizes)):
            sandbox.create_table(WS, table_name(index), demo.declared(index, 0))
        sandbox.set_faults(latency_ms=20)
        env = demo.airflow_env(home, database, "redis://unused", "http://unused", sandbox, demo.free_port())
        env.update(
            {
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "8",
                "AIRFLOW_VAR_BLINK_SCHEMA_RECORDS": str(records),
            }
        )
        print("Starting PostgreSQL and Airflow (LocalExecutor, parallelism 8, pool blink_applies of 4) ...", flush=True)
        airflow = demo.start_airflow(services, env, database, workers=())
        times: dict[str, dict[int, list[float]]] = {"fleet": {n: [] for n in sizes}, "peer": {n: [] for n in sizes}}
        for round_ in range(rounds):
            for count in sizes:
                for way in ("fleet", "peer"):
                    version = 1 + 2 * round_ + (way == "peer")
                    folder = demo.write_folder(
                        home / f"{way}-{count}-{round_}",
                        {table_name(i): demo.declared(i, version) for i in range(count)},
                        ws_id=WS,
                    )
                    seconds = (
                        run_fleet(airflow, folder, f"{way}-{count}-{round_}", count)
                        if way == "fleet"
                        else run_peer(sandbox, records, folder, count)
                    )
                    times[way][count].append(seconds)
                    print(f"  round {round_ + 1}: {way} of {count} tables: {seconds:.2f} s", flush=True)
    finally:
        services.stop()
    report(times, sizes, rounds)
    return 0


def report(times: dict[str, dict[int, list[float]]], sizes: tuple[int, int], rounds: int) -> None:
    print(f"\nMedians of {rounds} interleaved round(s), 10 fields a table, 20 ms per request:")
    print("| tables | fleet s | fleet s/table | peer s | peer s/table | fleet / peer |")
    print("|---|---|---|---|---|---|")
    per_table = {}
    for count in sizes:
        fleet, alone = statistics.median(times["fleet"][count]), statistics.median(times["peer"][count])
        per_table[count] = fleet / count
        print(
            f"| {count} | {fleet:.2f} | {fleet / count:.3f} | {alone:.2f} | {alone / count:.3f} | {fleet / alone:.1f}x |"
        )
    small, large = sizes
    ratio = per_table[large] / per_table[small]
    print(f"Fleet time per table at {large} / at {small}: {ratio:.2f}x (target: at most 1.3x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer"]:
        base, records, folder = sys.argv[2:5]
        peer(base, os.environ["BLINK_BENCH_KEY"], records, folder)
    else:
        raise SystemExit(main())
