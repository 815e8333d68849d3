"""``output_path`` on object storage for real: the catalogue written to ``s3://`` against a local
S3 API (moto in server mode on 127.0.0.1), through Airflow's ObjectStoragePath and an ``aws``
connection whose ``endpoint_url`` points at it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blinkops_provider.exceptions import BlinkTransientError
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_sandbox import BlinkSandbox
from tests.conftest import keys


def test_the_catalogue_lands_in_s3_with_every_type_once(blink_sandbox: BlinkSandbox, bucket: tuple[Any, str]) -> None:
    client, name = bucket
    op = ConnectionTypesToXComOperator(
        task_id="sync",
        page_size=30,
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
        task_id="sync",
        page_size=30,
        output_path=f"s3://aws_default@{name}/{key}",
        hook_params={"retry_limit": 1},
    )
    with pytest.raises(BlinkTransientError):
        op.execute({})
    assert keys(client, name) == ["catalogue/previous.json"]  # no new object, no partial one
    assert client.get_object(Bucket=name, Key="catalogue/previous.json")["Body"].read() == b"[]\n"
