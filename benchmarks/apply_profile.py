"""How far one apply reaches into the provider (#66): the provider's modules it enters, and the
provider's frames on the stack at each HTTP send, in whichever thread sends.

    python benchmarks/apply_profile.py    # (--smoke: the same; it is one apply)

One apply of a four-field declaration (an add, a change, an unchanged field and an acknowledged
removal) with a record and a lock, through ``UpdateTableFieldsOperator.execute``, against the
tests' requests-mock Blink; ``sys.setprofile`` and ``threading.setprofile`` see every call. The
sandbox is left out (it is not the provider's client). Targets (#66): at most 15 modules, at most
6 frames at any send.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' fake Blink
os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(
    {"conn_type": "blink", "host": "https://blink.test", "password": "profile-key-123456"}
)

import requests_mock  # noqa: E402

import blinkops_provider  # noqa: E402
from blinkops_provider.operators.tables import UpdateTableFieldsOperator  # noqa: E402
from tests.conftest import FakeTI  # noqa: E402
from tests.fake_blink import FakeBlink, blink_field  # noqa: E402

PACKAGE = Path(blinkops_provider.__file__).resolve().parent
FIELDS = [
    {"field": "title", "type": "text", "display_name": "Title"},
    {"field": "sev", "type": "text", "display_name": "Severity level"},
    {"field": "New", "type": "text", "display_name": "New"},
    {"field": "old", "remove": True},
]


def _ours(filename: str) -> str | None:
    path = Path(filename)
    if PACKAGE not in path.parents or "sandbox" in path.parts:
        return None
    return str(path.relative_to(PACKAGE))


def profile() -> tuple[set[str], list[list[str]]]:
    """The modules entered, and the provider's stack at each send (innermost first)."""
    entered: set[str] = set()
    sends: list[list[str]] = []

    def seen(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        mine = _ours(frame.f_code.co_filename)
        if mine:
            entered.add(mine)
        if frame.f_code.co_name == "send" and frame.f_code.co_filename.endswith(
            os.path.join("requests", "sessions.py")
        ):
            stack, up = [], frame
            while up is not None:
                where = _ours(up.f_code.co_filename)
                if where:
                    stack.append(f"{where}:{up.f_code.co_name}")
                up = up.f_back
            sends.append(stack)

    held = {
        "Incidents": [
            blink_field("title", "text", "Title"),
            blink_field("sev", "text", "Severity"),
            blink_field("old", "text", "Old"),
        ]
    }
    records = tempfile.mkdtemp(prefix="blink-profile-")
    operator = UpdateTableFieldsOperator(
        task_id="apply",
        ws_id="ws-1",
        table="Incidents",
        fields=FIELDS,
        record_path=f"{records}/Incidents.json",
        acknowledge_risks=True,
    )
    with requests_mock.Mocker() as mocker:
        FakeBlink(held).mount(mocker)
        threading.setprofile(seen)
        sys.setprofile(seen)
        try:
            result = operator.execute({"ti": FakeTI()})
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    assert result["outcomes"] == {"title": "unchanged", "sev": "changed", "New": "added", "old": "removed"}, result
    return entered, sends


def main() -> None:
    entered, sends = profile()
    deepest = max(sends, key=len)
    print(f"One apply (add, change, unchanged, acknowledged removal; record and lock): {len(sends)} sends")
    print(f"provider modules entered: {len(entered)} (target: at most 15)")
    for name in sorted(entered):
        print(f"  {name}")
    print(f"provider frames at the deepest send: {len(deepest)} (target: at most 6)")
    for frame in deepest:
        print(f"  {frame}")


if __name__ == "__main__":
    main()
