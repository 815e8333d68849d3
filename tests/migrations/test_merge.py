"""The body sent for a declared field: merged with what Blink holds, and judged (#35)."""

from __future__ import annotations

import pytest

from blinkops_provider._models import validate_field_updates
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations._plan import contradictions, field_body, merge_field
from blinkops_provider.models import FieldUpdate, TableField
from tests.core.test_models import DOCS_BODY


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
