"""Batch field updates side by side with one-by-one updates, over a slow network.

    python benchmarks/field_updates.py            # 200 updates, 5 interleaved rounds
    python benchmarks/field_updates.py --smoke    # 40 updates, one round, for CI

Set-up: a Blink sandbox (in this process) with a table of 200 fields, behind ``latency_proxy.py``
(its own process, 10 ms each way: a 20 ms round trip). Each way runs in a fresh Python process
that imports Airflow first; the time is taken around the updates alone. Rounds are interleaved
and medians printed, with the latency floor ``ceil(updates / concurrency) x RTT``.

The ways: ``one by one`` (``BlinkHook.update_table_field`` in a loop) and
``UpdateTableFieldsOperator`` at several ``max_concurrency`` values, its default among them.

Then a one-table migration of 50 fields at a 20 ms round trip (#42): the plan task
(``plan_only``: the key's check and Blink's fields read), the apply (the read, then the PUTs at
the default concurrency), and, beside them, the same PUTs sent alone through the hook (no read,
no plan, no record), each against its floor: its round trips x RTT plus the server's time (the
PUTs alone, measured straight at the sandbox with no added latency, in the same rounds).

Then the scaling run: ``UpdateTableFieldsOperator`` as a migration runs it (a ``record_path``, so
the plan, the table's lock, the record and the per-field report, with its log on), at its
default concurrency, at 200 and 5,000 fields (40 and 400 in the smoke run). It prints the time
and the task's CPU per field of each size; the target is time per field within 1.2x.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from catalogue_sync import KEY, _proxy  # noqa: E402  (the same process helpers)

WS, TABLE = "ws-bench", "Wide"


def declared(count: int, round_: int) -> list[dict[str, Any]]:
    """The schema to apply: every field gets a new display name, so each run changes something."""
    return [{"field": f"f{i:03d}", "type": "text", "display_name": f"Field {i} r{round_}"} for i in range(count)]


def child(way: str, base: str, count: int, round_: int, records: str | None = None) -> None:
    import logging

    import airflow  # noqa: F401  (imported before the clock starts, as in a task)

    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    if records is None:
        logging.disable(logging.INFO)
    os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps({"conn_type": "blink", "host": base, "password": KEY})
    fields = declared(count, round_)
    started, cpu = time.perf_counter(), time.process_time()
    if way in MIGRATION_WAYS:
        applied = migration_child(way, fields, records or "")
    elif records is not None:  # the scaling run: a migration with its record, plan, lock and report
        op = UpdateTableFieldsOperator(
            task_id="apply", ws_id=WS, table=f"{TABLE}{count}", fields=fields, record_path=f"{records}/"
        )
        applied = len(op.execute({})["updated"])
    elif way == "one by one":
        hook = BlinkHook()
        for entry in fields:
            hook.update_table_field(WS, TABLE, entry["field"], {k: v for k, v in entry.items() if k != "field"})
        applied = count
    else:
        concurrency = int(way.rsplit("=", 1)[1])
        op = UpdateTableFieldsOperator(
            task_id="apply", ws_id=WS, table=TABLE, fields=fields, max_concurrency=concurrency
        )
        applied = len(op.execute({})["updated"])
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "count": applied}))


MIGRATION_FIELDS, MIGRATION_TABLE = 50, "Migrated"
MIXED = "apply, 10 adds + 2 removals"
MIGRATION_WAYS = ("plan (plan_only)", "apply (read + PUTs)", MIXED, "PUTs alone (hook)", "PUTs alone, no latency")
ADDS, REMOVALS = 10, 2


def mixed(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The 50-field migration of #48: 40 fields changed, 10 added, and 2 removed (tombstones)."""
    kept = fields[: MIGRATION_FIELDS - ADDS]
    added = [{"field": f"n{i}", "type": "text", "display_name": f"New {i}"} for i in range(ADDS)]
    gone = [{"field": f"f{MIGRATION_FIELDS - ADDS + i:03d}", "remove": True} for i in range(REMOVALS)]
    return [*kept, *added, *gone]


def migration_child(way: str, fields: list[dict[str, Any]], records: str) -> int:
    """One way of the migration benchmark, timed by the caller; returns how many fields it handled."""
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    common = {"ws_id": WS, "table": MIGRATION_TABLE, "fields": fields, "record_path": f"{records}/"}
    if way.startswith("plan"):
        return len(UpdateTableFieldsOperator(task_id="plan", plan_only=True, **common).execute({})["fields"])
    if way == MIXED:
        round_ = fields[0]["display_name"].rsplit(" r", 1)[1]
        mixed_common = {**common, "table": f"Mixed{round_}", "fields": mixed(fields), "acknowledge_risks": True}
        outcomes = UpdateTableFieldsOperator(task_id="apply", **mixed_common).execute({})["outcomes"]
        return sum(outcome in ("added", "changed", "removed") for outcome in outcomes.values())
    if way.startswith("apply"):
        return len(UpdateTableFieldsOperator(task_id="apply", **common).execute({})["updated"])
    updates = {entry["field"]: {k: v for k, v in entry.items() if k != "field"} for entry in fields}
    return len(BlinkHook().update_table_fields(WS, MIGRATION_TABLE, updates).applied)


def migration(rounds: int, delay_ms: float, concurrency: int) -> None:
    """The one-table migration of 50 fields: plan and apply beside the PUTs alone, interleaved."""
    from blinkops_sandbox import BlinkSandbox

    count = MIGRATION_FIELDS
    runs: dict[str, list[float]] = {way: [] for way in MIGRATION_WAYS}
    with ExitStack() as stack:
        sandbox = stack.enter_context(BlinkSandbox(connection_types=1, api_key=KEY))
        sandbox.store.add_table(
            WS,
            MIGRATION_TABLE,
            [{"name": f"f{i:03d}", "type": "text", "display_name": f"f{i}", "attributes": {}} for i in range(count)],
        )
        for round_ in range(rounds):  # a table of its own for each mixed apply, which adds and removes
            sandbox.store.add_table(
                WS,
                f"Mixed{2 * round_}",
                [
                    {"name": f"f{i:03d}", "type": "text", "display_name": f"f{i}", "attributes": {}}
                    for i in range(count)
                ],
            )
        slow = _proxy(stack, sandbox.port, delay_ms)
        records = stack.enter_context(tempfile.TemporaryDirectory(prefix="blink-bench-migration-"))
        for round_ in range(rounds):
            for way in MIGRATION_WAYS:
                base = sandbox.url if way.endswith("no latency") else slow
                command = [sys.executable, __file__, "--child", way, "--base", base, "--count", str(count)]
                command += ["--round", str(2 * round_ + way.startswith("PUTs")), "--records", records]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise SystemExit(f"migration, {way}, failed:\n{done.stderr[-3000:]}")
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                expected = count + REMOVALS if way == MIXED else count
                if figures["count"] != expected:
                    raise SystemExit(f"migration, {way}: {figures['count']} of {expected} fields")
                runs[way].append(figures["seconds"])
    rtt = 2 * delay_ms / 1000
    server = statistics.median(runs["PUTs alone, no latency"])
    rounds_of_puts = math.ceil(count / concurrency)
    mixed_puts = math.ceil((count - ADDS) / concurrency)
    trips = {
        "plan (plan_only)": 2,
        "apply (read + PUTs)": 1 + rounds_of_puts,
        MIXED: 2 + 1 + mixed_puts + 1,  # reads (tables, fields), the POSTs, the PUTs, the DELETEs
        "PUTs alone (hook)": rounds_of_puts,
    }
    print(
        f"\nA one-table migration of {count} fields, RTT {2 * delay_ms:g} ms, max_concurrency={concurrency}, "
        f"{rounds} interleaved round(s), medians; server time (the PUTs alone, no added latency): {server:.3f} s"
    )
    print(f"{'way':<28}{'seconds':>9}{'trips':>7}{'floor':>8}{'vs floor':>10}{'bound':>8}{'vs PUTs alone':>15}")
    alone = statistics.median(runs["PUTs alone (hook)"])
    for way, round_trips in trips.items():
        seconds = statistics.median(runs[way])
        busy = server if "PUTs" in way else 0.0
        floor, bound = round_trips * rtt + busy, max(round_trips * rtt, busy)
        print(
            f"{way:<28}{seconds:>9.3f}{round_trips:>7}{floor:>8.3f}{seconds / floor:>9.2f}x{bound:>8.3f}"
            f"{seconds / alone:>14.2f}x"
        )
    target = 1.3 * alone + 2 * rtt
    seconds = statistics.median(runs[MIXED])
    print(
        f"target (#48): the 50-field migration with {ADDS} adds and {REMOVALS} removals at most 1.3x the 50 PUTs "
        f"alone plus one round trip per POST and DELETE batch ({target:.3f} s): {seconds:.3f} s, "
        f"{seconds / alone:.2f}x the PUTs alone  {'met' if seconds <= target else 'NOT MET'}"
    )
    print(
        "  floor: round trips x RTT plus the server's time (the plan's two reads: the key's check and Blink's\n"
        f"  fields; the apply's read and {rounds_of_puts} rounds of PUTs). The server works while other requests\n"
        "  travel, so the two overlap and a run can beat that sum; bound: the larger of the two, which none can beat."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="40 updates, one round, for CI")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--records", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.base, args.count, args.round, args.records)
        return 0
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    from blinkops_provider.utils.inputs import DEFAULT_UPDATE_CONCURRENCY
    from blinkops_sandbox import BlinkSandbox

    count, rounds, delay_ms = (40, 1, 10.0) if args.smoke else (200, args.rounds, 10.0)
    concurrencies = sorted({4, 8, DEFAULT_UPDATE_CONCURRENCY, 32})
    ways = ["one by one", *(f"operator, max_concurrency={c}" for c in concurrencies)]
    runs: dict[str, list[float]] = {way: [] for way in ways}
    with ExitStack() as stack:
        sandbox = stack.enter_context(BlinkSandbox(connection_types=0, api_key=KEY))
        sandbox.store.add_table(
            WS,
            TABLE,
            [{"name": f"f{i:03d}", "type": "text", "display_name": f"f{i}", "attributes": {}} for i in range(count)],
        )
        base = _proxy(stack, sandbox.port, delay_ms)
        for round_ in range(rounds):
            for index, way in enumerate(ways):
                # each way declares display names of its own: a field Blink already holds as declared is
                # not sent again (an unchanged field), so every way sends all of them
                label = str(round_ * len(ways) + index)
                done = subprocess.run(
                    [sys.executable, __file__, "--child", way, "--base", base, "--count", str(count), "--round", label],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise SystemExit(f"{way} failed:\n{done.stderr[-3000:]}")
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                if figures["count"] != count:
                    raise SystemExit(f"{way}: {figures['count']} of {count} applied")
                runs[way].append(figures["seconds"])
    rtt = 2 * delay_ms / 1000
    one = statistics.median(runs["one by one"])
    print(f"\n{count} field updates, RTT {2 * delay_ms:g} ms, {rounds} interleaved round(s), medians")
    print(f"{'way':<34}{'seconds':>9}{'floor':>9}{'vs one by one':>15}")
    for way in ways:
        seconds = statistics.median(runs[way])
        concurrency = 1 if way == "one by one" else int(way.rsplit("=", 1)[1])
        floor = math.ceil(count / concurrency) * rtt
        print(f"{way:<34}{seconds:>9.3f}{floor:>9.3f}{one / seconds:>14.1f}x")
    default = statistics.median(runs[f"operator, max_concurrency={DEFAULT_UPDATE_CONCURRENCY}"])
    verdict = "met" if one / default >= 5 else "NOT MET"
    note = " (smoke size: the target is for the full run)" if args.smoke else ""
    print(
        f"target: the default ({DEFAULT_UPDATE_CONCURRENCY}) >= 5x faster than one by one: {one / default:.1f}x  "
        f"{verdict}{note}"
    )
    migration(rounds, delay_ms, DEFAULT_UPDATE_CONCURRENCY)
    scaling((40, 400) if args.smoke else (200, 5_000), rounds, delay_ms, DEFAULT_UPDATE_CONCURRENCY, note)
    return 0


def scaling(sizes: tuple[int, int], rounds: int, delay_ms: float, concurrency: int, note: str) -> None:
    """A migration's batch at two sizes, interleaved: time and CPU per field should stay flat."""
    from blinkops_sandbox import BlinkSandbox

    runs: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    with ExitStack() as stack:
        sandbox = stack.enter_context(BlinkSandbox(connection_types=0, api_key=KEY))
        for size in sizes:
            sandbox.store.add_table(
                WS,
                f"{TABLE}{size}",
                [{"name": f"f{i:03d}", "type": "text", "display_name": f"f{i}", "attributes": {}} for i in range(size)],
            )
        base = _proxy(stack, sandbox.port, delay_ms)
        records = stack.enter_context(tempfile.TemporaryDirectory(prefix="blink-bench-records-"))
        for round_ in range(rounds):
            for size in sizes:
                done = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        "scaling",
                        "--base",
                        base,
                        "--count",
                        str(size),
                        "--round",
                        str(round_),
                        "--records",
                        records,
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise SystemExit(f"scaling, {size} fields, failed:\n{done.stderr[-3000:]}")
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                if figures["count"] != size:
                    raise SystemExit(f"scaling: {figures['count']} of {size} applied")
                runs[size].append((figures["seconds"], figures["cpu"]))
    rtt = 2 * delay_ms / 1000
    print(
        f"\nScaling: UpdateTableFieldsOperator with record_path (plan, lock, record, report; log on), "
        f"max_concurrency={concurrency}, RTT {2 * delay_ms:g} ms, {rounds} interleaved round(s), medians"
    )
    print(f"{'fields':>7}{'seconds':>10}{'ms/field':>10}{'CPU ms/field':>14}{'floor ms/field':>16}")
    per_field = {}
    for size in sizes:
        seconds = statistics.median(run[0] for run in runs[size])
        cpu = statistics.median(run[1] for run in runs[size])
        per_field[size] = (seconds / size, cpu / size)
        floor = math.ceil(size / concurrency) * rtt / size
        print(f"{size:>7}{seconds:>10.3f}{1000 * seconds / size:>10.3f}{1000 * cpu / size:>14.3f}{1000 * floor:>16.3f}")
    small, large = sizes
    ratio, cpu_ratio = (per_field[large][i] / per_field[small][i] for i in (0, 1))
    verdict = "met" if ratio <= 1.2 else "NOT MET"
    print(
        f"target: time per field at {large:,} within 1.2x of {small:,}: {ratio:.2f}x  {verdict}{note} "
        f"(CPU per field: {cpu_ratio:.2f}x)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
