"""

Reading a declaration: entries, tombstones and the table's own members (blinkops_provider.models).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import declared_schema
from blinkops_provider.models import (
    SYSTEM_FIELD_TYPES,
    ConnectionType,
    ConnectionTypePage,
    ErrorWrapper,
    FieldAttributes,
    FieldType,
    FieldUpdate,
    TableField,
    read_declaration,
    validate_field_updates,
)

DOCS_BODY = {
    "attributes": {
        "default_value": "Default",
        "include_time": False,
        "options": ["Option 1", "Option 2", "Option 3"],
        "table_reference": {"table_name": "Table 1", "display_name_field": "Name"},
    },
    "display_name": "Test",
    "type": "single-select",
}


def test_field_types_are_blinks_eighteen_user_types_the_spec_ten_among_them() -> None:
    spec_ten = {"text", "long-text", "number", "risk-level", "checkbox", "single-select", "multi-select", "list"}
    spec_ten |= {"reference", "date"}
    eight_more = {"status", "user", "duration", "button", "attachment", "sla", "vendor", "vendors"}
    assert {t.value for t in FieldType} == spec_ten | eight_more and len(FieldType) == 18
    assert not set(SYSTEM_FIELD_TYPES) & {t.value for t in FieldType}


@pytest.mark.parametrize("kind", ["sys-id", "auto-increment-id", "incident", "generic-id", "sys-time"])
def test_a_system_only_type_is_refused_saying_it_is_blinks_own(kind: str) -> None:
    with pytest.raises(
        BlinkInputError, match=rf"'{kind}' is one of Blink's own system types.*allowed: text, long-text"
    ):
        validate_field_updates({"F": {"type": kind}})


def test_required_is_unique_and_description_are_declared_and_sent() -> None:
    body = {
        "type": "text",
        "display_name": "T",
        "description": "d",
        "attributes": {"required": True, "is_unique": False},
    }
    assert FieldUpdate.model_validate(body).to_body() == body
    with pytest.raises(BlinkInputError, match=r"attributes\.required: Input should be a valid boolean"):
        validate_field_updates({"F": {"attributes": {"required": "yes"}}})


@pytest.mark.parametrize("marker", ["system", "protected"])
def test_a_declaration_that_sets_a_read_only_marker_is_refused(marker: str) -> None:
    with pytest.raises(BlinkInputError, match=rf"'{marker}' is Blink's read-only marker.*allowed: default_value"):
        validate_field_updates({"F": {"attributes": {marker: True}}})


def test_answers_keep_any_type_and_attribute_blink_sends() -> None:
    field = TableField.model_validate({"name": "id", "type": "sys-id", "attributes": {"system": True, "new": 1}})
    assert field.to_json_dict() == {"name": "id", "type": "sys-id", "attributes": {"system": True, "new": 1}}


def test_docs_example_body_round_trips() -> None:
    update = FieldUpdate.model_validate(DOCS_BODY)
    assert update.type is FieldType.SINGLE_SELECT
    assert update.attributes is not None
    assert update.attributes.table_reference is not None
    assert update.attributes.table_reference.table_name == "Table 1"
    assert update.to_body() == DOCS_BODY


def test_body_leaves_out_what_was_not_given() -> None:
    assert FieldUpdate(type=FieldType.DATE, display_name="Due").to_body() == {
        "type": "date",
        "display_name": "Due",
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"attributes": {"opitons": ["a"]}},
            "unknown member 'opitons' in FieldAttributes; allowed: "
            "default_value, include_time, is_unique, options, required, table_reference",
        ),
        (
            {"tpye": "text"},
            "unknown member 'tpye' in FieldUpdate; allowed: attributes, description, display_name, type",
        ),
        ({"type": "integer"}, "type: unknown field type 'integer'; allowed: text, long-text"),
        ({"display_name": 5}, "display_name: Input should be a valid string"),
        ({"display_name": "   "}, "display_name must not be blank"),
        ({"attributes": {"include_time": "yes"}}, "attributes.include_time: Input should be a valid boolean"),
        ({"attributes": {"options": "a,b"}}, "attributes.options: Input should be a valid list"),
        ({"attributes": {"options": [1, 2]}}, "attributes.options.0: Input should be a valid string"),
        (
            {"attributes": {"table_reference": {"display_name_field": "Name"}}},
            "attributes.table_reference.table_name: Field required",
        ),
        ({"attributes": {"table_reference": {"table_name": "T", "fld": "x"}}}, "unknown member 'fld'"),
    ],
)
def test_bad_updates_are_refused_with_what_is_allowed(body: dict, expected: str) -> None:
    with pytest.raises(BlinkInputError, match=r"1 of 1 field update\(s\) are invalid, so none was sent") as err:
        validate_field_updates({"F": body})
    assert expected in str(err.value)
    assert isinstance(err.value, ValueError)


def test_request_models_reject_unknown_members_when_built_directly() -> None:
    with pytest.raises(ValueError, match="allowed: default_value"):
        FieldAttributes(opitons=["a"])  # type: ignore[call-arg]


def test_table_field_keeps_unknown_members_and_tolerates_missing_ones() -> None:
    field = TableField.model_validate({"id": "f1", "name": "Severity", "type": "risk-level", "colour": "red"})
    assert field.display_name is None
    assert field.to_json_dict() == {"id": "f1", "name": "Severity", "type": "risk-level", "colour": "red"}


def test_connection_type_keeps_camel_case_names_and_unknown_members() -> None:
    raw = {
        "id": "ct-1",
        "name": "aws",
        "new_top_level": {"x": 1},
        "methods": [{"name": "api_key", "attributes": ["key"], "is_recommended": True, "extra": 1}],
        "metadata": {
            "defaultAPIAddress": "https://api.example.com",
            "ignoreSSL": False,
            "testConnection": {"type": "http", "endpoint": "/me", "expected": {"statusCodes": "200-399"}},
            "authentication": {
                "type": "two-legged",
                "keys": [{"name": "client_id", "format": "string"}],
                "twoLeggedValues": {
                    "connectionParams": ["client_id"],
                    "actionToRunParamValues": {"url": "https://x/token", "method": "POST", "ignoreSSL": True},
                    "extractor": {
                        "accessKeyPath": "access_token",
                        "isJWT": False,
                        "expiry": {"defaultExpiry": 3600, "path": "expires_in", "type": "int"},
                    },
                },
            },
            "pagination": {"type": "cursor", "descriptor": {"next": "$.next"}},
            "validation": {"statusCodes": "200-299", "formatURL": "^https://"},
            "futureFlag": True,
        },
    }
    ct = ConnectionType.model_validate(raw)
    assert ct.metadata is not None and ct.metadata.default_api_address == "https://api.example.com"
    two_legged = ct.metadata.authentication.two_legged_values  # type: ignore[union-attr]
    assert two_legged is not None and two_legged.extractor is not None
    assert two_legged.extractor.expiry.default_expiry == 3600  # type: ignore[union-attr]
    assert ct.metadata.test_connection.expected.status_codes == "200-399"  # type: ignore[union-attr]
    assert ct.to_json_dict() == raw


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "results"),
        ({"total": 0}, "results"),
        ({"data": []}, "results"),
        ({"results": {}}, "results"),
        ({"results": [], "total": "5"}, "total"),
        ({"results": [], "total": 2.5}, "total"),
        ({"results": [], "limit": True}, "limit"),
        ({"results": [], "offset": -1}, "offset"),
        ({"results": [3]}, "results.0"),
    ],
)
def test_a_page_must_have_results_and_integer_counts(body: dict, problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ConnectionTypePage.model_validate(body)
    assert problem in {".".join(map(str, e["loc"])) for e in caught.value.errors()}


def test_a_page_tolerates_missing_counts_and_keeps_unknown_members() -> None:
    page = ConnectionTypePage.model_validate({"results": [], "next": "x"})
    assert (page.results, page.limit, page.total) == ([], None, None)
    assert page.to_json_dict() == {"results": [], "next": "x"}


@pytest.mark.parametrize("body", [{}, {"display_name": "x"}, {"type": "text", "attributes": {}}])
def test_an_updated_field_must_be_identified(body: dict) -> None:
    with pytest.raises(ValidationError, match="does not identify a field"):
        TableField.model_validate(body)


def test_error_wrapper_members_are_all_optional() -> None:
    assert ErrorWrapper.model_validate({}).message is None
    wrapper = ErrorWrapper.model_validate({"status": 400, "message": "m", "identifier": "E1", "user_error": {"a": 1}})
    assert (wrapper.status, wrapper.identifier, wrapper.user_error) == (400, "E1", {"a": 1})


def test_validation_errors_echo_the_value_cut_short_one_line_per_field() -> None:
    fields = [
        {"field": "Severity", "type": "single_select", "display_name": "Severity"},
        {"field": "Notes", "type": "text", "display_name": "N" * 500, "attributes": {"default_value": 5}},
        {"field": "Fine", "type": "text", "display_name": "Fine"},
    ]
    with pytest.raises(BlinkInputError) as caught:
        validate_field_updates(fields)
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 of 3 field update(s) are invalid, so none was sent:"
    assert lines[1].startswith("  - entry 1 ('Severity'): type:") and "(got 'single_select')" in lines[1]
    assert lines[2].startswith("  - entry 2 ('Notes'):")
    assert all(len(line) < 400 for line in lines)
    assert "N" * 60 not in str(caught.value)


def test_a_checked_batch_is_not_checked_again_unless_a_stricter_check_is_asked() -> None:
    """Each input is checked once, where it enters (#41): the migration and the hook take the
    operator's checked batch as it is; a batch checked without ``type`` and ``display_name``
    required is checked again when they are."""
    batch = validate_field_updates([{"field": "Notes", "type": "text", "display_name": "Notes"}])
    assert validate_field_updates(batch) is batch
    again = validate_field_updates(batch, require_type_and_name=True)
    assert again is not batch and again == batch and again.named
    loose = validate_field_updates({"Notes": {"display_name": "Notes"}})
    with pytest.raises(BlinkInputError, match="type required"):
        validate_field_updates(loose, require_type_and_name=True)


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
    from blinkops_provider.models import read_declaration

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
    assert again.to_json() == once.to_json() and again.fields == once.fields


def test_a_type_change_that_is_not_one_of_the_two_is_refused_naming_both() -> None:
    from blinkops_provider.models import read_declaration

    with pytest.raises(BlinkInputError, match=r"entry 1 \('Risk'\): 'type_change' must be one of: 'copy'"):
        read_declaration([{"field": "Risk", "type": "text", "display_name": "Risk", "type_change": "cast"}])


def test_an_invalid_declaration_counts_every_entry_tombstones_too() -> None:
    """#72 item 7: "1 of 3 entries", not "1 of 2 field update(s)" for a declaration with a tombstone."""
    declared = [
        {"field": "A", "type": "nope", "display_name": "A"},
        {"field": "B", "remove": True},
        {"field": "C", "type": "text", "display_name": "C"},
    ]
    with pytest.raises(BlinkInputError, match=r"1 of 3 entries are invalid, so none was sent") as caught:
        read_declaration(declared)
    assert "entry 1 ('A')" in str(caught.value)
