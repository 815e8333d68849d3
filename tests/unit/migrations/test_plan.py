"""The planner (blinkops_provider.migrations._plan) and the matching it stands on (``_matching``): how declared entries
are matched to Blink's fields and tables, the body sent for a declared field (merged with what Blink holds, and judged,
#35), a plan's identity, and one plan per apply (#73).

Private imports, the exception: the matching's cases (an entry against Blink's fields by name, note and display name)
are many and small, and through ``plan()`` each would need a whole table; the one-plan-per-apply test counts calls
inside the planner, which nothing public shows.
"""

from __future__ import annotations

import copy
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError, BlinkStalePlanError
from blinkops_provider.migrations import (
    SchemaPlan,
    _apply,
    _plan,
    apply_schema,
    check_approved,
    log_plan,
    plan_text,
    plan_xcom,
)
from blinkops_provider.migrations._matching import (
    contradictions,
    differing_members,
    field_body,
    match_fields,
    match_table,
    merge_field,
)
from blinkops_provider.migrations._plan import plan_fields
from blinkops_provider.models import BlinkTable, FieldUpdate, TableField, validate_field_updates
from blinkops_provider.utils.states import Action
from tests.fake_blink import FakeBlink, blink_field
from tests.unit.test_models import DOCS_BODY


def field(name: str, display_name: str) -> TableField:
    return TableField(name=name, display_name=display_name, type="text", attributes={})


def entry(name: str, display_name: str) -> tuple[str, FieldUpdate]:
    return name, FieldUpdate(type="text", display_name=display_name)


LIVE = [field("Title", "Title"), field("impact_1", "Impact"), field("x_1", "Shared"), field("x_2", "Shared")]


def test_by_name_then_by_the_records_note_then_by_display_name() -> None:
    declared = [entry("Title", "Headline"), entry("Impact", "Impact (1-10)"), entry("Score", "Impact")]
    matches = match_fields(declared, [], LIVE, {"Impact": "impact_1"})
    assert matches.found == {"Title": "Title", "Impact": "impact_1"}
    # 'Score' is shown as Blink's 'impact_1', which 'Impact' claims by the note: an add shown as a field Blink has
    assert "shown as 'Impact' already" in matches.refused["Score"]


def test_an_entry_whose_display_name_two_fields_show_is_refused() -> None:
    matches = match_fields([entry("Shared thing", "Shared")], [], LIVE, {})
    assert "shown by 2 of Blink's fields ('x_1', 'x_2')" in matches.refused["Shared thing"]


def test_two_entries_claiming_one_field_by_display_name_are_both_refused() -> None:
    matches = match_fields([entry("A", "Impact"), entry("B", "Impact")], [], LIVE, {})
    assert set(matches.refused) == {"A", "B"} and matches.found == {}


def test_two_adds_shown_alike_are_both_refused() -> None:
    matches = match_fields([entry("A", "New"), entry("B", "New")], [], LIVE, {})
    assert set(matches.refused) == {"A", "B"} and "shown alike as 'New'" in matches.refused["A"]


def test_a_removal_is_matched_by_name_then_by_the_records_note_only() -> None:
    matches = match_fields([], ["Title", "Impact", "Shared"], LIVE, {"Impact": "impact_1"})
    assert matches.gone == {"Title": "Title", "Impact": "impact_1"}  # never by display name


def test_a_table_by_name_then_note_then_display_name() -> None:
    tables = [BlinkTable(name="incidents", display_name="Incidents"), BlinkTable(name="t_2", display_name="Reviews")]
    assert match_table("incidents", tables, None).name == "incidents"  # type: ignore[union-attr]
    assert match_table("Post-mortems", tables, "t_2").name == "t_2"  # type: ignore[union-attr]
    assert match_table("Reviews", tables, None).name == "t_2"  # type: ignore[union-attr]
    assert match_table("Nothing", tables, None) is None
    with pytest.raises(ValueError, match="2 tables of the workspace are shown as 'Same'"):
        match_table(
            "Same", [BlinkTable(name="a", display_name="Same"), BlinkTable(name="b", display_name="Same")], None
        )


def test_the_merge_keeps_what_blink_holds_and_the_update_leaves_out() -> None:
    held = TableField.model_validate(
        {
            "name": "Severity",
            "type": "single-select",
            "display_name": "Severity",
            "description": "How bad",
            "attributes": {"required": True, "is_unique": True, "options": ["Low"], "system": False, "later": {"x": 1}},
        }
    )
    update = FieldUpdate.model_validate(
        {"type": "single-select", "display_name": "Sev", "attributes": {"options": ["A"]}}
    )
    assert merge_field(update, held, name="Severity").to_body() == {
        "type": "single-select",
        "display_name": "Sev",
        "description": "How bad",
        "attributes": {"required": True, "is_unique": True, "options": ["A"], "later": {"x": 1}},
    }
    assert field_body(held)["attributes"] == {
        "required": True,
        "is_unique": True,
        "options": ["Low"],
        "later": {"x": 1},
    }


def test_a_held_value_that_cannot_be_sent_back_refuses_the_merge_and_names_replace() -> None:
    held = TableField.model_validate({"name": "A", "type": "text", "attributes": {"options": "not a list"}})
    with pytest.raises(BlinkInputError, match=r"field 'A' as Blink holds it cannot be sent back.*replace=True"):
        merge_field(FieldUpdate(display_name="A"), held, name="A")


def test_members_compare_absent_attributes_as_unset() -> None:
    assert (
        differing_members(
            {"type": "text", "display_name": "A"}, {"type": "text", "display_name": "A", "attributes": {}}
        )
        == []
    )
    assert differing_members(
        {"type": "text", "display_name": "A", "attributes": {"default_value": "x"}},
        {"type": "text", "display_name": "B"},
    ) == ["display_name", "attributes.default_value"]


# -- contradictions inside one field's declaration (#35) ------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"type": "single-select", "display_name": "S", "attributes": {"options": ["Low", "High", "Low"]}},
            "option 'Low' is given twice",
        ),
        (
            {"type": "multi-select", "display_name": "S"},
            "a 'multi-select' field needs attributes.options (its choices)",
        ),
        (
            {"type": "text", "display_name": "T", "attributes": {"include_time": True}},
            "include_time is for a 'date' field, and this one is 'text'",
        ),
        (
            {"type": "reference", "display_name": "R"},
            "a 'reference' field needs attributes.table_reference (the table it links to)",
        ),
    ],
)
def test_a_body_that_contradicts_itself_is_named(entry: dict, problem: str) -> None:
    assert contradictions(FieldUpdate.model_validate(entry)) == [problem]
    assert validate_field_updates([{"field": "Odd", **entry}])  # the client sends what the API accepts


def test_include_time_false_and_a_default_outside_the_options_are_no_contradiction() -> None:
    assert contradictions(FieldUpdate.model_validate(DOCS_BODY)) == []


OWNER = {"type": "reference", "display_name": "Owner", "attributes": {"table_reference": {"table_name": "Users"}}}


def plan_of(declared: list[dict[str, Any]], recorded: dict[str, Any]) -> SchemaPlan:
    batch = validate_field_updates(declared)
    rows = tuple(plan_fields(batch, recorded))  # against the record alone: Blink's fields unread
    return SchemaPlan("ws", "Incidents", "r.json", None, rows, (), "s", "r", unread="404")


def test_changing_only_the_displayed_field_of_a_reference_is_not_destructive() -> None:
    before = copy.deepcopy(OWNER)
    before["attributes"]["table_reference"]["display_name_field"] = "Name"
    after = copy.deepcopy(OWNER)
    after["attributes"]["table_reference"]["display_name_field"] = "Email"
    plan = plan_of([{"field": "Owner", **after}], {"Owner": before})
    assert plan.action("Owner") == Action.CHANGE and plan.risk("Owner") == ""
    moved = copy.deepcopy(after)
    moved["attributes"]["table_reference"]["table_name"] = "Teams"
    assert "existing links break" in plan_of([{"field": "Owner", **moved}], {"Owner": before}).risk("Owner")


@pytest.mark.parametrize("edit", ["a row", "the text"])
def test_an_approved_plan_whose_rows_or_text_were_edited_is_refused(edit: str) -> None:
    recorded = {"Severity": {"type": "single-select", "display_name": "S", "attributes": {"options": ["Low", "High"]}}}
    declared = [{"field": "Severity", "type": "single-select", "display_name": "S", "attributes": {"options": ["Low"]}}]
    plan = plan_of(declared, recorded)
    assert plan.fields[0].destructive
    approved = plan_xcom(plan)
    if edit == "a row":  # the destructive change shown as unchanged
        approved["fields"][0].update(action="unchanged", destructive=False, risk="")
    else:
        approved["text"] = approved["text"].replace("destructive", "harmless")
    with pytest.raises(BlinkStalePlanError, match=r"its XCom was edited after it was made\. Nothing was sent"):
        check_approved(plan, approved)
    check_approved(plan, plan_xcom(plan))  # as made: approved


def test_field_names_cannot_break_or_forge_log_lines(caplog: Any) -> None:
    names = ["a\nINFO forged", "b\rX", "c\u2028Y", "d\x85Z", "e\vW"]
    plan = plan_of([{"field": n, "type": "text", "display_name": "T"} for n in names], {})
    with caplog.at_level(logging.INFO):
        log_plan(plan, logging.getLogger("plan"))
    messages = [record.getMessage() for record in caplog.records]
    assert not any(ch in m for m in messages for ch in "\n\r\u2028\x85\v")
    assert any("a\\u000aINFO forged" in m for m in messages)


def test_an_added_field_shows_every_declared_member_to_the_reviewer() -> None:
    """#44 item 5: an ``add`` row lists the type, the display name, the description and each
    attribute the declaration sets, so the reviewer sees what would be created."""
    severity = {
        "field": "Severity",
        "type": "single-select",
        "display_name": "Severity",
        "description": "How bad",
        "attributes": {"options": ["Low", "High"], "default_value": "Low", "required": True},
    }
    plan = plan_of([severity], {})
    (row,) = [line for line in plan_text(plan).splitlines() if line.startswith("| Severity |")]
    assert row == (
        "| Severity | add | adds Severity (single-select, required), shown as 'Severity', described 'How bad', "
        'with {"default_value": "Low", "options": ["Low", "High"]} |'
    )


def test_unchanged_rows_fold_into_one_row_with_their_count() -> None:
    """#44 item 5: a reviewer reads the rows that change something; the unchanged ones are one
    row with their count and names."""
    declared = [
        {"field": name, "type": "text", "display_name": name} for name in ("Title", "Notes", "Owner", "Summary")
    ]
    recorded = {entry["field"]: {"type": "text", "display_name": entry["field"]} for entry in declared}
    recorded["Owner"] = {"type": "text", "display_name": "Owner (old)"}
    rows = [line for line in plan_text(plan_of(declared, recorded)).splitlines() if line.startswith("| ")][1:]
    assert rows == [
        "| Owner | change | display_name: 'Owner (old)' → 'Owner' |",
        "| 3 fields | unchanged | Title, Notes, Summary |",
    ]


def test_a_field_found_under_blinks_own_name_says_that_name_in_its_row() -> None:
    """#56 item 12: after a POST whose answer was lost, the next plan finds the field by its
    display name under the name Blink derived; the unchanged row says so, as a change row does."""
    from blinkops_provider.models import TableField

    live = [
        TableField.model_validate({"name": "root_cause", "type": "text", "display_name": "Root cause"}),
        TableField.model_validate({"name": "sev_2", "type": "text", "display_name": "Severity"}),
    ]
    declared = [
        {"field": "Root cause", "type": "text", "display_name": "Root cause"},
        {"field": "Severity", "type": "text", "display_name": "Severity", "description": "How bad"},
    ]
    fields = tuple(plan_fields(validate_field_updates(declared), {}, live))
    plan = SchemaPlan("ws", "Incidents", "r.json", None, fields, (), "s", "r")
    rows = [line for line in plan_text(plan).splitlines() if line.startswith("| ")][1:]
    assert rows == [
        "| Severity | change | declared as 'Severity', Blink's name is 'sev_2'; description: null → 'How bad' |",
        "| 1 field | unchanged | Root cause (Blink's name 'root_cause') |",
    ]


def test_one_apply_makes_its_plan_once_and_each_fields_body_once(
    hook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#73: the rows the changes need are counted while the one plan is made (never a schema-only plan first), and
    each of Blink's fields is read into a body once (the merge and the plan's identity reuse it)."""
    made: list[str] = []
    bodies: Counter[str] = Counter()
    make_plan, field_body = _plan.make_plan, _plan.field_body

    def counted_plan(**given: Any) -> Any:
        made.append(given["target"][2])
        return make_plan(**given)

    def counted_body(held: Any) -> Any:
        bodies[str(held.name)] += 1
        return field_body(held)

    monkeypatch.setattr(_apply, "make_plan", counted_plan)
    monkeypatch.setattr(_plan, "field_body", counted_body)
    held = {"T": [blink_field(name, "text") for name in ("Name", "Team", "Notes", "Old")]}
    declared = [
        {"field": "Name", "type": "text", "display_name": "Name", "description": "who"},
        {
            "field": "Team",
            "type": "text",
            "display_name": "Team",
            "attributes": {"required": True},
            "backfill": "unassigned",
        },
        {"field": "Notes", "type": "text", "display_name": "Notes"},
        {"field": "Old", "remove": True},
    ]
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        blink.records["T"] = [{"id": "a", "Team": "red", "Old": "x"}, {"id": "b", "Name": "y"}]
        result = apply_schema(hook, "ws-1", "T", declared, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert result.outcomes() == {"Name": "changed", "Team": "changed", "Notes": "unchanged", "Old": "removed"}
    assert made == ["T"]  # one plan, whose rows were counted as it was made
    assert bodies == {"Name": 1, "Team": 1, "Notes": 1, "Old": 1}
    assert result.backfilled == {"Team": 1}
