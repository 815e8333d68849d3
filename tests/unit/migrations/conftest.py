"""The records the migrations' tests apply against: a local one, and one in object storage (moto's S3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """The record of ws-1/Incidents in a local folder (not yet written)."""
    return tmp_path / "records" / "Incidents.json"


@pytest.fixture
def s3_record(bucket: tuple[Any, str]) -> str:
    """The record of ws-1/Incidents in a bucket of the tests' local S3 (not yet written)."""
    return f"s3://aws_default@{bucket[1]}/records/ws-1/Incidents.json"
