"""The record of a migration (blinkops_provider.migrations.record): a record of another Blink (#36)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import SchemaRecord

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


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
