"""The states of a migration, named once (blinkops_provider.utils.states, #58 item 3): each a str Enum
whose members are their values, so XComs, records and logs keep the same text.

Private imports, the exception: the Enums are the unit under test (public names carry their values as plain text);
one plan is made by the planner directly, against no Blink, to show its XCom holds plain text.
"""

from __future__ import annotations

import json

import pytest

from blinkops_provider.migrations import plan_xcom
from blinkops_provider.utils.states import FIELD_ACTIONS, Action, Decision, FieldOutcome, TableOutcome

VALUES = {
    Action: ["add", "change", "unchanged", "refused", "remove", "retype", "create"],
    FieldOutcome: ["added", "changed", "removed", "retyped", "unchanged", "applied", "failed", "unknown"],
    TableOutcome: ["applied", "unchanged", "failed", "stale", "rejected"],
    Decision: ["Approve", "Reject"],
}


@pytest.mark.parametrize("states", list(VALUES), ids=lambda states: states.__name__)
def test_each_state_is_its_value_in_text_json_and_comparison(states: type) -> None:
    assert [member.value for member in states] == VALUES[states]  # the values, and their order, as before
    for member in states:
        assert member == member.value and hash(member) == hash(member.value)
        assert str(member) == f"{member}" == "%s" % member == member.value  # noqa: UP031 (as logging formats it)
        assert json.dumps({member: [member]}) == json.dumps({member.value: [member.value]})
        assert {member.value: 1}[member] == 1  # a key read back from an XCom finds it


def test_a_plans_field_actions_are_the_actions_but_create() -> None:
    assert set(FIELD_ACTIONS) == set(Action) - {Action.CREATE}


def test_states_survive_airflows_xcom_serialization() -> None:
    try:
        from airflow.sdk.serde import deserialize, serialize  # Airflow 3
    except ImportError:
        from airflow.utils.json import XComDecoder, XComEncoder  # Airflow 2.11

        def serialize(value: object) -> object:
            return json.loads(json.dumps(value, cls=XComEncoder), cls=XComDecoder)

        def deserialize(value: object) -> object:
            return value

    sent = {"outcomes": {"Title": FieldOutcome.ADDED}, "outcome": TableOutcome.APPLIED, "action": Action.REMOVE}
    back = deserialize(serialize(sent))
    assert back == {"outcomes": {"Title": "added"}, "outcome": "applied", "action": "remove"}
    assert all(type(value) is str for value in (back["outcome"], back["action"], back["outcomes"]["Title"]))


def test_a_plans_xcom_holds_plain_text_so_a_rendered_template_reads_back() -> None:
    """A plan XCom passed through a template is its ``str()``; the operator reads it back with
    ``ast.literal_eval``, which an Enum's repr would break."""
    import ast

    from blinkops_provider.migrations import SchemaPlan
    from blinkops_provider.migrations._plan import plan_fields
    from blinkops_provider.models import validate_field_updates

    batch = validate_field_updates([{"field": "Title", "type": "text", "display_name": "Title"}])
    plan = SchemaPlan("ws", "T", "r.json", None, tuple(plan_fields(batch, {})), (), "s", "r")
    xcom = plan_xcom(plan)
    assert type(xcom["fields"][0]["action"]) is str and type(xcom["table_plan"]["action"]) is str
    assert ast.literal_eval(str(xcom)) == xcom
