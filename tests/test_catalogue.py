from __future__ import annotations

import json
from pathlib import Path

import pytest

from blinkops_provider.catalogue import CatalogueDiff, diff_catalogues, previous_snapshot, read_snapshot

A = {"id": "a", "name": "aws"}
B = {"id": "b", "name": "gcp"}
C = {"id": "c", "name": "okta"}


def test_first_snapshot_is_all_added() -> None:
    diff = diff_catalogues(None, [B, A])
    assert diff == CatalogueDiff(added=["a", "b"], removed=[], changed=[], unchanged=0)
    assert diff.counts == {"added": 2, "removed": 0, "changed": 0, "unchanged": 0}


def test_added_removed_changed_unchanged() -> None:
    diff = diff_catalogues([A, B, C], [A, {**B, "name": "gcp-2"}, {"id": "d", "name": "new"}])
    assert (diff.added, diff.removed, diff.changed, diff.unchanged) == (["d"], ["c"], ["b"], 1)
    assert diff.to_dict() == {"added": ["d"], "removed": ["c"], "changed": ["b"],
                              "counts": {"added": 1, "removed": 1, "changed": 1, "unchanged": 1}}  # fmt: skip


def test_nested_changes_count_and_order_does_not() -> None:
    before = [{"id": "a", "metadata": {"x": [1, 2]}}, B]
    assert diff_catalogues(before, [B, {"id": "a", "metadata": {"x": [1, 2]}}]).changed == []
    assert diff_catalogues(before, [{"id": "a", "metadata": {"x": [2, 1]}}, B]).changed == ["a"]


def test_diff_by_another_key() -> None:
    assert diff_catalogues([A], [{"id": "z", "name": "aws"}], key="name").changed == ["aws"]


@pytest.mark.parametrize(
    ("previous", "current", "message"),
    [
        (None, [{"name": "x"}], "item 0 of the current snapshot has no 'id'"),
        ([A, A], [], "id 'a' appears twice in the previous snapshot"),
    ],
)
def test_bad_snapshots(previous: list | None, current: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        diff_catalogues(previous, current)


def test_previous_snapshot_is_the_latest_older_dated_file(tmp_path: Path) -> None:
    folder = tmp_path / "connection_types"
    assert previous_snapshot(folder / "2026-11-22.json") is None
    folder.mkdir()
    for name in ["2026-11-19.json", "2026-11-21.json", "2026-11-21.diff.json", "2026-11-23.json", "notes.json"]:
        (folder / name).write_text("[]")
    assert previous_snapshot(folder / "2026-11-22.json") == folder / "2026-11-21.json"
    assert previous_snapshot(str(folder / "2026-11-22.json")).name == "2026-11-21.json"
    assert previous_snapshot(folder / "2026-11-19.json") is None


def test_read_snapshot(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps([A, B]))
    assert read_snapshot(tmp_path / "s.json") == [A, B]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="a JSON array was expected"):
        read_snapshot(str(tmp_path / "bad.json"))
