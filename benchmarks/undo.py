"""Undo's costs (#74), each figure beside its peer, interleaved, with ratios.

1. **The backup of 100,000 rows beside one walk of them**, at 20 ms round trips: what an apply that destroys values
   adds (the backup reads the rows once, writes them as JSON Lines and reads the file back) beside a plain walk of the
   same rows; requests and seconds.
2. **Its memory** (tracemalloc's peak, above what the fake Blink keeps) at 10,000 and at 100,000 rows: flat.
3. **A restore of 10,000 rows at 20 ms round trips** with the default concurrency, beside one row at a time (measured
   on 1,000 rows: the time per row is compared). Each row is read, written, and read again by the pass that confirms.

The rows live in a fake Blink in this process whose every call waits the round trip: what is measured is the
provider's own pacing, not a server's.

    python benchmarks/undo.py            # the figures
    python benchmarks/undo.py --smoke    # small sizes, for CI
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))

import data_copy  # (benchmarks/, run as a script: its folder is on the path)

from blinkops_provider.hooks._batch import workers
from blinkops_provider.migrations import RollbackPlan, RollbackRequest
from blinkops_provider.migrations._backup import FORMAT, Backup, write_backup
from blinkops_provider.migrations._rollback import _Rollback
from blinkops_provider.utils.inputs import DEFAULT_UPDATE_CONCURRENCY


class LatentBlink(data_copy.LatentBlink):
    """The copy benchmark's rows behind a hook's record calls (each call waiting the round trip), with a clock."""

    class clock:
        now = staticmethod(dt.datetime.now)


def header() -> dict[str, Any]:
    return {"format": FORMAT, "plan_id": "0" * 16, "saved_at": "", "ws_id": "ws", "table": "T", "valued": ["Score"]}


def backup_once(blink: LatentBlink, folder: Path) -> tuple[float, Backup]:
    """The backup of every row's Score: its seconds, and the backup."""
    started = time.perf_counter()
    backup = write_backup(blink, str(folder / "T.json.backups" / "0000000000000000.jsonl"), header())  # type: ignore[arg-type]
    return time.perf_counter() - started, backup


def walk_once(blink: LatentBlink) -> float:
    started = time.perf_counter()
    assert sum(1 for _ in blink.iter_records("ws", "T")) == len(blink.rows)
    return time.perf_counter() - started


def backup_beside_a_walk(rows: int, delay: float, rounds: int) -> None:
    print(f"\n-- The backup of {rows:,} rows beside one walk of them, at {delay * 1000:.0f} ms round trips --")
    print(f"{'round':>5}  {'walk':>12}  {'backup':>12}  {'ratio':>6}  {'requests (walk, backup)':>24}")
    ratios = []
    with tempfile.TemporaryDirectory() as folder:
        for number in range(1, rounds + 1):  # interleaved: each round runs both
            blink = LatentBlink(rows, delay)
            walked = walk_once(blink)
            walk_calls, blink.calls = blink.calls, 0
            took, backup = backup_once(blink, Path(folder))
            assert backup.rows == rows
            ratios.append(took / walked)
            print(
                f"{number:>5}  {walked:>10.2f} s  {took:>10.2f} s  {took / walked:>5.2f}x  "
                f"{walk_calls:>11} {blink.calls:>11}"
            )
    print(f"target: at most one walk added; measured {max(ratios):.2f}x of a walk (the worst round), same requests")


def memory(sizes: tuple[int, int]) -> None:
    print("\n-- Peak Python memory of the backup (tracemalloc), above what the fake Blink keeps --")
    peaks = []
    for size in sizes:
        blink = LatentBlink(size, 0)
        with tempfile.TemporaryDirectory() as folder:
            tracemalloc.start()
            backup_once(blink, Path(folder))
            kept, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        peaks.append(peak - kept)
        print(f"{size:>9,} rows: peak {peak / 1e6:6.2f} MB; the backup's own {(peak - kept) / 1e6:6.2f} MB")
    print(f"target: flat; measured {peaks[1] / peaks[0]:.2f}x from {sizes[0]:,} to {sizes[1]:,} rows")


def restore_once(rows: int, delay: float, concurrency: int) -> float:
    """Write every row's saved Score back into a re-created field (empty): its seconds per row."""
    with tempfile.TemporaryDirectory() as folder:
        _, backup = backup_once(LatentBlink(rows, 0), Path(folder))
        blink = LatentBlink(rows, delay)
        request = RollbackRequest("ws", "T", folder, max_concurrency=concurrency)
        planned = RollbackPlan("ws", "T", str(Path(folder) / "T.json"), backup, (), "")
        rollback = _Rollback(blink, request, planned)  # type: ignore[arg-type]
        started = time.perf_counter()
        with workers(concurrency) as pool:
            written = rollback._write_back(pool, {"Score": "score_2"})
        took = time.perf_counter() - started
    assert written == {"Score": rows}
    return took / rows


def restore_beside_one_at_a_time(rows: int, sample: int, delay: float, rounds: int) -> None:
    print(f"\n-- A restore at {delay * 1000:.0f} ms round trips (3 a row: a read, a write, the confirming read) --")
    print(
        f"{'round':>5}  {'concurrency ' + str(DEFAULT_UPDATE_CONCURRENCY) + ' (' + str(rows) + ' rows)':>30}  "
        f"{'one at a time (' + str(sample) + ' rows)':>28}  {'per-row ratio':>13}"
    )
    ratios = []
    for number in range(1, rounds + 1):
        fast = restore_once(rows, delay, DEFAULT_UPDATE_CONCURRENCY)
        slow = restore_once(sample, delay, 1)
        ratios.append(slow / fast)
        print(f"{number:>5}  {fast * 1000:>24.2f} ms/row  {slow * 1000:>22.2f} ms/row  {slow / fast:>12.1f}x")
    print(f"target: at least 8x faster per row; measured {min(ratios):.1f}x (the worst round)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="small sizes, for CI")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    if args.smoke:
        backup_beside_a_walk(5_000, 0.02, 1)
        memory((1_000, 10_000))
        restore_beside_one_at_a_time(1_000, 100, 0.02, 1)
    else:
        backup_beside_a_walk(100_000, 0.02, 3)
        memory((10_000, 100_000))
        restore_beside_one_at_a_time(10_000, 1_000, 0.02, 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
