"""The backup an apply writes before it destroys anything (blinkops_provider.migrations._backup, #74 item 1), read as a
person reads the file: beside the table's record, JSON Lines (a header, one line per row, a trailer with the digest)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkConfigurationError
from blinkops_provider.migrations import apply_schema, plan_schema
from tests.conftest import API_KEY
from tests.fake_blink import FakeBlink, blink_field

HELD = {
    "T": [
        blink_field("Name", "text"),
        blink_field("Risk", "single-select", "Risk", options=["Low", "High"], color="red"),
        blink_field("Notes", "text"),
    ]
}
ROWS = [{"id": "r1", "Name": "a", "Risk": "High"}, {"id": "r2", "Name": "b"}, {"id": "r3", "Risk": "Low", "Notes": "n"}]
REMOVE_RISK = [{"field": "Name", "type": "text", "display_name": "Name"}, {"field": "Risk", "remove": True}]


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def blink(m: Any) -> FakeBlink:
    fake = FakeBlink(HELD).mount(m)
    fake.records["T"] = [dict(row) for row in ROWS]
    return fake


def test_a_removal_saves_the_fields_definition_and_every_rows_value_first(hook: Any, tmp_path: Path) -> None:
    with rm.Mocker() as m:
        fake = blink(m)
        plan = plan_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=f"{tmp_path}/")
        result = apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=f"{tmp_path}/", acknowledge_risks=True)
        sent = [(call.method, call.path) for call in m.request_history]
    backup = tmp_path / "ws-1" / f"T.json.backups/{plan.fingerprint}.jsonl"
    assert result.backup == str(backup)
    header, *rows, trailer = lines_of(backup)
    assert header["plan_id"] == plan.fingerprint and header["valued"] == ["Risk"]
    (risk,) = header["fields"]
    assert risk["attributes"] == {"options": ["Low", "High"], "color": "red"}  # as Blink held it, unknown ones too
    assert rows == [{"id": "r1", "values": {"Risk": "High"}}, {"id": "r2", "values": {"Risk": None}}, {"id": "r3", "values": {"Risk": "Low"}}]  # fmt: skip
    before_trailer = b"".join(backup.read_bytes().splitlines(keepends=True)[:-1])
    assert trailer == {"rows": 3, "sha256": hashlib.sha256(before_trailer).hexdigest()}
    first_write = next(n for n, (method, _) in enumerate(sent) if method != "GET")
    assert all(method == "GET" for method, _ in sent[:first_write])  # the walk of the rows came before any write
    assert fake.deletes and "Risk" not in fake.tables["T"]
    assert API_KEY not in backup.read_text()


def test_a_backup_that_cannot_be_written_stops_the_apply_with_nothing_sent(hook: Any, tmp_path: Path) -> None:
    (tmp_path / "ws-1").mkdir()
    (tmp_path / "ws-1" / "T.json.backups").write_text("a file where the backups' folder goes")
    with rm.Mocker() as m:
        fake = blink(m)
        with pytest.raises(BlinkConfigurationError, match="backup"):
            apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert not [call for call in m.request_history if call.method != "GET"]
    assert "Risk" in fake.tables["T"]


def test_a_removal_without_a_record_path_is_refused_before_any_write(hook: Any) -> None:
    with rm.Mocker() as m:
        blink(m)
        with pytest.raises(BlinkConfigurationError, match="no record_path to save them beside first"):
            apply_schema(hook, "ws-1", "T", REMOVE_RISK, acknowledge_risks=True)
    assert not [call for call in m.request_history if call.method != "GET"]


def test_an_apply_that_destroys_no_value_saves_the_definitions_it_changes_and_walks_no_row(
    hook: Any, tmp_path: Path
) -> None:
    declared = [{"field": "Name", "type": "text", "display_name": "Name", "description": "who"}]
    added = {"field": "Owner", "type": "text", "display_name": "Owner"}
    with rm.Mocker() as m:
        blink(m)
        result = apply_schema(hook, "ws-1", "T", [*declared, added], record_path=f"{tmp_path}/")
        walks = [call for call in m.request_history if call.method == "GET" and call.path.endswith("/table/t")]
    header, trailer = lines_of(Path(result.backup))
    assert header["valued"] == [] and trailer["rows"] == 0 and not walks
    (name,) = header["fields"]
    assert (name["name"], name.get("description", "")) == ("Name", "")  # as Blink held it before the change
    assert header["sent"]["Name"]["description"] == "who" and header["adds"] == ["Owner"]
    assert {"Name", "Notes", "Risk"} <= set(header["before"]) and not any("owner" in name for name in header["before"])


def test_without_a_record_path_an_apply_that_destroys_no_value_goes_on_with_no_backup(hook: Any) -> None:
    declared = [{"field": "Name", "type": "text", "display_name": "Name", "description": "who"}]
    with rm.Mocker() as m:
        fake = blink(m)
        result = apply_schema(hook, "ws-1", "T", declared)
    assert result.outcomes() == {"Name": "changed"} and result.backup == ""
    assert fake.tables["T"]["Name"]["description"] == "who"


def a_first_tries_backup(hook: Any, tmp_path: Path) -> Path:
    """The backup a first try of the apply wrote before its worker died (nothing else written: no record), in the
    records folder ``tmp_path/records``. It is made by the same apply elsewhere, whose removal Blink refused."""
    elsewhere = tmp_path / "elsewhere"
    with rm.Mocker() as m:
        blink(m)
        m.delete(rm.ANY, status_code=400, json={"status": 400, "message": "not now"})
        result = apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=f"{elsewhere}/", acknowledge_risks=True)
    assert result.outcomes()["Risk"] == "failed"
    (written,) = (elsewhere / "ws-1" / "T.json.backups").iterdir()
    backup = tmp_path / "records" / "ws-1" / "T.json.backups" / written.name
    backup.parent.mkdir(parents=True)
    backup.write_bytes(written.read_bytes())
    return backup


def test_a_retry_of_the_same_plan_keeps_the_backup_its_first_try_wrote(hook: Any, tmp_path: Path) -> None:
    backup = a_first_tries_backup(hook, tmp_path)
    kept = backup.read_bytes()
    with rm.Mocker() as m:
        fake = blink(m)
        result = apply_schema(
            hook, "ws-1", "T", REMOVE_RISK, record_path=f"{tmp_path}/records/", acknowledge_risks=True
        )
    assert result.outcomes()["Risk"] == "removed" and "Risk" not in fake.tables["T"]
    assert list(backup.parent.iterdir()) == [backup] and backup.read_bytes() == kept


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda text: text.rsplit("\n", 2)[0] + "\n", "truncated: it has no trailer after 3 row"),
        (lambda text: text.replace('"High"', '"Low"'), "corrupt: its trailer says 3 row"),
        (lambda text: text[: len(text) // 2], "corrupt or truncated at line"),
    ],
    ids=["no trailer", "a value changed", "cut mid-line"],
)
def test_a_damaged_backup_stops_the_retry_saying_which_with_nothing_sent(
    hook: Any, tmp_path: Path, damage: Any, said: str
) -> None:
    backup = a_first_tries_backup(hook, tmp_path)
    backup.write_text(damage(backup.read_text()))
    with rm.Mocker() as m:
        fake = blink(m)
        with pytest.raises(BlinkConfigurationError, match=said):
            apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=f"{tmp_path}/records/", acknowledge_risks=True)
    assert not [call for call in m.request_history if call.method != "GET"] and "Risk" in fake.tables["T"]


def test_in_object_storage_the_backup_is_beside_the_record(hook: Any, bucket: tuple[Any, str]) -> None:
    from tests.conftest import keys

    client, name = bucket
    records = f"s3://aws_default@{name}/records/"
    with rm.Mocker(real_http=True) as m:
        blink(m)
        plan = plan_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=records)
        result = apply_schema(hook, "ws-1", "T", REMOVE_RISK, record_path=records, acknowledge_risks=True)
    assert result.backup == f"{records}ws-1/T.json.backups/{plan.fingerprint}.jsonl"
    assert f"records/ws-1/T.json.backups/{plan.fingerprint}.jsonl" in keys(client, name)
    body = client.get_object(Bucket=name, Key=f"records/ws-1/T.json.backups/{plan.fingerprint}.jsonl")["Body"].read()
    header, *rows, trailer = [json.loads(line) for line in body.splitlines()]
    assert len(rows) == 3 == trailer["rows"] and header["valued"] == ["Risk"]


@pytest.mark.parametrize(
    ("declared", "outcome"),
    [
        ({"field": "Risk", "type": "text", "display_name": "Risk", "type_change": "copy"}, "retyped"),
        (
            {"field": "Risk", "type": "single-select", "display_name": "Risk", "attributes": {"options": ["Low"]}},
            "changed",
        ),
    ],
    ids=["a retype (its old field removed)", "an option dropped while a row uses it"],
)
def test_each_destroying_change_saves_the_old_values_first(
    hook: Any, tmp_path: Path, declared: dict[str, Any], outcome: str
) -> None:
    with rm.Mocker() as m:
        blink(m)
        plan = plan_schema(hook, "ws-1", "T", [declared], record_path=f"{tmp_path}/")
        result = apply_schema(hook, "ws-1", "T", [declared], record_path=f"{tmp_path}/", acknowledge_risks=True)
    assert result.outcomes() == {"Risk": outcome}
    header, *rows, trailer = lines_of(Path(result.backup))
    assert Path(result.backup).name == f"{plan.fingerprint}.jsonl" and header["valued"] == ["Risk"]
    assert [row["values"]["Risk"] for row in rows] == ["High", None, "Low"] and trailer["rows"] == 3
    (held,) = header["fields"]
    assert (held["type"], held["attributes"]["options"]) == ("single-select", ["Low", "High"])


def test_the_operators_xcom_its_asset_event_and_the_record_say_where_the_backup_is(
    blink_conn: None, tmp_path: Path
) -> None:
    from airflow.providers.common.compat.sdk import AssetAlias

    from blinkops_provider.assets import TABLES_ALIAS
    from blinkops_provider.operators.tables import UpdateTableFieldsOperator
    from tests.conftest import FakeTI
    from tests.fake_outlet_events import OutletEvents

    op = UpdateTableFieldsOperator(
        task_id="apply", ws_id="ws-1", table="T", fields=REMOVE_RISK, record_path=f"{tmp_path}/", acknowledge_risks=True
    )
    events = OutletEvents()
    with rm.Mocker() as m:
        blink(m)
        pushed = op.execute({"ti": FakeTI(), "outlet_events": events})
    (backup,) = (tmp_path / "ws-1" / "T.json.backups").iterdir()
    assert pushed["backup"] == str(backup) and pushed["outcomes"] == {"Name": "unchanged", "Risk": "removed"}
    ((_, extra),) = events[AssetAlias(TABLES_ALIAS)]
    assert extra["backup"] == str(backup)
    assert json.loads((tmp_path / "ws-1" / "T.json").read_text())["backup"] == str(backup)
