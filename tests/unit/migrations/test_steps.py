"""Tables as code (#48), through the front door (plan_schema, apply_schema) against a Blink whose
naming rule is not the sandbox's (tests/fake_blink.py): fields added and found again, removals
behind an approval, tables created and edited, and the order the apply sends in
(blinkops_provider.migrations._steps).

#64 item 5: ``"backfill": VALUE`` fills a field's empty rows (only those), on an add and before
``required`` turns on; counted in the plan, the XCom and the record; a rerun plans all unchanged;
a row a person fills between the walk and the write keeps that value.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError, BlinkInputError, BlinkNotFoundError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import apply_schema, plan_schema, plan_text, plan_xcom
from blinkops_provider.operators.tables import ApplyReport
from blinkops_sandbox import DEMO_ROWS, BlinkSandbox
from tests.fake_blink import FakeBlink, blink_field

FILL_HELD = {"T": [blink_field("Name", "text"), blink_field("Team", "text")]}


def team(**extra: Any) -> dict[str, Any]:
    return {"field": "Team", "type": "text", "display_name": "Team", **extra}


def test_backfill_fills_only_empty_rows_then_turns_required_on(hook: Any, tmp_path: Path) -> None:
    declared = [team(attributes={"required": True}, backfill="unassigned")]
    with rm.Mocker() as m:
        blink = FakeBlink(FILL_HELD).mount(m)
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
        blink = FakeBlink(FILL_HELD).mount(m)
        blink.records["T"] = [{"id": f"r{n}", "Name": f"n{n}"} for n in range(7)]
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", max_concurrency=3)
        named = result.names()["Region"]  # the fake's own naming rule
        assert named != "Region" and all(row[named] == "eu" for row in blink.records["T"])
        assert plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields[0].action == "unchanged"
    assert result.backfilled == {"Region": 7}


def test_a_row_filled_by_a_person_after_the_walk_keeps_its_value(hook: Any, tmp_path: Path) -> None:
    declared = [team(backfill="unassigned", attributes={"required": True})]
    with rm.Mocker() as m:
        blink = FakeBlink(FILL_HELD).mount(m)
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
    with pytest.raises(BlinkInputError, match="a new required field on a table with"):
        apply_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/")
    declared[0]["backfill"] = "triage"
    with pytest.raises(BlinkInputError, match="breaks Blink workflows: 'Queue' \\(add\\): 'Triage new incidents'"):
        apply_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/")  # (#75: the seeded ones)
    done = apply_schema(hook, "ws-demo", "Incidents", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
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


def killed_midway(sandbox: BlinkSandbox, script: str, record: str, rows: int = 600) -> None:
    """Run ``script`` (given ``record``) in another process; SIGKILL it once Blink has taken ``rows`` row writes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    worker = subprocess.Popen([sys.executable, "-c", script, record], env=os.environ.copy())
    deadline = time.monotonic() + 120
    while len(record_puts(sandbox)) < rows:  # bounded: the worker is midway, or the test says why
        assert worker.poll() is None, f"the worker ended before {rows} rows were written"
        assert time.monotonic() < deadline, f"only {len(record_puts(sandbox))} rows written in 120 s"
        time.sleep(0.02)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)


def test_a_worker_killed_mid_copy_then_a_retry_converts_every_row_once(
    blink_sandbox: BlinkSandbox, tmp_path: Path
) -> None:
    """SIGKILL in the middle of a retype's copy (another process), then a retry here: every row
    converted once, none lost, one new field, at most one page copied twice."""

    fields = [{"field": "Name", "type": "text", "display_name": "Name"}]
    blink_sandbox.create_table(
        "ws-demo", "Scores", {"fields": [*fields, {**fields[0], "field": "Score", "display_name": "Score"}]}
    )
    rows = [{"Name": f"n{n}", "Score": str(n)} for n in range(1500)]
    blink_sandbox.store.create_records("ws-demo", "Scores", rows, "seed")
    blink_sandbox.set_faults(latency_ms=2)
    record = f"{tmp_path}/"
    killed_midway(blink_sandbox, KILLED_APPLY, record)
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


HELD = {
    "Incidents": [
        blink_field("Title", "text", required=True, description="One line"),
        blink_field("Legacy", "text", "Legacy ID"),
        blink_field("Owner", "reference", table_reference={"table_name": "Users"}),
    ]
}
IMPACT = {"field": "Impact", "type": "number", "display_name": "Impact", "attributes": {"default_value": "1"}}
TITLE = {"field": "Title", "type": "text", "display_name": "Title"}
GONE = {"field": "Legacy", "remove": True}


def writes(blink: FakeBlink) -> list[Any]:
    return [*blink.puts, *blink.posts, *blink.deletes, *blink.created, *blink.table_puts]


def test_a_new_field_is_added_once_with_blinks_name_reported_and_recorded(hook: Any, tmp_path: Path) -> None:
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records)
        result = apply_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records)
        assert [body for _, body in blink.posts] == [
            {"type": "number", "display_name": "Impact", "attributes": {"default_value": "1"}}
        ]
        again = plan_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records)
        blink.puts.clear(), blink.posts.clear()
        apply_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records, only_changed=True)
        assert writes(blink) == []
    row = next(row for row in plan.fields if row.field == "Impact")
    assert (
        row.action == "add"
        and 'adds Impact (number), shown as \'Impact\', with {"default_value": "1"}' in plan_text(plan)
    )
    assert result.outcomes() == {"Title": "unchanged", "Impact": "added"}
    assert result.applied["Impact"] is not None and result.applied["Impact"].name == "impact_9"
    assert result.names() == {"Impact": "impact_9"}  # the XCom's "names" (#56 item 4)
    assert '"Impact": "impact_9"' in (tmp_path / "ws-1" / "Incidents.json").read_text()
    impact = next(row for row in again.fields if row.field == "Impact")
    assert (impact.action, impact.blink_name) == ("unchanged", "impact_9")
    assert "declared as 'Impact', Blink's name is 'impact_9'" not in plan_text(again)  # unchanged rows are folded


def test_a_changed_display_name_of_an_added_field_is_a_change_not_a_second_add(hook: Any, tmp_path: Path) -> None:
    records = f"{tmp_path}/"
    renamed = {**IMPACT, "display_name": "Impact (1-10)"}
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        apply_schema(hook, "ws-1", "Incidents", [IMPACT], record_path=records)
        plan = plan_schema(hook, "ws-1", "Incidents", [renamed], record_path=records)
        apply_schema(hook, "ws-1", "Incidents", [renamed], record_path=records)
    (row,) = plan.fields
    assert (row.action, row.members, row.blink_name) == ("change", ("display_name",), "impact_9")
    assert "declared as 'Impact', Blink's name is 'impact_9'" in plan_text(plan)
    assert len(blink.posts) == 1 and [(field, body["display_name"]) for _, field, body in blink.puts] == [
        ("impact_9", "Impact (1-10)")
    ]


def test_without_a_record_an_added_field_is_found_again_by_its_display_name(hook: Any) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        apply_schema(hook, "ws-1", "Incidents", [IMPACT])
        plan = plan_schema(hook, "ws-1", "Incidents", [IMPACT])
    assert [(row.action, row.blink_name) for row in plan.fields] == [("unchanged", "impact_9")]
    assert len(blink.posts) == 1


def test_an_answer_without_the_name_is_read_back_once(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.answer_names = False
        reads = blink.reads
        result = apply_schema(hook, "ws-1", "Incidents", [IMPACT], record_path=f"{tmp_path}/")
    assert result.applied["Impact"] is not None and result.applied["Impact"].name == "impact_9"
    assert result.names() == {"Impact": "impact_9"}  # the XCom's "names" (#56 item 4)
    assert blink.reads - reads == 2  # the plan's read and the one after the POST


def test_a_removal_is_refused_unapproved_and_nothing_at_all_is_sent(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.rows["Incidents"] = 40  # Blink's estimate: the plan counts the rows instead
        blink.records["Incidents"] = [{"id": f"r{n}", **({"Legacy": f"v{n}"} if n % 4 else {})} for n in range(36)]
        plan = plan_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT, GONE], record_path=f"{tmp_path}/")
        with pytest.raises(BlinkInputError) as refused:
            apply_schema(
                hook, "ws-1", "Incidents", [TITLE, IMPACT, GONE], record_path=f"{tmp_path}/", plan=plan_xcom(plan)
            )
        assert writes(blink) == []
    row = plan.fields[-1]
    assert (row.action, row.rows, row.destructive) == ("remove", 27, True)
    assert row.to_xcom()["counts"] == {"rows": 36, "with_value": 27}
    assert "deletes values in 27 of 36 rows, permanently" in plan_text(plan)
    assert plan_text(plan).index("**Destructive**") < plan_text(plan).index("| field |")
    said = str(refused.value)
    assert "'Legacy'" in said and "27 of 36 rows" in said and "acknowledge_risks=True" in said and "review" in said


@pytest.mark.parametrize("how", ["acknowledged", "approved in review"])
def test_a_removal_goes_last_once_acknowledged_or_approved(
    hook: Any, tmp_path: Path, how: str, provider_log: Any
) -> None:
    declared = [TITLE, IMPACT, GONE]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        sent: list[str] = []
        m.register_uri(rm.ANY, rm.ANY, additional_matcher=lambda r: bool(sent.append(r.method)) and False)
        plan = plan_xcom(plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/"))
        if how == "acknowledged":
            result = apply_schema(
                hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", plan=plan, acknowledge_risks=True
            )
        else:
            approval = {"approved_by": "alice", "approved_at": "2026-11-28T01:02:03+00:00"}  # read from Airflow
            result = apply_schema(
                hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", plan=plan, approval=approval
            )
    assert result.outcomes() == {"Title": "unchanged", "Impact": "added", "Legacy": "removed"}
    assert blink.deletes == [("Incidents", "Legacy")] and "Legacy" not in blink.tables["Incidents"]
    writes_in_order = [method for method in sent if method != "GET"]
    assert writes_in_order == ["POST", "DELETE"]  # Title, unchanged in Blink, is not sent (#56 item 2)
    assert '"Legacy"' not in (tmp_path / "ws-1" / "Incidents.json").read_text()
    said = (
        "removes 1 field(s) with their values: acknowledged by the DAG (acknowledge_risks=True)"
        if how == "acknowledged"
        else "approved by alice at 2026-11-28T01:02:03+00:00 in review; it removes 1 field(s) with their values"
    )
    logged = provider_log()
    assert any(said in line for line in logged), logged
    approved = [line for line in logged if "approved by alice" in line]
    assert len(approved) == (0 if how == "acknowledged" else 1)  # who approved: said once


def test_a_review_the_plan_xcom_claims_never_lets_a_removal_through(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records["Incidents"] = [{"id": "r1", "Legacy": "L-1"}]
        plan = plan_xcom(plan_schema(hook, "ws-1", "Incidents", [GONE], record_path=f"{tmp_path}/"))
        for policy in ("always", "changes", "destructive"):
            with pytest.raises(BlinkInputError):
                apply_schema(
                    hook,
                    "ws-1",
                    "Incidents",
                    [GONE],
                    record_path=f"{tmp_path}/",
                    plan={**plan, "review": {"policy": policy, "reviewed": True}},
                )
        assert blink.deletes == []


def test_a_failed_add_stops_every_removal(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.post_status = 400
        result = apply_schema(
            hook, "ws-1", "Incidents", [IMPACT, GONE], record_path=f"{tmp_path}/", acknowledge_risks=True
        )
    assert blink.deletes == [] and "Legacy" in blink.tables["Incidents"]
    assert result.outcomes() == {"Impact": "failed", "Legacy": "failed"}
    assert "an earlier step of the apply failed" in result.failed["Legacy"].message


def test_tombstones_of_a_system_field_and_of_a_field_blink_lacks(hook: Any, tmp_path: Path) -> None:
    declared = [{"field": "created_at", "remove": True}, {"field": "Nowhere", "remove": True}]
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    system, absent = plan.fields
    assert system.action == "refused" and "system or protected" in system.risk
    assert absent.action == "unchanged" and "nothing to remove" in absent.risk
    assert plan.removals == [] and "Already gone from Blink (nothing to remove): 'Nowhere'" in plan_text(plan)


def test_a_removal_whose_count_blink_does_not_give_says_so(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.records_status = 404
        plan = plan_schema(hook, "ws-1", "Incidents", [GONE], record_path=f"{tmp_path}/")
    assert plan.fields[0].rows is None
    assert "an unknown number of rows (Blink does not say how many) (the rows could not be read: 404" in plan_text(plan)


def test_a_removal_from_a_table_blink_estimates_empty_says_so_not_about_0_rows(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.rows["Incidents"] = 0
        blink.records_status = 405
        plan = plan_schema(hook, "ws-1", "Incidents", [GONE], record_path=f"{tmp_path}/")
    assert "deletes its values in no rows, by Blink's estimate (0) (the rows could not be read: 405" in plan_text(plan)
    assert "about 0 rows" not in plan_text(plan)


def test_a_missing_table_names_the_flag_and_sends_nothing(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        with pytest.raises(BlinkNotFoundError, match=r"create_table=True"):
            apply_schema(hook, "ws-1", "Reviews", [TITLE], record_path=f"{tmp_path}/")
        assert writes(blink) == []


def test_a_created_table_is_one_post_with_its_fields_and_then_all_unchanged(hook: Any, tmp_path: Path) -> None:
    declared = {"display_name": "Incident reviews", "description": "Post-mortems", "fields": [TITLE, IMPACT]}
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Reviews", declared, record_path=records, create_table=True)
        result = apply_schema(hook, "ws-1", "Reviews", declared, record_path=records, create_table=True)
        again = plan_schema(hook, "ws-1", "Reviews", declared, record_path=records, create_table=True)
        blink.puts.clear()
        apply_schema(hook, "ws-1", "Reviews", declared, record_path=records, only_changed=True)
        assert writes(blink)[1:] == []  # the creation only
    assert plan_text(plan).startswith("Create table 'Incident reviews' in workspace ws-1 with 2 field(s)")
    assert plan.table_plan.action == "create" and plan_xcom(plan)["table_plan"]["action"] == "create"
    [created] = blink.created
    assert created["display_name"] == "Incident reviews" and created["description"] == "Post-mortems"
    assert [field["display_name"] for field in created["fields"]] == ["Title", "Impact"] and blink.posts == []
    assert result.outcomes() == {"Title": "added", "Impact": "added"}
    assert again.table_plan.action == "unchanged" and {row.action for row in again.fields} == {"unchanged"}
    # #56 item 4: the apply's XCom names what Blink named, the table and each added field
    xcom = ApplyReport("ws-1", "Reviews", logging.getLogger("t")).summary(result)
    assert xcom["table_name"] == "tbl_incidentreviews"
    assert xcom["names"] == {name: stored.name for name, stored in result.applied.items() if stored is not None}
    assert set(xcom["names"]) == {"Title", "Impact"}


def test_the_tables_display_name_and_description_are_put_with_its_settings_kept(hook: Any, tmp_path: Path) -> None:
    declared = {"description": "Security incidents", "fields": [TITLE]}
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
        apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
    assert plan.table_plan.action == "change" and plan.table_plan.members == ("description",)
    assert "**The table** (Incidents): change description: '' → 'Security incidents'" in plan_text(plan)
    assert blink.table_puts == [
        ("Incidents", {"display_name": "Incidents", "description": "Security incidents", "settings": {"color": "blue"}})
    ]


def test_a_type_change_is_refused_with_blinks_way(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", [{**TITLE, "type": "long-text"}], record_path=f"{tmp_path}/")
        with pytest.raises(BlinkInputError, match="Blink refuses type changes"):
            apply_schema(hook, "ws-1", "Incidents", [{**TITLE, "type": "long-text"}], record_path=f"{tmp_path}/")
    (row,) = plan.fields
    assert row.action == "refused"
    assert "add a new field of the new type" in row.risk and "copy the values" in row.risk and "tombstone" in row.risk
    assert blink.puts == []


def test_a_second_reference_to_one_table_is_refused_before_it_is_sent(hook: Any, tmp_path: Path) -> None:
    second = {"field": "Reporter", "type": "reference", "display_name": "Reporter",
              "attributes": {"table_reference": {"table_name": "Users"}}}  # fmt: skip
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_schema(hook, "ws-1", "Incidents", [second], record_path=f"{tmp_path}/")
        with pytest.raises(BlinkInputError, match="one reference field per target table"):
            apply_schema(hook, "ws-1", "Incidents", [second], record_path=f"{tmp_path}/")
    assert plan.fields[0].action == "refused" and "one reference field per target table" in plan.fields[0].risk
    assert blink.posts == []


def test_a_reviewer_sees_the_checks_blink_keeps_enforcing_on_a_changed_field(hook: Any, tmp_path: Path) -> None:
    """#50 item 7: Title is required in Blink; the declaration leaves that out, the merge keeps it, and the row says so."""
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        plan = plan_schema(
            hook, "ws-1", "Incidents", [{**TITLE, "display_name": "Headline"}], record_path=f"{tmp_path}/"
        )
    (row,) = plan.fields
    assert row.kept == ("required",) and plan_xcom(plan)["fields"][0]["kept"] == ["required"]
    assert "(Blink keeps enforcing required: not declared, sent as held)" in plan_text(plan)


# -- #56 items 8, 9, 10 -------------------------------------------------------------------------------


def test_an_edited_table_change_in_the_approved_plan_is_refused(hook: Any, tmp_path: Path) -> None:
    """#56 item 10: the approved plan's XCom hides the table's description change; the fingerprint
    and rows are the plan's, so only its table member lies: refused, nothing sent."""
    from blinkops_provider.exceptions import BlinkStalePlanError

    declared = {"description": "Security incidents", "fields": [TITLE]}
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        plan = plan_xcom(plan_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/"))
        hidden = {**plan, "table_plan": {**plan["table_plan"], "action": "unchanged", "values": []}}
        with pytest.raises(BlinkStalePlanError, match="shows a table change other than it would apply"):
            apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", plan=hidden)
        assert writes(blink) == []
        assert apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", plan=plan).ok
    assert [table for table, _ in blink.table_puts] == ["Incidents"]


class LostDeleteAnswer(FakeBlink):
    """Blink carries out the first DELETE, and its answer is lost (a 503 reaches the client); the
    retry then finds nothing to delete (404)."""

    def _delete(self, request: Any, context: Any) -> dict[str, Any]:
        answer = super()._delete(request, context)
        if len(self.deletes) == 1:
            context.status_code = 503
            return {"status": 503, "message": "the answer was lost"}
        return answer


def test_a_retried_delete_that_meets_404_is_a_removal(hook: Any, tmp_path: Path) -> None:
    """#56 item 9: the DELETE was carried out and its answer lost; the retry's 404, with Blink's
    fields read no longer listing the field, means removed, not a failed task."""
    with rm.Mocker() as m:
        blink = LostDeleteAnswer(HELD).mount(m)
        result = apply_schema(
            hook, "ws-1", "Incidents", [TITLE, GONE], record_path=f"{tmp_path}/", acknowledge_risks=True
        )
    assert blink.deletes == [("Incidents", "Legacy"), ("Incidents", "Legacy")]
    assert result.ok and result.outcomes() == {"Title": "unchanged", "Legacy": "removed"}


def test_a_delete_404_of_a_field_blink_still_lists_fails_the_field(hook: Any, tmp_path: Path) -> None:
    """A 404 while Blink's fields read still lists the field (a proxy that does not serve the
    route) is no removal: the field fails."""

    class NoDeleteRoute(FakeBlink):
        def _delete(self, request: Any, context: Any) -> dict[str, Any]:
            self.deletes.append(tuple(self._segments(request)[-3::2]))  # type: ignore[arg-type]
            context.status_code = 404
            return {"status": 404, "message": "no such route"}

    with rm.Mocker() as m:
        NoDeleteRoute(HELD).mount(m)
        result = apply_schema(
            hook, "ws-1", "Incidents", [TITLE, GONE], record_path=f"{tmp_path}/", acknowledge_risks=True
        )
    assert result.outcomes()["Legacy"] == "failed" and isinstance(result.failed["Legacy"], BlinkNotFoundError)


def test_fields_left_unsent_by_a_failed_step_say_so_not_an_interruption(hook: Any, tmp_path: Path) -> None:
    """#56 item 8: the table's PUT fails (a 400) after the fields: the removal is reported "not
    sent: an earlier step of the apply failed", not "the task was interrupted"."""
    from blinkops_provider.migrations import ApplyResult

    declared = {"description": "Security incidents", "fields": [TITLE, GONE]}
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        m.put(rm.ANY, status_code=400, json={"status": 400, "message": "the table is refused"})
        with pytest.raises(BlinkApiError, match="the table is refused") as failed:
            apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    known = ApplyResult.carried_by(failed.value)
    assert known is not None and "Legacy" not in known.applied
    xcom = ApplyReport("ws-1", "Incidents", logging.getLogger("t")).failed(known, exc=failed.value)
    (legacy,) = [entry for entry in xcom["failed"] if entry["field"] == "Legacy"]
    assert legacy["message"] == "not sent: an earlier step of the apply failed"


def test_300_unnamed_adds_cost_one_read_of_the_table_not_300(hook: Any, tmp_path: Path) -> None:
    """#56 item 6: Blink's answers to the POSTs lack the names; the apply finds every added field in
    one read of the table's fields after the batch, not one read per field."""
    declared = [{"field": f"F{n:03}", "type": "text", "display_name": f"Field {n:03}"} for n in range(300)]
    with rm.Mocker() as m:
        blink = FakeBlink({"Incidents": []}).mount(m)
        blink.answer_names = False
        before = blink.reads
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/")
        reads = blink.reads - before
    assert len(blink.posts) == 300 and result.ok
    assert reads == 2  # the plan's read, and one after the batch of adds (was 301)
    names = result.names()
    assert len(names) == 300 and names["F007"] == blink.tables["Incidents"][names["F007"]]["name"]
    assert blink.tables["Incidents"][names["F007"]]["display_name"] == "Field 007"


def test_a_table_created_under_its_declared_display_name_is_not_created_again(hook: Any) -> None:
    """#56 item 7: table="contracts" declared as "Supplier contracts" and created; with no record to
    note Blink's name, the next plan finds it by its declared display name: no second POST."""
    declared = {"display_name": "Supplier contracts", "fields": [TITLE]}
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        apply_schema(hook, "ws-1", "contracts", declared, create_table=True)
        again = plan_schema(hook, "ws-1", "contracts", declared, create_table=True)
        apply_schema(hook, "ws-1", "contracts", declared, create_table=True)
    assert len(blink.created) == 1 and blink.created[0]["display_name"] == "Supplier contracts"
    assert again.table_plan.action == "unchanged" and again.table_plan.name == "tbl_suppliercontracts"


class FillsDefaults(FakeBlink):
    """A Blink that fills in default attributes of a field it adds (and says so in its answer)."""

    def _post(self, request: Any, context: Any) -> dict[str, Any]:
        answer = super()._post(request, context)
        shown = request.json()["display_name"]
        (made,) = [f for f in self.tables[self._segments(request)[-2]].values() if f["display_name"] == shown]
        made["attributes"] = {"required": False, "is_unique": False, **made["attributes"]}
        return {**answer, "attributes": made["attributes"]} if answer else answer


@pytest.mark.parametrize("names", [True, False])
def test_the_record_keeps_an_added_field_as_blink_confirmed_it_so_no_false_drift(
    hook: Any, tmp_path: Path, names: bool
) -> None:
    """#56 item 3: the record holds the added field as Blink confirmed it (its answer, or the one
    read when the answer does not name it), defaults included: the next plan shows no drift."""
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FillsDefaults(HELD).mount(m)
        blink.answer_names = names
        assert apply_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records).ok
        again = plan_schema(hook, "ws-1", "Incidents", [TITLE, IMPACT], record_path=records)
    impact = next(row for row in again.fields if row.field == "Impact")
    assert (impact.action, impact.drift) == ("unchanged", ())
    assert "Changed in Blink since the last apply" not in plan_text(again)


def _calls_across(run: Any, monkeypatch: Any) -> set[tuple[str, str]]:
    """Every (caller module, callee module) pair of the provider's own code while ``run()`` runs,
    in this thread and in the threads it starts. A function a thread pool runs counts as called
    by the module that submitted it (a callback handed down is a call back up)."""
    import sys
    import threading
    from concurrent.futures import ThreadPoolExecutor

    seen: set[tuple[str, str]] = set()
    submitted_by: dict[int, str] = {}

    def package(code: Any) -> str:
        path = code.co_filename.replace("\\", "/")
        return path.split("/blinkops_provider/", 1)[1] if "/blinkops_provider/" in path else ""

    submit = ThreadPoolExecutor.submit

    def submit_recorded(pool: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        submitted_by[id(fn)] = package(sys._getframe(1).f_code)
        return submit(pool, fn, *args, **kwargs)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        caller = frame.f_back
        work = (
            caller.f_locals.get("self") if caller.f_code.co_filename.endswith("concurrent/futures/thread.py") else None
        )
        fn = getattr(work, "fn", None)
        by = submitted_by.get(id(fn), "") if fn is not None else package(caller.f_code)
        seen.add((by, package(frame.f_code)))

    monkeypatch.setattr(ThreadPoolExecutor, "submit", submit_recorded)
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen


def test_an_apply_is_one_straight_trip_nothing_in_hooks_calls_back_into_the_migrations(
    hook: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """#58 item 2: from the apply down to HTTP, the hook offers endpoints and calls nothing of the
    migrations back (the sender drives the batches)."""
    records = f"{tmp_path}/"
    declared = [{**TITLE, "display_name": "Title 2"}, IMPACT, GONE]
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        pairs = _calls_across(
            lambda: apply_schema(hook, "ws-1", "Incidents", declared, record_path=records, acknowledge_risks=True),
            monkeypatch,
        )
        assert blink.posts and blink.puts and blink.deletes  # an add, a change and a removal were sent
    into_hooks = {
        callee for caller, callee in pairs if caller.startswith("migrations/") and callee.startswith("hooks/")
    }
    back = {
        (caller, callee) for caller, callee in pairs if caller.startswith("hooks/") and callee.startswith("migrations/")
    }
    # The batch (hooks/_batch.py) runs the sends its caller hands it, and only those: the hook calls nothing back.
    assert back == {("hooks/_batch.py", "migrations/_steps.py")}
    assert "hooks/blink.py" in into_hooks  # the trace saw the migrations call the hook


def test_the_batches_of_an_apply_share_their_threads_and_sessions(make_hook: Any, tmp_path: Path) -> None:
    """The adds, the changes and the removals are sent on one set of at most ``max_concurrency``
    threads, each with its session (and its open connections), not on a new set per batch."""
    import requests

    made: list[requests.Session] = []

    def session() -> requests.Session:
        made.append(requests.Session())
        return made[-1]

    held = {"Incidents": [blink_field(f"F{i}", "text") for i in range(8)]}
    declared = [
        *({"field": f"F{i}", "type": "text", "display_name": f"F{i} again"} for i in range(6)),
        *({"field": f"New{i}", "type": "text", "display_name": f"New {i}"} for i in range(5)),
        {"field": "F6", "remove": True},
        {"field": "F7", "remove": True},
    ]
    hook = make_hook(session_factory=session)
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        result = apply_schema(hook, "ws-1", "Incidents", declared, max_concurrency=4, acknowledge_risks=True)
    assert (len(blink.posts), len(blink.puts), len(blink.deletes)) == (5, 6, 2)
    assert set(result.outcomes().values()) == {"added", "changed", "removed"}
    assert len(made) <= 2 + 4  # the two reads (at once), and the four workers (a set per batch made 9 to 12)


# -- #63 items 3 and 4: a 2xx that is not Blink's answer, for DELETE and the table's PUT ------------

OPAQUE = {
    "Incidents": [
        blink_field("fld_0000a001", "text", "Title", required=True),
        blink_field("fld_0000a004", "text", "Legacy ID"),
    ]
}
PROXY_PAGE = "<html><body>Please sign in</body></html>"


class ProxyAnswers(FakeBlink):
    """A Blink behind a proxy that answers some writes itself with its HTML login page (status 200):
    those requests never reach Blink."""

    proxied: tuple[str, ...] = ()

    def mount(self, m: Any) -> FakeBlink:
        super().mount(m)
        if "DELETE" in self.proxied:
            m.delete(re.compile(r".*/fields/[^/]+$"), text=self._proxy_delete, headers={"Content-Type": "text/html"})
        if "PUT table" in self.proxied:
            m.put(re.compile(r".*/table/[^/]+$"), text=self._proxy_put, headers={"Content-Type": "text/html"})
        return self

    def _proxy_delete(self, request: Any, context: Any) -> str:
        self.deletes.append(tuple(self._segments(request)[-3::2]))  # type: ignore[arg-type]
        return PROXY_PAGE

    def _proxy_put(self, request: Any, context: Any) -> str:
        self.table_puts.append((self._segments(request)[-1], request.json()))
        return PROXY_PAGE


def test_a_delete_answered_by_a_proxys_page_is_unknown_and_fails_the_task(hook: Any, tmp_path: Path) -> None:
    """#63 item 3: a 200 HTML page answered the DELETE of fld_0000a004 and Blink still holds it:
    one read of the fields after the removals shows it, so it is ``unknown``, never ``removed``."""
    ProxyAnswers.proxied = ("DELETE",)
    declared = [{"field": "Title", "type": "text", "display_name": "Title"}, {"field": "fld_0000a004", "remove": True}]
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = ProxyAnswers(OPAQUE).mount(m)
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=records, acknowledge_risks=True)
    assert blink.deletes == [("Incidents", "fld_0000a004")]
    assert "fld_0000a004" in blink.tables["Incidents"]
    assert not result.ok and result.outcomes()["fld_0000a004"] == "unknown"  # (the operator fails on it)
    assert "still lists 'fld_0000a004'" in str(result.unconfirmed["fld_0000a004"])


def test_a_confirmed_delete_costs_one_read_for_the_whole_batch(hook: Any, tmp_path: Path) -> None:
    held = {"Incidents": [*OPAQUE["Incidents"], *(blink_field(f"fld_x{n}", "text", f"Old {n}") for n in range(5))]}
    declared = [
        {"field": "Title", "type": "text", "display_name": "Title"},
        *({"field": f"fld_x{n}", "remove": True} for n in range(5)),
    ]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        reads_before = blink.reads
        result = apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert result.ok and [result.outcomes()[f"fld_x{n}"] for n in range(5)] == ["removed"] * 5
    assert blink.reads - reads_before == 2  # the plan's read, and one confirming the five removals
    assert not any(name.startswith("fld_x") for name in blink.tables["Incidents"])


def test_a_table_put_answered_by_a_proxys_page_is_unknown_and_fails_the_task(hook: Any, tmp_path: Path) -> None:
    """#63 item 4: the table's display name and description PUT answered by a proxy's page: the
    tables read does not show the change, so it is not counted done, and nothing is removed after it."""
    ProxyAnswers.proxied = ("PUT table",)
    declared = {
        "description": "Security incidents",
        "fields": [
            {"field": "Title", "type": "text", "display_name": "Title"},
            {"field": "fld_0000a004", "remove": True},
        ],
    }
    with rm.Mocker() as m:
        blink = ProxyAnswers(OPAQUE).mount(m)
        with pytest.raises(BlinkApiError, match="unknown: the change may not have reached Blink") as raised:
            apply_schema(hook, "ws-1", "Incidents", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert len(blink.table_puts) == 1 and blink.meta["Incidents"]["description"] == ""
    assert blink.deletes == []  # a removal is only sent after every other step
    assert "Please sign in" not in str(raised.value)


def test_a_table_param_naming_no_table_never_plans_against_the_declared_display_names_table(
    hook: Any, tmp_path: Path
) -> None:
    """#63 item 2: table="Nope" (a typo) with a declaration shown as "Incidents": refused, naming
    the table, and nothing is planned against Incidents; only create_table lets the declared display
    name find a table (one this DAG created), and the plan then says so."""
    declared = {"display_name": "Incidents", "fields": [{"field": "Title", "type": "text", "display_name": "Title"}]}
    with rm.Mocker() as m:
        blink = FakeBlink(OPAQUE).mount(m)
        with pytest.raises(BlinkNotFoundError, match=r"no table 'Nope' in workspace 'ws-1'.*create_table=True"):
            plan_schema(hook, "ws-1", "Nope", declared, record_path=f"{tmp_path}/")
        with pytest.raises(BlinkNotFoundError, match="no table 'Nope'"):
            apply_schema(hook, "ws-1", "Nope", declared, record_path=f"{tmp_path}/")
        fields_reads = [r for r in m.request_history if r.method == "GET" and r.url.endswith("/fields")]
        created = plan_schema(hook, "ws-1", "Nope", declared, create_table=True)
    assert writes(blink) == [] and not [r for r in fields_reads if "/table/Incidents/" in r.url]
    assert created.table_plan.name == "Incidents"
    assert "taken as the one this DAG created" in plan_text(created) and "'Nope'" in created.table_plan.note


# -- #63 item 5: a field found by its display name is remembered under Blink's name ----------------


class LostPostAnswer(FakeBlink):
    """A Blink whose first POST adds the field and then answers 500 (the answer lost)."""

    lost = 1

    def _post(self, request: Any, context: Any) -> dict[str, Any]:
        answer = super()._post(request, context)
        if self.lost:
            self.lost -= 1
            context.status_code = 500
            return {"status": 500, "message": "the answer was lost"}
        return answer


def test_a_lost_answer_then_a_rename_leaves_one_field_holding_the_values(hook: Any, tmp_path: Path) -> None:
    """The POST's answer is lost (the field was added); the rerun finds it by its display name and,
    sending nothing to Blink, records Blink's name; the next declaration renames its display name
    and the plan changes that field: Blink holds one field, never two."""
    records = f"{tmp_path}/"
    severity = {"field": "Severity", "type": "text", "display_name": "Severity"}
    renamed = {**severity, "display_name": "Severity level"}
    with rm.Mocker() as m:
        blink = LostPostAnswer(OPAQUE).mount(m)
        first = apply_schema(hook, "ws-1", "Incidents", [severity], record_path=records)
        rerun = apply_schema(hook, "ws-1", "Incidents", [severity], record_path=records)
        sent_by_rerun = writes(blink)[1:]
        record = Path(tmp_path, "ws-1", "Incidents.json").read_text()
        third = apply_schema(hook, "ws-1", "Incidents", [renamed], record_path=records)
    assert first.outcomes() == {"Severity": "failed"} and len(blink.posts) == 1
    assert rerun.ok and rerun.outcomes() == {"Severity": "unchanged"} and sent_by_rerun == []
    assert rerun.names() == {"Severity": "severity_8"} and '"Severity": "severity_8"' in record
    assert third.outcomes() == {"Severity": "changed"} and len(blink.posts) == 1
    shown = [f for f in blink.tables["Incidents"].values() if f["display_name"].startswith("Severity")]
    assert [(f["name"], f["display_name"]) for f in shown] == [("severity_8", "Severity level")]


def test_an_all_unchanged_first_apply_records_blinks_fields_so_a_later_ui_change_is_drift(
    hook: Any, tmp_path: Path
) -> None:
    records = f"{tmp_path}/"
    title = {"field": "Title", "type": "text", "display_name": "Title", "attributes": {"required": True}}
    where = Path(tmp_path, "ws-1", "Incidents.json")
    with rm.Mocker() as m:
        blink = FakeBlink(OPAQUE).mount(m)
        assert apply_schema(hook, "ws-1", "Incidents", [title], record_path=records).outcomes() == {
            "Title": "unchanged"
        }
        recorded = where.read_text()
        apply_schema(hook, "ws-1", "Incidents", [title], record_path=records)  # agrees: left alone
        untouched = where.read_text() == recorded
        blink.change_in_ui("Incidents", "fld_0000a001", sla_hours=4)
        plan = plan_schema(hook, "ws-1", "Incidents", [title], record_path=records)
    assert writes(blink) == [] and untouched and '"Title": "fld_0000a001"' in recorded
    [row] = plan.fields
    assert row.drift == ("attributes.sla_hours",) and "alice@blink.test" in row.changed_by


def test_a_tombstone_of_a_field_blink_lacks_is_listed_once_as_already_gone(hook: Any, tmp_path: Path) -> None:
    """#63 item 11: not both among the unchanged fields and under "Already gone from Blink"."""
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        text = plan_text(plan_schema(hook, "ws-1", "Incidents", [TITLE, {"field": "Affected hosts", "remove": True}]))
    assert text.count("Affected hosts") == 1 and "Already gone from Blink (nothing to remove): 'Affected hosts'" in text
    assert "| 1 field | unchanged | Title |" in text


# -- #64 item 6-7: a retype, as Blink says: add, copy, remove, rename ---------------------------------

SCORES = {"T": [blink_field("Name", "text"), blink_field("Score", "text", "Score")]}
RETYPE = {"field": "Score", "type": "number", "display_name": "Score", "type_change": "copy"}


def scored(blink: FakeBlink, *values: Any) -> None:
    blink.records["T"] = [
        {"id": f"r{n}", "Name": f"n{n}", **({"Score": v} if v is not None else {})} for n, v in enumerate(values)
    ]


def test_a_retype_copies_every_value_and_then_plans_unchanged(hook: Any, tmp_path: Path) -> None:
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, "3", "4.5", None, "10")
        plan = plan_schema(hook, "ws-1", "T", [RETYPE], record_path=records)
        (row,) = plan.fields
        assert (row.action, row.destructive) == ("retype", True)
        assert row.risk.startswith("text → number: add the new field, copy 3 rows, remove the old field")
        assert row.counts == {"rows": 4, "with_value": 3, "converted": 3, "not_converted": 0, "values": []}
        with pytest.raises(BlinkInputError, match="acknowledge_risks"):  # the removal gate
            apply_schema(hook, "ws-1", "T", [RETYPE], record_path=records)
        assert writes(blink) == [] and blink.record_puts == []
        result = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=records, acknowledge_risks=True)
        new = result.names()["Score"]
        assert result.outcomes() == {"Score": "retyped"} and new != "Score"
        assert [row.get(new) for row in blink.records["T"]] == [3, 4.5, None, 10]
        assert "Score" not in blink.tables["T"] and blink.field("T", new)["display_name"] == "Score"
        assert [r["Name"] for r in blink.records["T"]] == ["n0", "n1", "n2", "n3"]  # whole rows went back
        again = plan_schema(hook, "ws-1", "T", [RETYPE], record_path=records)
    assert [row.action for row in again.fields] == ["unchanged"]
    record = json.loads((tmp_path / "ws-1" / "T.json").read_text())
    assert record["names"] == {"Score": new} and "retyping" not in record


def test_a_value_that_does_not_convert_refuses_the_retype_before_any_write(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, "3", "high", "high", "n/a")
        with pytest.raises(BlinkInputError) as caught:
            apply_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/", acknowledge_risks=True)
        assert writes(blink) == [] and blink.record_puts == []
    said = str(caught.value)
    assert "3 of 4 rows hold a value that does not convert" in said and "'high' ×2, 'n/a'" in said  # noqa: RUF001
    assert '"type_change": "copy_or_empty"' in said


def test_copy_or_empty_leaves_what_does_not_convert_empty_and_says_so(hook: Any, tmp_path: Path) -> None:
    declared = [{**RETYPE, "type_change": "copy_or_empty"}]
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, "3", "high")
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
        assert "copy 1 rows (1 do not convert: 'high'; left empty)" in row.risk and row.destructive
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    new = result.names()["Score"]
    assert [row.get(new) for row in blink.records["T"]] == [3, None]


def test_a_row_changed_between_the_walk_and_its_write_keeps_the_change(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, "1", "2")
        finds = {"n": 0}

        def person_edits() -> None:  # after the copy's first walk, before its writes
            finds["n"] += 1
            if finds["n"] == 2:  # (the plan's walk is the first)
                blink.records["T"][1]["Score"] = "20"

        blink.after_find = person_edits
        result = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/", acknowledge_risks=True)
    new = result.names()["Score"]
    assert [row.get(new) for row in blink.records["T"]] == [1, 20]


def test_rows_edited_during_the_copy_are_copied_again_before_the_old_field_goes(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, "1", "2")
        puts = {"n": 0}
        real = blink._put_record

        def edit_after_first_copy(request: Any, context: Any) -> Any:
            answer = real(request, context)
            puts["n"] += 1
            if puts["n"] == 2:  # both rows copied; a person then edits the first one's old value
                blink.records["T"][0]["Score"] = "7"
            return answer

        m.put(re.compile(r".*/workspace/ws-1/table/T/r\d+$"), json=edit_after_first_copy)
        result = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/", acknowledge_risks=True)
    new = result.names()["Score"]
    assert [row.get(new) for row in blink.records["T"]] == [7, 2]


def test_a_retry_resumes_with_the_checkpointed_field_and_copies_only_what_is_left(hook: Any, tmp_path: Path) -> None:
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(SCORES).mount(m)
        scored(blink, *(str(n) for n in range(6)))
        m.delete(re.compile(r".*/fields/Score$"), status_code=400, json={"status": 400, "message": "refused now"})
        first = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=records, acknowledge_risks=True)
        assert first.outcomes() == {"Score": "failed"}
        checkpoint = json.loads((tmp_path / "ws-1" / "T.json").read_text())["retyping"]
        written = len(blink.record_puts)
        m.delete(re.compile(r".*/fields/Score$"), json=blink._delete)
        second = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=records, acknowledge_risks=True)
    assert second.outcomes() == {"Score": "retyped"} and second.names() == checkpoint
    assert written == 6 and len(blink.record_puts) == 6  # nothing copied twice
    assert [f["name"] for f in blink.tables["T"].values() if f["type"] == "number"] == list(checkpoint.values())


# -- #72: a retype keeps what the declaration leaves out; checks come last; writes confirmed by reading --------------

KEPT = {
    "T": [
        blink_field("Name", "text"),
        blink_field("Score", "text", "Score", description="How bad", required=True, is_unique=True, color="red"),
    ]
}


def test_a_retype_keeps_what_the_declaration_leaves_out_then_plans_unchanged(hook: Any, tmp_path: Path) -> None:
    records = f"{tmp_path}/"
    with rm.Mocker() as m:
        blink = FakeBlink(KEPT).mount(m)
        scored(blink, "3", "4", "5")
        (row,) = plan_schema(hook, "ws-1", "T", [RETYPE], record_path=records).fields
        assert row.action == "retype"
        held = row.body.to_body()
        assert held["description"] == "How bad" and held["attributes"] == {
            "required": True,
            "is_unique": True,
            "color": "red",
        }
        result = apply_schema(hook, "ws-1", "T", [RETYPE], record_path=records, acknowledge_risks=True)
        new = result.names()["Score"]
        stored = blink.field("T", new)
        assert stored["description"] == "How bad"
        assert stored["attributes"] == {"required": True, "is_unique": True, "color": "red"}
        assert [r.get(new) for r in blink.records["T"]] == [3, 4, 5]
        again = plan_schema(hook, "ws-1", "T", [RETYPE], record_path=records)
    assert [r.action for r in again.fields] == ["unchanged"]


def test_a_retypes_new_field_is_added_without_its_checks_and_given_them_after_the_copy(
    hook: Any, tmp_path: Path
) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(KEPT).mount(m)
        scored(blink, "3", "4")
        apply_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/", acknowledge_risks=True)
        (posted,) = blink.posts
        assert "required" not in posted[1]["attributes"] and "is_unique" not in posted[1]["attributes"]
        calls = _calls(m)
        checks = next(n for n, (method, url) in enumerate(calls) if method == "PUT" and "/fields/" in url)
        last_row = max(n for n, (method, url) in enumerate(calls) if method == "PUT" and "/fields/" not in url)
        removal = next(n for n, (method, _) in enumerate(calls) if method == "DELETE")
    assert last_row < checks < removal  # rows copied, then the checks, then the old field removed
    assert blink.puts[0][2]["attributes"]["required"] is True and blink.puts[0][2]["display_name"] == "Score (retyping)"


def test_converted_values_that_collide_under_is_unique_refuse_the_retype_before_any_write(
    hook: Any, tmp_path: Path
) -> None:
    with rm.Mocker() as m:
        blink = FakeBlink(KEPT).mount(m)
        scored(blink, "1", "1.0", "01", "2")
        (row,) = plan_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/").fields
        assert row.action == "refused"
        assert "1 converted value(s) repeat in 3 of 4 rows" in row.risk and "1 ×3" in row.risk  # noqa: RUF001
        with pytest.raises(BlinkInputError):
            apply_schema(hook, "ws-1", "T", [RETYPE], record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert writes(blink) == [] and blink.record_puts == []


def test_a_required_retype_over_empty_rows_needs_a_backfill_and_fills_them_before_the_checks(
    hook: Any, tmp_path: Path
) -> None:
    held = {"T": [blink_field("Name", "text"), blink_field("Score", "text", "Score")]}
    declared = [{**RETYPE, "attributes": {"required": True}}]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        scored(blink, "3", None, "")
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
        assert row.action == "refused" and "2 of 3 rows would have no value after the copy" in row.risk
        with pytest.raises(BlinkInputError):
            apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        assert writes(blink) == [] and blink.record_puts == []
        declared[0]["backfill"] = 0
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
        assert row.action == "retype" and row.counts["backfill"] == 2 and "fill 2 empty rows with 0" in row.risk
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    new = result.names()["Score"]
    assert [r.get(new) for r in blink.records["T"]] == [3, 0, 0]
    assert result.backfilled == {"Score": 2} and blink.field("T", new)["attributes"]["required"] is True


def required_with_backfill(name: str, kind: str, backfill: Any) -> dict[str, Any]:
    """An entry that turns ``required`` on (or adds a required field), its empty rows filled with ``backfill``."""
    return {"field": name, "type": kind, "display_name": name, "attributes": {"required": True}, "backfill": backfill}


def test_a_new_required_field_is_added_without_its_checks_filled_then_given_them(hook: Any, tmp_path: Path) -> None:
    declared = [required_with_backfill("Queue", "text", "triage")]
    with rm.Mocker() as m:
        blink = FakeBlink(FILL_HELD).mount(m)
        blink.records["T"] = [{"id": f"r{n}"} for n in range(3)]
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
        (posted,) = blink.posts
        assert "required" not in (posted[1].get("attributes") or {})
        calls = _calls(m)
        checks = next(n for n, (method, url) in enumerate(calls) if method == "PUT" and "/fields/" in url)
        last_row = max(n for n, (method, url) in enumerate(calls) if method == "PUT" and "/fields/" not in url)
        assert last_row < checks
        name = result.names()["Queue"]
        assert blink.field("T", name)["attributes"]["required"] is True
        assert {r[name] for r in blink.records["T"]} == {"triage"}
        assert plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields[0].action == "unchanged"
    assert result.outcomes() == {"Queue": "added"}


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"type": "number", "backfill": "abc"}, "must be a number"),
        ({"type": "number", "backfill": True}, "must be a number"),
        ({"type": "checkbox", "backfill": "yes"}, "must be true or false"),
        (
            {"type": "single-select", "attributes": {"options": ["a", "b"]}, "backfill": "c"},
            "not among the field's options",
        ),
        ({"type": "multi-select", "attributes": {"options": ["a"]}, "backfill": "a"}, "must be a list of its options"),
        ({"type": "date", "backfill": "tomorrow"}, "ISO 8601"),
        ({"type": "user", "backfill": "bob"}, "publishes no form"),
    ],
)
def test_a_backfill_the_field_cannot_hold_is_refused_before_any_request(hook: Any, entry: Any, why: str) -> None:
    declared = [{"field": "New", "display_name": "New", **entry}]
    with rm.Mocker() as m:
        with pytest.raises(BlinkInputError, match=why):
            plan_schema(hook, "ws-1", "T", declared)
        assert m.call_count == 0


def test_a_backfill_outside_blinks_options_is_refused_at_the_plan(hook: Any, tmp_path: Path) -> None:
    """A declaration that leaves the options out is checked against Blink's options."""
    held = {"T": [blink_field("Sev", "single-select", "Sev", options=["Low", "High"])]}
    declared = [required_with_backfill("Sev", "single-select", "Mid")]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        blink.records["T"] = [{"id": "r1"}]
        (row,) = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/").fields
        with pytest.raises(BlinkInputError):
            apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert row.action == "refused" and "not among the field's options ['Low', 'High']" in row.risk
    assert writes(blink) == [] and blink.record_puts == []


def test_a_thousand_row_backfill_and_retype_complete_where_blink_answers_as_published(
    hook: Any, tmp_path: Path
) -> None:
    """Blink answers a record write with a string; the rows come by last update unless a sort is asked."""
    held = {"T": [blink_field("Name", "text"), blink_field("Score", "text", "Score"), blink_field("Team", "text")]}
    declared = [
        {**RETYPE},
        {"field": "Team", "type": "text", "display_name": "Team", "attributes": {"required": True}, "backfill": "red"},
    ]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        blink.record_answer, blink.by_update = "ok", True
        blink.records["T"] = [{"id": f"r{n:04d}", "Name": f"n{n}", "Score": str(n)} for n in range(1000)]
        result = apply_schema(
            hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True, max_concurrency=4
        )
        new = result.names()["Score"]
        assert result.outcomes() == {"Score": "retyped", "Team": "changed"}
        assert result.backfilled == {"Team": 1000}
        assert [r.get(new) for r in blink.records["T"]] == list(range(1000))
        assert {r["Team"] for r in blink.records["T"]} == {"red"}
        assert all(set(body) <= {"Name", "Score", "Team", new} for _, _, body in blink.record_puts)  # no system member
        again = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert [r.action for r in again.fields] == ["unchanged", "unchanged"]


def test_a_write_accepted_but_not_kept_is_written_again_and_counted_once(hook: Any, tmp_path: Path) -> None:
    declared = [team(attributes={"required": True}, backfill="blue")]
    with rm.Mocker() as m:
        blink = FakeBlink(FILL_HELD).mount(m)
        blink.records["T"] = [{"id": f"r{n}"} for n in range(5)]
        blink.lose_writes = 2  # answered "ok", not kept
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert {r.get("Team") for r in blink.records["T"]} == {"blue"}
    assert result.backfilled == {"Team": 5} and len(blink.record_puts) == 7
