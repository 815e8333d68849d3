"""How declared entries are matched to Blink's fields and tables (blinkops_provider.migrations._plan)."""

from __future__ import annotations

import pytest

from blinkops_provider.migrations._plan import match_fields, match_table
from blinkops_provider.models import BlinkTable, FieldUpdate, TableField


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
