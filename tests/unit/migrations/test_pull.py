"""A live table as a declaration (blinkops_provider.migrations._pull, #57): pulled, then planned against the same
Blink, it is all unchanged; against the sandbox and against a Blink of the tests' own, whose naming rule and defaults
differ; the record a pull writes (``blink-schema pull --record-path``), the next plan's baseline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.cli.main import main
from blinkops_provider.exceptions import BlinkNotFoundError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations import plan_schema, plan_text, pull_schema
from blinkops_provider.models import FieldType
from blinkops_sandbox import BlinkSandbox
from tests.fake_blink import FakeBlink, blink_field

ODD = "Risk «level» / %20 ?#&= 日本 \t end"
"""A display name and description with characters that need care."""


def every_type() -> list[dict[str, Any]]:
    """One field of each of Blink's 18 user types, each with every attribute a declaration may set
    that the type takes."""
    fields = []
    for kind in FieldType:
        attributes: dict[str, Any] = {"required": True, "is_unique": False, "default_value": "a"}
        if kind in (FieldType.SINGLE_SELECT, FieldType.MULTI_SELECT, FieldType.STATUS):
            attributes["options"] = ["a", "b, c", "日本"]
        if kind is FieldType.REFERENCE:
            attributes["table_reference"] = {"table_name": "Users", "display_name_field": "Name"}
        if kind is FieldType.DATE:
            attributes["include_time"] = True
        fields.append(
            {
                "field": f"F {kind.value}",
                "type": kind.value,
                "display_name": f"{ODD} {kind.value}",
                "description": f"{ODD}\nsecond line",
                "attributes": attributes,
            }
        )
    return fields


def left_out(provider_log: Any) -> dict[str, str]:
    """What the pull's warnings name as left out: each field's attributes a declaration may not set."""
    said = (
        re.search(r"Field '(.+?)' holds attribute\(s\) (.+?), which a declaration may not set", line)
        for line in provider_log()
    )
    return {found[1]: found[2] for found in said if found}


def all_unchanged(plan: Any) -> bool:
    return not plan.has_changes and {row.action for row in plan.fields} == {"unchanged"}


@pytest.mark.parametrize("table", ["Every type", "Q1/Q2 plans ..", "日本 %41"])
def test_a_pulled_table_of_every_type_plans_all_unchanged_against_the_sandbox(
    blink_sandbox: BlinkSandbox, table: str, tmp_path: Path
) -> None:
    blink_sandbox.create_table("ws-pull", table, {"fields": every_type()})
    hook = BlinkHook()
    declaration = pull_schema(hook, "ws-pull", table)
    assert [entry["field"] for entry in declaration["fields"]] == [f"F {kind.value}" for kind in FieldType]
    assert declaration["fields"][0]["display_name"] == f"{ODD} text"  # Blink's values, whatever the characters
    reference = next(entry for entry in declaration["fields"] if entry["type"] == "reference")
    assert reference["attributes"]["table_reference"] == {"table_name": "Users", "display_name_field": "Name"}
    plan = plan_schema(hook, "ws-pull", table, json.loads(json.dumps(declaration)), record_path=f"{tmp_path}/")
    assert all_unchanged(plan), plan_text(plan)


def test_the_demo_table_pulled_plans_all_unchanged_and_keeps_no_system_field(blink_sandbox: BlinkSandbox) -> None:
    hook = BlinkHook()
    declaration = pull_schema(hook, "ws-demo", "Incidents")
    names = [entry["field"] for entry in declaration["fields"]]
    assert not {"id", "created_at", "updated_at", "created_by", "updated_by"} & set(names)
    assert names == [f["name"] for f in blink_sandbox.store.fields("ws-demo", "Incidents")][5:]  # Blink's order
    assert set(declaration) == {"display_name", "description", "fields"}
    assert all(
        set(entry) == {"field", "type", "display_name", "description", "attributes"} for entry in declaration["fields"]
    )
    assert all_unchanged(plan_schema(hook, "ws-demo", "Incidents", declaration))


HELD = {
    "Contracts": [
        blink_field("supplier_1", "text", "Supplier", required=True, is_unique=True, description="Who"),
        blink_field("tier_2", "single-select", "Tier", options=["Gold", "Silver"], default_value="Gold"),
        # What this Blink fills in or holds: a default it adds, a null, an attribute of its own.
        blink_field("due_3", "date", "Due", include_time=False, color="red", required=None),
        blink_field("owner_4", "reference", "Owner", table_reference={"table_name": "Users"}),
    ],
    "Users": [blink_field("name_1", "text", "Name")],
}


def test_a_blink_with_its_own_names_and_defaults_pulls_to_all_unchanged_naming_what_is_left_out(
    make_hook: Any, provider_log: Any
) -> None:
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        blink.meta["Contracts"].update(display_name="Supplier contracts", description="All of them")
        declaration = pull_schema(hook, "ws-1", "Supplier contracts")  # found by its display name too
        plan = plan_schema(hook, "ws-1", "Contracts", declaration)  # Blink's name: the table it found
    assert (declaration["display_name"], declaration["description"]) == ("Supplier contracts", "All of them")
    due = next(entry for entry in declaration["fields"] if entry["field"] == "due_3")
    assert due["attributes"] == {"include_time": False}
    assert left_out(provider_log) == {"due_3": "'color'"}
    assert all_unchanged(plan), plan_text(plan)
    assert blink.puts == [] and blink.posts == [] and blink.deletes == []


def test_a_missing_table_names_the_tables_the_workspace_has(make_hook: Any) -> None:
    many = {f"T{n:02d}": [blink_field("a", "text")] for n in range(25)}
    with rm.Mocker() as m:
        FakeBlink(many).mount(m)
        with pytest.raises(
            BlinkNotFoundError, match=r"no table 'Nope' in workspace 'ws-1'; its tables: 'T00', 'T01'"
        ) as err:
            pull_schema(make_hook(), "ws-1", "Nope")
    assert "'T19' and 5 more" in str(err.value) and "'T20'" not in str(err.value)


def test_the_pulled_record_is_the_next_plans_baseline_so_a_later_change_in_blink_is_drift(
    make_hook: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], sleeps: Any
) -> None:
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        assert main(["pull", "ws-1", "Contracts", "--record-path", f"{tmp_path}/"], clock=sleeps.as_clock()) == 0
        out, err = capsys.readouterr()
        assert f"the record of ws-1/Contracts written to {tmp_path}/ws-1/Contracts.json" in err, err
        blink.change_in_ui("Contracts", "tier_2", who="carol@blink.test", options=["Gold", "Silver", "Bronze"])
        plan = plan_schema(hook, "ws-1", "Contracts", json.loads(out), record_path=f"{tmp_path}/")
    tier = next(row for row in plan.fields if row.field == "tier_2")
    assert tier.drift == ("attributes.options",) and tier.action == "change"  # the declaration puts it back
    assert "(last changed in Blink by carol@blink.test" in plan_text(plan)
    assert blink.puts == []


def test_every_type_pulled_from_a_blink_with_its_own_names_and_defaults_plans_all_unchanged(
    make_hook: Any, provider_log: Any
) -> None:
    """#57: the table of 18 types, created in a Blink of the tests' own (its naming rule), which
    then fills in defaults of its own and holds an attribute a declaration may not set."""
    hook = make_hook()
    with rm.Mocker() as m:
        blink = FakeBlink({"Users": [blink_field("name_1", "text", "Name")]}).mount(m)
        body = {
            "display_name": ODD,
            "description": ODD,
            "fields": [{k: v for k, v in f.items() if k != "field"} for f in every_type()],
        }
        made = hook.create_table("ws-1", body)
        for held in blink.tables[made.name].values():
            if not held["attributes"].get("system"):
                held["attributes"] = {"required": False, "is_unique": False, **held["attributes"], "color": "blue"}
        declaration = pull_schema(hook, "ws-1", made.name)
        plan = plan_schema(hook, "ws-1", made.name, json.loads(json.dumps(declaration)))
    assert [entry["type"] for entry in declaration["fields"]] == [kind.value for kind in FieldType]
    assert declaration["fields"][0]["field"] != "F text"  # Blink's own name, not the sandbox's
    assert left_out(provider_log) == {entry["field"]: "'color'" for entry in declaration["fields"]}
    assert all("color" not in entry["attributes"] for entry in declaration["fields"])
    assert all_unchanged(plan), plan_text(plan)
