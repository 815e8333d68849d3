"""ConnectionTypesToXComOperator: its XCom, output_path, and its checks before any request."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests_mock as rm

from blinkops_provider.exceptions import BlinkInputError, BlinkTransientError
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from tests.fake_blink import FakeCatalogue, without_table_reads

BASE = "https://blink.test/api/v1"
LIST_URL = f"{BASE}/connection_types"


def test_hook_params_and_conn_id_reach_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import set_connection

    set_connection(monkeypatch, conn_id="blink_prod", host="https://prod.blink.test")
    op = ConnectionTypesToXComOperator(
        task_id="sync", blink_conn_id="blink_prod", hook_params={"retry_limit": 2, "retry_delay": 0}
    )
    assert (op.hook.blink_conn_id, op.hook.retry_limit, op.hook.retry_delay) == ("blink_prod", 2, 0.0)
    assert op.hook is op.hook
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get("https://prod.blink.test/api/v1/connection_types", status_code=503)
        with pytest.raises(BlinkTransientError):
            op.execute({})
        assert m.call_count == 2


def pages_of(items: list[dict[str, Any]]) -> FakeCatalogue:
    return FakeCatalogue(items)


ITEMS = [{"id": f"ct-{i}", "name": f"n{i}", "metadata": {"defaultAPIAddress": f"https://{i}"}} for i in range(7)]


def test_catalogue_operator_returns_json_ready_dicts(blink_conn: None) -> None:
    op = ConnectionTypesToXComOperator(
        task_id="sync", filter='{"name": {"$like": "{{ params.prefix }}%"}}', sort="-name", page_size=3
    )
    op.render_template_fields({"params": {"prefix": "n"}})
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json=pages_of(ITEMS))
        result = op.execute({})
        assert m.call_count == 3  # three pages by id; the sort is the client's (#37)
        first = json.loads(parse_qs(urlsplit(m.request_history[0].url).query)["q"][0])
    assert first == {"filter": {"name": {"$like": "n%"}}, "sort": ["id"], "limit": 3, "offset": 0}
    assert result == sorted(ITEMS, key=lambda item: item["name"], reverse=True)
    assert json.loads(json.dumps(result)) == result


def test_catalogue_operator_writes_large_catalogues_to_a_file(blink_conn: None, tmp_path: Path) -> None:
    op = ConnectionTypesToXComOperator(
        task_id="sync", output_path=str(tmp_path / "snapshots" / "{{ ds }}.json"), page_size=3, max_items=5
    )
    op.render_template_fields({"ds": "2026-11-22"})
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json=pages_of(ITEMS))
        summary = op.execute({})
    target = tmp_path / "snapshots" / "2026-11-22.json"
    assert summary == {"path": str(target), "count": 5, "total": 7, "paging": "keyset"}
    assert json.loads(target.read_text()) == ITEMS[:5]
    assert not list(target.parent.glob("*.partial"))


def test_catalogue_file_of_an_empty_catalogue_is_an_empty_array(blink_conn: None, tmp_path: Path) -> None:
    op = ConnectionTypesToXComOperator(task_id="sync", output_path=str(tmp_path / "c.json"))
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json=pages_of([]))
        assert op.execute({}) == {"path": str(tmp_path / "c.json"), "count": 0, "total": 0, "paging": "keyset"}
    assert json.loads((tmp_path / "c.json").read_text()) == []


def test_failed_walk_leaves_the_previous_file_alone(blink_conn: None, tmp_path: Path) -> None:
    target = tmp_path / "c.json"
    target.write_text("[1]")
    op = ConnectionTypesToXComOperator(
        task_id="sync", output_path=str(target), page_size=3, hook_params={"retry_limit": 1}
    )
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, [{"json": pages_of(ITEMS)}, {"status_code": 500}])
        with pytest.raises(BlinkTransientError):
            op.execute({})
    assert target.read_text() == "[1]"
    assert list(tmp_path.iterdir()) == [target]


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


@pytest.mark.parametrize(
    ("make", "kind"),
    [(Path.mkdir, "a directory"), (_fifo, "a named pipe"), (_socket, "a socket")],
)
@pytest.mark.parametrize("through_link", [False, True])
def test_output_path_that_is_not_a_regular_file_is_refused_before_any_request(
    blink_conn: None, tmp_path: Path, make: Any, kind: str, through_link: bool
) -> None:
    special = tmp_path / "special"
    make(special)
    path = special
    if through_link:
        path = tmp_path / "link.json"
        path.symlink_to(special)
    op = ConnectionTypesToXComOperator(task_id="sync", output_path=str(path))
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=f"is {kind}, not a regular file"):
        op.execute({})
    assert not m.called
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["special", *(["link.json"] if through_link else [])])


def test_a_character_device_is_refused_and_left_alone(blink_conn: None) -> None:
    before = os.stat("/dev/null")
    op = ConnectionTypesToXComOperator(task_id="sync", output_path="/dev/null")
    with (
        rm.Mocker() as m,
        pytest.raises(BlinkInputError, match="'/dev/null' is a character device, not a regular file"),
    ):
        op.execute({})
    assert not m.called and os.stat("/dev/null").st_ino == before.st_ino


def test_a_symlinked_output_path_is_written_through_and_stays_a_link(blink_conn: None, tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("[]")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    op = ConnectionTypesToXComOperator(task_id="sync", output_path=f"file://{link}")
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json=pages_of(ITEMS))
        summary = op.execute({})
    assert link.is_symlink()
    assert json.loads(real.read_text()) == ITEMS
    assert summary["path"] == str(real)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"page_size": 0}, "page_size must be an integer from 1 to 1000"),
        ({"page_size": 5000}, "page_size must be an integer from 1 to 1000"),
        ({"max_items": -5}, "max_items must be None or an integer"),
    ],
)
def test_catalogue_operator_checks_sizes_when_the_dag_is_parsed(kwargs: dict, message: str) -> None:
    with pytest.raises(BlinkInputError, match=message):
        ConnectionTypesToXComOperator(task_id="sync", **kwargs)


def test_catalogue_operator_rejects_a_bad_rendered_filter_before_any_request(blink_conn: None) -> None:
    op = ConnectionTypesToXComOperator(task_id="sync", filter='{"name": {"$regex": "{{ ds }}"}}')
    op.render_template_fields({"ds": "x"})
    with rm.Mocker() as m, pytest.raises(BlinkInputError, match=r"unknown operator '\$regex'"):
        op.execute({})
    assert not m.called


def test_a_large_catalogue_into_xcom_warns(blink_conn: None, provider_log: Any) -> None:
    """Above 5,000 items (the operator's docstring says the number), XCom is the wrong place: one warning."""
    many = [{"id": f"ct-{i:05d}", "name": f"n{i}"} for i in range(5_001)]
    with rm.Mocker() as m:
        without_table_reads(m)  # Blink without the reads: a field is sent as given
        m.get(LIST_URL, json=pages_of(many))
        assert len(ConnectionTypesToXComOperator(task_id="s").execute({})) == 5_001
        assert len(ConnectionTypesToXComOperator(task_id="s", max_items=5_000).execute({})) == 5_000
    warnings = [line for line in provider_log() if "give output_path" in line]
    assert len(warnings) == 1
    assert "Returning 5001 connection types through XCom" in warnings[0]
