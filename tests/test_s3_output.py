"""``output_path`` on object storage for real: the catalogue written to ``s3://`` against a local
S3 API (moto in server mode on 127.0.0.1), through Airflow's ObjectStoragePath and an ``aws``
connection whose ``endpoint_url`` points at it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkTransientError
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.sandbox import BlinkSandbox


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A fresh bucket, and ``aws_default`` pointing at the local S3 API."""
    import boto3

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(
        "AIRFLOW_CONN_AWS_DEFAULT",
        json.dumps(
            {
                "conn_type": "aws",
                "login": "testing",
                "password": "testing",
                "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
            }
        ),
    )
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    name = f"snapshots-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return client, name


def keys(client: Any, bucket: str) -> list[str]:
    return sorted(obj["Key"] for obj in client.list_objects_v2(Bucket=bucket).get("Contents", []))


@pytest.mark.parametrize("workers", [1, 4])
def test_the_catalogue_lands_in_s3_with_every_type_once(
    blink_sandbox: BlinkSandbox, bucket: tuple[Any, str], workers: int
) -> None:
    client, name = bucket
    op = ConnectionTypesToXComOperator(
        task_id="sync",
        page_size=30,
        max_concurrency=workers,
        output_path=f"s3://aws_default@{name}/catalogue/{{{{ ds }}}}.json",
    )
    op.render_template_fields({"ds": "2026-11-22"})
    summary = op.execute({})
    expected = blink_sandbox.store.connection_type_ids()
    assert summary == {
        "path": f"s3://aws_default@{name}/catalogue/2026-11-22.json",
        "count": len(expected),
        "total": len(expected),
        "paging": "keyset",
    }
    assert keys(client, name) == ["catalogue/2026-11-22.json"]  # no partial object beside it
    body = client.get_object(Bucket=name, Key="catalogue/2026-11-22.json")["Body"].read()
    written = [item["id"] for item in json.loads(body)]
    assert written == expected


@pytest.mark.parametrize(
    ("key", "faults"),
    [("catalogue/new.json", ["ok", "ok", 500]), ("catalogue/previous.json", ["ok", 500])],
    ids=["a new object", "over the previous object"],
)
def test_a_walk_that_fails_midway_leaves_no_object_and_the_previous_one_alone(
    blink_sandbox: BlinkSandbox, bucket: tuple[Any, str], key: str, faults: list[Any]
) -> None:
    client, name = bucket
    client.put_object(Bucket=name, Key="catalogue/previous.json", Body=b"[]\n")
    blink_sandbox.set_faults(sequence=faults)  # a later page fails, and is not retried
    op = ConnectionTypesToXComOperator(
        task_id="sync", page_size=30, max_concurrency=1, output_path=f"s3://aws_default@{name}/{key}",
        hook_params={"retry_limit": 1},
    )  # fmt: skip
    with pytest.raises(BlinkTransientError):
        op.execute({})
    assert keys(client, name) == ["catalogue/previous.json"]  # no new object, no partial one
    assert client.get_object(Bucket=name, Key="catalogue/previous.json")["Body"].read() == b"[]\n"


def test_schema_records_in_an_s3_folder_stay_in_it_one_key_per_table(bucket: tuple[Any, str]) -> None:
    """record_path as a folder on object storage: names with '/', '..', spaces and non-ASCII each
    get a key of their own under the folder, and each reads back as its own table's record."""
    import datetime as dt

    from blinkops_provider.schema import SchemaRecord, record_location

    client, name = bucket
    folder = f"s3://aws_default@{name}/records/"
    tables = [("a", "b/c"), ("a/b", "c"), ("ws", ".."), ("ws", "Inc idents Über")]
    for ws_id, table in tables:
        record = SchemaRecord(record_location(folder, ws_id, table), blink="h", ws_id=ws_id, table=table)
        record.write({table: {"type": "text"}}, now=dt.datetime(2026, 11, 24, tzinfo=dt.UTC))
    stored = keys(client, name)
    assert len(stored) == len(tables) and all(key.startswith("records/") for key in stored)
    for ws_id, table in tables:
        record = SchemaRecord(record_location(folder, ws_id, table), blink="h", ws_id=ws_id, table=table)
        assert record.read()[0] == {table: {"type": "text"}}
