"""The data migrations' costs (#64), each figure beside its peer, interleaved, with ratios.

1. **A check counted from Blink's total** (``count_records``) against the same count made by
   walking the rows: requests each, over the sandbox.
2. **A retype's copy of 10,000 rows at 20 ms round trips**, with the default concurrency, against
   one row at a time (measured on 1,000 rows: at 20 ms and three round trips a row, one at a time
   takes about a minute per 1,000 rows, so its time per row is what is compared). The rows live
   in a fake Blink in this process, whose every call waits the round trip: what is measured is the
   copy's own pacing, not a server's.
3. **Scaling:** time per row of the copy at 1,000 and at 100,000 rows (no latency: the copy's own
   cost per row), and its peak Python memory (tracemalloc) at 10,000 and at 100,000 rows.

    python benchmarks/data_copy.py            # the figures
    python benchmarks/data_copy.py --smoke    # small sizes, for CI
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))

from blinkops_provider.migrations._data_steps import Copy
from blinkops_provider.utils.inputs import DEFAULT_UPDATE_CONCURRENCY


class LatentBlink:
    """Rows behind a hook's four record calls, each call waiting ``delay`` seconds. The rows are
    kept as JSON text, as a server keeps them serialized: held as Python objects they would be the
    process's garbage collector's to scan on each full collection, a cost of the harness, not of
    the copy."""

    def __init__(self, rows: int, delay: float) -> None:
        self.rows = {f"r{n}": json.dumps({"id": f"r{n}", "Score": str(n)}) for n in range(rows)}
        self.order = list(self.rows)
        self.delay = delay
        self.calls = 0
        self.lock = threading.Lock()
        self.log = logging.getLogger("bench")

    def _trip(self) -> None:
        with self.lock:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)

    def iter_records(self, ws_id: str, table: str, *, page_size: int = 500) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self.order), page_size):
            self._trip()
            yield from (json.loads(self.rows[key]) for key in self.order[start : start + page_size])

    def get_record(self, ws_id: str, table: str, record_id: str) -> dict[str, Any]:
        self._trip()
        return dict(json.loads(self.rows[record_id]))

    def update_record(self, ws_id: str, table: str, record_id: str, record: dict[str, Any]) -> dict[str, Any]:
        self._trip()
        self.rows[record_id] = json.dumps(record)
        return record


def copy_once(blink: LatentBlink, workers: int) -> float:
    """One pass of the copy (text -> number) over every row: its seconds."""
    copy = Copy(blink, "ws", "T", "Score", "score_2", ("text", "number", ()), workers=workers)
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        written, holding, failing = copy.one_pass(pool)
    took = time.perf_counter() - started
    assert written == holding == len(blink.rows) and failing == 0
    return took


def concurrency(rows: int, sample: int, delay: float, rounds: int) -> None:
    print(f"\n-- A retype's copy at {delay * 1000:.0f} ms round trips (3 a row: the walk's share, a read, a write) --")
    print(
        f"{'round':>5}  {'concurrency ' + str(DEFAULT_UPDATE_CONCURRENCY) + ' (' + str(rows) + ' rows)':>30}  "
        f"{'one at a time (' + str(sample) + ' rows)':>28}  {'per-row ratio':>13}"
    )
    ratios = []
    for number in range(1, rounds + 1):  # interleaved: each round runs both
        fast = copy_once(LatentBlink(rows, delay), DEFAULT_UPDATE_CONCURRENCY) / rows
        slow = copy_once(LatentBlink(sample, delay), 1) / sample
        ratios.append(slow / fast)
        print(f"{number:>5}  {fast * 1000:>24.2f} ms/row  {slow * 1000:>22.2f} ms/row  {slow / fast:>12.1f}x")
    print(f"target: at least 8x faster per row; measured {min(ratios):.1f}x (the worst round)")


def scaling(small: int, large: int, rounds: int) -> None:
    print(f"\n-- Time per row at {small:,} and {large:,} rows (no latency: the copy's own cost) --")
    ratios = []
    for number in range(1, rounds + 1):
        repeats = max(1, large // small // 10)  # the small copy is short: its median of several runs
        per_small = statistics.median(
            copy_once(LatentBlink(small, 0), DEFAULT_UPDATE_CONCURRENCY) / small for _ in range(repeats)
        )
        per_large = copy_once(LatentBlink(large, 0), DEFAULT_UPDATE_CONCURRENCY) / large
        ratios.append(per_large / per_small)
        print(
            f"round {number}: {per_small * 1e6:8.1f} us/row at {small:,}   {per_large * 1e6:8.1f} us/row at "
            f"{large:,}   ratio {per_large / per_small:.2f}"
        )
    print(f"target: within 1.2x; measured {min(ratios):.2f}x (best) to {max(ratios):.2f}x (worst)")


def memory(sizes: tuple[int, int]) -> None:
    print("\n-- Peak Python memory of the copy (tracemalloc), above what the fake Blink keeps of the rows written --")
    peaks = []
    for size in sizes:
        blink = LatentBlink(size, 0)
        tracemalloc.start()
        copy_once(blink, DEFAULT_UPDATE_CONCURRENCY)
        kept, peak = tracemalloc.get_traced_memory()  # kept: the written rows, stored by the fake at the end
        tracemalloc.stop()
        peaks.append(peak - kept)
        print(
            f"{size:>9,} rows: peak {peak / 1e6:6.2f} MB, of which the fake keeps {kept / 1e6:6.2f} MB: "
            f"the copy's own {(peak - kept) / 1e6:6.2f} MB"
        )
    print(f"target: flat; measured {peaks[1] / peaks[0]:.2f}x from {sizes[0]:,} to {sizes[1]:,} rows")


def counted_from_total() -> None:
    """Requests of an exact count, from Blink's total and by walking, over the sandbox."""
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_sandbox import BlinkSandbox

    print("\n-- An exact count over the sandbox: from Blink's total, beside a walk of the rows --")
    with BlinkSandbox(connection_types=0) as sandbox:
        os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = sandbox.connection_json()
        hook = BlinkHook()
        hook.list_tables("ws-demo")  # the connection read and the session opened first, for both
        for label, count in (
            ("count_records (total)", lambda: hook.count_records("ws-demo", "Incidents", {"Severity": "High"})),
            ("a walk of the rows", lambda: sum(1 for _ in hook.iter_records("ws-demo", "Incidents", page_size=25))),
        ):
            sandbox.log.clear()
            started = time.perf_counter()
            found = count()
            took = time.perf_counter() - started
            requests = len([e for e in sandbox.requests if e["path"].endswith("/Incidents")])
            print(f"{label:>24}: {found:>4} rows counted in {requests} request(s), {took * 1000:.1f} ms")
        print("target: a check counted from total costs one request")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="small sizes, for CI")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    counted_from_total()
    if args.smoke:
        concurrency(1_000, 100, 0.02, 1)
        scaling(1_000, 10_000, 1)
        memory((1_000, 10_000))
    else:
        concurrency(10_000, 1_000, 0.02, 2)
        scaling(1_000, 100_000, 3)
        memory((10_000, 100_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
