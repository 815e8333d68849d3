from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from blinkops_provider.catalogue import (
    CatalogueDiff,
    diff_catalogues,
    previous_snapshot,
    prune_snapshots,
    read_snapshot,
    snapshot_name,
)
from tests.fake_outlet_events import OutletEvents

A = {"id": "a", "name": "aws"}
B = {"id": "b", "name": "gcp"}
C = {"id": "c", "name": "okta"}


def test_the_first_snapshot_is_a_baseline_with_nothing_to_compare_with() -> None:
    diff = diff_catalogues(None, [B, A])
    assert diff == CatalogueDiff(baseline=True, total=2)
    assert diff.counts == {"added": 0, "removed": 0, "changed": 0, "unchanged": 0}
    assert diff.describe() == "first snapshot: 2 connection types; nothing to compare with"
    assert diff.lines() == []


def test_a_diff_names_the_types_and_the_members_that_changed_old_to_new() -> None:
    before = [A, B, C]
    after = [A, {**B, "name": "gcp-2", "metadata": {"x": "y" * 200}}, {"id": "d", "name": "new"}]
    diff = diff_catalogues(before, after)
    assert (diff.added, diff.removed, diff.changed, diff.unchanged) == (["d"], ["c"], ["b"], 1)
    whole = diff.to_dict()
    assert next(iter(whole)) == "counts" and whole["counts"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 1}
    assert whole["added"] == [{"id": "d", "name": "new"}] and whole["removed"] == [{"id": "c", "name": "okta"}]
    (changed,) = whole["changed"]
    assert changed["id"] == "b" and changed["name"] == "gcp-2"
    members = {m["member"]: m for m in changed["members"]}
    assert (members["name"]["before"], members["name"]["after"]) == ("'gcp'", "'gcp-2'")  # quoted, as a plan shows it
    assert members["metadata"]["before"] == "null" and len(members["metadata"]["after"]) == 60  # cut
    assert diff.describe() == "1 added, 1 removed, 1 changed, 1 unchanged"
    assert "changed: gcp-2 (b): metadata: null -> " in diff.lines()[2] and "name: 'gcp' -> 'gcp-2'" in diff.lines()[2]
    assert diff.lines()[:2] == ["added: new (d)", "removed: okta (c)"]
    assert list(diff.to_xcom())[:3] == ["counts", "baseline", "total"]


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
    assert previous_snapshot(folder / "2026-11-22T000000Z__r.json") is None
    folder.mkdir()
    for name in [
        "2026-11-19T000000Z__r.json",
        "2026-11-21T000000Z__r.json",
        "2026-11-21T000000Z__r.diff.json",
        "2026-11-23T000000Z__r.json",
        "notes.json",
    ]:
        (folder / name).write_text("[]")
    assert previous_snapshot(folder / "2026-11-22T000000Z__r.json") == folder / "2026-11-21T000000Z__r.json"
    assert previous_snapshot(str(folder / "2026-11-22T000000Z__r.json")).name == "2026-11-21T000000Z__r.json"
    assert previous_snapshot(folder / "2026-11-19T000000Z__r.json") is None


def test_read_snapshot(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps([A, B]))
    assert read_snapshot(tmp_path / "s.json") == [A, B]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="a JSON array was expected"):
        read_snapshot(str(tmp_path / "bad.json"))


class Run:
    def __init__(self, run_id: str, **when: dt.datetime | None) -> None:
        self.run_id = run_id
        for name, value in when.items():
            setattr(self, name, value)


def test_snapshot_names_sort_as_runs_were_scheduled_then_by_run_id() -> None:
    utc = dt.UTC
    nightly = Run("scheduled__2026-11-21T00:00:00+00:00", run_after=dt.datetime(2026, 11, 21, tzinfo=utc))
    noon = Run("manual__2026-11-21T12:00:03.5+00:00", run_after=dt.datetime(2026, 11, 21, 12, 0, 3, tzinfo=utc))
    event = Run("asset_triggered__2026-11-21T12:00:03.5+00:00", run_after=noon.run_after)  # type: ignore[attr-defined]
    airflow2 = Run("manual__x", logical_date=None, execution_date=dt.datetime(2026, 11, 20, 23, tzinfo=utc))
    names = [snapshot_name(run) for run in (airflow2, nightly, event, noon)]
    assert names == sorted(names)
    assert names[1] == "2026-11-21T000000000000Z__scheduled__2026-11-21T00%3A00%3A00%2B00%3A00.json"
    assert names[0].startswith("2026-11-20T230000000000Z__manual__x")
    with pytest.raises(ValueError, match="has no run_after or logical date"):
        snapshot_name(Run("r", run_after=None, logical_date=None))


@pytest.mark.parametrize(
    "run_ids",
    [
        ("a/b", "a:b", "a b", "a-b"),
        ("café", "cafe", "cafè", "caf%C3%A9"),
        ("実行1", "実行2", "xx1", "%E5"),
        ("a.b", "a_b", "a%2Eb", "a.diff"),
    ],
)
def test_run_ids_map_to_snapshot_names_one_to_one(run_ids: tuple[str, ...]) -> None:
    """Two runs at the same instant whose ids differ only in '/', ':', spaces, accents or CJK
    characters of the same length never share a snapshot name (#35)."""
    when = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
    names = [snapshot_name(Run(run_id, run_after=when)) for run_id in run_ids]
    assert len(set(names)) == len(names)


def test_a_run_id_ending_in_diff_gives_a_snapshot_the_next_diff_and_pruning_see(tmp_path: Path) -> None:
    when = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
    first = tmp_path / snapshot_name(Run("manual__x.diff", run_after=when))
    first.write_text("[]")
    second = tmp_path / snapshot_name(Run("manual__y", run_after=when + dt.timedelta(hours=1)))
    second.write_text("[]")
    assert not first.name.endswith(".diff.json")
    assert previous_snapshot(second) == first
    other = snapshot_name(Run("manual__x", run_after=when))
    assert first.name != other.removesuffix(".json") + ".diff.json"


def test_runs_in_the_same_second_sort_by_when_they_ran_not_by_run_id() -> None:
    early = Run("z_manual", run_after=dt.datetime(2026, 11, 21, 12, 0, 3, 100, tzinfo=dt.UTC))
    later = Run("a_manual", run_after=dt.datetime(2026, 11, 21, 12, 0, 3, 900_000, tzinfo=dt.UTC))
    assert snapshot_name(early) < snapshot_name(later)


def test_each_run_compares_with_the_latest_earlier_look_and_a_rerun_compares_the_same_way(tmp_path: Path) -> None:
    folder = tmp_path / "connection_types"
    folder.mkdir()
    legacy, night, noon = (
        "2026-11-20T000000Z__scheduled__z.json",
        "2026-11-21T000000Z__scheduled__a.json",
        "2026-11-21T120000Z__manual__b.json",
    )
    for name in (legacy, night, noon, "2026-11-21T000000Z__scheduled__a.diff.json"):
        (folder / name).write_text("[]")
    assert previous_snapshot(folder / noon) == folder / night  # the same day's earlier look
    assert previous_snapshot(folder / night) == folder / legacy  # the day before's
    (folder / night).write_text('[{"id": "a"}]')  # a retry of the night run rewrites its own file
    assert previous_snapshot(folder / night) == folder / legacy
    assert previous_snapshot(folder / noon) == folder / night


def test_pruning_keeps_the_latest_snapshots_with_their_diffs(tmp_path: Path) -> None:
    folder = tmp_path / "connection_types"
    folder.mkdir()
    names = [f"2026-11-{day}T000000Z__scheduled__{day}" for day in (20, 21, 22, 23)]
    for name in names:
        (folder / f"{name}.json").write_text("[]")
        (folder / f"{name}.diff.json").write_text("{}")
    assert prune_snapshots(folder / f"{names[-1]}.json", 2) == [f"{names[0]}.json", f"{names[1]}.json"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{n}{s}" for n in names[2:] for s in (".json", ".diff.json")
    )
    with pytest.raises(ValueError, match="at least 2"):
        prune_snapshots(folder / f"{names[-1]}.json", 1)


@pytest.mark.parametrize(
    ("executor", "refused"),
    [("CeleryExecutor", True), ("LocalExecutor,KubernetesExecutor", True), ("LocalExecutor", False)],
)
def test_snapshots_on_a_workers_own_temporary_disk_are_refused_under_an_executor_of_several_machines(
    tmp_path: Path, executor: str, refused: bool
) -> None:
    """#34: with the Variable unset, each Celery worker would keep its own snapshots, and the diff
    would compare with whichever its worker holds (tmp_path is under the temp dir)."""
    from blinkops_provider.exceptions import BlinkConfigurationError

    folder = tmp_path / "connection_types"
    folder.mkdir()
    (folder / "2026-11-21T000000Z__r.json").write_text("[]")
    if refused:
        with pytest.raises(
            BlinkConfigurationError, match=r"own temporary disk.*blink_snapshot_root.*s3://aws_default@"
        ):
            previous_snapshot(folder / "2026-11-22T000000Z__r.json", executor=executor)
    else:
        assert (
            previous_snapshot(folder / "2026-11-22T000000Z__r.json", executor=executor)
            == folder / "2026-11-21T000000Z__r.json"
        )


def test_shared_snapshots_are_compared_under_any_executor() -> None:
    """A folder that is not a worker's scratch disk (a shared mount, say) is compared as before."""
    shared = Path("/srv-blink-test-shared")  # not under /tmp, /var/tmp, /dev/shm or the temp dir
    assert (
        previous_snapshot(shared / "connection_types" / "2026-11-22T000000Z__r.json", executor="CeleryExecutor") is None
    )


# -- what a person reads is what there is (#43 items 11 and 12) ------------------------------------------


def test_a_name_or_value_cannot_forge_or_hide_a_diff_line_and_1_is_not_1_quoted() -> None:
    before = [{"id": "a", "name": "x", "v": 1}]
    after = [{"id": "a", "name": "x\nadded: forged (f)\x1b[2K", "v": "1"}]
    lines = diff_catalogues(before, after).lines()
    assert len(lines) == 1 and "\\u000a" in lines[0] and "\x1b" not in lines[0]
    assert "v: 1 -> '1'" in lines[0]


def test_a_folder_named_like_a_snapshot_is_neither_pruned_nor_picked(tmp_path: Path) -> None:
    folder = tmp_path / "connection_types"
    folder.mkdir()
    names = [f"2026-01-0{day}T000000000000Z__run{day}.json" for day in range(1, 5)]
    for name in names[1:]:
        (folder / name).write_text("[]")
    (folder / names[0]).mkdir()  # a folder with a snapshot's name
    assert previous_snapshot(str(folder / names[2]), executor="LocalExecutor").name == names[1]
    assert previous_snapshot(str(folder / names[1]), executor="LocalExecutor") is None
    assert prune_snapshots(str(folder / names[3]), keep=2) == [names[1]]
    assert (folder / names[0]).is_dir()


def test_a_corrupt_snapshot_is_refused_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "2026-01-01T000000000000Z__r.json"
    broken.write_text("[{")
    with pytest.raises(ValueError, match=r"the snapshot .*2026-01-01T000000000000Z__r\.json cannot be read as JSON"):
        read_snapshot(str(broken))


def test_record_catalogue_diff_writes_prunes_logs_and_announces_in_one_call(
    blink_conn: None, tmp_path: Path, caplog: Any
) -> None:
    """#41: the nightly diff is a provider function; the example calls it in a few lines."""
    from blinkops_provider.catalogue import record_catalogue_diff

    folder = tmp_path / "connection_types"
    folder.mkdir()
    names = [f"2026-01-0{day}T000000000000Z__run{day}.json" for day in range(1, 4)]
    (folder / names[0]).write_text(json.dumps([A, B]))
    (folder / names[1]).write_text(json.dumps([A, B]))
    (folder / names[2]).write_text(json.dumps([A, {**B, "name": "gcp-2"}, C]))

    events = OutletEvents()
    caplog.set_level("INFO")
    result = record_catalogue_diff(str(folder / names[2]), total=3, keep=2, outlet_events=events)
    assert result["counts"] == {"added": 1, "removed": 0, "changed": 1, "unchanged": 1}
    assert result["previous"].endswith(names[1]) and not (folder / names[0]).exists()
    diff = json.loads((folder / names[2].replace(".json", ".diff.json")).read_text())
    assert [entry["id"] for entry in diff["added"]] == ["c"]
    [(uri, extra)] = next(iter(events.values()))
    assert uri.endswith("/connection_types") and extra["changed"] == 1 and extra["total"] == 3
    assert "Catalogue: 1 added, 0 removed, 1 changed, 1 unchanged" in caplog.text


def test_snapshots_named_by_day_by_earlier_versions_still_count_as_earlier_looks(
    blink_conn: None, tmp_path: Path
) -> None:
    """#63 item 7: as docs/operators/connection_types.md promises, ``2026-11-20.json`` and
    ``2026-11-21.json`` are earlier looks: the next sync compares with the latest of them, and a
    later look of the same day sorts after the day's old file."""
    from blinkops_provider.catalogue import record_catalogue_diff

    folder = tmp_path / "connection_types"
    folder.mkdir()
    (folder / "2026-11-20.json").write_text(json.dumps([A]))
    (folder / "2026-11-21.json").write_text(json.dumps([A, B]))
    today = folder / "2026-11-21T030000000000Z__scheduled__2026-11-21.json"
    today.write_text(json.dumps([A, B, C]))
    result = record_catalogue_diff(str(today), total=3, keep=2)
    assert result["baseline"] is False and result["previous"].endswith("2026-11-21.json")
    assert result["counts"]["added"] == 1
    assert not (folder / "2026-11-20.json").exists()  # the oldest look, pruned like any other
