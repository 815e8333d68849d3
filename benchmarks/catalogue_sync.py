"""The catalogue sync side by side with what a user could build alone, over a slow network.

    python benchmarks/catalogue_sync.py            # 20,000 types, 5 interleaved rounds, RSS at 200,000
    python benchmarks/catalogue_sync.py --smoke    # small and quick, for CI

Set-up: a Blink sandbox (``blink-sandbox serve``, its own process) behind ``latency_proxy.py``
(its own process, 10 ms each way, so a 20 ms round trip). Each way runs in a fresh Python
process, with every installed module compiled to bytecode first and, before the clock, Airflow and
what its task runner has imported (``airflow.sdk.execution_time.supervisor``); the time is taken
around the whole ``execute`` (the connection look-up included), and the peak RSS is the process's. Rounds are interleaved (every way once per round) and medians are printed.

The ways:
- ``raw loop``: a ``requests.Session`` loop over offsets, ``response.json()`` per page;
- ``HttpOperator``: apache-airflow-providers-http with a ``pagination_function`` and a
  ``response_filter`` that collects the items;
- ``provider -> XCom`` and ``provider -> output_path``: ``ConnectionTypesToXComOperator``;
- ``output_path, cold``: the same as a fresh task pays it, with the operator's import and every
  first-use set-up inside the clock (the warm way's warm-up is printed beside the figures).

It runs at 20,000 types (the targets) and at 300, Blink's real size (one page).

The latency floor is pages x RTT plus the server's own time for a bare walk (every page fetched
straight from the sandbox, without the proxy, and not parsed): at 300 types, one round trip plus
the server's time for the page. The targets (#37): at 300 types, XCom within 1.5x of the floor and
1.15x of the raw loop; at 20,000, XCom at least 2x faster than HttpOperator and output_path within
2x of the sequential floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAGE = 1000
KEY = "bench-key-0123456789abcdef"
WAYS = ("raw loop", "HttpOperator", "provider -> XCom", "provider -> output_path", "output_path, cold")
COLD = "output_path, cold"
"""The output_path way as a fresh task pays it: the operator's import and any first-use set-up
inside the clock, nothing warmed before it."""


# -- the child: one way, one run ----------------------------------------------------------------


def _raw_loop(base: str) -> int:
    import requests

    items: list[dict[str, Any]] = []
    with requests.Session() as session:
        session.headers["BLINK-API-KEY"] = KEY
        offset = 0
        while True:
            q = json.dumps({"limit": PAGE, "offset": offset})
            page = session.get(f"{base}/connection_types", params={"q": q}, timeout=60).json()
            items.extend(page["results"])
            offset += len(page["results"])
            if not page["results"] or offset >= page["total"]:
                return len(items)


def _bare_walk(base: str) -> int:
    """The server's own time: every page fetched over offsets, bodies read but not parsed."""
    import requests

    with requests.Session() as session:
        session.headers["BLINK-API-KEY"] = KEY

        def get(offset: int) -> bytes:
            q = json.dumps({"limit": PAGE, "offset": offset})
            return session.get(f"{base}/connection_types", params={"q": q}, timeout=60).content

        total = json.loads(get(0))["total"]
        for offset in range(PAGE, total, PAGE):
            get(offset)
        return int(total)


def _http_operator(base: str) -> int:
    from airflow.providers.http.operators.http import HttpOperator

    os.environ["AIRFLOW_CONN_BENCH_HTTP"] = json.dumps({"conn_type": "http", "host": base})

    def next_page(response: Any) -> dict[str, Any] | None:
        page = response.json()
        offset = page["offset"] + len(page["results"])
        if not page["results"] or offset >= page["total"]:
            return None
        return {"data": {"q": json.dumps({"limit": PAGE, "offset": offset})}}

    op = HttpOperator(
        task_id="sync",
        http_conn_id="bench_http",
        endpoint="connection_types",
        method="GET",
        data={"q": json.dumps({"limit": PAGE, "offset": 0})},
        headers={"BLINK-API-KEY": KEY},
        pagination_function=next_page,
        response_filter=lambda responses: [item for r in responses for item in r.json()["results"]],
    )
    return len(op.execute({}))


def _provider(base: str, output_path: str | None) -> int:
    from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

    os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps({"conn_type": "blink", "host": base, "password": KEY})
    op = ConnectionTypesToXComOperator(task_id="sync", page_size=PAGE, output_path=output_path)
    result = op.execute({})
    return int(result["count"]) if output_path else len(result)


def child(way: str, base: str, out: str) -> None:
    """Run one way once; print ``{"seconds", "count", "rss_mib"}`` as JSON."""
    import logging

    import airflow  # imported before the clock starts, as in a task
    import requests  # noqa: F401

    try:  # what Airflow's task runner has imported before it runs a task (Airflow 3)
        import airflow.sdk.execution_time.supervisor
        import airflow.sdk.execution_time.task_runner
    except ImportError:  # Airflow 2.11
        import airflow.models.taskinstance

    if os.environ.get("BLINK_BENCH_QUIET"):  # the default keeps INFO logging on, as a task has it
        logging.disable(logging.INFO)
    if way not in ("raw loop", "bare walk", COLD):  # the operators' modules, also before the clock
        import airflow.providers.http.operators.http  # noqa: F401

        import blinkops_provider.operators.connection_types  # noqa: F401
    warm_up = time.perf_counter()
    if way.endswith("output_path"):
        # Airflow's object storage discovers every provider's filesystems on first use: about
        # 1 s with the amazon provider installed, once per process, whatever writes the file.
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        warm = ObjectStoragePath(f"{out}.warm")
        warm.parent.mkdir(parents=True, exist_ok=True)
        with warm.open("w") as file:  # type: ignore[no-untyped-call]
            file.write("[]")
        warm.replace(warm.with_name(f"{warm.name}.done"))
        warm.with_name(f"{warm.name}.done").unlink()
    started = time.perf_counter()
    warm_up = started - warm_up
    if way == "bare walk":
        count = _bare_walk(base)
    elif way == "raw loop":
        count = _raw_loop(base)
    elif way == "HttpOperator":
        count = _http_operator(base)
    else:
        count = _provider(base, out if way.endswith(("output_path", "cold")) else None)
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "count": count, "rss_mib": rss, "warm_up": warm_up}))


# -- the parent: servers, rounds, figures -----------------------------------------------------------


def _start(stack: ExitStack, args: list[str], pattern: str) -> re.Match[str]:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    stack.callback(process.wait, 10)
    stack.callback(process.terminate)
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(pattern, line)
        if found:
            return found
    raise SystemExit(f"{args[0]} did not start")


def _run(way: str, base: str, out: str, size: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", way, "--base", base, "--out", out],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{way} failed:\n{done.stderr[-3000:]}")
    figures = json.loads([line for line in done.stdout.splitlines() if line.startswith('{"seconds"')][-1])
    if figures["count"] != size:
        raise SystemExit(f"{way}: walked {figures['count']} types, expected {size}")
    return figures


def _serve(stack: ExitStack, size: int, delay_ms: float) -> tuple[str, str]:
    """A sandbox of ``size`` types and a proxy in front of it: (direct base URL, proxied base URL)."""
    sandbox = _start(
        stack,
        [
            str(Path(sys.executable).with_name("blink-sandbox")),
            "serve",
            "--api-key",
            KEY,
            "--seed-connection-types",
            str(size),
        ],
        r"listening on (http://[\d.]+:(\d+))",
    )
    return f"{sandbox[1]}/api/v1", f"{_proxy(stack, int(sandbox[2]), delay_ms)}/api/v1"


def _proxy(stack: ExitStack, port: int, delay_ms: float) -> str:
    """``latency_proxy.py`` in front of 127.0.0.1:``port``, ``delay_ms`` each way: its base URL."""
    args = [sys.executable, str(HERE / "latency_proxy.py"), "--target", f"127.0.0.1:{port}"]
    proxy = _start(stack, [*args, "--delay-ms", str(delay_ms)], r"listening on (\d+)")
    return f"http://127.0.0.1:{proxy[1]}"


def compare(size: int, rounds: int, delay_ms: float, out: str, note: str = "") -> dict[str, dict[str, float]]:
    """Interleaved rounds of every way against one sandbox; prints and returns the medians."""
    with ExitStack() as stack:
        direct, proxied = _serve(stack, size, delay_ms)
        _run("bare walk", direct, out, size)  # warm the sandbox
        runs: dict[str, list[dict[str, float]]] = {way: [] for way in ("bare walk", *WAYS)}
        for _ in range(rounds):
            runs["bare walk"].append(_run("bare walk", direct, out, size))
            for way in WAYS:
                runs[way].append(_run(way, proxied, out, size))
    medians = {
        way: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "rss_mib", "warm_up")}
        for way, rs in runs.items()
    }
    pages = -(-size // PAGE)
    floor = pages * 2 * delay_ms / 1000 + medians["bare walk"]["seconds"]
    raw, http = medians["raw loop"]["seconds"], medians["HttpOperator"]["seconds"]
    print(
        f"\n{size:,} connection types, page size {PAGE}, RTT {2 * delay_ms:g} ms, {rounds} interleaved round(s), medians"
    )
    print(
        f"latency floor: {pages} pages x {2 * delay_ms:g} ms + bare walk {medians['bare walk']['seconds']:.3f} s "
        f"= {floor:.3f} s"
    )
    print(f"{'way':<26}{'seconds':>9}{'peak RSS':>11}{'vs raw':>9}{'vs Http':>9}{'vs floor':>10}")
    for way in WAYS:
        s, rss = medians[way]["seconds"], medians[way]["rss_mib"]
        print(f"{way:<26}{s:>9.3f}{rss:>8.0f} MiB{s / raw:>8.2f}x{s / http:>8.2f}x{s / floor:>9.2f}x")
    xcom, to_file = medians["provider -> XCom"]["seconds"], medians["provider -> output_path"]["seconds"]
    cold = medians[COLD]["seconds"]
    print(
        f"warm-up kept outside the clock of 'provider -> output_path' (ObjectStoragePath discovery): "
        f"{medians['provider -> output_path']['warm_up']:.3f} s; '{COLD}' counts everything a fresh task "
        "pays after Airflow's import (the operator's import included)"
    )
    print("targets:" + (f" ({note})" if note else ""))
    if pages == 1:  # Blink's size: the headline
        for label, ratio, bar in (("the floor", xcom / floor, 1.5), ("the raw loop", xcom / raw, 1.15)):
            print(f"  XCom within {bar:g}x of {label}: {ratio:5.2f}x  {'met' if ratio <= bar else 'NOT MET'}")
        return medians
    print(f"  XCom >= 2x faster than HttpOperator:   {http / xcom:5.2f}x  {'met' if http / xcom >= 2 else 'NOT MET'}")
    for label, seconds in (("warm", to_file), ("cold", cold)):
        verdict = "met" if seconds / floor <= 2 else "NOT MET"
        print(f"  output_path within 2x of the sequential floor ({label}): {seconds / floor:5.2f}x  {verdict}")
    return medians


def rss_flat(sizes: tuple[int, int], out: str) -> None:
    """Peak RSS of output_path mode at two catalogue sizes (no added latency)."""
    peaks = []
    for size in sizes:
        with ExitStack() as stack:
            direct, _ = _serve(stack, size, 0)
            peaks.append(
                statistics.median(_run("provider -> output_path", direct, out, size)["rss_mib"] for _ in range(2))
            )
    growth = peaks[1] / peaks[0]
    print(
        f"  output_path peak RSS flat, {sizes[0]:,} -> {sizes[1]:,} types: {peaks[0]:.0f} -> {peaks[1]:.0f} MiB "
        f"({growth:.2f}x)  {'met' if growth <= 1.1 else 'NOT MET'}"
    )


def compile_bytecode() -> None:
    """Compile every installed module, as an installed package has them (CI sets
    PYTHONDONTWRITEBYTECODE, so nothing would be compiled otherwise): no compiling in the clock."""
    import compileall
    import sysconfig

    started = time.perf_counter()
    for where in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        compileall.compile_dir(where, quiet=2, workers=0)
    print(f"bytecode compiled in {time.perf_counter() - started:.1f} s (outside every clock)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small sizes and one round, for CI")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the full run (default 5)")
    parser.add_argument("--no-rss", action="store_true", help="skip the 20,000 vs 200,000 peak-RSS check")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.base, args.out)
        return 0
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-bench-"))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"  # else the first file move loads Airflow's example plugins
    out = str(Path(tempfile.mkdtemp(prefix="blink-bench-out-")) / "catalogue.json")
    compile_bytecode()
    real = "Blink's real size, one page: the headline"
    if args.smoke:
        compare(2_000, 1, 10, out, note="smoke sizes: fixed costs dominate; the targets are for the full run")
        compare(300, 1, 10, out, note=real)
        rss_flat((8_000, 24_000), out)
    else:
        compare(20_000, args.rounds, 10, out)
        compare(300, args.rounds, 10, out, note=real)
        if not args.no_rss:
            rss_flat((20_000, 200_000), out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
