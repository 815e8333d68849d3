"""Reading a declaration: entries, tombstones and the table's own members (blinkops_provider._declaration)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blinkops_provider._declaration import read_declaration
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import declared_schema

TITLE = {"field": "Title", "type": "text", "display_name": "Title"}


def test_a_list_with_a_tombstone_and_an_object_with_the_tables_members() -> None:
    declared = read_declaration([TITLE, {"field": "Old", "remove": True}])
    assert [name for name, _ in declared.fields] == ["Title"] and declared.removals == ("Old",)
    table = read_declaration(json.dumps({"display_name": "Incidents", "description": "d", "fields": [TITLE]}))
    assert (table.display_name, table.description) == ("Incidents", "d")
    assert declared_schema({"display_name": "Incidents", "fields": [TITLE]}, source="s") == {
        "display_name": "Incidents",
        "fields": [TITLE],
    }
    assert declared_schema([TITLE, {"field": "Old", "remove": True}], source="s") == [
        TITLE,
        {"field": "Old", "remove": True},
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ([{"field": "Old", "remove": False}], "'remove' must be true"),
        ([{"field": "Old", "remove": True, "type": "text"}], "a tombstone names only 'field' and 'remove'"),
        ([{"field": "", "remove": True}], "'field' must be the name of the field to remove"),
        ([{"field": "Old", "remove": True}, {"field": "Old", "remove": True}], "'Old' is removed twice"),
        ([TITLE, {"field": "Title", "remove": True}], "both declares and removes 'Title'"),
        ({"fields": [TITLE], "name": "x"}, "names 'name', which a declaration does not take"),
        ({"fields": [TITLE], "display_name": "  "}, "display_name must not be blank"),
        ({"fields": [TITLE], "description": 3}, "description must be text"),
        ([], "declares no field"),
    ],
)
def test_wrong_declarations_say_what_is_wrong_and_what_is_allowed(given: Any, said: str) -> None:
    with pytest.raises(BlinkInputError, match="the schema") as error:
        read_declaration(given, source="the schema")
    assert said in str(error.value)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (lambda n: {"field": f"f{n}", "type": "nope", "display_name": "x"}, "unknown field type 'nope'"),
        (lambda n: {"field": f"f{n}", "remove": "yes"}, "'remove' must be true"),
    ],
)
def test_10000_bad_entries_make_an_error_that_names_20_and_counts_the_rest(entry: Any, said: str) -> None:
    """#63 item 10: not 2.4 million characters in the task log and the UI."""
    with pytest.raises(BlinkInputError) as raised:
        read_declaration([entry(n) for n in range(10_000)], source="fields", prefix=False)
    text = str(raised.value)
    assert text.count(said) == 20 and "'f19'" in text and "'f20'" not in text
    assert "and 9980 more problem(s)" in text and len(text) < 6_000


def test_backfill_and_type_change_survive_a_round_trip_through_json() -> None:
    """#64: a declaration read, written as JSON (an XCom between the group's tasks) and read
    again keeps each entry's backfill and type_change."""
    from blinkops_provider._declaration import read_declaration

    entries = [
        {
            "field": "Risk",
            "type": "single-select",
            "display_name": "Risk",
            "attributes": {"options": ["a"]},
            "type_change": "copy_or_empty",
        },
        {"field": "Queue", "type": "text", "display_name": "Queue", "backfill": "triage"},
    ]
    once = read_declaration(entries)
    again = read_declaration(once.to_json())
    assert (again.type_changes, again.backfills) == ({"Risk": "copy_or_empty"}, {"Queue": "triage"})
    assert again.digest_part() == once.digest_part()


def test_a_type_change_that_is_not_one_of_the_two_is_refused_naming_both() -> None:
    from blinkops_provider._declaration import read_declaration

    with pytest.raises(BlinkInputError, match=r"entry 1 \('Risk'\): 'type_change' must be one of: 'copy'"):
        read_declaration([{"field": "Risk", "type": "text", "display_name": "Risk", "type_change": "cast"}])
