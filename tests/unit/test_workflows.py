"""The reader of a workflow's definition: its table steps, the columns they mention and how, and what it cannot read."""

from __future__ import annotations

import textwrap

from blinkops_provider.workflows import FieldMention, mentioned_in_text, read_workflow

DEFINITION = textwrap.dedent(
    """
    name: Triage incidents
    steps:
      - id: S1
        action: tables.GetRecordsV3
        inputs:
          table: incidents
          query_method: By Condition
          ci: '{"Risk": {"$eq": "high"}, "$or": [{"Owner": "ops"}, {"Severity": {"$gt": 3}}]}'
      - id: S2
        action: tables.AddRecordV2
        inputs:
          table: incidents
          Title: "{{ steps.S1.output.title }}"
          Risk: low
      - id: S3
        action: tables.GetRecordsV3
        inputs:
          table: incidents
          query_method: RQL Query
          query: |
            {"filter": {"Status": "open"}, "sort": ["-Opened"], "select": ["Title"]}
      - id: S4
        action: system.TableInsert
        inputs:
          table: incidents
          data: |
            [{"Title": "x", "Owner": "ops"}]
      - id: S5
        action: tables.GetRecordsV3
        inputs:
          query_method: SQL Query
          sql: SELECT Title, Risk FROM incidents WHERE Riskier = 1
      - id: S6
        action: tables.DeleteRecordsV2
        inputs:
          table: "{{ steps.S1.output.table }}"
      - id: S7
        action: slack.SendMessage
        inputs:
          text: Risk is high
    """
)


def test_each_table_step_is_read_with_its_columns_and_how_they_are_used() -> None:
    read = read_workflow(DEFINITION)
    assert read.unread == ""
    steps = {step.step: step for step in read.steps}
    assert list(steps) == ["S1", "S2", "S3", "S4", "S5", "S6"]  # the Slack step is not a table step
    assert steps["S1"].table == "incidents"
    assert {m.field for m in steps["S1"].mentions} == {"Risk", "Owner", "Severity"}
    assert steps["S1"].uses("Risk") == ["filtered on"]
    assert steps["S2"].mentions == (FieldMention("Title", "Title", "written"), FieldMention("Risk", "Risk", "written"))
    assert steps["S2"].adds_rows and not steps["S1"].adds_rows
    assert steps["S3"].uses("Status") == ["filtered on"]
    assert steps["S3"].uses("Opened") == steps["S3"].uses("Title") == ["read"]
    assert [(m.field, m.use) for m in steps["S4"].mentions] == [("Title", "written"), ("Owner", "written")]
    assert steps["S4"].adds_rows


def test_what_cannot_be_read_is_said_never_guessed() -> None:
    steps = {step.step: step for step in read_workflow(DEFINITION).steps}
    assert steps["S5"].table is None and steps["S5"].mentions == ()
    assert steps["S5"].in_free_text("Risk") == ["sql"]  # named in an SQL query: free text
    assert steps["S5"].in_free_text("Risk") and not steps["S5"].in_free_text("Risky")
    assert steps["S6"].table is None
    assert steps["S6"].unread == ("its table is named through an expression ({{ steps.S1.output.table }})",)


def test_a_definition_that_does_not_parse_says_where() -> None:
    read = read_workflow("steps:\n  - id: S1\n    action: tables.AddRecordV2\n    inputs: {table: t\n")
    assert read.steps == ()
    assert read.unread.startswith("its definition does not parse as YAML at line")
    assert read_workflow("").unread == "the workflow has no definition"
    assert read_workflow("- a list").unread == "its definition is not a YAML mapping"


def test_steps_nested_in_a_loop_and_a_body_that_is_an_expression() -> None:
    definition = textwrap.dedent(
        """
        steps:
          - id: L1
            action: internal.for
            steps:
              S9:
                action: tables.UpdateRecords
                inputs:
                  table: incidents
                  data: "{{ steps.S1.output.rows }}"
        """
    )
    (step,) = read_workflow(definition).steps
    assert (step.step, step.table, step.mentions) == ("S9", "incidents", ())
    assert step.unread == ("its 'data' input is an expression ({{ steps.S1.output.rows }})",)


def test_a_name_in_text_is_a_whole_word() -> None:
    assert mentioned_in_text("WHERE Risk = 1", "Risk")
    assert not mentioned_in_text("WHERE Risky = 1", "Risk")
    assert not mentioned_in_text("WHERE t.Riskiness", "Risk")
    assert not mentioned_in_text("anything", "")


def test_a_definition_of_nested_aliases_is_walked_once_per_node() -> None:
    """A "billion laughs": each level an alias of the one before, twice. Each node is walked once, so the step is read
    once (walked by its aliases, it would be read 2**12 times here, and 2**40 times at 40 levels)."""
    levels = ["a0: &a0 {action: tables.GetRecordsV3, inputs: {table: incidents, ci: &c {Risk: 1, $or: [*c, *c]}}}"]
    levels += [f"a{n}: &a{n} [*a{n - 1}, *a{n - 1}]" for n in range(1, 13)]
    read = read_workflow("\n".join([*levels, "steps: [*a12]"]))
    assert [(step.step, step.mentions) for step in read.steps] == [("a0", (FieldMention("Risk", "ci", "filtered on"),))]


def test_a_definition_without_a_table_action_is_known_without_parsing() -> None:
    from blinkops_provider.workflows import names_a_table_action

    assert names_a_table_action(DEFINITION)
    assert names_a_table_action("steps: [{action: system.TableInsert}]")
    assert not names_a_table_action("steps: [{action: slack.SendMessage, inputs: {text: tables are fun}}]")
