"""The sandbox's endpoints over raw HTTP: PUT semantics, errors, auth, the admin API."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from blinkops_sandbox import BlinkSandbox

WRAPPER = {"status", "message", "details", "identifier", "data", "user_error"}
OPTIONS = {"options": ["Low", "High"]}
KEY_HEADER = "BLINK-API-KEY"


def put(sandbox: BlinkSandbox, path: str, body: Any, key: str | None = "valid") -> requests.Response:
    headers = {} if key is None else {"BLINK-API-KEY": sandbox.api_key if key == "valid" else key}
    kwargs = (
        {"data": body, "headers": {**headers, "Content-Type": "application/json"}}
        if isinstance(body, str)
        else {"json": body, "headers": headers}
    )
    return requests.put(f"{sandbox.base_url}{path}", timeout=30, **kwargs)


def admin(sandbox: BlinkSandbox, method: str, path: str, token: str | None = None, **kwargs: Any) -> requests.Response:
    headers = {"X-Sandbox-Token": sandbox.admin_token if token is None else token}
    return requests.request(method, f"{sandbox.url}/_sandbox{path}", headers=headers, timeout=30, **kwargs)


SEVERITY = "/workspace/ws-demo/table/Incidents/fields/Severity"


def test_put_returns_every_member_of_a_table_field(blink_sandbox: BlinkSandbox) -> None:
    response = put(
        blink_sandbox, SEVERITY, {"type": "single-select", "display_name": "Sev", "attributes": {"options": ["a"]}}
    )
    assert response.status_code == 200
    assert set(response.json()) == {
        "attributes",
        "created_at",
        "created_by",
        "description",
        "display_name",
        "id",
        "indexes",
        "name",
        "table_id",
        "tenant_id",
        "type",
        "updated_at",
        "updated_by",
        "workspace_id",
    }


@pytest.mark.parametrize("content_type", ["*/*", "text/plain", None])
def test_the_body_is_json_whatever_its_content_type(blink_sandbox: BlinkSandbox, content_type: str | None) -> None:
    """Blink's docs send their curl example with ``Content-Type: */*``; Blink reads the body as JSON."""
    headers = {"BLINK-API-KEY": blink_sandbox.api_key}
    if content_type is not None:
        headers["Content-Type"] = content_type
    body = json.dumps({"type": "single-select", "display_name": "Sev", "attributes": {"options": ["Low", "High"]}})
    response = requests.put(f"{blink_sandbox.base_url}{SEVERITY}", data=body.encode(), headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["options"] == ["Low", "High"]
    stored = blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")
    assert stored["display_name"] == "Sev"


def test_members_left_out_are_reset(blink_sandbox: BlinkSandbox) -> None:
    title = blink_sandbox.store.get_field("ws-demo", "Incidents", "Title")
    assert title["attributes"]["required"] is True
    response = put(blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/Title", {"type": "text"})
    assert response.status_code == 200
    field = response.json()
    assert field["display_name"] == "Title"  # reset to the field's name
    assert field["attributes"] == {} and field["description"] == ""  # required and the default are gone


def test_the_whole_attribute_set_is_replaced_not_patched(blink_sandbox: BlinkSandbox) -> None:
    body = {"type": "single-select", "display_name": "Severity", "attributes": {"options": ["Low", "High"]}}
    field = put(blink_sandbox, SEVERITY, body).json()
    assert field["attributes"] == {"options": ["Low", "High"]}  # the default_value it held is gone


def test_the_tables_and_fields_reads_answer_as_blinks_own_tool_reads_them(blink_sandbox: BlinkSandbox) -> None:
    headers = {KEY_HEADER: blink_sandbox.api_key}
    tables = requests.get(f"{blink_sandbox.base_url}/workspace/ws-demo/tables", headers=headers, timeout=10).json()
    assert [t["name"] for t in tables["results"]] == ["Incidents", "Users"]
    url = f"{blink_sandbox.base_url}/workspace/ws-demo/table/Incidents/fields"
    fields = requests.get(url, headers=headers, timeout=10).json()["results"]
    system = [(f["name"], f["type"]) for f in fields if f["attributes"].get("system")]
    assert system == [
        ("id", "sys-id"),
        ("created_at", "sys-time"),
        ("updated_at", "sys-time"),
        ("created_by", "sys-record-modifier"),
        ("updated_by", "sys-record-modifier"),
    ]
    assert all(f["attributes"]["protected"] for f in fields if f["attributes"].get("system"))
    assert requests.get(f"{url[:-7]}Nope/fields", headers=headers, timeout=10).status_code == 404
    blink_sandbox.set_faults(fields_read_status=405)
    assert requests.get(url, headers=headers, timeout=10).status_code == 405


@pytest.mark.parametrize("kind", ["status", "user", "duration", "button", "attachment", "sla", "vendor", "vendors"])
def test_every_user_type_is_accepted(blink_sandbox: BlinkSandbox, kind: str) -> None:
    blink_sandbox.store.add_table(
        "ws-9", f"T-{kind}", [{"name": "F", "type": kind, "display_name": "F", "attributes": {}}]
    )
    body = {"type": kind, "display_name": "G"}
    if kind in ("status",):
        body["attributes"] = {"options": ["Open"]}
    assert put(blink_sandbox, f"/workspace/ws-9/table/T-{kind}/fields/F", body).status_code == 200


def test_a_system_only_type_and_a_system_field_are_refused(blink_sandbox: BlinkSandbox) -> None:
    response = put(blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/id", {"type": "sys-id"})
    assert response.status_code == 400 and "system-only type" in response.json()["details"]
    response = put(blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/created_by", {"type": "text"})
    assert response.status_code == 400 and response.json()["identifier"] == "SYSTEM_FIELD"


def test_a_second_reference_to_the_same_table_is_refused(blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.store.add_table(
        "ws-9",
        "Links",
        [{"name": n, "type": "reference", "display_name": n, "attributes": {}} for n in ("A", "B")],
    )
    target = {"type": "reference", "display_name": "A", "attributes": {"table_reference": {"table_name": "Users"}}}
    assert put(blink_sandbox, "/workspace/ws-9/table/Links/fields/A", target).status_code == 200
    second = put(blink_sandbox, "/workspace/ws-9/table/Links/fields/B", {**target, "display_name": "B"})
    assert second.status_code == 400 and second.json()["identifier"] == "DUPLICATE_REFERENCE"


def test_leaving_the_type_out_resets_it_and_is_refused_for_other_types(blink_sandbox: BlinkSandbox) -> None:
    response = put(blink_sandbox, SEVERITY, {"display_name": "Sev", "attributes": {"options": ["a"]}})
    assert response.status_code == 400
    assert response.json()["identifier"] == "FIELD_TYPE_CHANGE"
    assert "by leaving 'type' out" in response.json()["details"]
    title = put(blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/Title", {"display_name": "Headline"})
    assert title.status_code == 200  # a text field resets to text: no change
    assert title.json()["type"] == "text"


def test_created_stays_updated_moves(blink_sandbox: BlinkSandbox) -> None:
    before = blink_sandbox.store.get_field("ws-demo", "Incidents", "Due")
    blink_sandbox.store.clock = lambda: before["updated_at"] + 12_345
    field = put(
        blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/Due", {"type": "date", "display_name": "Due"}
    ).json()
    assert (field["created_at"], field["created_by"]) == (before["created_at"], before["created_by"])
    assert field["updated_at"] == before["updated_at"] + 12_345
    assert field["updated_by"] != before["updated_by"]


@pytest.mark.parametrize(
    ("body", "details"),
    [
        ("{not json", "JSON decode error"),
        ({"type": "integer", "display_name": "X"}, "type: Input should be 'text'"),
        ({"type": "single-select", "attributes": {"opitons": []}}, "a 'single-select' field needs attributes.options"),
        ({"type": "single-select", "display_name": 5}, "display_name: Input should be a valid string"),
    ],
)
def test_invalid_bodies_are_400_with_a_wrapper(blink_sandbox: BlinkSandbox, body: Any, details: str) -> None:
    response = put(blink_sandbox, SEVERITY, body)
    assert response.status_code == 400
    assert set(response.json()) == WRAPPER
    assert details in response.json()["details"]
    assert blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")["display_name"] == "Severity"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/workspace/nope/table/Incidents/fields/Severity", "workspace 'nope' not found"),
        ("/workspace/ws-demo/table/Nope/fields/Severity", "table 'Nope' not found in workspace 'ws-demo'"),
        ("/workspace/ws-demo/table/Incidents/fields/Nope", "field 'Nope' not found in table 'Incidents'"),
    ],
)
def test_unknown_names_are_404(blink_sandbox: BlinkSandbox, path: str, message: str) -> None:
    response = put(blink_sandbox, path, {"type": "text", "display_name": "X"})
    assert response.status_code == 404
    assert response.json()["message"] == message


@pytest.mark.parametrize(("key", "message"), [(None, "missing BLINK-API-KEY header"), ("wrong", "invalid API key")])
def test_key_is_checked_before_anything_else(blink_sandbox: BlinkSandbox, key: str | None, message: str) -> None:
    response = put(blink_sandbox, "/workspace/nope/table/x/fields/y", "{broken", key=key)
    assert response.status_code == 401
    assert response.json() == {
        "status": 401,
        "message": message,
        "details": response.json()["details"],
        "identifier": "UNAUTHORIZED",
        "data": None,
        "user_error": None,
    }


def test_unknown_api_path_is_a_wrapped_404(blink_sandbox: BlinkSandbox) -> None:
    response = requests.get(
        f"{blink_sandbox.base_url}/workflows", headers={"BLINK-API-KEY": blink_sandbox.api_key}, timeout=30
    )
    assert response.status_code == 404
    assert set(response.json()) == WRAPPER


def test_admin_api_needs_its_token(blink_sandbox: BlinkSandbox) -> None:
    assert admin(blink_sandbox, "GET", "/faults", token="wrong").status_code == 401
    assert admin(blink_sandbox, "GET", "/faults", token=blink_sandbox.api_key).status_code == 401


def test_faults_and_request_log_through_the_admin_api(blink_sandbox: BlinkSandbox) -> None:
    response = admin(blink_sandbox, "POST", "/faults", json={"sequence": [503, "ok"], "retry_after": "2"})
    assert response.status_code == 200
    assert response.json()["sequence"] == [503, "ok"]
    assert put(blink_sandbox, SEVERITY, {"type": "single-select", "attributes": OPTIONS}).status_code == 503
    assert put(blink_sandbox, SEVERITY, {"type": "single-select", "attributes": OPTIONS}).status_code == 200
    log = admin(blink_sandbox, "GET", "/requests").json()
    assert [(entry["status"], entry["fault"]) for entry in log] == [(503, 503), (200, None)]
    assert all(entry["headers"]["blink-api-key"] == "***" for entry in log)
    assert blink_sandbox.api_key not in str(log)
    assert admin(blink_sandbox, "DELETE", "/requests").json() == []
    assert admin(blink_sandbox, "POST", "/faults", json={"error_rate": 0.8, "drop_rate": 0.5}).status_code == 400
    assert admin(blink_sandbox, "POST", "/faults", json={"sequence": [418]}).status_code == 400


def test_rate_faults_are_deterministic_under_a_seed(blink_sandbox: BlinkSandbox) -> None:
    def run() -> list[Any]:
        blink_sandbox.set_faults(
            error_rate=0.3, error_statuses=[429, 502], truncate_rate=0.2, non_json_rate=0.1, seed=42
        )
        return [blink_sandbox.faults.next_fault() for _ in range(50)]

    first, second = run(), run()
    assert first == second
    assert {429, 502, "truncate", "non-json", "ok"} <= set(first)


def test_catalogue_can_be_changed_through_the_admin_api(blink_sandbox: BlinkSandbox) -> None:
    assert admin(blink_sandbox, "PUT", "/connection_types", json=[{"id": "new-1", "name": "brand-new"}]).json() == {
        "written": 1
    }
    assert admin(blink_sandbox, "DELETE", "/connection_types/ct-000000").status_code == 200
    assert admin(blink_sandbox, "DELETE", "/connection_types/ct-000000").status_code == 404
    ids = blink_sandbox.store.connection_type_ids()
    assert "new-1" in ids
    assert "ct-000000" not in ids
    assert admin(blink_sandbox, "POST", "/reset").json() == {"connection_types": 200}
    fields = admin(blink_sandbox, "GET", "/workspace/ws-demo/table/Incidents/fields").json()
    fields = [field for field in fields if not field["attributes"].get("system")]
    assert sorted(field["type"] for field in fields) == sorted(
        [
            "text",
            "long-text",
            "number",
            "risk-level",
            "checkbox",
            "single-select",
            "multi-select",
            "list",
            "reference",
            "date",
        ]
    )


def test_state_persists_in_a_db_file(tmp_path: Any) -> None:
    db = str(tmp_path / "blink.sqlite")
    with BlinkSandbox(db=db, connection_types=10) as first:
        put(first, SEVERITY, {"type": "single-select", "display_name": "Kept", "attributes": OPTIONS})
        first.store.upsert_connection_types([{"id": "kept-1", "name": "kept"}])
    with BlinkSandbox(db=db, connection_types=10) as second:
        assert second.store.get_field("ws-demo", "Incidents", "Severity")["display_name"] == "Kept"
        assert len(second.store.connection_type_ids()) == 11


def test_truncation_applies_to_successes_only(blink_sandbox: BlinkSandbox) -> None:
    blink_sandbox.set_faults(sequence=["truncate", "truncate"])
    missing = put(blink_sandbox, "/workspace/ws-demo/table/Incidents/fields/Nope", {"type": "text"})
    assert missing.status_code == 404
    assert set(missing.json()) == WRAPPER  # whole
    cut = put(blink_sandbox, SEVERITY, {"type": "single-select", "display_name": "Cut", "attributes": OPTIONS})
    assert cut.status_code == 200
    with pytest.raises(ValueError, match=r"Expecting|Unterminated"):
        cut.json()
    # The update itself was carried out: only the answer was lost.
    assert blink_sandbox.store.get_field("ws-demo", "Incidents", "Severity")["display_name"] == "Cut"
    assert [r["fault"] for r in blink_sandbox.requests] == [None, "truncate"]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-My-Key": "{key}"},
        {"Authorization": "Bearer {key}"},
        {"X-Token": "not-the-key"},
        {"X-Other": "a{key}b"},
        {"Cookie": "session=abc"},
        {"BLINK-API-KEY": "a-wrong-key-0123456789"},
    ],
)
def test_the_request_log_masks_whatever_header_carries_a_key(blink_sandbox: BlinkSandbox, headers: dict) -> None:
    sent = {name: value.format(key=blink_sandbox.api_key) for name, value in headers.items()}
    requests.get(f"{blink_sandbox.base_url}/connection_types", params={"q": "{}"}, headers=sent, timeout=10)
    (entry,) = blink_sandbox.requests
    for name in sent:
        assert entry["headers"][name.lower()] == "***"
    assert blink_sandbox.api_key not in json.dumps(entry)
    assert entry["headers"]["user-agent"] != "***"  # the others stay readable


NEVER_500 = [
    '{"filter": {"created_at": 1180591620717411303424}}',
    '{"filter": {"created_at": {"$gt": -9223372036854775809}}}',
    '{"filter": {"created_at": NaN}}',
    '{"filter": {"created_at": {"$lt": Infinity}}}',
    '{"filter": {"name": {"$gt": 99999999999999999999999}}}',
    '{"filter": ' + '{"$or": [' * 65 + '{"name": "x"}' + "]}" * 65 + "}",
]


@pytest.mark.parametrize("q", NEVER_500)
def test_client_input_is_never_a_500(blink_sandbox: BlinkSandbox, q: str) -> None:
    answer = requests.get(
        f"{blink_sandbox.base_url}/connection_types",
        params={"q": q},
        headers={"BLINK-API-KEY": blink_sandbox.api_key},
        timeout=10,
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["identifier"] == "INVALID_QUERY"


# -- the table routes (#48): add and remove a field, create and edit a table -----------------------


def call(sandbox: BlinkSandbox, method: str, path: str, body: Any = None) -> requests.Response:
    headers = {KEY_HEADER: sandbox.api_key}
    return requests.request(method, f"{sandbox.base_url}{path}", json=body, headers=headers, timeout=30)


FIELDS = "/workspace/ws-demo/table/Incidents/fields"


def test_a_field_is_added_under_a_name_derived_from_its_display_name(blink_sandbox: BlinkSandbox) -> None:
    first = call(blink_sandbox, "POST", FIELDS, {"type": "long-text", "display_name": "Root cause"})
    second = call(blink_sandbox, "POST", FIELDS, {"type": "text", "display_name": "Root Cause!"})
    assert (first.status_code, first.json()["name"]) == (200, "root_cause")
    assert second.json()["name"] == "root_cause_2"  # the sandbox's own rule, not Blink's
    names = [field["name"] for field in call(blink_sandbox, "GET", FIELDS).json()["results"]]
    assert names[-2:] == ["root_cause", "root_cause_2"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"display_name": "No type"}, "type and display_name are required"),
        ({"type": "single-select", "display_name": "Pick"}, "needs attributes.options"),
        ({"type": "reference", "display_name": "Boss", "attributes": {"table_reference": {"table_name": "Users"}}},
         "at most one reference field per target table"),
        ({"type": "sys-id", "display_name": "Id"}, "system-only type"),
    ],
)  # fmt: skip
def test_a_field_blink_would_refuse_is_a_400(blink_sandbox: BlinkSandbox, body: Any, said: str) -> None:
    response = call(blink_sandbox, "POST", FIELDS, body)
    assert response.status_code == 400 and said in json.dumps(response.json())


def test_a_field_is_removed_but_never_a_system_or_protected_one(blink_sandbox: BlinkSandbox) -> None:
    assert call(blink_sandbox, "DELETE", f"{FIELDS}/Tags").status_code == 200
    assert "Tags" not in [field["name"] for field in call(blink_sandbox, "GET", FIELDS).json()["results"]]
    assert call(blink_sandbox, "DELETE", f"{FIELDS}/Tags").status_code == 404
    refused = call(blink_sandbox, "DELETE", f"{FIELDS}/created_at")
    assert refused.status_code == 400 and "cannot be removed" in refused.json()["message"]


def test_a_table_is_created_and_edited_with_its_settings_and_count_kept(blink_sandbox: BlinkSandbox) -> None:
    body = {"display_name": "Incident reviews", "description": "d", "options": [], "fields": [
        {"type": "text", "display_name": "Summary"}]}  # fmt: skip
    made = call(blink_sandbox, "POST", "/workspace/ws-demo/table", body).json()["table"]
    assert (made["name"], made["display_name"], made["estimated_records_count"]) == (
        "incident_reviews",
        "Incident reviews",
        0,
    )
    fields = call(blink_sandbox, "GET", "/workspace/ws-demo/table/incident_reviews/fields").json()["results"]
    assert [field["name"] for field in fields][-1] == "summary" and len(fields) == 6
    settings = {**made["settings"], "color": "#000000"}
    edit = {"display_name": "Reviews", "description": "Post-mortems", "settings": settings}
    assert call(blink_sandbox, "PUT", "/workspace/ws-demo/table/incident_reviews", edit).status_code == 200
    counted = admin(
        blink_sandbox, "PUT", "/workspace/ws-demo/table/incident_reviews/records", json={"estimated_records_count": 7}
    )
    assert counted.status_code == 200
    listed = {t["name"]: t for t in call(blink_sandbox, "GET", "/workspace/ws-demo/tables").json()["results"]}
    assert listed["incident_reviews"] == {**made, "display_name": "Reviews", "description": "Post-mortems",
                                          "settings": settings, "estimated_records_count": 7}  # fmt: skip
    assert listed["Incidents"]["estimated_records_count"] == 128


def test_a_tables_page_shows_its_fields_and_row_count_and_names_a_missing_one(blink_sandbox: BlinkSandbox) -> None:
    """The page the tasks' "Blink table" link opens (the connection's extra ``table_page``)."""
    page = json.loads(blink_sandbox.connection_json())["extra"]["table_page"]
    blink_sandbox.create_table(
        "ws-1", "Q1/Q2 plans", {"fields": [{"field": "due", "type": "date", "display_name": "Due <b>"}]}
    )
    url = blink_sandbox.url + page.format(ws_id="ws-1", table="Q1%2FQ2%20plans")
    answer = requests.get(url, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    assert "<h1>Q1/Q2 plans</h1>" in answer.text and "0 rows" in answer.text
    assert "Due &lt;b&gt;" in answer.text and "<b>" not in answer.text  # names are escaped
    missing = requests.get(blink_sandbox.url + page.format(ws_id="ws-1", table="Nope"), timeout=10)
    assert "No table &#x27;Nope&#x27; in workspace &#x27;ws-1&#x27;" in missing.text


def test_the_workflows_read_pages_with_a_total_and_can_be_refused(blink_sandbox: Any) -> None:
    """#75: ``GET /workspace/{ws_id}/playbooks?q={limit, offset}`` answers ``{limit, offset, total, results}``, each a
    workflow with its definition; one by id; a fault answers 403/404/405 as a Blink that refuses the read."""
    headers = {"BLINK-API-KEY": blink_sandbox.api_key}
    url = f"{blink_sandbox.base_url}/workspace/ws-demo/playbooks"
    seen = []
    for offset in range(0, 6, 2):
        page = requests.get(url, params={"q": json.dumps({"limit": 2, "offset": offset})}, headers=headers, timeout=10)
        body = page.json()
        assert (page.status_code, body["limit"], body["offset"], body["total"]) == (200, 2, offset, 5)
        seen += [one["id"] for one in body["results"]]
    assert seen == ["pb-triage", "pb-sweep", "pb-report", "pb-people", "pb-draft"]
    one = requests.get(f"{url}/pb-sweep", headers=headers, timeout=10).json()
    assert one["name"] == "Nightly host sweep" and "system.TableInsert" in one["playbook"]
    assert requests.get(f"{url}/pb-nope", headers=headers, timeout=10).status_code == 404
    bad = requests.get(url, params={"q": json.dumps({"limit": 0})}, headers=headers, timeout=10)
    assert bad.status_code == 400
    blink_sandbox.set_faults(workflows_read_status=403)
    assert requests.get(url, headers=headers, timeout=10).status_code == 403
