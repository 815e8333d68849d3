"""UpdateTableFieldOperator and UpdateTableFieldsOperator: rendering, checks before any request, the merge, adds,
unknown answers, each argument checked once, and a review's answer as the operator reads it (#55, #63).

Private imports, the exception: "each argument checked once" counts the calls of each check wherever the provider's
modules imported it, which nothing public shows; the review's answer (``operators._answer``) is read from Airflow's
record of an approval task, which only a DAG run in a real scheduler writes: here it is handed in as that record.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkClientError, BlinkInputError, BlinkTransientError
from blinkops_provider.operators.tables import UpdateTableFieldOperator
from tests.conftest import FakeTI
from tests.fake_blink import without_table_reads

BASE = "https://blink.test/api/v1"
CONTEXT: dict[str, Any] = {
    "ds": "2026-11-22",
    "params": {"ws": "ws-9", "table": "Q1/Q2 plans", "type": "date"},
}


def field_operator(**overrides: Any) -> UpdateTableFieldOperator:
    kwargs: dict[str, Any] = {
        "task_id": "update",
        "ws_id": "{{ params.ws }}",
        "table": "{{ params.table }}",
        "field": "Due",
        "field_type": "{{ params.type }}",
        "display_name": "Due on {{ ds }}",
        "attributes": {"include_time": True, "default_value": "{{ ds }}"},
    }
    kwargs.update(overrides)
    return UpdateTableFieldOperator(**{"replace": True, **kwargs})


def test_update_operator_renders_validates_and_returns_json(blink_conn: None) -> None:
    op = field_operator()
    assert "hook" not in op.__dict__  # nothing built at parse time
    op.render_template_fields(CONTEXT)
    assert (op.ws_id, op.table, op.field_type, op.display_name) == (
        "ws-9",
        "Q1/Q2 plans",
        "date",
        "Due on 2026-11-22",
    )
    assert op.attributes == {"include_time": True, "default_value": "2026-11-22"}
    returned = {
        "id": "f1",
        "name": "Due",
        "type": "date",
        "display_name": "Due on 2026-11-22",
        "attributes": {"include_time": True},
        "created_at": 1,
        "updated_at": 2,
        "future": [1],
    }
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(f"{BASE}/workspace/ws-9/table/Q1%2FQ2%20plans/fields/Due", json=returned)
        result = op.execute(CONTEXT)
        assert m.last_request.json() == {
            "type": "date",
            "display_name": "Due on 2026-11-22",
            "attributes": {"include_time": True, "default_value": "2026-11-22"},
        }
    assert result == returned
    assert json.loads(json.dumps(result)) == result


def test_attributes_may_be_a_rendered_json_string(blink_conn: None) -> None:
    op = field_operator(attributes='{"options": {{ params.options | tojson }}}', field_type="single-select")
    op.render_template_fields({**CONTEXT, "params": {**CONTEXT["params"], "options": ["a", "b"]}})
    assert op.build_update().to_body()["attributes"] == {"options": ["a", "b"]}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"attributes": {"opitons": ["a"]}}, "unknown member 'opitons' in FieldAttributes; allowed:"),
        ({"field_type": "integer"}, "type: unknown field type 'integer'; allowed: text, long-text"),
        ({"field_type": "sys-id"}, "'sys-id' is one of Blink's own system types"),
        ({"attributes": {"system": True}}, "'system' is Blink's read-only marker"),
        ({"display_name": None}, "display_name required; Blink resets what a field update leaves out"),
        ({"field_type": "", "display_name": ""}, "field_type and display_name required"),
        ({"attributes": "{broken"}, "attributes is not valid JSON"),
        ({"ws_id": "  "}, "ws_id must be a non-empty string"),
    ],
)
def test_bad_input_fails_the_task_before_any_request(blink_conn: None, overrides: dict, message: str) -> None:
    op = field_operator(**overrides)
    op.render_template_fields(CONTEXT)
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=message):
        op.execute(CONTEXT)
    assert not m.called


# -- hardening (#35) -------------------------------------------------------------------------------


def test_a_schema_batch_rate_limited_to_the_end_carries_blinks_retry_after(make_hook: Any, sleeps: Any) -> None:
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    fields = [{"field": f"f{i}", "type": "text", "display_name": f"F{i}"} for i in range(3)]
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="t", fields=fields)
    op.hook = make_hook(retry_limit=1)  # its waits recorded, not slept
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, status_code=429, headers={"Retry-After": "45"}, json={"message": "slow down"})
        with pytest.raises(BlinkTransientError) as caught:
            op.execute({"ti": FakeTI()})
    assert (caught.value.status, caught.value.retry_after) == (429, 45.0)
    assert "3 of 3 field(s) not applied" in str(caught.value)
    # one attempt each; a field not yet sent waits out Blink's pause (recorded, not slept), nothing else
    assert sum(call.method == "PUT" for call in m.request_history) == 3 and set(sleeps) <= {45.0}


@pytest.mark.parametrize("fields", ["[]", [], "  [] "])
def test_an_empty_declared_schema_is_refused_before_any_request(blink_conn: None, fields: Any) -> None:
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="t", fields=fields)
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match="fields declares no field"):
        op.execute({"ti": FakeTI()})
    assert m.call_count == 0


def test_field_names_cannot_break_the_applys_log_lines(blink_conn: None, provider_log: Any) -> None:
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator

    fields = [{"field": "a\nINFO forged", "type": "text", "display_name": "A"}]
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="t", fields=fields)
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, status_code=400, json={"message": "no"})
        with pytest.raises(BlinkClientError):
            op.execute({"ti": FakeTI()})
    assert any("a\\u000aINFO forged" in line for line in provider_log())
    assert not any(line.lstrip().startswith("INFO forged") for line in provider_log())


# -- nothing reset by omission (#42): the operators read the field first and send the merge ----------

from blinkops_provider.operators.tables import UpdateTableFieldsOperator  # noqa: E402
from tests.fake_blink import FakeBlink, blink_field  # noqa: E402

HELD = {"Incidents": [blink_field("Severity", "single-select", required=True, is_unique=True, options=["Low"])]}
SEVERITY = {"type": "single-select", "display_name": "Severity", "attributes": {"options": ["Low", "High"]}}


def severity_operator(options: list[str]) -> UpdateTableFieldOperator:
    """The single-field operator, updating the held Severity field's options only."""
    return UpdateTableFieldOperator(
        task_id="u",
        ws_id="ws-1",
        table="Incidents",
        field="Severity",
        field_type="single-select",
        display_name="Severity",
        attributes={"options": options},
    )


def test_the_field_operator_keeps_what_blink_holds_and_the_update_leaves_out(blink_conn: None) -> None:
    op = severity_operator(["Low", "High"])
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        blink = FakeBlink(HELD).mount(m)
        returned = op.execute({})
    [(_, _, body)] = blink.puts
    assert body["attributes"] == {"required": True, "is_unique": True, "options": ["Low", "High"]}
    assert returned["attributes"]["required"] is True
    assert blink.field("Incidents", "Severity")["attributes"]["is_unique"] is True


def test_the_field_operator_with_replace_sends_blinks_published_example_body_unchanged(blink_conn: None) -> None:
    from tests.unit.test_models import DOCS_BODY

    op = UpdateTableFieldOperator(
        task_id="u",
        ws_id="ws-1",
        table="Table 1",
        field="Test",
        field_type=DOCS_BODY["type"],
        display_name=DOCS_BODY["display_name"],
        attributes=DOCS_BODY["attributes"],
        replace=True,
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json={"id": "f", "name": "Test", **DOCS_BODY})
        op.execute({})
    puts = [call for call in m.request_history if call.method != "GET"]  # the plan reads first (#48)
    assert [call.method for call in puts] == ["PUT"]
    assert puts[0].json() == DOCS_BODY


def test_the_batch_operator_without_a_record_sends_each_merge(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(
        task_id="a", ws_id="ws-1", table="Incidents", fields=[{"field": "Severity", **SEVERITY}]
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        blink = FakeBlink(HELD).mount(m)
        assert op.execute({"ti": FakeTI()})["updated"] == ["Severity"]
    assert blink.puts[0][2]["attributes"]["required"] is True and blink.reads == 1


def test_a_field_blink_lacks_is_added_by_either_operator_with_one_post(blink_conn: None) -> None:
    """#48: one front door: a field Blink lacks is an add, whichever operator declares it."""
    many = UpdateTableFieldsOperator(
        task_id="a", ws_id="ws-1", table="Incidents", fields=[{"field": "Ghost", "type": "text", "display_name": "G"}]
    )
    one = UpdateTableFieldOperator(
        task_id="b", ws_id="ws-1", table="Incidents", field="Spirit", field_type="text", display_name="S"
    )
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        assert many.execute({"ti": FakeTI()})["outcomes"] == {"Ghost": "added"}
        made = one.execute({})
    assert [body["display_name"] for _, body in blink.posts] == ["G", "S"] and blink.puts == []
    assert made["name"] == f"s_{len(HELD['Incidents']) + 7}" and made["display_name"] == "S"


@pytest.mark.parametrize("status", [404, 405])
def test_without_blinks_fields_the_operator_sends_nothing_and_names_replace(blink_conn: None, status: int) -> None:
    from blinkops_provider.exceptions import BlinkReadUnavailableError

    op = UpdateTableFieldsOperator(
        task_id="a", ws_id="ws-1", table="Incidents", fields=[{"field": "Severity", **SEVERITY}]
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        blink = FakeBlink(HELD).mount(m)
        blink.fields_status = status
        with pytest.raises(
            BlinkReadUnavailableError, match=r"nothing was sent; replace=True sends the update as given"
        ):
            op.execute({"ti": FakeTI()})
    assert blink.puts == []


def test_a_merged_body_that_contradicts_itself_is_refused_before_any_write(blink_conn: None) -> None:
    op = severity_operator(["A", "A"])
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        with pytest.raises(
            BlinkInputError, match=r"nothing is applied.*the declaration contradicts itself: option 'A'"
        ):
            op.execute({})
    assert blink.puts == []


def test_replace_must_be_a_boolean() -> None:
    with pytest.raises(BlinkInputError, match="replace must be True or False"):
        UpdateTableFieldsOperator(task_id="a", ws_id="w", table="t", fields=[], replace="yes")  # type: ignore[arg-type]


# -- #56 item 5: a 2xx that is not Blink's answer is unknown, never applied ---------------------

NOT_BLINKS_ANSWERS = {
    "a proxy's HTML login page": (200, "text/html", b"<html><body>Sign in to continue</body></html>"),
    "an empty body": (200, "application/json", b""),
    "a truncated body": (200, "application/json", b'{"name": "Severity", "type": "single-sel'),
    "a body that is not JSON": (200, "text/plain", b"OK"),
    "a JSON list": (200, "application/json", b'[{"name": "Severity", "type": "single-select"}]'),
    "invalid UTF-8": (200, "application/json", b'{"name": "Sev\xff\xfeerity", "type": "single-select"}'),
    "a 204": (204, "application/json", b""),
}
SEVERITY_URL = f"{BASE}/workspace/ws-1/table/Incidents/fields/Severity"


def answer_not_blinks(m: Any, answer: tuple[int, str, bytes]) -> None:
    """The Severity field's PUT answered with ``answer`` (registered last: it is matched first)."""
    status, kind, body = answer
    m.put(SEVERITY_URL, status_code=status, headers={"Content-Type": kind}, content=body)


def not_retried(err: BaseException) -> bool:
    from airflow.providers.common.compat.sdk import AirflowFailException

    return isinstance(err, AirflowFailException)


@pytest.mark.parametrize("answer", list(NOT_BLINKS_ANSWERS.values()), ids=list(NOT_BLINKS_ANSWERS))
def test_the_field_operator_fails_on_a_2xx_that_is_not_blinks_answer(
    blink_conn: None, answer: tuple[int, str, bytes]
) -> None:
    from blinkops_provider.exceptions import BlinkApiError

    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        answer_not_blinks(m, answer)
        with pytest.raises(BlinkApiError, match=r"1 of 1 field\(s\) not applied: 'Severity' \(unknown: ") as caught:
            severity_operator(["Low", "High"]).execute({})
    assert not not_retried(caught.value)  # Airflow retries the task: the retry plans again against Blink
    assert [call.method for call in m.request_history].count("PUT") == 1 and blink.puts == []


@pytest.mark.parametrize("answer", list(NOT_BLINKS_ANSWERS.values()), ids=list(NOT_BLINKS_ANSWERS))
def test_the_batch_operator_reports_unknown_records_nothing_and_a_retry_applies(
    blink_conn: None, answer: tuple[int, str, bytes], tmp_path: Path, provider_log: Any
) -> None:
    from blinkops_provider.exceptions import BlinkApiError

    held = {"Incidents": [*HELD["Incidents"], blink_field("Title", "text", "Title")]}
    title = {"field": "Title", "type": "text", "display_name": "Incident title"}
    op = UpdateTableFieldsOperator(
        task_id="a",
        ws_id="ws-1",
        table="Incidents",
        fields=[{"field": "Severity", **SEVERITY}, title],
        record_path=str(tmp_path / "record.json"),
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        blink = FakeBlink(held).mount(m)
        answer_not_blinks(m, answer)
        with pytest.raises(BlinkApiError, match=r"'Severity' \(unknown: ") as caught:
            op.execute({"ti": ti})
        assert not not_retried(caught.value)
        summary = ti.pushed["return_value"]
        assert summary["outcomes"] == {"Severity": "unknown", "Title": "changed"}
        assert summary["unknown"] == ["Severity"] and summary["updated"] == ["Title"]
        record = json.loads((tmp_path / "record.json").read_text())
        assert set(record["fields"]) == {"Title"}  # never stored as confirmed
        assert any("Severity: unknown: sent, but the response body" in line for line in provider_log())

        # The retry (the task's, by Airflow) plans against Blink again: Severity is still to change.
        m.put(SEVERITY_URL, json=lambda request, context: blink._put(request, context))
        again = op.execute({"ti": FakeTI()})
    assert again["outcomes"] == {"Severity": "changed", "Title": "unchanged"}
    assert blink.field("Incidents", "Severity")["attributes"]["options"] == ["Low", "High"]


def test_an_add_that_blinks_answer_and_read_do_not_show_is_unknown(blink_conn: None, tmp_path: Path) -> None:
    """A POST answered 200 by a proxy's page, the field then not in Blink's fields read: unknown."""
    from blinkops_provider.exceptions import BlinkApiError

    op = UpdateTableFieldsOperator(
        task_id="a",
        ws_id="ws-1",
        table="Incidents",
        fields=[{"field": "Root cause", "type": "text", "display_name": "Root cause"}],
        record_path=str(tmp_path / "record.json"),
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        blink = FakeBlink(HELD).mount(m)
        m.post(f"{BASE}/workspace/ws-1/table/Incidents/fields", text="<html>Sign in</html>")
        said = r"'Root cause' \(unknown: its POST's 2xx named no field, and Blink's fields read shows 0 "
        with pytest.raises(BlinkApiError, match=said):
            op.execute({"ti": ti})
    assert ti.pushed["return_value"]["outcomes"] == {"Root cause": "unknown"}
    assert ti.pushed["return_value"]["names"] == {} and blink.posts == []
    assert not (tmp_path / "record.json").exists()  # nothing confirmed, nothing recorded


CHECKS = (
    ("blinkops_provider.utils.inputs", "check_concurrency"),
    ("blinkops_provider.utils.inputs", "check_flag"),
    ("blinkops_provider.utils.inputs", "rendered_flag"),
    ("blinkops_provider.utils.inputs", "check_lock_wait"),
    ("blinkops_provider.models", "checked_field_updates"),
    ("blinkops_provider.migrations._apply", "approved_plan"),
    ("blinkops_provider.migrations._apply", "check_names"),
    ("blinkops_provider.migrations._review", "check_approval"),
    ("blinkops_provider.models", "read_declaration"),
)


def _counted(monkeypatch: Any) -> dict[str, int]:
    """Every check of an argument, counted wherever the provider's modules imported it."""
    import importlib
    import sys

    counts: dict[str, int] = {}
    for module, name in CHECKS:
        original = getattr(importlib.import_module(module), name)

        def counting(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            counts[_name] = counts.get(_name, 0) + 1
            return _original(*args, **kwargs)

        for loaded in list(sys.modules.values()):
            if (
                getattr(loaded, "__name__", "").startswith("blinkops_provider")
                and getattr(loaded, name, None) is original
            ):
                monkeypatch.setattr(loaded, name, counting)
    return counts


AT_RUN_TIME = {
    "rendered_flag": 1,
    "checked_field_updates": 1,
    "read_declaration": 1,
    "check_names": 1,
    "approved_plan": 1,
}
"""The operator's checks when it runs: the templated arguments, once rendered, each once."""


def test_each_argument_is_checked_once_where_it_enters(blink_conn: None, tmp_path: Path, monkeypatch: Any) -> None:
    """#58 item 2: the operator checks its arguments when it is built (the static ones) and when
    it runs (the templated ones, once rendered); the apply below checks none of them again.
    apply_schema, called directly, checks each once too."""
    from blinkops_provider.hooks.blink import BlinkHook
    from blinkops_provider.migrations import apply_schema

    fields = [{"field": "Severity", **SEVERITY}, {"field": "Impact", "type": "number", "display_name": "Impact"}]
    common = {"ws_id": "ws-1", "table": "Incidents", "fields": fields, "record_path": f"{tmp_path}/"}
    planner = UpdateTableFieldsOperator(task_id="plan", plan_only=True, **common)
    applier = UpdateTableFieldsOperator(task_id="apply", max_concurrency=4, lock_wait=5, **common, plan="{{ plan }}")
    with rm.Mocker() as m:
        FakeBlink(HELD).mount(m)
        m.get(rm.ANY, json={"results": []}, additional_matcher=lambda r: "/connection_types" in r.url)  # the key
        counts = _counted(monkeypatch)
        plan = planner.execute({"ti": FakeTI()})
        assert counts == AT_RUN_TIME
        counts.clear()
        applier.plan = plan  # as rendered from the plan task's XCom
        assert applier.execute({"ti": FakeTI()})["outcomes"] == {"Severity": "changed", "Impact": "added"}
        assert counts == AT_RUN_TIME
        counts.clear()
        apply_schema(
            BlinkHook(), "ws-1", "Incidents", fields, record_path=f"{tmp_path}/", max_concurrency=4, lock_wait=5
        )
    assert counts == {
        "check_concurrency": 1,
        "check_flag": 4,  # replace, create_table, only_changed, acknowledge_risks: one check each
        "check_lock_wait": 1,
        "checked_field_updates": 1,
        "read_declaration": 1,
        "check_names": 1,
        "approved_plan": 1,
        "check_approval": 1,
    }


def test_the_field_operator_run_twice_names_blinks_field_both_times(blink_conn: None, tmp_path: Path) -> None:
    """#63 item 5: the XCom always names Blink's field, also when the second run finds it unchanged."""
    held = {"Incidents": [blink_field("fld_0000a007", "text", "Summary", required=True)]}

    def operator() -> UpdateTableFieldOperator:
        return UpdateTableFieldOperator(
            task_id="u",
            ws_id="ws-1",
            table="Incidents",
            field="Summary",
            field_type="text",
            display_name="Summary",
            attributes={"required": True},
        )

    with rm.Mocker() as m:
        FakeBlink(held).mount(m)
        first, second = operator().execute({}), operator().execute({})
    assert first["name"] == second["name"] == "fld_0000a007"


def test_the_batch_operator_keeps_its_tables_page_for_the_blink_table_link(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#63 item 11: the link is the connection's table page, kept when the task runs; only http(s) is shown."""
    from blinkops_provider.operators import _base, tables
    from tests.conftest import set_connection

    set_connection(monkeypatch, extra={"table_page": "/t/{ws_id}/{table}"})
    held = {"Q1/Q2 plans": [blink_field("fld_0000a007", "text", "Summary")]}
    op = UpdateTableFieldsOperator(
        task_id="apply",
        ws_id="ws-1",
        table="Q1/Q2 plans",
        fields=[{"field": "Summary", "type": "text", "display_name": "Summary"}],
    )
    ti = FakeTI()
    with rm.Mocker() as m:
        FakeBlink(held).mount(m)
        op.execute({"ti": ti})
    assert ti.pushed[_base.TABLE_PAGE_KEY] == "https://blink.test/t/ws-1/Q1%2FQ2%20plans"
    (link,) = op.operator_extra_links
    for kept, shown in [
        (ti.pushed[_base.TABLE_PAGE_KEY], ti.pushed[_base.TABLE_PAGE_KEY]),
        ("javascript:alert(1)", ""),
    ]:
        monkeypatch.setattr(
            tables.XCom, "get_value", lambda *, ti_key, key, value=kept: value if key == _base.TABLE_PAGE_KEY else None
        )
        assert link.get_link(op, ti_key=None) == shown


PROFILED_FIELDS = [
    {"field": "title", "type": "text", "display_name": "Title"},
    {"field": "sev", "type": "text", "display_name": "Severity level"},
    {"field": "New", "type": "text", "display_name": "New"},
    {"field": "old", "remove": True},
]


def profile_apply(records: Path) -> tuple[dict[str, Any], set[str], list[list[str]]]:
    """One apply (an add, a change, an unchanged field and an acknowledged removal, with a record
    and a lock) through ``UpdateTableFieldsOperator.execute`` against the fake Blink, profiled:
    its XCom, the provider's modules it entered, and the provider's stack at each HTTP send in
    whichever thread sent it (innermost first). The sandbox is not the provider's client: left out.
    ``benchmarks/apply_profile.py`` prints the same."""
    import os
    import sys
    import threading

    import blinkops_provider

    package = Path(blinkops_provider.__file__).resolve().parent
    entered: set[str] = set()
    sends: list[list[str]] = []

    def ours(filename: str) -> str | None:
        path = Path(filename)
        return None if package not in path.parents or "sandbox" in path.parts else str(path.relative_to(package))

    def seen(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        mine = ours(frame.f_code.co_filename)
        if mine:
            entered.add(mine)
        code = frame.f_code
        if code.co_name == "send" and code.co_filename.endswith(os.path.join("requests", "sessions.py")):
            stack, up = [], frame
            while up is not None:
                where = ours(up.f_code.co_filename)
                stack += [f"{where}:{up.f_code.co_name}"] if where else []
                up = up.f_back
            sends.append(stack)

    held = {
        "Incidents": [
            blink_field("title", "text", "Title"),
            blink_field("sev", "text", "Severity"),
            blink_field("old", "text", "Old"),
        ]
    }
    operator = UpdateTableFieldsOperator(
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=PROFILED_FIELDS,
        record_path=f"{records}/",
        acknowledge_risks=True,
    )
    with rm.Mocker() as mocker:
        FakeBlink(held).mount(mocker)
        threading.setprofile(seen)
        sys.setprofile(seen)
        try:
            result = operator.execute({"ti": FakeTI()})
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    return result, entered, sends


def test_the_profiled_apply_that_the_benchmark_prints_adds_changes_and_removes(
    blink_conn: None, tmp_path: Path
) -> None:
    """#73: the module and frame budget is retired; benchmarks/apply_profile.py still prints this apply's reach."""
    result, entered, sends = profile_apply(tmp_path)
    assert result["outcomes"] == {"title": "unchanged", "sev": "changed", "New": "added", "old": "removed"}
    assert len(sends) >= 6  # (the reads, an add, a change, a removal and its confirming read: all seen)
    assert {"migrations/_lock.py", "hooks/_transport.py", "operators/tables.py"} <= entered


def test_the_failure_summary_says_each_reason_whole() -> None:
    """#72 item 7: the advice is at the end of a reason ("... declare a backfill"): never cut."""
    from blinkops_provider.exceptions import BlinkBadRequestError
    from blinkops_provider.migrations import ApplyResult
    from blinkops_provider.operators.tables import not_applied

    why = 'required turned on, but 2 of 3 rows have no value (counted). Declare "backfill": VALUE on the entry'
    result = ApplyResult(failed={"Name": BlinkBadRequestError(why, status=400)}, order=["Name", "Code"])
    assert why in str(not_applied(result))


# -- a review's answer as the operators read it (operators._answer, #55, #63): a Reject an approval task pushed stops
# the apply; its XCom never lets a removal through ----------------------------------------------------------------------

from blinkops_provider.operators._answer import approval_from_review  # noqa: E402
from blinkops_provider.utils.states import REJECTED_IN_REVIEW  # noqa: E402

AIRFLOW = tuple(int(part) for part in importlib.metadata.version("apache-airflow").split(".")[:2])
HAS_APPROVAL = AIRFLOW >= (3, 1) and importlib.util.find_spec("airflow.providers.standard") is not None
needs_approval = pytest.mark.skipif(not HAS_APPROVAL, reason="the human-in-the-loop approval needs Airflow 3.1+")


def answer(option: str) -> dict[str, Any]:
    when = dt.datetime(2026, 11, 28, 1, 2, 3, tzinfo=dt.UTC)
    return {"chosen_options": [option], "params_input": {}, "responded_at": when, "responded_by_user": {"id": "7", "name": "alice"}}  # fmt: skip


def dag_with_review() -> dict[str, Any]:
    """A DAG: Airflow's own ApprovalOperator `review` upstream of `apply`, and a task `fake` that
    is no approval, also upstream; `late`, another approval, is downstream of the apply."""
    from airflow.providers.common.compat.sdk import DAG
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    with DAG("reviewed", schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)) as dag:
        review = ApprovalOperator(task_id="review", subject="Apply?")
        fake, apply = EmptyOperator(task_id="fake"), EmptyOperator(task_id="apply")
        [review, fake] >> apply >> ApprovalOperator(task_id="late", subject="Too late?")
    return dag.task_dict


@needs_approval
def test_an_approve_in_a_review_tasks_xcom_approves_nothing() -> None:
    """#63 item 1: the XCom is a copy that a user allowed to edit XComs may write; it never lets a
    removal through (only the asking task's own record of the answer does)."""
    tasks = dag_with_review()
    ti = FakeTI({"review": answer("Approve")})
    assert approval_from_review(tasks["apply"], ti, "review") is None
    assert ti.pulled == [("review", -1)]  # read, for a Reject only


@needs_approval
def test_a_review_that_was_not_asked_approves_nothing() -> None:
    assert approval_from_review(dag_with_review()["apply"], FakeTI({}), "review") is None


@needs_approval
def test_a_reject_refuses_the_apply_naming_who_and_when() -> None:
    with pytest.raises(BlinkInputError, match=rf"^{REJECTED_IN_REVIEW}: alice rejected this plan at 2026-11-28T01:02"):
        approval_from_review(dag_with_review()["apply"], FakeTI({"review": answer("Reject")}), "review")


@needs_approval
@pytest.mark.parametrize(
    ("review_task_id", "why"),
    [
        ("fake", "is a EmptyOperator, not an approval"),
        ("late", "is not upstream of 'apply'"),
        ("nope", "names no task"),
    ],
)
def test_an_answer_that_is_not_an_approval_tasks_own_never_counts(review_task_id: str, why: str) -> None:
    """A task that merely returns ``{"chosen_options": ["Approve"]}`` is no review: refused, naming
    review_task_id and acknowledge_risks."""
    ti = FakeTI({review_task_id: answer("Approve")})
    with pytest.raises(BlinkInputError, match=rf"review_task_id {review_task_id!r} {why}.*acknowledge_risks=True"):
        approval_from_review(dag_with_review()["apply"], ti, review_task_id)
    assert ti.pulled == []  # refused before its XCom is read


def test_no_review_task_is_no_approval() -> None:
    assert approval_from_review(object(), FakeTI({}), None) is None
