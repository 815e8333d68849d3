"""Planning and applying a migration (blinkops_provider.migrations.apply): what the inputs may be (#35)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import apply_schema, declared_schema, plan_schema

SCHEMA = [{"field": "Title", "type": "text", "display_name": "Title"}]


def field_json(request: Any, context: Any) -> dict[str, Any]:
    return {"id": "f", "name": request.path.rsplit("/", 1)[-1], **request.json()}


@pytest.mark.parametrize("form", ["dict", "json", "python", "fingerprint"])
def test_the_hooks_plan_takes_the_same_forms_as_the_operators(hook: Any, tmp_path: Path, form: str) -> None:
    records = f"{tmp_path}/records/"
    plan = plan_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=records).to_xcom()
    given = {"dict": plan, "json": json.dumps(plan), "python": repr(plan), "fingerprint": plan["fingerprint"]}[form]
    with rm.Mocker() as m:
        m.put(rm.ANY, json=field_json)
        assert hook.update_table_fields("ws-1", "Incidents", SCHEMA, record_path=records, plan=given).ok


def test_a_plan_that_is_no_plan_is_refused_briefly_before_any_request(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"plan must be the plan task's XCom") as e:
        apply_schema(hook, "ws-1", "Incidents", SCHEMA, record_path=f"{tmp_path}/", plan="x" * 5000)
    assert m.call_count == 0 and len(str(e.value)) < 300


@pytest.mark.parametrize("value", ["[]", [], {"fields": []}, "  []  "])
def test_an_empty_declared_schema_is_refused(value: Any) -> None:
    with pytest.raises(BlinkInputError, match="declares no field"):
        declared_schema(value, source="the 'schema' param")
