"""The blink:// asset URI scheme, its helpers, and the operators' asset events (#19)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import airflow
import pytest
import requests_mock as rm
from airflow.providers.common.compat.sdk import Asset, AssetAlias

from blinkops_provider import get_provider_info
from blinkops_provider.assets import (
    CATALOGUE_ALIAS,
    TABLES_ALIAS,
    asset_host,
    blink_catalogue_asset,
    blink_table_asset,
    create_asset,
    normalize_uri,
)
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.operators.tables import UpdateTableFieldOperator, UpdateTableFieldsOperator
from tests.conftest import FakeTI
from tests.fake_blink import field_json, without_table_reads
from tests.fake_outlet_events import OutletEvents, identity
from tests.unit.hooks.test_batch import TABLE_URL, entry


def normalized(uri: str) -> str:
    return normalize_uri(urlsplit(uri)).geturl()


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("blink://APP.BlinkOps.com/ws-1/Incidents", "blink://app.blinkops.com/ws-1/Incidents"),
        ("blink://app.blinkops.com:443/api/v1/ws-1/Incidents/", "blink://app.blinkops.com/ws-1/Incidents"),
        ("blink://127.0.0.1:8080/api/v1/connection_types", "blink://127.0.0.1:8080/connection_types"),
        ("blink://h/ws%201/My%2FTable", "blink://h/ws%201/My%2FTable"),
    ],
)
def test_the_normaliser_lowercases_the_host_and_drops_port_443_and_the_api_prefix(uri: str, expected: str) -> None:
    assert normalized(uri) == expected
    assert normalized(expected) == expected  # stable


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("blink:///ws-1/Incidents", "has no host"),
        ("blink://key:secret@h/ws-1/T", "carries credentials"),
        ("blink://h:99999/ws-1/T", "invalid port"),
        ("blink://h/ws-1", "names neither a table nor the catalogue"),
        ("blink://h/ws-1/T/extra", "names neither a table nor the catalogue"),
        ("blink://h/ws-1/T?x=1", "has a query or fragment"),
    ],
)
def test_a_malformed_uri_is_refused_saying_what_is_allowed(uri: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        normalized(uri)
    assert "blink://<host>/<ws_id>/<table> or blink://<host>/connection_types" in str(caught.value)
    assert "secret" not in str(caught.value)


def test_airflow_normalises_blink_assets_through_the_registered_scheme() -> None:
    assert (
        Asset(uri="blink://APP.blinkops.com:443/api/v1/ws-1/Incidents").uri == "blink://app.blinkops.com/ws-1/Incidents"
    )
    if airflow.__version__.startswith("2."):  # Airflow 2.11 warns where 3 refuses
        with pytest.warns(UserWarning, match="names neither a table nor the catalogue"):
            Asset(uri="blink://app.blinkops.com/ws-1")
    else:
        with pytest.raises(ValueError, match="names neither a table nor the catalogue"):
            Asset(uri="blink://app.blinkops.com/ws-1")
    info = get_provider_info()
    (entry_,) = info["asset-uris"]
    assert entry_["schemes"] == ["blink"] and entry_["handler"] == "blinkops_provider.assets.normalize_uri"
    assert info["dataset-uris"] == info["asset-uris"]  # the name Airflow 2.11 reads


def test_the_helpers_build_assets_from_a_host_or_a_connection(blink_conn: None) -> None:
    assert blink_table_asset("ws-1", "Incidents", host="https://App.BlinkOps.com/api/v1").uri == (
        "blink://app.blinkops.com/ws-1/Incidents"
    )
    assert blink_table_asset("ws 1", "A/B", host="h").uri == "blink://h/ws%201/A%2FB"
    assert blink_table_asset("ws-1", "Incidents").uri == "blink://blink.test/ws-1/Incidents"  # blink_default
    assert blink_catalogue_asset().uri == "blink://blink.test/connection_types"
    assert create_asset(host="h").uri == "blink://h/connection_types"
    assert create_asset(host="h", ws_id="w", table="t").uri == "blink://h/w/t"
    assert asset_host("http://127.0.0.1:8080") == "127.0.0.1:8080"
    with pytest.raises(ValueError, match="needs a workspace id and a table name"):
        blink_table_asset("", "Incidents", host="h")


# -- the operators' events ----------------------------------------------------------------------


def test_the_table_operators_declare_the_tables_alias_and_keep_given_outlets() -> None:
    given = Asset(uri="s3://bucket/key")
    op = UpdateTableFieldsOperator(replace=True, task_id="a", ws_id="w", table="t", fields=[], outlets=[given])
    assert op.outlets == [given, AssetAlias(TABLES_ALIAS)]
    single = UpdateTableFieldOperator(
        replace=True, task_id="b", ws_id="w", table="t", field="f", field_type="text", display_name="F"
    )
    assert single.outlets == [AssetAlias(TABLES_ALIAS)]
    sync = ConnectionTypesToXComOperator(task_id="c")
    assert sync.inlets == [AssetAlias(CATALOGUE_ALIAS)]


def test_a_successful_batch_emits_the_tables_event_with_outcomes(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(
        replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a"), entry("b")]
    )
    events = OutletEvents()
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        op.execute({"ti": FakeTI(), "outlet_events": events})
    assert list(events) == [identity(AssetAlias(TABLES_ALIAS))]  # the tables' alias alone
    assert events[AssetAlias(TABLES_ALIAS)] == [
        (
            "blink://blink.test/ws-1/Incidents",
            {"ws_id": "ws-1", "table": "Incidents", "applied": ("a", "b"), "applied_count": 2},
        )
    ]


def test_a_failed_batch_emits_no_event(blink_conn: None) -> None:
    op = UpdateTableFieldsOperator(
        replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a"), entry("b")]
    )
    events = OutletEvents()
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        m.put(f"{TABLE_URL}/b", status_code=400, json={"message": "no"})
        with pytest.raises(Exception, match="1 of 2 field"):
            op.execute({"ti": FakeTI(), "outlet_events": events})
    assert not any(events.values())


def test_the_single_field_operator_emits_the_tables_event(blink_conn: None) -> None:
    op = UpdateTableFieldOperator(
        replace=True, task_id="one", ws_id="ws-1", table="Incidents", field="a", field_type="text", display_name="A"
    )
    events = OutletEvents()
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        op.execute({"outlet_events": events})
    assert events[AssetAlias(TABLES_ALIAS)] == [
        (
            "blink://blink.test/ws-1/Incidents",
            {"ws_id": "ws-1", "table": "Incidents", "applied": ("a",), "applied_count": 1},
        )
    ]


NO_EXTRA = """
import json, os, sys
os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps({"conn_type": "blink", "host": "https://blink.test", "password": "k"})
import requests_mock
from blinkops_provider.operators.tables import UpdateTableFieldsOperator
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
op = UpdateTableFieldsOperator(replace=True, task_id="a", ws_id="w", table="t", fields=[{"field": "f", "type": "text", "display_name": "F"}])
with requests_mock.Mocker() as m:
    m.get(requests_mock.ANY, status_code=404, json={"status": 404})  # no table reads: sent as given
    m.put(requests_mock.ANY, json={"name": "f", "type": "text", "display_name": "F"})
    op.execute({"outlet_events": type("Events", (dict,), {"__missing__": lambda self, key: type("A", (list,), {"add": lambda self, *a, **k: self.append(a)})()})()})
ConnectionTypesToXComOperator(task_id="c")
# Airflow's provider discovery reads every provider's info module; the lineage code is elsewhere.
discovery = ("airflow.providers.openlineage", "airflow.providers.openlineage.get_provider_info")
print(json.dumps(sorted(name for name in sys.modules if "openlineage" in name and name not in discovery)))
"""


def test_the_operators_import_nothing_of_openlineage_when_they_run() -> None:
    """Without the [openlineage] extra nothing changes: the operators never import it themselves
    (only OpenLineage's listener calls the lineage methods, where it is installed)."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", NO_EXTRA], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_with_a_record_the_event_extra_has_every_documented_member_zeros_included(
    blink_conn: None, tmp_path: Any
) -> None:
    op = UpdateTableFieldsOperator(
        replace=True,
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=[entry("a"), entry("b")],
        record_path=f"{tmp_path}/",
    )
    events = OutletEvents()
    with rm.Mocker() as m:
        without_table_reads(m)
        m.put(rm.ANY, json=field_json)
        op.execute({"ti": FakeTI(), "outlet_events": events})
        op.execute({"ti": FakeTI(), "outlet_events": events})  # the second apply: all unchanged, no event
        changed = UpdateTableFieldsOperator(
            replace=True,
            task_id="apply",
            ws_id="ws-1",
            table="Incidents",
            fields=[entry("a"), entry("b", display_name="Bee")],
            record_path=f"{tmp_path}/",
        )
        changed.execute({"ti": FakeTI(), "outlet_events": events})
    first, second = (extra for _, extra in events[AssetAlias(TABLES_ALIAS)])
    assert first == {
        "ws_id": "ws-1",
        "table": "Incidents",
        "applied": ("a", "b"),
        "applied_count": 2,
        "added": ("a", "b"),
        "added_count": 2,
        "changed": (),
        "changed_count": 0,
        "removed": (),
        "removed_count": 0,
        "retyped": (),
        "retyped_count": 0,
        "unchanged_count": 0,
    }
    assert second["changed"] == ("b",)
    assert (second["applied_count"], second["added_count"], second["changed_count"], second["unchanged_count"]) == (
        2,
        0,
        1,
        1,
    )


class Accessor:
    def __init__(self) -> None:
        self.extra: dict[str, Any] = {}
        self.added: list[Any] = []

    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        self.added.append(asset)


def test_a_declared_table_asset_gets_the_event_itself_so_airflow_lists_the_task_as_its_producer(
    blink_conn: None,
) -> None:
    declared = blink_table_asset("ws-1", "Incidents", host="https://BLINK.test:443")
    op = UpdateTableFieldsOperator(
        replace=True, task_id="apply", ws_id="ws-1", table="Incidents", fields=[entry("a")], outlets=[declared]
    )
    events = OutletEvents(Accessor)
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        op.execute({"ti": FakeTI(), "outlet_events": events})
    assert events[declared].extra == {"ws_id": "ws-1", "table": "Incidents", "applied": ("a",), "applied_count": 1}
    assert events[AssetAlias(TABLES_ALIAS)].added == []  # not announced twice


def test_an_announcement_that_fails_does_not_fail_the_applied_task(blink_conn: None, all_output: Any) -> None:
    class Broken:
        def __getitem__(self, key: Any) -> Any:
            raise RuntimeError("the event store is away")

    op = UpdateTableFieldOperator(
        replace=True, task_id="one", ws_id="ws-1", table="Incidents", field="a", field_type="text", display_name="A"
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put(rm.ANY, json=field_json)
        assert op.execute({"outlet_events": Broken()})["name"] == "a"
    assert "The table's asset event was not added (RuntimeError: the event store is away)" in all_output()


def test_an_ipv6_base_url_applies_and_announces_the_bracketed_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import set_connection

    set_connection(monkeypatch, host="http://[::1]:18080")
    op = UpdateTableFieldsOperator(replace=True, task_id="apply", ws_id="ws-1", table="In cidents", fields=[entry("a")])
    events = OutletEvents()
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.put("http://[::1]:18080/api/v1/workspace/ws-1/table/In%20cidents/fields/a", json=field_json)
        op.execute({"ti": FakeTI(), "outlet_events": events})
    ((uri, _),) = events[AssetAlias(TABLES_ALIAS)]
    assert uri == "blink://[::1]:18080/ws-1/In%20cidents"


def test_airflow_and_the_helper_agree_on_every_spelling() -> None:
    helper = blink_table_asset("ws demo", "a/b", host="https://App.BlinkOps.com:443/api/v1").uri
    for spelling in (
        "blink://app.blinkops.com/ws%20demo/a%2fb",
        "blink://APP.blinkops.com:443/api/v1/ws%20demo/a%2Fb/",
        "blink://app.blinkops.com/ws%20demo/a%2F%62",
    ):
        assert Asset(uri=spelling).uri == helper == "blink://app.blinkops.com/ws%20demo/a%2Fb"
    if not airflow.__version__.startswith("2."):  # Airflow 2.11 refuses a URI that is not ASCII itself
        assert Asset(uri="blink://h/ws/Inc idents Über").uri == blink_table_asset("ws", "Inc idents Über", host="h").uri


# -- announce_applied on a report it cannot use (#43 item 13) ---------------------------------------------

GOOD_REPORT = {
    "ws_id": "ws-1",
    "table": "Incidents",
    "updated": ["a"],
    "failed": [{"field": "b", "status": 400, "message": "no"}],
    "unknown": [],
    "outcomes": {"a": "changed", "b": "failed"},
}


def test_announce_applied_announces_what_a_failed_apply_changed(blink_conn: None) -> None:
    from blinkops_provider.assets import announce_applied

    events = OutletEvents()
    assert announce_applied(events, GOOD_REPORT) is True
    [(uri, extra)] = events[AssetAlias(TABLES_ALIAS)]
    assert uri.endswith("/ws-1/Incidents") and list(extra["changed"]) == ["a"]


@pytest.mark.parametrize(
    "broken",
    [
        {"outcomes": [["a", "changed"]]},
        {"ws_id": None},
        {"table": ""},
        {"updated": "a"},
        {"outcomes": {"a": ["changed"]}},
    ],
)
def test_announce_applied_announces_nothing_on_a_malformed_report_and_says_why(
    blink_conn: None, broken: dict[str, Any], provider_log: Any
) -> None:
    from blinkops_provider.assets import announce_applied

    events = OutletEvents()
    assert announce_applied(events, {**GOOD_REPORT, **broken}) is False
    assert events == {}
    assert any("No asset event: the apply's report is not one" in line for line in provider_log())
