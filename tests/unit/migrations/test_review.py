"""Who may let a plan through (blinkops_provider.migrations._review, #55): the review policies; and one review for many
tables' plans (#34, in part), each plan made by ``plan_schema`` against a Blink of the tests' own."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import (
    check_review_policy,
    fleet_review,
    fleet_summary,
    plan_schema,
    plan_text,
    plan_xcom,
    review_needed,
)
from tests.conftest import set_connection
from tests.fake_blink import FakeBlink, blink_field

SELECT = {"type": "single-select", "display_name": "S", "attributes": {"options": ["Low", "High"]}}


def plan_of(table: str, declared: list[dict[str, Any]], held: dict[str, Any]) -> dict[str, Any]:
    """The XCom of the plan of ``declared`` against a Blink whose table holds the fields ``held`` and one row with
    each select's last option (so that dropping it is destructive)."""
    from blinkops_provider.hooks.blink import BlinkHook

    fields = [blink_field(name, f["type"], f["display_name"], **f.get("attributes", {})) for name, f in held.items()]
    with pytest.MonkeyPatch.context() as env, rm.Mocker() as m:
        set_connection(env)
        blink = FakeBlink({table: fields}, ws_id="ws").mount(m)
        blink.records[table] = [{"id": "r1", **{n: f["attributes"]["options"][-1] for n, f in held.items()}}]
        return plan_xcom(plan_schema(BlinkHook(), "ws", table, declared))


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
    assert first.startswith("Fleet review: 5 tables: 3 tables to change (2 with refused or destructive changes")
    assert "2 tables unchanged" in first
    order = [text.index(f"- ws/{t}") for t in ("Gamma", "Beta", "Zeta")]
    assert order == sorted(order)  # refused, then destructive, then the others
    assert "- ws/Gamma [REFUSED]" in text and "- ws/Beta [DESTRUCTIVE]" in text
    assert "Nothing to change in: ws/Alpha, ws/Delta" in text
    assert text.index("### ws/Gamma") < text.index("### ws/Zeta")  # each changed table's rows follow


BASELINE = "The baseline is the table as Blink holds it, read when the plan was made"


def test_the_baseline_is_said_once_for_the_fleet_not_once_a_table() -> None:
    plans = fleet()
    assert all(BASELINE in plan["text"] for plan in plans)  # each plan's own text says it
    text = fleet_review(plans)
    assert text.count(BASELINE) == 1 and text.index(BASELINE) < text.index("### ws/Gamma")
    assert "| S | refused |" in text and "| New | add |" in text  # the rows stay
    assert BASELINE not in fleet_review([p for p in plans if not p["has_changes"]])  # nothing to review


def test_past_the_size_bound_the_rest_are_named_with_where_their_plans_are() -> None:
    plans = fleet()
    whole = fleet_review(plans)
    bounded = fleet_review(plans, max_chars=whole.index("### ws/Beta") + 200)  # room for the note too
    assert len(bounded) <= whole.index("### ws/Beta") + 200
    assert "### ws/Gamma" in bounded and "### ws/Zeta" not in bounded
    assert "2 more table(s) not shown here" in bounded and "ws/Beta, ws/Zeta" in bounded
    assert "Their full plans are in the XCom of their plan tasks" in bounded


# -- the fleet's summary (#34) ----------------------------------------------------------------------


def result(table: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"ws_id": "ws", "table": table, "updated": [], "failed": [], "unknown": [], "outcome": outcome, **extra}


def test_the_summary_says_which_tables_were_applied_unchanged_failed_or_stale() -> None:
    tables = [{"ws_id": "ws", "table": t} for t in ("A", "B", "C", "D", "E", "F")]
    results = [
        result("A", "applied", rate_limited=2),
        result("B", "unchanged"),
        result("C", "failed", failed=[{"field": "Due", "status": 400, "message": "no"}], rate_limited=1),
        result("D", "stale", error="BlinkStalePlanError: plan again"),
        None,  # failed before it knew anything (or never ran)
        {"ws_id": "ws", "table": "F"},  # an XCom of another shape: not taken for a success
    ]
    summary = fleet_summary(tables, results)
    assert (summary["applied"], summary["unchanged"], summary["stale"]) == (["ws/A"], ["ws/B"], ["ws/D"])
    assert summary["failed"] == ["ws/C", "ws/E", "ws/F"] and summary["rate_limited"] == 3
    assert summary["errors"]["ws/C"] == "fields failed: Due"
    assert summary["errors"]["ws/D"] == "BlinkStalePlanError: plan again"
    assert summary["errors"]["ws/E"].startswith("no result")
    first = summary["text"].splitlines()[0]
    assert first == "Fleet of 6 tables: 1 applied, 1 unchanged, 3 failed, 1 stale; 3 rate-limit (429) wait(s)."


def test_the_summary_needs_one_result_per_table() -> None:
    with pytest.raises(BlinkInputError, match="2 tables but 1 apply results"):
        fleet_summary([{"ws_id": "w", "table": "a"}, {"ws_id": "w", "table": "b"}], [None])


# -- a review a person can trust (#43 items 7 to 10) ----------------------------------------------------


@pytest.mark.parametrize("tables", [1, 500, 5000])
@pytest.mark.parametrize("max_chars", [None, 3000])
def test_the_whole_review_stays_within_its_bound_and_every_changed_table_is_findable(
    tables: int, max_chars: int | None
) -> None:
    one = fleet()[2]  # Beta: a destructive table's plan
    plans = [{**one, "table": f"T{n:05d}"} for n in range(tables)]
    text = fleet_review(plans) if max_chars is None else fleet_review(plans, max_chars=max_chars)
    assert len(text) <= (max_chars or 20_000)  # fleet_review's default bound
    named = sum(f"ws/T{n:05d}" in text for n in range(tables))
    counted = re.findall(r"and (\d+) more table\(s\) to change: their plans are in their plan tasks' XCom", text)
    assert named + sum(map(int, counted)) >= tables


@pytest.mark.parametrize(
    "name", ["Beta\nws/Beta: 0 destructive", "Beta\r### ws/Forged", "Beta\u2028Nothing to change in: x"]
)
def test_a_name_cannot_forge_a_line_of_the_review_or_the_summary(name: str) -> None:
    plans = [{**plan, "table": name} if plan["table"] == "Beta" else plan for plan in fleet()]
    review = fleet_review(plans)
    for line in review.splitlines():
        assert not line.startswith(("ws/Beta: 0", "### ws/Forged", "Nothing to change in: x"))
    summary = fleet_summary([{"ws_id": "ws", "table": name}], [{"outcome": "failed", "error": "x\ny: applied"}])
    assert len(summary["text"].splitlines()) == 3 and "y: applied" not in summary["text"].splitlines()


@pytest.mark.parametrize("result", [["not", "a", "mapping"], "text", {"outcome": ["x"], "rate_limited": "many"}])
def test_a_malformed_apply_result_is_a_failure_in_the_summary_not_a_crash(result: Any) -> None:
    summary = fleet_summary([{"ws_id": "ws", "table": "T"}], [result])
    assert summary["failed"] == ["ws/T"] and summary["rate_limited"] == 0


def test_a_rejected_fleet_lists_a_table_with_nothing_to_apply_as_unchanged() -> None:
    """#50 item 7: the rejection names what it rejected; a table whose plan changed nothing is unchanged."""
    from blinkops_provider.migrations import fleet_summary

    tables = [{"ws_id": "ws", "table": "A"}, {"ws_id": "ws", "table": "B"}]
    plans = [
        {"ws_id": "ws", "table": "A", "fields": [{"field": "f", "action": "change"}]},
        {"ws_id": "ws", "table": "B", "fields": [{"field": "f", "action": "unchanged"}]},
    ]
    summary = fleet_summary(tables, [None, None], rejected=True, plans=plans)
    assert (summary["rejected"], summary["unchanged"]) == (["ws/A"], ["ws/B"])
    assert summary["text"].splitlines()[1:] == ["Rejected: ws/A", "Unchanged (nothing to apply): ws/B"]
    assert fleet_summary(tables, [None, None], rejected=True)["rejected"] == ["ws/A", "ws/B"]  # no plans: as before


def test_a_fleet_of_one_table_is_said_as_a_person_says_it() -> None:
    """#63 item 11: not "Fleet of 1 tables"."""
    summary = fleet_summary([{"ws_id": "ws", "table": "A"}], [result("A", "applied")])
    assert summary["text"].splitlines()[0].startswith("Fleet of 1 table: 1 applied,")
    review = fleet_review([fleet()[0]])
    assert review.startswith("Fleet review: 1 table: 1 table to change (0 with refused or destructive changes")
    assert "0 tables unchanged" in review


def test_a_retype_in_a_fleet_is_counted_and_flagged_like_a_removal() -> None:
    """#64: the fleet's review names a table's retype, flags it destructive and puts it first."""

    retyping = plan_of("Eta", [{"field": "S", **SELECT}], {"S": SELECT})
    retyping["fields"][0].update(action="retype", destructive=True, risk="text → number: copy 3 rows")
    plans = [*fleet(), retyping]
    text = fleet_review(plans)
    assert "- ws/Eta [DESTRUCTIVE]: 0 to add, 0 to change" in text and ", 1 to retype" in text
    assert text.index("- ws/Eta") < text.index("- ws/Zeta")
    assert review_needed([retyping], "destructive") and not review_needed([plans[1]], "destructive")
    assert review_needed([retyping], "destructive", acknowledged=True) is False  # as a removal


AIRFLOW = tuple(int(part) for part in importlib.metadata.version("apache-airflow").split(".")[:2])
HAS_APPROVAL = AIRFLOW >= (3, 1) and importlib.util.find_spec("airflow.providers.standard") is not None
needs_approval = pytest.mark.skipif(not HAS_APPROVAL, reason="the human-in-the-loop approval needs Airflow 3.1+")


# -- the review policies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "unchanged_only", "safe_changes", "risky"),
    [
        ("always", True, True, True),
        ("changes", False, True, True),
        ("destructive", False, False, True),
        ("never", False, False, False),
    ],
)
def test_the_review_policy_says_when_a_person_approves(
    policy: str, unchanged_only: bool, safe_changes: bool, risky: bool
) -> None:
    by_name = {p["table"]: p for p in fleet()}  # Zeta adds, Alpha and Delta unchanged, Beta destructive, Gamma refused
    assert review_needed([by_name["Alpha"], by_name["Delta"]], policy) is unchanged_only
    assert review_needed([by_name["Alpha"], by_name["Zeta"]], policy) is safe_changes
    assert review_needed([by_name["Zeta"], by_name["Beta"]], policy) is risky
    assert review_needed([by_name["Gamma"]], policy) is (policy != "never")


def removal() -> dict[str, Any]:
    return {"ws_id": "ws", "table": "T", "fields": [{"field": "Old", "action": "remove", "destructive": True}]}


@pytest.mark.parametrize(
    ("policy", "asked"), [("always", True), ("changes", True), ("destructive", False), ("never", False)]
)
def test_an_acknowledged_removal_is_asked_only_under_always_and_changes(policy: str, asked: bool) -> None:
    assert review_needed([removal()], policy, acknowledged=True) is asked
    assert review_needed([removal()], policy) is (policy != "never")


def test_edited_counts_do_not_spare_a_destructive_plan_its_review() -> None:
    edited = {**fleet()[2], "counts": {"destructive": 0}, "has_changes": False}  # Beta, its counts edited
    assert review_needed([edited], "destructive") and review_needed([edited], "changes")


@pytest.mark.parametrize("policy", ["risky", "", None, "ALWAYS", 1])
def test_an_unknown_policy_is_refused_naming_the_allowed_ones(policy: Any) -> None:
    allowed = r"review_policy must be one of: 'always' .*'changes' .*'destructive' .*'never'"
    with pytest.raises(BlinkInputError, match=allowed):
        check_review_policy(policy)
    with pytest.raises(BlinkInputError, match=allowed):
        review_needed(fleet(), policy)


# -- #72 item 7: what the review shows is what happens ---------------------------------------------


def test_the_review_shows_an_add_in_words_with_its_fill_and_who_let_the_last_apply_through(
    blink_sandbox: Any, tmp_path: Any
) -> None:
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import apply_schema, plan_schema

    hook, records = BlinkHook(), f"{tmp_path}/"
    queue = {"field": "Queue", "type": "text", "display_name": "Queue", "attributes": {"required": True}}
    declared = [{**queue, "backfill": "triage"}]
    text = plan_text(plan_schema(hook, "ws-demo", "Incidents", declared, record_path=records))
    assert (
        "| Queue | add | adds Queue (text, required), shown as 'Queue', fills 120 empty row(s) with 'triage' |" in text
    )
    approval = {"approved_by": "alice", "approved_at": "2026-11-28T01:02:03+00:00"}
    apply_schema(hook, "ws-demo", "Incidents", declared, record_path=records, approval=approval)
    again = plan_text(plan_schema(hook, "ws-demo", "Incidents", declared, record_path=records))
    assert "approved by alice at 2026-11-28T01:02:03+00:00" in again.splitlines()[0]


def test_refused_entries_are_said_by_who_refuses_them() -> None:
    plan = plan_of(
        "T", [{"field": "A", "type": "single-select", "display_name": "A", "attributes": {"options": []}}], {}
    )
    text = str(plan["text"])
    assert "Blink refuses these changes" not in text
    assert "**Refused** (each says who refuses it and why; while any entry is refused the apply sends nothing" in text


def test_a_copy_says_its_progress_at_every_page_and_at_its_end(
    blink_sandbox: Any, tmp_path: Any, provider_log: Any
) -> None:
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import apply_schema

    more = [{"Title": f"Incident {n}", "Risk": "High"} for n in range(381)]  # with the 120 seeded: 501 rows
    blink_sandbox.store.create_records("ws-demo", "Incidents", more, "seed@sandbox.blink")
    risk = {"field": "Risk", "type": "text", "display_name": "Risk", "type_change": "copy"}
    apply_schema(BlinkHook(), "ws-demo", "Incidents", [risk], record_path=f"{tmp_path}/", acknowledge_risks=True)
    said = provider_log()
    copied = [line.split("copied ")[1].split(" rows")[0] for line in said if "rows read)" in line]
    assert copied[:2] == ["500/501", "501/501"], said  # a page is 500 rows
    assert any("verified, 501 row(s) hold their converted values" in line for line in said)
