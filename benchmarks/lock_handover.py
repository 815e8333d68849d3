"""How soon a waiting apply takes a table's lock after its holder releases it (#43 item 1).

Eight applies a round wait for one table's lock on a local folder, with the lock's own poll
schedule in real time (its waits and clock run ``SCALE`` times faster); each holds it briefly, as
an apply does. Prints the handover gaps (release to the next holder's entry) beside the hold
they follow; the target is a mean gap under a third of a hold. The tests prove the exclusion and
that every waiter gets its turn (tests/unit/migrations/test_lock.py) without waiting for real.

    python benchmarks/lock_handover.py [--smoke]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the clone: the tests' journal checks

from blinkops_provider.migrations._lock import Holder, TableLock, record_location
from tests.unit.migrations.test_lock import check_journal, handover_gaps

HOLD = 0.5
"""How long a holder keeps the lock, in the lock's seconds."""
SCALE = 50.0
CONTENDERS = 8


def contend(records: str, journal: str, who: str, rounds: int, start: Any) -> None:
    """Each round, at the barrier, wait for the lock (lock_wait=60) and hold it for ``HOLD``."""
    clock = {"sleep": lambda s: time.sleep(s / SCALE), "monotonic": lambda: time.monotonic() * SCALE}
    holder = Holder(host=socket.gethostname(), pid=os.getpid(), label=who)
    out = os.open(journal, os.O_WRONLY | os.O_APPEND)
    try:
        for number in range(rounds):
            start.wait()
            lock = TableLock(
                record_location(records, "ws", "t"),
                records=records,
                ws_id="ws",
                table="t",
                holder=holder,
                wait=60.0,
                **clock,
            )
            lock.acquire()
            os.write(out, f"{number} enter {who} {clock['monotonic']()}\n".encode())
            time.sleep(HOLD / SCALE)
            os.write(out, f"{number} exit {who} {clock['monotonic']()}\n".encode())
            lock.release()
    finally:
        os.close(out)


def measure(kind: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        records, journal = f"{folder}/records/", f"{folder}/journal"
        Path(journal).write_text("")
        if kind == "threads":
            start: Any = threading.Barrier(CONTENDERS)
            workers: list[Any] = [
                threading.Thread(target=contend, args=(records, journal, str(n), rounds, start))
                for n in range(CONTENDERS)
            ]
        else:
            context = multiprocessing.get_context("fork")
            start = context.Barrier(CONTENDERS)
            workers = [
                context.Process(target=contend, args=(records, journal, str(n), rounds, start))
                for n in range(CONTENDERS)
            ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        held = check_journal(journal, CONTENDERS, 60.0, rounds=rounds)
        gaps = handover_gaps(journal)
    mean = sum(gaps) / len(gaps)
    verdict = "met" if mean < HOLD / 3 else "NOT MET"
    print(
        f"  {kind:9} {held} holds: handover gap mean {mean:.3f} s, max {max(gaps):.3f} s; "
        f"the hold {HOLD:.3f} s; mean/hold {mean / HOLD:.2f} (target < 0.33: {verdict})"
    )


def main() -> int:
    logging.getLogger("blinkops_provider").setLevel(logging.WARNING)  # not each waiter's "Waiting up to" line
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="fewer rounds, for CI")
    rounds = 2 if parser.parse_args().smoke else 20
    print(f"Lock handover: {CONTENDERS} waiting applies a round, {rounds} rounds, the lock's clock x{SCALE:.0f}")
    for kind in ("threads", "processes"):
        measure(kind, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
