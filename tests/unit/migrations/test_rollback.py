"""A rollback planned from live state (blinkops_provider.migrations.plan_rollback / rollback, #74 item 2), against the
tests' own fake Blink: each destroying change applied, rolled back, and the table compared with itself before."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError, BlinkStalePlanError
from blinkops_provider.migrations import RollbackRequest, apply_schema, plan_rollback, plan_schema, rollback
from tests.fake_blink import FakeBlink, blink_field
from tests.unit.migrations.test_steps import killed_midway, record_puts

HELD = {
    "T": [
        blink_field("Name", "text", required=True),
        blink_field("Risk", "single-select", "Risk", options=["Low", "High"], color="red", description="how bad"),
        blink_field("Notes", "text"),
        blink_field("Score", "text", "Score"),
    ]
}
ROWS = [
    {"id": "r1", "Name": "a", "Risk": "High", "Score": "3"},
    {"id": "r2", "Name": "b", "Score": "x"},
    {"id": "r3", "Name": "c", "Risk": "Low", "Notes": "n", "Score": "7"},
]
NAME = {"field": "Name", "type": "text", "display_name": "Name", "attributes": {"required": True}}

SCORE = {"field": "Score", "display_name": "Score"}
RISK = {"field": "Risk", "type": "single-select", "display_name": "Risk"}
CHANGES = {
    "a removal": [NAME, {"field": "Risk", "remove": True}],
    "a retype with copy": [NAME, {**SCORE, "type": "long-text", "type_change": "copy"}],
    "a retype with copy_or_empty": [NAME, {**SCORE, "type": "number", "type_change": "copy_or_empty"}],
    "an option dropped": [NAME, {**RISK, "attributes": {"options": ["Low"]}}],
    "an attribute edit": [NAME, {"field": "Notes", "type": "text", "display_name": "Notes (long)", "description": "x"}],
    "an add": [NAME, {"field": "Owner", "type": "text", "display_name": "Owner", "backfill": "ops"}],
}


def blink(m: Any) -> FakeBlink:
    fake = FakeBlink(HELD).mount(m)
    fake.records["T"] = [dict(row) for row in ROWS]
    return fake


def state(fake: FakeBlink) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The table as a person sees it: each user field's definition, and each row's values, by display name."""
    fields = sorted(
        (f["display_name"], f["type"], f["description"], sorted(f["attributes"].items()))
        for f in fake.tables["T"].values()
        if not f["attributes"].get("system")
    )
    shown = {name: f["display_name"] for name, f in fake.tables["T"].items()}
    rows = {row["id"]: {shown[k]: v for k, v in row.items() if k != "id"} for row in fake.records["T"]}
    return fields, rows


def request(tmp_path: Path, **given: Any) -> RollbackRequest:
    return RollbackRequest("ws-1", "T", f"{tmp_path}/", **given)


@pytest.mark.parametrize("declared", CHANGES.values(), ids=CHANGES.keys())
def test_each_change_applied_then_rolled_back_leaves_the_table_as_it_was(
    hook: Any, tmp_path: Path, declared: list[dict[str, Any]]
) -> None:
    with rm.Mocker() as m:
        fake = blink(m)
        before = state(fake)
        apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        applied = state(fake)
        assert applied != before
        done = rollback(hook, request(tmp_path, acknowledge_risks=True))
        assert state(fake) == before
        assert Path(done.backup).exists()  # the rollback's own backup, so it can be rolled back too
        again = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        assert not again.failed and state(fake) == applied  # the same declaration does the same again
        after = plan_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/")
    assert {row.action for row in after.fields} == {"unchanged"}


def test_the_plan_names_what_it_puts_back_and_counts_every_row(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        fake = blink(m)
        apply_schema(hook, "ws-1", "T", CHANGES["a removal"], record_path=f"{tmp_path}/", acknowledge_risks=True)
        fake.records["T"] = [row for row in fake.records["T"] if row["id"] != "r3"]  # deleted since
        planned = plan_rollback(hook, request(tmp_path))
        sent = [call for call in m.request_history if call.method != "GET"]
    (step,) = planned.steps
    assert (step.action, step.saved, step.name) == ("recreate", "Risk", "")
    assert (step.restore, step.deleted, step.kept) == (1, 1, 0)
    assert "Risk: re-create (Blink names it; saved as 'Risk'), 1 row(s) to restore, 1 deleted since" in planned.text()
    assert [(c.method, c.path) for c in sent] == [
        ("DELETE", "/api/v1/workspace/ws-1/table/t/fields/risk")
    ]  # the apply's


def test_a_persons_edits_after_the_apply_are_kept_and_counted(hook: Any, tmp_path: Path) -> None:
    declared = [NAME, {**RISK, "description": "no High", "attributes": {"options": ["Low"]}}]
    with rm.Mocker() as m:
        fake = blink(m)
        apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        fake.tables["T"]["Risk"]["description"] = "a person's"  # a person's description since
        fake.records["T"][0]["Risk"] = "Low"  # a person's value since (was High)
        fake.records["T"][2].pop("Risk")  # emptied since: the saved value comes back
        planned = plan_rollback(hook, request(tmp_path))
        rollback(hook, request(tmp_path, approved=planned.fingerprint))
    (step,) = planned.steps
    assert [m for m, *_ in step.members] == ["attributes.options"] and [m for m, *_ in step.drift] == ["description"]
    assert (step.kept, step.restore) == (1, 1)
    assert fake.tables["T"]["Risk"]["attributes"] == {"options": ["Low", "High"], "color": "red"}
    assert fake.tables["T"]["Risk"]["description"] == "a person's"
    assert [row.get("Risk") for row in fake.records["T"]] == ["Low", None, "Low"]


def test_a_rollback_that_removes_values_needs_an_approval_and_a_stale_one_is_refused(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        fake = blink(m)
        apply_schema(hook, "ws-1", "T", CHANGES["an add"], record_path=f"{tmp_path}/")
        planned = plan_rollback(hook, request(tmp_path))
        assert planned.destructive  # the add's field holds the backfill in 3 rows
        with pytest.raises(BlinkInputError, match=r"removes fields that hold values \('Owner'\)"):
            rollback(hook, request(tmp_path))
        fake.records["T"][0]["Notes"] = "since"
        fake.change_in_ui("T", "Notes", description="since")
        writes = len([c for c in m.request_history if c.method != "GET"])
        with pytest.raises(BlinkStalePlanError, match="not what would be done now"):
            rollback(hook, request(tmp_path, approved="0" * 16, acknowledge_risks=True))
        assert len([c for c in m.request_history if c.method != "GET"]) == writes


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda path: path.unlink(), "is missing"),
        (lambda path: path.write_text(path.read_text().rsplit("\n", 2)[0] + "\n"), "truncated"),
        (lambda path: path.write_text(path.read_text().replace('"High"', '"Low"')), "corrupt"),
    ],
    ids=["missing", "truncated", "corrupt"],
)
def test_a_damaged_backup_is_refused_before_anything_is_sent(hook: Any, tmp_path: Path, damage: Any, said: str) -> None:
    with rm.Mocker() as m:
        blink(m)
        applied = apply_schema(
            hook, "ws-1", "T", CHANGES["a removal"], record_path=f"{tmp_path}/", acknowledge_risks=True
        )
        backup = Path(applied.backup)
        damage(backup)
        calls = len(m.request_history)
        with pytest.raises(BlinkConfigurationError, match=said):
            rollback(hook, request(tmp_path, apply=backup.stem, acknowledge_risks=True))
        assert len(m.request_history) == calls  # not even a read


def test_a_rollback_stopped_midway_resumes_with_one_recreated_field_and_each_row_once(
    hook: Any, tmp_path: Path
) -> None:
    with rm.Mocker() as m:
        fake = blink(m)
        before = state(fake)
        apply_schema(hook, "ws-1", "T", CHANGES["a removal"], record_path=f"{tmp_path}/", acknowledge_risks=True)
        puts = 0

        def stop_after_first_row(request: Any, context: Any) -> Any:
            nonlocal puts
            puts += 1
            if puts > 1:
                raise KeyboardInterrupt  # the worker dies between two rows
            return fake._put_record(request, context)

        m.put(re.compile(r".*/table/T/r\d$"), json=stop_after_first_row)
        with pytest.raises(KeyboardInterrupt):
            rollback(hook, request(tmp_path, acknowledge_risks=True, max_concurrency=1))
        fake.mount(m)
        rows_before = len(fake.record_puts)
        done = rollback(hook, request(tmp_path, acknowledge_risks=True))
    assert state(fake) == before
    assert len([p for p in fake.posts if p[0] == "T"]) == 1  # one field re-created, found again by the retry
    assert len(fake.record_puts) - rows_before == 1 and done.restored == {"Risk": 1}  # the other row, once


# -- a worker killed mid-rollback (SIGKILL, another process), then a retry --------------------------------------------

KILLED_ROLLBACK = """
import sys
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import RollbackRequest, rollback
rollback(BlinkHook(), RollbackRequest("ws-demo", "Scores", sys.argv[1], max_concurrency=4))
"""


def test_a_worker_killed_mid_rollback_then_a_retry_restores_every_row_once_into_one_field(
    blink_sandbox: Any, tmp_path: Path
) -> None:
    from collections import Counter

    from blinkops_provider.hooks.blink import BlinkHook

    fields = [{"field": "Name", "type": "text", "display_name": "Name"}]
    blink_sandbox.create_table(
        "ws-demo", "Scores", {"fields": [*fields, {**fields[0], "field": "Score", "display_name": "Score"}]}
    )
    blink_sandbox.store.create_records("ws-demo", "Scores", [{"Name": f"n{n}", "Score": f"s{n}"} for n in range(1500)], "seed")  # fmt: skip
    record = f"{tmp_path}/"
    apply_schema(BlinkHook(), "ws-demo", "Scores", [{"field": "Score", "remove": True}], record_path=record,
                 acknowledge_risks=True)  # fmt: skip
    blink_sandbox.set_faults(latency_ms=2)
    killed_midway(blink_sandbox, KILLED_ROLLBACK, record)
    first = len(record_puts(blink_sandbox))
    blink_sandbox.clear_faults()
    done = rollback(BlinkHook(), RollbackRequest("ws-demo", "Scores", record))
    (score,) = [f for f in blink_sandbox.store.fields("ws-demo", "Scores") if f["display_name"] == "Score"]
    assert list(done.names.values()) in ([], [score["name"]])  # found again, not added twice
    rows = BlinkHook().iter_records("ws-demo", "Scores")
    assert sorted(row[score["name"]] for row in rows) == sorted(f"s{n}" for n in range(1500))  # none lost
    writes = Counter(record_puts(blink_sandbox))
    assert 600 <= first < 1500 and len(writes) == 1500 and set(writes.values()) == {1}  # each row written once


@pytest.mark.parametrize("declared", [CHANGES["a removal"], CHANGES["a retype with copy"]], ids=["removal", "retype"])
def test_a_second_rollback_finds_nothing_to_put_back_and_sends_no_write(
    hook: Any, tmp_path: Path, declared: list[dict[str, Any]]
) -> None:
    with rm.Mocker() as m:
        blink(m)
        apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
        rollback(hook, request(tmp_path, acknowledge_risks=True))
        writes = len([c for c in m.request_history if c.method != "GET"])
        planned = plan_rollback(hook, request(tmp_path))
        rollback(hook, request(tmp_path, acknowledge_risks=True))
        assert len([c for c in m.request_history if c.method != "GET"]) == writes
    assert not planned.has_changes and {step.action for step in planned.steps} == {"unchanged"}


def test_in_object_storage_a_removal_is_rolled_back_and_both_backups_listed(hook: Any, bucket: tuple[Any, str]) -> None:
    from blinkops_provider.migrations import list_backups, record_location

    records = f"s3://aws_default@{bucket[1]}/records/"
    with rm.Mocker(real_http=True) as m:
        fake = blink(m)
        before = state(fake)
        applied = apply_schema(hook, "ws-1", "T", CHANGES["a removal"], record_path=records, acknowledge_risks=True)
        done = rollback(hook, RollbackRequest("ws-1", "T", records))
    assert state(fake) == before
    listed = list_backups(record_location(records, "ws-1", "T"))
    assert sorted(one.location for one in listed) == sorted([applied.backup, done.backup])
    assert all(one.size > 0 and not one.damaged for one in listed)


SANDBOX_FIELDS = [
    {"field": "Name", "type": "text", "display_name": "Name", "attributes": {"required": True}},
    {
        "field": "Risk",
        "type": "single-select",
        "display_name": "Risk",
        "description": "how bad",
        "attributes": {"options": ["Low", "High"]},
    },
    {"field": "Notes", "type": "text", "display_name": "Notes"},
    {"field": "Score", "type": "text", "display_name": "Score"},
]


def sandbox_state(hook: Any) -> tuple[list[Any], dict[Any, dict[str, Any]]]:
    """The sandbox's table T as a person sees it: each field's definition, each row's values, by display name."""
    fields = [f for f in hook.get_table_fields("ws-demo", "T") if not (f.attributes or {}).get("system")]
    shown = {f.name: f.display_name for f in fields}
    defined = sorted(repr((f.display_name, f.type, f.description or "", sorted((f.attributes or {}).items()))) for f in fields)  # fmt: skip
    rows = {
        row["id"]: {shown[k]: v for k, v in row.items() if k in shown and v not in (None, "", [])}
        for row in hook.iter_records("ws-demo", "T")
    }
    return defined, rows


@pytest.mark.parametrize("declared", CHANGES.values(), ids=CHANGES.keys())
def test_against_the_sandbox_each_change_rolled_back_leaves_the_table_as_it_was(
    blink_sandbox: Any, tmp_path: Path, declared: list[dict[str, Any]]
) -> None:
    from blinkops_provider.hooks.blink import BlinkHook

    hook, records = BlinkHook(), f"{tmp_path}/"
    blink_sandbox.create_table("ws-demo", "T", {"fields": SANDBOX_FIELDS})
    blink_sandbox.store.create_records("ws-demo", "T", [{k: v for k, v in row.items() if k != "id"} for row in ROWS], "seed")  # fmt: skip
    before = sandbox_state(hook)
    apply_schema(hook, "ws-demo", "T", declared, record_path=records, acknowledge_risks=True)
    applied = sandbox_state(hook)
    assert applied != before
    rollback(hook, RollbackRequest("ws-demo", "T", records, acknowledge_risks=True))
    assert sandbox_state(hook) == before
    apply_schema(hook, "ws-demo", "T", declared, record_path=records, acknowledge_risks=True)
    assert sandbox_state(hook) == applied
    assert not plan_schema(hook, "ws-demo", "T", declared, record_path=records).has_changes
