"""The record of a migration (blinkops_provider.migrations._record): a record of another Blink (#36)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import SchemaRecord

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


pytestmark = pytest.mark.usefixtures("blink_without_table_reads")


def test_a_record_of_another_blink_says_which_and_what_to_do(tmp_path: Path) -> None:
    """As when make airflow-ui's sandbox came back on another port: the record names the Blink it
    was written for, and the way out is the connection or moving the record aside, not another
    record_path."""
    where = tmp_path / "records" / "ws-demo" / "Incidents.json"
    SchemaRecord(where, blink="http://127.0.0.1:44201", ws_id="ws-demo", table="Incidents").write({}, now=NOW)
    with pytest.raises(BlinkInputError) as refused:
        SchemaRecord(where, blink="http://127.0.0.1:45929", ws_id="ws-demo", table="Incidents").read()
    text = str(refused.value)
    assert str(where) in text and "names the Blink at 127.0.0.1:44201" in text
    assert "the connection's Blink is 127.0.0.1:45929" in text
    assert "Point the connection back at 127.0.0.1:44201" in text and "move the record aside" in text
    assert "give each table its own record_path" not in text


@pytest.mark.parametrize(
    ("executor", "location", "refused"),
    [
        ("CeleryExecutor", "/tmp/blink_schema_records/ws/t.json", True),
        ("CeleryExecutor", "/var/tmp/records/ws/t.json", True),
        ("LocalExecutor,KubernetesExecutor", "/tmp/records/ws/t.json", True),
        ("my_alias:my.company.CeleryExecutor", "file:///tmp/r/ws/t.json", True),
        ("LocalExecutor", "/tmp/records/ws/t.json", False),  # one machine: its /tmp is shared by every task
        ("CeleryExecutor", "/srv/shared/records/ws/t.json", False),  # not scratch: a shared mount, perhaps
        ("CeleryExecutor", "s3://aws_default@bucket/records/ws/t.json", False),
    ],
)
def test_a_worker_local_record_is_refused_under_an_executor_of_several_machines(
    executor: str, location: str, refused: bool
) -> None:
    """#34: no silent /tmp: with the Variable unset, each Celery worker would keep its own record
    and lock, and nothing would keep two applies apart."""
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.migrations._record import check_shared

    if refused:
        with pytest.raises(BlinkConfigurationError, match=r"on this worker's own temporary disk.*s3://aws_default@"):
            check_shared(location, executor)
    else:
        check_shared(location, executor)


def test_the_plan_reads_the_executor_from_airflows_configuration(
    hook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blinkops_provider.exceptions import BlinkConfigurationError
    from blinkops_provider.migrations import plan_schema

    schema = [{"field": "Title", "type": "text", "display_name": "Title"}]
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    with pytest.raises(BlinkConfigurationError, match="CeleryExecutor"):
        plan_schema(hook, "ws-1", "Incidents", schema, record_path="/tmp/blink_schema_records/")
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    assert plan_schema(hook, "ws-1", "Incidents", schema, record_path=f"{tmp_path}/").counts["add"] == 1
