"""One review for many tables' plans (blinkops_provider.migrations.fleet) (#34, in part)."""

from __future__ import annotations

from typing import Any

from blinkops_provider.migrations.fleet import fleet_review
from blinkops_provider.migrations.plan import SchemaPlan, plan_fields
from blinkops_provider.models import validate_field_updates

SELECT = {"type": "single-select", "display_name": "S", "attributes": {"options": ["Low", "High"]}}


def plan_of(table: str, declared: list[dict[str, Any]], recorded: dict[str, Any]) -> dict[str, Any]:
    batch = validate_field_updates(declared)
    fields = tuple(plan_fields(batch, recorded))
    return SchemaPlan("ws", table, f"{table}.json", None, fields, (), table, "r").to_xcom()


def fleet() -> list[dict[str, Any]]:
    same = {"field": "S", **SELECT}
    return [
        plan_of("Zeta", [{"field": "New", "type": "text", "display_name": "N"}], {}),  # an add
        plan_of("Alpha", [same], {"S": {k: v for k, v in same.items() if k != "field"}}),  # unchanged
        plan_of("Beta", [{**same, "attributes": {"options": ["Low"]}}], {"S": SELECT}),  # destructive
        plan_of("Gamma", [{**same, "type": "text", "attributes": {}}], {"S": SELECT}),  # refused
        plan_of("Delta", [same], {"S": {k: v for k, v in same.items() if k != "field"}}),  # unchanged
    ]


def test_the_review_leads_with_a_summary_and_the_risky_tables_first() -> None:
    text = fleet_review(fleet())
    first = text.splitlines()[0]
    assert first.startswith("Fleet review: 5 tables, 3 to change (2 with refused or destructive changes")
    assert "2 unchanged" in first
    order = [text.index(f"- ws/{t}") for t in ("Gamma", "Beta", "Zeta")]
    assert order == sorted(order)  # refused, then destructive, then the others
    assert "- ws/Gamma [REFUSED]" in text and "- ws/Beta [DESTRUCTIVE]" in text
    assert "Nothing to change in: ws/Alpha, ws/Delta" in text
    assert text.index("### ws/Gamma") < text.index("### ws/Zeta")  # each changed table's rows follow


def test_past_the_size_bound_the_rest_are_named_with_where_their_plans_are() -> None:
    plans = fleet()
    whole = fleet_review(plans)
    bounded = fleet_review(plans, max_chars=whole.index("### ws/Beta") + 10)
    assert "### ws/Gamma" in bounded and "### ws/Zeta" not in bounded
    assert "2 more table(s) not shown here" in bounded and "ws/Beta, ws/Zeta" in bounded
    assert "Their full plans are in the XCom of their plan tasks" in bounded
