"""OpenLineage from both operators (the [openlineage] extra; tests/conftest.py leaves this module
out where the extra is not installed, and test_lineage_needs_nothing_without_the_extra runs everywhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests_mock as rm
from airflow.providers.common.compat.sdk import Asset

from blinkops_provider.assets import convert_asset_to_openlineage
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.operators.tables import UpdateTableFieldOperator, UpdateTableFieldsOperator
from tests.conftest import FakeTI
from tests.fake_blink import field_json, without_table_reads

BASE = "https://blink.test/api/v1"

SCHEMA = [
    {"field": "Title", "type": "text", "display_name": "Title"},
    {"field": "Severity", "type": "single-select", "display_name": "How bad", "attributes": {"options": ["Low"]}},
]


def schema_of(dataset: Any) -> list[tuple[str, str | None, str | None]]:
    return [(f.name, f.type, f.description) for f in dataset.facets["schema"].fields]


def test_the_migration_reports_the_table_with_its_declared_schema(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=SCHEMA)
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        op.execute({"ti": FakeTI()})
        sent = m.call_count
        lineage = op.get_openlineage_facets_on_complete(None)
        assert m.call_count == sent  # the lineage sent nothing
    assert lineage.inputs == []
    (output,) = lineage.outputs
    assert (output.namespace, output.name) == ("blink://blink.test", "ws-1/Incidents")
    assert schema_of(output) == [("Title", "text", "Title"), ("Severity", "single-select", "How bad")]


def test_a_plan_reports_no_dataset(blink_conn: None, tmp_path: Path) -> None:
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="plan",
        ws_id="ws-1",
        table="Incidents",
        fields=SCHEMA,
        record_path=str(tmp_path / "r.json"),
        plan_only=True,
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(rm.ANY, json={"results": [], "total": 0})  # the plan checks the key, and sends nothing else
        op.execute({"ti": FakeTI()})
    lineage = op.get_openlineage_facets_on_complete(None)
    assert (lineage.inputs, lineage.outputs) == ([], [])


def test_the_single_field_operator_reports_its_field(blink_conn: None) -> None:
    op = UpdateTableFieldOperator(
        replace=True,
        task_id="one",
        ws_id="ws 1",
        table="Incidents",
        field="Title",
        field_type="text",
        display_name="Title",
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        op.execute({})
    (output,) = op.get_openlineage_facets_on_complete(None).outputs
    assert (output.namespace, output.name) == ("blink://blink.test", "ws%201/Incidents")  # one encoded segment each
    assert schema_of(output) == [("Title", "text", "Title")]


def test_the_single_field_operator_reports_nothing_after_a_failed_execute(blink_conn: None) -> None:
    """OpenLineage asks on failure too: an execute that failed before the update was checked
    gives an empty lineage, not an AttributeError (#35)."""
    import pytest

    from blinkops_provider.exceptions import BlinkInputError

    op = UpdateTableFieldOperator(
        replace=True, task_id="one", ws_id="ws", table="Incidents", field="Title", field_type="", display_name="Title"
    )
    with pytest.raises(BlinkInputError):
        op.execute({})
    lineage = op.get_openlineage_facets_on_complete(None)
    assert (lineage.inputs, lineage.outputs) == ([], [])


def listing(request: Any, context: Any) -> dict[str, Any]:
    return {"results": [{"id": "ct-1", "name": "aws"}], "total": 1, "limit": 1000, "offset": 0}


def test_the_sync_reads_the_catalogue_and_writes_the_snapshot_file(blink_conn: None, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    op = ConnectionTypesToXComOperator(task_id="sync", output_path=str(out))
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(f"{BASE}/connection_types", json=listing)
        op.execute({})
        calls = m.call_count
        lineage = op.get_openlineage_facets_on_complete(None)
        assert m.call_count == calls
    (source,) = lineage.inputs
    assert (source.namespace, source.name) == ("blink://blink.test", "connection_types")
    (snapshot,) = lineage.outputs
    assert (snapshot.namespace, snapshot.name) == ("file", str(out))


def test_the_sync_names_an_object_storage_snapshot_as_openlineage_does(blink_conn: None) -> None:
    op = ConnectionTypesToXComOperator(task_id="sync", output_path="s3://bucket/blink/2026-11-23.json")
    (snapshot,) = op.get_openlineage_facets_on_complete(None).outputs
    assert (snapshot.namespace, snapshot.name) == ("s3://bucket", "blink/2026-11-23.json")
    to_xcom = ConnectionTypesToXComOperator(task_id="sync")
    assert to_xcom.get_openlineage_facets_on_complete(None).outputs == []


def test_the_openlineage_converter_names_namespace_and_dataset() -> None:
    dataset = convert_asset_to_openlineage(Asset(uri="blink://h:8443/ws-1/Incidents"))
    assert (dataset.namespace, dataset.name) == ("blink://h:8443", "ws-1/Incidents")
    dataset = convert_asset_to_openlineage(Asset(uri="blink://h/connection_types"))
    assert (dataset.namespace, dataset.name) == ("blink://h", "connection_types")


def test_the_snapshot_namespace_carries_no_airflow_connection_id(blink_conn: None) -> None:
    op = ConnectionTypesToXComOperator(task_id="sync", output_path="s3://aws_default@my-bucket/blink/2026-11-24.json")
    (snapshot,) = op.get_openlineage_facets_on_complete(None).outputs
    assert (snapshot.namespace, snapshot.name) == ("s3://my-bucket", "blink/2026-11-24.json")


def test_distinct_tables_are_distinct_datasets_and_the_converter_agrees_with_the_operator(
    blink_conn: None,
) -> None:
    from blinkops_provider.assets import blink_table_asset, table_lineage

    datasets = set()
    for ws_id, table in (("a", "b/c"), ("a/b", "c")):
        (output,) = table_lineage(BASE, ws_id, table, SCHEMA).outputs
        converted = convert_asset_to_openlineage(blink_table_asset(ws_id, table, host=BASE))
        assert (output.namespace, output.name) == (converted.namespace, converted.name)
        datasets.add((output.namespace, output.name))
    assert datasets == {("blink://blink.test", "a/b%2Fc"), ("blink://blink.test", "a%2Fb/c")}


def test_an_ipv6_namespace_is_a_uri_with_its_host() -> None:
    from urllib.parse import urlsplit

    from blinkops_provider.assets import table_lineage

    (output,) = table_lineage("http://[::1]:18080/api/v1", "ws", "t", SCHEMA).outputs
    assert output.namespace == "blink://[::1]:18080"
    assert (urlsplit(output.namespace).hostname, urlsplit(output.namespace).port) == ("::1", 18080)
