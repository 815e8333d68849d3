"""The RQL guide's examples (docs/rql.md), run against the sandbox: the docs cannot drift."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_provider.rql import RQLQuery
from blinkops_sandbox import BlinkSandbox

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "rql.md"
EXAMPLES = re.findall(r"<!-- rql-example -->\s*```json\n(.*?)```\s*```json\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_guide_has_examples() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize(("query", "expected"), EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_guide_example_answers_as_documented(blink_sandbox: BlinkSandbox, query: str, expected: str) -> None:
    rql: dict[str, Any] = json.loads(query)
    param = RQLQuery(**rql).to_param()  # valid for the provider's own checks too
    response = requests.get(
        f"{blink_sandbox.base_url}/connection_types",
        params={"q": param},
        headers={"BLINK-API-KEY": blink_sandbox.api_key},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.json()["results"] == json.loads(expected)
