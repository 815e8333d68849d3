"""Benchmarks of the provider's hot paths; prints measured figures, asserts nothing.

Ends with the side-by-side runs over a latency-injecting proxy: ``catalogue_sync.py`` (the
provider against a raw requests loop and HttpOperator) and ``field_updates.py`` (the batch
operator against one-by-one updates), then ``lock_handover.py`` (how soon a waiting apply
takes a released lock, beside the hold) and ``data_copy.py`` (a count from Blink's total beside a
walk, a retype's copy beside one row at a time, its time per row and memory as rows grow), then ``undo.py`` (an
apply's backup beside one walk of the rows, its memory, a rollback's restore beside one row at a time).

    python benchmarks/run.py            # full run (100,000 connection types)
    python benchmarks/run.py --smoke    # a quick run for CI

What it measures, against an in-process fake of the listing (requests-mock, no sockets):
- walking the catalogue with the hook: connection types per second, pages per second;
- ConnectionTypesToXComOperator with output_path: time and peak Python memory (tracemalloc),
  which should stay flat as the catalogue grows, since pages are streamed to the file;
- the same operator into XCom (a list in memory), for comparison;
- the sandbox: seeding a large catalogue, and the hook walking it over real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))
os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(
    {"conn_type": "blink", "host": "https://blink.bench", "password": "bench-key-0123456789"}
)

import requests_mock

from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

URL = "https://blink.bench/api/v1/connection_types"


def connection_type(i: int) -> dict[str, Any]:
    return {
        "id": f"ct-{i:07d}",
        "name": f"integration_{i}",
        "display_name": f"Integration {i}",
        "plugin_name": f"plugin-{i % 50}",
        "documentation_link": f"https://docs.example.com/{i}",
        "icon_uri": f"https://icons.example.com/{i}.svg",
        "oauth_supported": i % 3 == 0,
        "attributes": {"api_key": {"display_name": "API key", "input_type": "password", "required": True}},
        "metadata": {
            "authentication": {"type": "api-key", "keys": [{"name": "api_key", "format": "string"}]},
            "defaultAPIAddress": f"https://api{i}.example.com",
            "testConnection": {"type": "http", "endpoint": "/me", "expected": {"statusCodes": "200-399"}},
            "validation": {"statusCodes": "200-299"},
        },
        "methods": [{"name": "api_key", "display_name": "API key", "attributes": ["api_key"]}],
        "created_at": 1_700_000_000_000 + i,
        "updated_at": 1_700_000_000_000 + i,
    }


class FakeListing:
    """Serves a catalogue of ``size`` items to the keyset walk (ids ``ct-0000000`` upwards), cheaply.

    Understands what the walk sends: ``id`` bounds (``$gt``, ``$lte``) in the filter, ``offset``,
    ``limit`` and ``select``.
    """

    def __init__(self, size: int, page_size: int) -> None:
        self.size = size
        self.items = [connection_type(i) for i in range(size)]

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        q = json.loads(parse_qs(urlsplit(request.url).query)["q"][0])
        bounds = (q.get("filter") or {}).get("id", {})
        start = int(bounds["$gt"][3:]) + 1 if "$gt" in bounds else 0
        end = int(bounds["$lte"][3:]) + 1 if "$lte" in bounds else self.size
        first = start + q.get("offset", 0)
        rows = self.items[first : min(end, first + q["limit"])]
        if "select" in q:
            rows = [{k: row[k] for k in q["select"]} for row in rows]
        return {"limit": q["limit"], "offset": q.get("offset", 0), "total": max(0, end - start), "results": rows}


def measure(label: str, size: int, page_size: int, work: Any) -> None:
    """Time ``work`` once as it is, then once under tracemalloc for its peak Python memory."""
    listing = FakeListing(size, page_size)
    with requests_mock.Mocker() as mock:
        mock.get(URL, json=listing)
        started = time.perf_counter()
        count = work()
        elapsed = time.perf_counter() - started
        tracemalloc.start()
        work()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    if count != size:
        raise SystemExit(f"{label}: walked {count} items, expected {size}")
    print(
        f"{label:<38} {size:>8} items  {elapsed:7.2f} s  {size / elapsed:>9,.0f} items/s  "
        f"{size / page_size / elapsed:7.1f} pages/s  peak {peak / 2**20:7.1f} MiB"
    )


def sandbox_walk(size: int, page_size: int) -> None:
    """Seed the sandbox with ``size`` types, then walk them with the hook over real HTTP."""
    from blinkops_sandbox import BlinkSandbox

    started = time.perf_counter()
    sandbox = BlinkSandbox(connection_types=size)
    seeded = time.perf_counter() - started
    print(f"{'sandbox: seed the catalogue':<38} {size:>8} items  {seeded:7.2f} s  {size / seeded:>9,.0f} items/s")
    with sandbox:
        os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = sandbox.connection_json()
        started = time.perf_counter()
        count = sum(1 for _ in BlinkHook().iter_connection_types(page_size=page_size))
        elapsed = time.perf_counter() - started
    if count != size:
        raise SystemExit(f"sandbox walk: got {count} items, expected {size}")
    print(
        f"{'hook walk over HTTP (sandbox)':<38} {size:>8} items  {elapsed:7.2f} s  {size / elapsed:>9,.0f} items/s  "
        f"{size / page_size / elapsed:7.1f} pages/s"
    )


def example_dag_parse_times() -> None:
    """How long each example DAG file takes to import, Airflow itself already imported."""
    import importlib.util

    import airflow.providers.common.compat.sdk as sdk

    for name in ("DAG", "Param", "Asset", "task", "get_current_context"):
        getattr(sdk, name)
    import blinkops_provider.operators.connection_types
    import blinkops_provider.operators.tables  # noqa: F401

    for path in sorted((Path(__file__).resolve().parents[1] / "example_dags").glob("blink_*.py")):
        started = time.perf_counter()
        spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        print(f"{'parse ' + path.name:<60} {(time.perf_counter() - started) * 1000:7.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small sizes, for CI")
    args = parser.parse_args()
    logging.disable(logging.INFO)  # one line a page would drown the figures
    sizes = [2_000, 10_000] if args.smoke else [10_000, 100_000]
    page_size = 1000
    print(f"Python {sys.version.split()[0]}; page size {page_size}; figures include requests-mock's own cost")
    out_file = str(Path(tempfile.mkdtemp(prefix="blink-bench-out-")) / "catalogue.json")

    def walk() -> int:
        return sum(1 for _ in BlinkHook().iter_connection_types(page_size=page_size))

    def walk_dicts() -> int:
        return sum(len(page.items) for page in BlinkHook().walk_connection_types(page_size=page_size))

    def to_file() -> int:
        op = ConnectionTypesToXComOperator(task_id="b", page_size=page_size, output_path=out_file)
        return int(op.execute({})["count"])

    def to_xcom() -> int:
        return len(ConnectionTypesToXComOperator(task_id="b", page_size=page_size).execute({}))

    for size in sizes:
        measure("hook.iter_connection_types (models)", size, page_size, walk)
        measure("hook.walk_connection_types (dicts)", size, page_size, walk_dicts)
        measure("operator -> output_path (streamed)", size, page_size, to_file)
        measure("operator -> XCom list (in memory)", size, page_size, to_xcom)
    sandbox_walk(sizes[-1], page_size)
    example_dag_parse_times()
    failed = 0
    for script, title in (
        ("catalogue_sync.py", "The catalogue sync side by side"),
        ("field_updates.py", "Batch field updates side by side"),
        ("lock_handover.py", "A table lock's handover to a waiting apply"),
        ("data_copy.py", "Data migrations: counts, a retype's copy, scaling and memory"),
        ("undo.py", "Undo: the backup beside a walk, its memory, a restore beside one row at a time"),
        ("workflows.py", "The blast radius: a plan's workflows read beside the plan without it, its memory"),
        ("schema_cli.py", "blink-schema in CI: validate and plan"),
        ("apply_profile.py", "How far one apply reaches into the provider"),
    ):
        print(f"\n== {title} (benchmarks/{script}) ==", flush=True)
        command = [sys.executable, str(Path(__file__).with_name(script)), *(["--smoke"] if args.smoke else [])]
        failed |= subprocess.run(command, check=False).returncode
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
