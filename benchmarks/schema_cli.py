"""``blink-schema`` in CI (#65), each figure beside its peer, interleaved, with ratios.

1. ``validate`` of 100 declarations (as a new process, as CI runs it) beside ``python -c pass``:
   the target is under 1 s, which it meets by importing no Airflow.
2. ``plan`` of one table (in this process, the sandbox answering after 20 ms) beside two round
   trips (two reads of the same sandbox): what a plan costs over the two reads it cannot avoid.

    python benchmarks/schema_cli.py            # the figures
    python benchmarks/schema_cli.py --smoke    # one round, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))
EXAMPLE = Path(__file__).resolve().parents[1] / "example_dags" / "blink_table_schema_migration.json"


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stdout + done.stderr
    return took


def validate_beside_python(rounds: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="blink-declarations-"))
    for n in range(100):
        (folder / f"ws-{n // 10}").mkdir(exist_ok=True)
        shutil.copy(EXAMPLE, folder / f"ws-{n // 10}" / f"Table{n}.json")
    print("\n-- blink-schema validate of 100 declarations, beside python -c pass (each a new process) --")
    for number in range(1, rounds + 1):
        bare = wall([sys.executable, "-c", "pass"])
        checked = wall([sys.executable, "-m", "blinkops_provider.cli", "validate", str(folder)])
        print(f"round {number}: validate {checked:.2f} s   python -c pass {bare:.2f} s   ratio {checked / bare:.1f}x")
    print("target: under 1 s")
    shutil.rmtree(folder)


def plan_beside_two_reads(rounds: int) -> None:
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import plan_schema
    from blinkops_sandbox import BlinkSandbox

    declared = json.loads(EXAMPLE.read_text())
    print("\n-- blink-schema plan of one table (the example, rows counted), beside two round trips, at 20 ms --")
    with BlinkSandbox(connection_types=0) as sandbox:
        os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = sandbox.connection_json()
        hook = BlinkHook()
        hook.list_tables("ws-demo")  # the connection read, the session opened
        sandbox.set_faults(latency_ms=20)
        for number in range(1, rounds + 1):
            started = time.perf_counter()
            hook.list_tables("ws-demo")
            hook.get_table_fields("ws-demo", "Incidents")
            reads = time.perf_counter() - started
            sandbox.log.clear()
            started = time.perf_counter()
            plan_schema(hook, "ws-demo", "Incidents", declared)
            planned = time.perf_counter() - started
            trips = len(sandbox.requests)
            print(
                f"round {number}: plan {planned * 1000:.0f} ms ({trips} requests: the table and its fields, "
                f"read at once, then the rows)   two reads {reads * 1000:.0f} ms   ratio {planned / reads:.1f}x"
            )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="one round, for CI")
    rounds = 1 if parser.parse_args().smoke else 3
    validate_beside_python(rounds)
    plan_beside_two_reads(rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
