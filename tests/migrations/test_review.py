"""Who may let a plan through (blinkops_provider.migrations._review, #55): the review policies."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations._review import check_review_policy, review_needed
from tests.migrations.test_fleet import fleet

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
