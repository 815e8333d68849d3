"""The blast radius's cost (#75), each figure beside its peer, interleaved, with ratios.

1. **A plan over a tenant with 1,000 workflows (5,000 steps)** at 20 ms round trips, beside the same plan without the
   workflows read: requests, seconds and CPU seconds. The bar: at most the round trips of one paged walk of the
   workflows added, and at most 10% more CPU.
2. **Its memory** (tracemalloc's peak of the workflows read, above what the fake Blink keeps) at 1,000 and at 10,000
   workflows: flat.

The tenant is the tests' fake Blink (requests_mock, in this process) behind a real ``BlinkHook``, every request
waiting the round trip. One workflow in ten has steps on the planned table (one in three of those uses the removed
field); the others use twenty other tables.

    python benchmarks/workflows.py            # the figures
    python benchmarks/workflows.py --smoke    # small sizes, for CI
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))
os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(
    {"conn_type": "blink", "host": "https://blink.test", "password": "bench-key-not-a-secret"}
)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: the tests' fake Blink

import requests_mock

from blinkops_provider.hooks.blink import WORKFLOW_PAGE_SIZE, BlinkHook
from blinkops_provider.migrations import _apply, plan_schema
from blinkops_provider.migrations._usage import Probe, Usage, read_usage
from tests.fake_blink import FakeBlink, blink_field, step, workflow

FIELDS = ["Risk", "Severity", "Owner", "Title", "Due", "Queue", "Notes", "Score", "Team", "Host"]
DECLARED = [{"field": "Risk", "remove": True}]


def tenant_workflows(count: int) -> list[dict[str, Any]]:
    """``count`` workflows of five steps each: one in ten on ``incidents`` (a third of those use 'Risk')."""
    made = []
    for n in range(count):
        table = "incidents" if n % 10 == 0 else f"table_{n % 20}"
        field = "Risk" if n % 30 == 0 else FIELDS[1 + n % 9]
        steps = [
            step("S1", "tables.GetRecordsV3", table, ci=json.dumps({field: {"$eq": "x"}, "Title": "y"})),
            step("S2", "tables.AddRecordV2", table, Title="{{ steps.S1.output.title }}", Owner="ops"),
            step("S3", "slack.SendMessage", None, channel="#ops", text="{{ steps.S2.output.id }}"),
            step("S4", "tables.UpdateRecords", table, data=json.dumps([{"id": "1", "Notes": "seen"}])),
            step("S5", "tables.GetRecordsV3", table, query=json.dumps({"filter": {"Team": "red"}, "sort": ["-Due"]})),
        ]
        made.append(workflow(f"pb-{n:05d}", f"Workflow {n}", steps, active=n % 7 != 0))
    return made


class LatentBlink(FakeBlink):
    """The tests' fake Blink, each request waiting the round trip, counted."""

    def __init__(self, delay: float, workflows: int) -> None:
        super().__init__({"incidents": [blink_field(name, "text") for name in FIELDS]})
        self.records["incidents"] = [{"id": f"r{n:05d}", "Risk": str(n % 4), "Title": f"t{n}"} for n in range(500)]
        self.workflows = tenant_workflows(workflows)
        self.delay = delay
        self.requests = 0
        self.served_cpu = 0.0
        """CPU seconds the fake spent serving (its JSON pages): the harness's, taken out of the plan's."""

    def mount(self, m: Any) -> LatentBlink:
        super().mount(m)
        for matcher in m._adapter._matchers:  # every route waits the round trip (the fake's own handlers)
            responses = matcher._responses
            for response in responses:
                handler = response._params.get("json")
                if callable(handler):
                    response._params["json"] = self._latent(handler)
        return self

    def _latent(self, handler: Any) -> Any:
        def wrapped(request: Any, context: Any) -> Any:
            self.requests += 1
            time.sleep(self.delay)
            cpu = time.thread_time()
            answer = handler(request, context)
            self.served_cpu += time.thread_time() - cpu
            return answer

        return wrapped


@contextmanager
def without_workflows() -> Iterator[None]:
    """The peer: the same plan, its workflows read replaced by one that finds nothing and sends nothing."""
    with mock.patch.object(_apply, "read_usage", return_value=Usage()):
        yield


def plan_once(delay: float, workflows: int, read: bool) -> tuple[float, float, int]:
    """One plan of the removal: its seconds, CPU seconds and requests."""
    with requests_mock.Mocker() as m:
        blink = LatentBlink(delay, workflows).mount(m)
        hook = BlinkHook()
        with contextlib.nullcontext() if read else without_workflows():
            cpu, started = time.process_time(), time.perf_counter()
            planned = plan_schema(hook, "ws-1", "incidents", DECLARED)
            took, used = time.perf_counter() - started, time.process_time() - cpu - blink.served_cpu
    assert planned.fields[0].action == "remove" and (bool(planned.fields[0].workflows) == read)
    return took, used, blink.requests


def plan_beside_the_plan_without(workflows: int, delay: float, rounds: int) -> None:
    pages = math.ceil(workflows / WORKFLOW_PAGE_SIZE)
    print(
        f"\n-- A plan over {workflows:,} workflows ({workflows * 5:,} steps) at {delay * 1000:.0f} ms round trips, "
        "beside the same plan without the workflows read --"
    )
    print(f"{'round':>5}  {'without':>22}  {'with':>22}  {'added':>22}  {'CPU ratio':>9}")
    worst_time, worst_cpu, added_requests = 0.0, 0.0, set()
    plan_once(delay, workflows, read=True)  # a warm-up: imports, the first connection
    for number in range(1, rounds + 1):  # interleaved: each round runs both
        plain = plan_once(delay, workflows, read=False)
        read = plan_once(delay, workflows, read=True)
        added = (read[0] - plain[0], read[2] - plain[2])
        added_requests.add(added[1])
        worst_time = max(worst_time, added[0] / (pages * delay))
        worst_cpu = max(worst_cpu, read[1] / plain[1])
        print(
            f"{number:>5}  {plain[0]:>6.2f} s {plain[1]:>5.2f} cpu {plain[2]:>3} rq  "
            f"{read[0]:>6.2f} s {read[1]:>5.2f} cpu {read[2]:>3} rq  "
            f"{added[0]:>6.2f} s {read[1] - plain[1]:>5.2f} cpu {added[1]:>3} rq  {read[1] / plain[1]:>8.2f}x"
        )
    print(
        f"target: at most one paged walk ({pages} requests, {pages * delay:.2f} s) and 10% CPU added; measured "
        f"{sorted(added_requests)} request(s) added, {worst_time:.2f}x a walk's time and {worst_cpu:.2f}x the CPU "
        "(the worst rounds)"
    )


class Pages:
    """A hook whose workflows read yields generated workflows, a page at a time (none kept)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def iter_workflows(self, ws_id: str) -> Iterator[Any]:
        from blinkops_provider.models import Workflow

        for start in range(0, self.count, WORKFLOW_PAGE_SIZE):
            for one in tenant_workflows_slice(start, min(self.count, start + WORKFLOW_PAGE_SIZE)):
                yield Workflow.model_validate(one)


def tenant_workflows_slice(start: int, end: int) -> list[dict[str, Any]]:
    return [dict(one, id=f"pb-{start + n:05d}") for n, one in enumerate(tenant_workflows(end - start))]


def memory(sizes: tuple[int, int]) -> None:
    print("\n-- Peak Python memory of the workflows read (tracemalloc), a page generated at a time --")
    peaks = []
    for size in sizes:
        tracemalloc.start()
        usage = read_usage(Pages(size), "ws-1", "incidents", [Probe("Risk", ("mentions",))])  # type: ignore[arg-type]
        kept, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peaks.append(peak - kept)
        listed = len(usage.uses["Risk"])
        print(
            f"{size:>7,} workflows: peak {peak / 1e6:6.2f} MB; the read's own {(peak - kept) / 1e6:6.2f} MB "
            f"(what it keeps: the {listed} workflows it lists, {kept / 1e6:.2f} MB)"
        )
    print(f"target: flat; measured {peaks[1] / peaks[0]:.2f}x from {sizes[0]:,} to {sizes[1]:,} workflows")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="small sizes, for CI")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    if args.smoke:
        plan_beside_the_plan_without(200, 0.02, 1)
        memory((200, 2_000))
    else:
        plan_beside_the_plan_without(1_000, 0.02, 3)
        memory((1_000, 10_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
