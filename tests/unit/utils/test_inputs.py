"""One Blink table, one name: the canonical forms of names.py, and that the asset, the lineage
dataset and the schema record agree on them for every spelling.

One sanitiser for every text a person reads (blinkops_provider.utils.text, #49 item 4, #50 item 1):
a name or a value with a line break of any kind, a NUL or an ANSI escape cannot give a plan, the
fleet's review, an apply's report, a fleet's summary or the catalogue's diff a line, a heading or an
escape sequence of its own. Each text is tested with the forged name in the table, the workspace id
and a field. And the checks of a user's input (blinkops_provider.utils.inputs).

Private imports, the exception: ``utils`` is the shared bottom every public name stands on, tested here as the unit
each of its functions is (a spelling of a name, a forged line) rather than once through each of the many public
paths that use it; a plan with forged names is made by the planner directly (``make_plan``), since Blink itself
would refuse to hold some of them.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from blinkops_provider.assets import asset_host, normalize_uri, storage_dataset, table_uri
from blinkops_provider.catalogue import diff_catalogues
from blinkops_provider.exceptions import BlinkBadRequestError, BlinkInputError
from blinkops_provider.migrations import (
    ApplyResult,
    SchemaRecord,
    fleet_review,
    fleet_summary,
    log_plan,
    plan_text,
    plan_xcom,
    record_location,
)
from blinkops_provider.migrations._plan import make_plan
from blinkops_provider.models import FieldUpdate, TableField
from blinkops_provider.operators.tables import ApplyReport
from blinkops_provider.utils.inputs import parse_json_object, validate_input
from blinkops_provider.utils.names import blink_host, canonical_segment, segment, table_ref
from blinkops_provider.utils.text import escaped, one_line

NOW = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)


def names_of(base_url: str, ws_id: str, table: str, folder: Path) -> tuple[str, tuple[str, str], str]:
    """What the provider calls one table: its asset URI, its lineage dataset (namespace, name, as
    table_lineage builds them) and its record's location in a records folder."""
    dataset = (f"blink://{asset_host(base_url)}", table_ref(ws_id, table))
    return table_uri(base_url, ws_id, table), dataset, record_location(f"{folder}/", ws_id, table)


def normalized(uri: str) -> str:
    return normalize_uri(urlsplit(uri)).geturl()


# -- a Blink ------------------------------------------------------------------------------------

SAME_BLINK = [
    ("https://app.blinkops.com", "https://App.BlinkOps.COM"),
    ("https://app.blinkops.com", "https://app.blinkops.com:443/api/v1"),
    ("https://app.blinkops.com", "app.blinkops.com"),
    ("https://app.blinkops.com/", "https://app.blinkops.com./api/v1/"),
    ("http://blink.internal", "http://blink.internal:80"),
    ("http://[::1]:18080", "http://[::1]:18080/api/v1"),
    ("http://[::1]:18080", "[::1]:18080"),
    ("https://[::1]", "https://[0:0:0:0:0:0:0:1]".replace("[0:0:0:0:0:0:0:1]", "[::1]:443")),
    ("http://[FE80::1]:8080", "http://[fe80::1]:8080"),
    ("https://bücher.example", "https://xn--bcher-kva.example"),
]
OTHER_BLINK = [
    ("https://h", "https://h:8443"),
    ("http://[::1]:18080", "http://[::1]:18081"),
    ("https://h:80", "https://h"),  # nor 80 https's
    ("https://a.example", "https://b.example"),
]


@pytest.mark.parametrize(("one", "other"), SAME_BLINK)
def test_spellings_of_one_blink_give_one_asset_one_dataset_and_one_record(one: str, other: str, tmp_path: Path) -> None:
    assert blink_host(one) == blink_host(other)
    assert names_of(one, "ws-1", "Incidents", tmp_path) == names_of(other, "ws-1", "Incidents", tmp_path)
    # A record written through one spelling is that Blink's record for the other.
    SchemaRecord(tmp_path / "r.json", blink=one, ws_id="ws-1", table="Incidents").write({"a": {}}, now=NOW)
    fields, _ = SchemaRecord(tmp_path / "r.json", blink=other, ws_id="ws-1", table="Incidents").read()
    assert fields == {"a": {}}


@pytest.mark.parametrize(("one", "other"), OTHER_BLINK)
def test_two_blinks_give_two_assets_two_datasets_and_refuse_each_others_record(
    one: str, other: str, tmp_path: Path
) -> None:
    assert table_uri(one, "w", "t") != table_uri(other, "w", "t")
    SchemaRecord(tmp_path / "r.json", blink=one, ws_id="w", table="t").write({}, now=NOW)
    with pytest.raises(BlinkInputError, match=r"names the Blink at .*, and the connection.s Blink is"):
        SchemaRecord(tmp_path / "r.json", blink=other, ws_id="w", table="t").read()


def test_http_on_port_443_is_the_blink_uri_host_without_a_port() -> None:
    """A blink:// URI has no http/https of its own: its default port is Blink's, 443."""
    assert blink_host("http://h:443") == "h:443"
    assert table_uri("http://h:443", "w", "t") == table_uri("https://h", "w", "t") == "blink://h/w/t"


def test_ipv6_hosts_keep_their_brackets_everywhere() -> None:
    assert blink_host("http://[::1]:18080") == "[::1]:18080"
    assert table_uri("http://[::1]:18080/api/v1", "ws-demo", "Incidents") == "blink://[::1]:18080/ws-demo/Incidents"
    assert normalized("blink://[::1]:18080/api/v1/connection_types") == "blink://[::1]:18080/connection_types"
    assert urlsplit(f"blink://{asset_host('http://[::1]')}/x").hostname == "::1"  # a parseable namespace


# -- a workspace or table name ------------------------------------------------------------------

SAME_URI = [
    ("blink://h/a%2fb/x", "blink://h/a%2Fb/x"),
    ("blink://h/%41BC/x", "blink://h/ABC/x"),
    ("blink://h/ws/Inc idents", "blink://h/ws/Inc%20idents"),
    ("blink://h/ws/Über", "blink://h/ws/%C3%9Cber"),
    ("blink://h/ws/%c3%9cber", "blink://h/ws/%C3%9Cber"),
    ("blink://h/ws/a~b_c-d.e", "blink://h/ws/a%7Eb%5Fc%2Dd%2Ee"),
    ("blink://h/ws/..", "blink://h/ws/%2E%2E"),
    ("blink://h/ws/.", "blink://h/ws/%2e"),
    ("blink://H:443/api/v1/ws/t/", "blink://h/ws/t"),
]


@pytest.mark.parametrize(("one", "other"), SAME_URI)
def test_spellings_of_one_table_normalise_to_one_uri(one: str, other: str) -> None:
    assert normalized(one) == normalized(other)
    assert normalized(normalized(one)) == normalized(one)  # stable


@pytest.mark.parametrize(
    ("ws_id", "table", "uri"),
    [
        ("ws-demo", "Inc idents", "blink://h/ws-demo/Inc%20idents"),
        ("ws", "Über", "blink://h/ws/%C3%9Cber"),
        ("a", "b/c", "blink://h/a/b%2Fc"),
        ("a/b", "c", "blink://h/a%2Fb/c"),
        ("api", "v1", "blink://h/api/v1"),
        ("ws", "..", "blink://h/ws/%2E%2E"),
        ("ws", "100%", "blink://h/ws/100%25"),
        ("ws", "%41", "blink://h/ws/%2541"),
    ],
)
def test_the_helper_the_normaliser_and_a_hand_written_uri_agree(ws_id: str, table: str, uri: str) -> None:
    assert table_uri("h", ws_id, table) == uri
    assert normalized(uri) == uri


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("a", "b/c"), ("a/b", "c")),
        (("ws", ".."), ("ws", "%2E%2E")),
        (("ws", "%41"), ("ws", "A")),
        (("ws", "Incidents"), ("ws", "incidents")),
        (("api", "v1"), ("ws", "api")),
    ],
)
def test_two_tables_never_share_an_asset_a_dataset_or_a_record(
    one: tuple[str, str], other: tuple[str, str], tmp_path: Path
) -> None:
    first, second = names_of("h", *one, tmp_path), names_of("h", *other, tmp_path)
    for a, b in zip(first, second, strict=True):
        assert a != b


def test_a_workspace_named_api_with_a_table_named_v1_is_a_table_not_the_base_path() -> None:
    assert normalized("blink://h/api/v1") == "blink://h/api/v1"
    assert normalized("blink://h/api/v1/api/v1") == "blink://h/api/v1"
    assert normalized("blink://h/api/v1/connection_types") == "blink://h/connection_types"


@pytest.mark.parametrize(
    ("name", "problem"),
    [("", "non-empty|needs a workspace id and a table name"), ("a\ud800b", "lone surrogate")],
)
def test_a_name_that_cannot_be_written_is_refused_saying_why(name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        segment(name, "table name")
    with pytest.raises(ValueError, match=problem):
        table_uri("h", "ws", name)


def test_segments_encode_every_reserved_character_and_decode_unreserved_ones() -> None:
    assert segment("a/b?c#d e%") == "a%2Fb%3Fc%23d%20e%25"
    assert canonical_segment("%7e%5F%2d") == "~_-"
    assert segment(".") == "%2E" and canonical_segment("%2E%2E") == "%2E%2E"


# -- the records folder -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ws_id", "table"),
    [("..", ".."), ("a", "../../../escaped"), ("../..", "x"), (".", "t"), ("w", "/etc/passwd")],
)
def test_a_record_in_a_folder_stays_in_the_folder(ws_id: str, table: str, tmp_path: Path) -> None:
    folder = tmp_path / "records"
    location = Path(record_location(f"{folder}/", ws_id, table))
    assert location.resolve().is_relative_to(folder.resolve())
    assert location.parent.parent == folder and location.suffix == ".json"
    SchemaRecord(location, blink="h", ws_id=ws_id, table=table).write({}, now=NOW)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [location]


def test_a_record_file_path_with_a_dot_segment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BlinkInputError, match=r"has a '\.' or '\.\.' segment.*folder ending in '/'"):
        record_location(f"{tmp_path}/records/a/../../escaped.json", "ws", "t")
    assert record_location(f"{tmp_path}/r.json", "ws", "../t") == f"{tmp_path}/r.json"  # given whole: as given


def test_a_record_folder_refuses_a_name_that_cannot_name_a_file(tmp_path: Path) -> None:
    with pytest.raises(BlinkInputError, match=r"cannot be placed in .*lone surrogate"):
        record_location(f"{tmp_path}/", "ws", "\udcff")


# -- object storage in lineage --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "dataset"),
    [
        ("s3://aws_default@my-bucket/blink/2026-11-24.json", ("s3://my-bucket", "blink/2026-11-24.json")),
        ("s3://my-bucket/blink/2026-11-24.json", ("s3://my-bucket", "blink/2026-11-24.json")),
        ("gs://google_cloud_default@bucket/a/b.json", ("gs://bucket", "a/b.json")),
        ("file:///tmp/x.json", ("file", "/tmp/x.json")),
        ("/tmp/x.json", ("file", "/tmp/x.json")),
    ],
)
def test_snapshot_datasets_follow_openlineage_naming_without_a_connection_id(
    location: str, dataset: tuple[str, str]
) -> None:
    assert storage_dataset(location) == dataset


BREAKS = {"CR": "\r", "LF": "\n", "U+2028": "\u2028", "NUL": "\x00", "ANSI": "\x1b[31m"}
RAW = ("\r", "\n", "\u2028", "\u2029", "\x00", "\x1b", "\x85")


def forged(kind: str) -> str:
    return f"Tickets{BREAKS[kind]}### FORGED [APPROVED]"


def clean(text: str, *, lines_allowed: bool = True) -> None:
    """No raw control character but the text's own line breaks, and no line the forged name began."""
    others = [ch for ch in RAW if ch in text and not (lines_allowed and ch == "\n")]
    assert others == [], repr(text)
    assert not [line for line in text.split("\n") if line.lstrip("-| ").startswith("### FORGED")], text


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def a_logger() -> tuple[logging.Logger, Lines]:
    log = logging.getLogger(f"test-text-{id(object())}")
    log.propagate = False
    handler = Lines()
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    return log, handler


def plan_of(where: str, name: str) -> Any:
    ws_id, table, field = (
        name if where == part else plain for part, plain in zip(("ws", "table", "field"), ("ws", "T", "F"), strict=True)
    )
    held = TableField(name=field, type="single-select", display_name="Old", attributes={"options": [name, "b"]})
    declared = [
        (
            field,
            FieldUpdate.model_validate(
                {"type": "single-select", "display_name": name, "attributes": {"options": ["b"]}}
            ),
        )
    ]
    return make_plan(
        target=("blink", ws_id, table),
        record=f"/records/{name}.json",
        declared=declared,
        recorded={},
        recorded_at=None,
        live=[held, TableField(name=f"{field}2", type="text", display_name="x", attributes={})],
        removals=[f"{field}2"],
    )


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_plan_and_its_log_lines(where: str, kind: str) -> None:
    plan = plan_of(where, forged(kind))
    clean(plan_text(plan))
    assert "### FORGED" in plan_text(plan)  # the name is shown, escaped
    log, handler = a_logger()
    log_plan(plan, log)
    assert any("### FORGED" in line for line in handler.lines)
    for line in handler.lines:
        clean(line, lines_allowed=False)


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_fleets_review_and_summary(where: str, kind: str) -> None:
    plan = plan_xcom(plan_of(where, forged(kind)))
    review = fleet_review([plan])
    clean(review)
    summary = fleet_summary([{"ws_id": plan["ws_id"], "table": plan["table"]}], [{"error": forged(kind)}])
    clean(summary["text"])
    assert "### FORGED" in review and "### FORGED" in summary["text"]


@pytest.mark.parametrize("where", ["ws", "table", "field"])
@pytest.mark.parametrize("kind", list(BREAKS))
def test_an_applys_report_and_its_final_error(where: str, kind: str) -> None:
    from blinkops_provider.operators.tables import not_applied

    name = forged(kind)
    ws_id, table, field = (
        name if where == part else plain for part, plain in zip(("ws", "table", "field"), ("ws", "T", "F"), strict=True)
    )
    stored = TableField(name="ok", type="text", display_name="ok")
    result = ApplyResult([stored], {field: BlinkBadRequestError(f"refused {name}")}, [], [field, "ok"], {"ok": stored})
    log, handler = a_logger()
    ApplyReport(ws_id, table, log).summary(result)
    assert len(handler.lines) >= 2
    for line in handler.lines:
        clean(line, lines_allowed=False)
    assert any("### FORGED" in line for line in handler.lines)
    clean(str(not_applied(result)), lines_allowed=False)


@pytest.mark.parametrize("kind", list(BREAKS))
def test_the_catalogues_diff(kind: str) -> None:
    before = [{"id": "a", "name": "one"}, {"id": "b", "name": "two"}]
    after = [{"id": "a", "name": forged(kind)}, {"id": forged(kind), "name": forged(kind)}]
    lines = diff_catalogues(before, after).lines()
    for line in lines:
        clean(line, lines_allowed=False)
    assert any("### FORGED" in line for line in lines)


def test_one_line_escapes_every_control_character_and_the_cell_markers() -> None:
    assert one_line("a|b\\c\nd\x1b[0m\u2028") == "a\\|b\\\\c\\u000ad\\u001b[0m\\u2028"
    assert escaped("a|b\\c\x00") == "a|b\\c\\u0000"
    assert all(one_line(chr(code)) != chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)])


# -- the checks of a user's input (blinkops_provider.utils.inputs) ------------------------------------------


def test_validate_input_passes_model_instances_through() -> None:
    update = FieldUpdate(display_name="X")
    assert validate_input(FieldUpdate, update, "x") is update


def test_parse_json_object_leaves_objects_alone_and_blank_means_none() -> None:
    obj = {"a": 1}
    assert parse_json_object(obj, "x") is obj
    assert parse_json_object("  ", "x") is None
    assert parse_json_object('{"a": 1}', "x") == {"a": 1}
