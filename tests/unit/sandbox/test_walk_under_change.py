"""The catalogue walk against the sandbox while the catalogue changes between pages, and the
operator's output compared with what the model-based code wrote before the walk was rewritten."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.models import ConnectionType
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_sandbox import BlinkSandbox
from tests.unit.sandbox.reference import evaluate


def changer(sandbox: BlinkSandbox, rng: random.Random, user_filter: Any, matching: list[set[str]]) -> Any:
    """Deletes, inserts and updates a few types through the sandbox's store, then records which
    types match the filter now."""
    store = sandbox.store
    serial = [0]
    lock = threading.Lock()  # workers call this at once: one change, and its record, at a time

    def change() -> None:
        with lock:
            docs = store.all_connection_types()
            gone = rng.sample(docs, rng.randint(0, 3))
            store.delete_connection_types(doc["id"] for doc in gone)
            docs = [doc for doc in docs if doc not in gone]  # a deleted type is never written back
            inserted = []
            for doc in rng.sample(docs, rng.randint(0, 3)):
                serial[0] += 1
                inserted.append(
                    {**doc, "id": f"{doc['id']}-{serial[0]}", "name": f"{rng.choice('abcxyz')}-{serial[0]}"}
                )
            updated = [
                {**doc, "name": f"{rng.choice('abcxyz')}{doc['name']}", "oauth_supported": rng.random() < 0.5}
                for doc in rng.sample(docs, rng.randint(0, 3))
            ]
            store.upsert_connection_types(inserted + updated)
            matching.append({doc["id"] for doc in evaluate(store.all_connection_types(), user_filter)})

    return change


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    ("sort", "user_filter", "select"),
    [
        (None, None, None),
        (["name"], None, None),
        (["-oauth_supported", "-name"], None, ["id", "display_name"]),
        (None, {"oauth_supported": True}, None),
        (["name"], {"$or": [{"oauth_supported": False}, {"name": {"$lt": "m"}}]}, ["id", "plugin_name"]),
    ],
)
def test_every_type_that_exists_throughout_comes_exactly_once(
    blink_sandbox: BlinkSandbox, seed: int, sort: Any, user_filter: Any, select: Any
) -> None:
    matching = [{doc["id"] for doc in evaluate(blink_sandbox.store.all_connection_types(), user_filter)}]
    change = changer(blink_sandbox, random.Random(seed), user_filter, matching)

    class ChangingSession(requests.Session):
        """Every request is answered after the catalogue changed."""

        def request(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            change()
            return super().request(*args, **kwargs)

    hook = BlinkHook(session_factory=ChangingSession)
    pages = list(hook.walk_connection_types(filter=user_filter, sort=sort, select=select, page_size=25))
    items = [item for page in pages for item in page.items]
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids)), "a type came twice"
    missing = set.intersection(*matching) - set(ids)
    assert not missing, f"types that matched throughout are missing: {sorted(missing)}"
    assert len(matching) >= 3  # the catalogue changed before every request
    if select:
        assert all(set(item) <= set(select) for item in items)


def test_operator_output_is_what_the_model_based_code_wrote(blink_sandbox: BlinkSandbox, tmp_path: Path) -> None:
    """XCom value and file content as before the walk kept items as dicts.

    One difference is deliberate: the members of each object now come in the order Blink sent
    them, where the models put their declared members first.
    """
    docs = blink_sandbox.store.all_connection_types()
    models = [ConnectionType.model_validate_json(json.dumps(doc)) for doc in docs]
    xcom = ConnectionTypesToXComOperator(task_id="sync", page_size=64).execute({})
    assert xcom == [model.to_json_dict() for model in models]
    summary = ConnectionTypesToXComOperator(task_id="sync", page_size=64, output_path=str(tmp_path / "c.json")).execute(
        {}
    )
    assert summary == {"path": str(tmp_path / "c.json"), "count": len(docs), "total": len(docs), "paging": "keyset"}
    text = (tmp_path / "c.json").read_text()
    assert json.loads(text) == [model.to_json_dict() for model in models]
    lines = text.split("\n")  # the same layout: "[", one compact object a line, "]"
    assert lines[0] == "[" and lines[-2:] == ["]", ""]
    assert [json.loads(line.rstrip(",")) for line in lines[1:-2]] == docs
    assert all(
        line == json.dumps(doc, separators=(",", ":")) + "," for line, doc in zip(lines[1:-3], docs[:-1], strict=True)
    )
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]  # no partial file left
