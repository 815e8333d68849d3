"""#64 item 5: ``"backfill": VALUE`` fills a field's empty rows (only those), on an add and before
``required`` turns on; counted in the plan, the XCom and the record; a rerun plans all unchanged;
a row a person fills between the walk and the write keeps that value."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_schema
from blinkops_provider.operators._report import ApplyReport
from blinkops_provider.sandbox import BlinkSandbox
from blinkops_provider.sandbox._seed import DEMO_ROWS
from tests.fake_blink import FakeBlink, blink_field

HELD = {"T": [blink_field("Name", "text"), blink_field("Team", "text")]}


def team(**extra: Any) -> dict[str, Any]:
    return {"field": "Team", "type": "text", "display_name": "Team", **extra}


def test_backfill_fills_only_empty_rows_then_turns_required_on(hook: Any, tmp_path: Path) -> None:
    declared = [team(attributes={"required": True}, backfill="unassigned")]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records["T"] = [{"id": "a", "Team": "red"}, {"id": "b", "Name": "x"}, {"id": "c", "Team": ""}]
        plan = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
        assert plan.fields[0].counts == {"rows": 3, "empty": 2, "backfill": 2}
        assert plan.fields[0].to_xcom()["backfill"] == "unassigned"
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
        assert [r["Team"] for r in blink.records["T"]] == ["red", "unassigned", "unassigned"]
        assert blink.records["T"][1]["Name"] == "x"  # the whole row was sent back
        assert blink.field("T", "Team")["attributes"]["required"] is True
        puts = [url for method, url in _calls(m) if method == "PUT"]
        first_put = next(n for n, url in enumerate(puts) if "/fields/" in url)
        last_fill = max(n for n, url in enumerate(puts) if "/fields/" not in url)
        assert last_fill < first_put  # filled first, then the check turned on
        again = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert result.backfilled == {"Team": 2}
    assert ApplyReport("ws-1", "T", hook.log).summary(result)["backfilled"] == {"Team": 2}
    assert json.loads((tmp_path / "ws-1" / "T.json").read_text())["backfilled"] == {"Team": 2}
    assert [row.action for row in again.fields] == ["unchanged"]


def _calls(m: Any) -> list[tuple[str, str]]:
    return [(r.method, r.url) for r in m.request_history]


def test_backfill_fills_every_row_of_an_added_field_under_blinks_name(hook: Any, tmp_path: Path) -> None:
    declared = [{"field": "Region", "type": "text", "display_name": "Region", "backfill": "eu"}]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records["T"] = [{"id": f"r{n}", "Name": f"n{n}"} for n in range(7)]
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", max_concurrency=3)
        named = result.names()["Region"]  # the fake's own naming rule
        assert named != "Region" and all(row[named] == "eu" for row in blink.records["T"])
        assert plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields[0].action == "unchanged"
    assert result.backfilled == {"Region": 7}


def test_a_row_filled_by_a_person_after_the_walk_keeps_its_value(hook: Any, tmp_path: Path) -> None:
    declared = [team(backfill="unassigned", attributes={"required": True})]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records["T"] = [{"id": "a"}, {"id": "b"}]
        finds = blink.finds

        def person_fills_b() -> None:  # after the apply's walk read the rows, before it writes
            if blink.finds > finds + 1:
                blink.records["T"][1]["Team"] = "blue"

        blink.after_find = person_fills_b
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert [r.get("Team") for r in blink.records["T"]] == ["unassigned", "blue"]
    assert result.backfilled == {"Team": 1}


def test_a_backfill_that_is_not_a_value_is_refused_before_any_request(hook: Any) -> None:
    with rm.Mocker() as m:
        for bad in (None, "", [], {"a": 1}):
            with pytest.raises(BlinkInputError, match="'backfill' must be the value to write in its empty rows"):
                plan_schema(hook, "ws-1", "T", [team(backfill=bad)])
        assert m.call_count == 0


def test_the_sandbox_backfills_a_new_required_field(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    hook = BlinkHook()
    declared = [{"field": "Queue", "type": "text", "display_name": "Queue", "attributes": {"required": True}}]
    refused = apply_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/")
    assert refused.outcomes() == {"Queue": "failed"}
    declared[0]["backfill"] = "triage"
    done = apply_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/")
    assert done.backfilled == {"Queue": len(DEMO_ROWS["Incidents"])}
    rows = blink_sandbox.store.find_records("ws-demo", "Incidents", json.dumps({"limit": 1000}))["results"]
    assert {row["queue"] for row in rows} == {"triage"}
    assert (
        plan_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/").fields[0].action == "unchanged"
    )


# -- #64 item 7: a worker killed mid-copy, then a retry ---------------------------------------------

KILLED_APPLY = """
import sys
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema
declared = [{"field": "Score", "type": "number", "display_name": "Score", "type_change": "copy"}]
apply_schema(BlinkHook(), "ws-demo", "Scores", declared, record_path=sys.argv[1], acknowledge_risks=True,
             max_concurrency=4)
"""


def record_puts(sandbox: BlinkSandbox) -> list[str]:
    prefix = "/api/v1/workspace/ws-demo/table/Scores/"
    return [
        e["path"].removeprefix(prefix)
        for e in sandbox.requests
        if e["method"] == "PUT" and e["path"].startswith(prefix) and "/fields/" not in e["path"]
    ]


def test_a_worker_killed_mid_copy_then_a_retry_converts_every_row_once(
    blink_sandbox: BlinkSandbox, tmp_path: Path
) -> None:
    """SIGKILL in the middle of a retype's copy (another process), then a retry here: every row
    converted once, none lost, one new field, at most one page copied twice."""
    import os
    import signal
    import subprocess
    import sys
    import time

    fields = [{"field": "Name", "type": "text", "display_name": "Name"}]
    blink_sandbox.create_table(
        "ws-demo", "Scores", {"fields": [*fields, {**fields[0], "field": "Score", "display_name": "Score"}]}
    )
    rows = [{"Name": f"n{n}", "Score": str(n)} for n in range(1500)]
    blink_sandbox.store.create_records("ws-demo", "Scores", rows, "seed")
    blink_sandbox.set_faults(latency_ms=2)
    record = f"{tmp_path}/"
    worker = subprocess.Popen([sys.executable, "-c", KILLED_APPLY, record], env=os.environ.copy())
    deadline = time.monotonic() + 120
    while len(record_puts(blink_sandbox)) < 600:  # bounded: the worker is mid-copy, or the test says why
        assert worker.poll() is None, "the worker ended before the copy was half done"
        assert time.monotonic() < deadline, f"only {len(record_puts(blink_sandbox))} rows copied in 120 s"
        time.sleep(0.02)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    first = record_puts(blink_sandbox)
    blink_sandbox.clear_faults()
    declared = [{"field": "Score", "type": "number", "display_name": "Score", "type_change": "copy"}]
    result = apply_schema(BlinkHook(), "ws-demo", "Scores", declared, record_path=record, acknowledge_risks=True)
    assert result.outcomes() == {"Score": "retyped"}
    new = result.names()["Score"]
    numbers = [f for f in blink_sandbox.store.fields("ws-demo", "Scores") if f["type"] == "number"]
    assert [f["name"] for f in numbers] == [new]  # one new field
    held = blink_sandbox.store.find_records("ws-demo", "Scores", json.dumps({"limit": 1000}))
    rest = blink_sandbox.store.find_records("ws-demo", "Scores", json.dumps({"limit": 1000, "offset": 1000}))
    every = held["results"] + rest["results"]
    assert len(every) == 1500 and all(row[new] == int(row["Name"][1:]) for row in every)  # none lost
    writes = Counter(record_puts(blink_sandbox))
    assert 600 <= len(first) < 1500 and len(writes) == 1500
    assert sum(n > 1 for n in writes.values()) <= 500  # at most one page (500 rows) copied again
