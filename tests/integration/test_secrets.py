"""The API key never shows: not in logs, exception text, XCom or rendered templates."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
import requests_mock as rm

from blinkops_provider.exceptions import BlinkApiError
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.operators.tables import UpdateTableFieldOperator
from tests.conftest import API_KEY
from tests.fake_blink import without_table_reads

LIST_URL = "https://blink.test/api/v1/connection_types"
ECHO = f"denied for key {API_KEY}"


@pytest.mark.parametrize(
    "responses",
    [
        [{"status_code": 401, "json": {"status": 401, "message": ECHO, "details": ECHO}}],
        [{"status_code": 400, "text": f"<html>{ECHO}</html>"}],
        [{"status_code": 200, "text": f"<html>{ECHO}</html>"}],
        [{"status_code": 503, "json": {"message": ECHO}}] * 3,
        [{"exc": requests.ConnectionError(f"https://blink.test/api/v1/connection_types?q=x {API_KEY}")}] * 3,
        [{"exc": requests.ReadTimeout(f"read timed out {API_KEY}")}] * 3,
    ],
)
def test_key_is_absent_from_errors_and_logs(make_hook: Any, all_output: Any, responses: list) -> None:
    hook = make_hook()
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, responses)
        with pytest.raises(BlinkApiError) as err:
            hook.list_connection_types(filter={"name": "secret-filter-value"})
    text = str(err.value) + repr(err.value) + repr(err.value.args) + str(err.value.details)
    assert API_KEY not in text
    assert "secret-filter-value" not in text  # the query string is not quoted either
    assert API_KEY not in all_output()
    assert err.value.path == "/connection_types"


def test_key_is_absent_from_xcom_and_rendered_templates(blink_conn: None, all_output: Any) -> None:
    op = UpdateTableFieldOperator(
        replace=True, task_id="u", ws_id="w", table="t", field="f", field_type="text", display_name="F"
    )
    op.render_template_fields({})
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put("https://blink.test/api/v1/workspace/w/table/t/fields/f", json={"id": "1", "type": "text"})
        result = op.execute({})
        assert m.last_request.headers["BLINK-API-KEY"] == API_KEY  # sent, where it belongs
    rendered = {name: getattr(op, name) for name in op.template_fields}
    assert API_KEY not in json.dumps(result) + json.dumps(rendered) + all_output()


def test_catalogue_operator_xcom_holds_no_key(blink_conn: None) -> None:
    op = ConnectionTypesToXComOperator(task_id="s")
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json={"total": 1, "offset": 0, "results": [{"id": "a"}]})
        assert API_KEY not in json.dumps(op.execute({}))
