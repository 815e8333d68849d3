"""How far one apply reaches into the provider (#66): the provider's modules it enters, and the
provider's frames on the stack at each HTTP send, in whichever thread sends.

    python benchmarks/apply_profile.py    # (--smoke: the same; it is one apply)

One apply of a four-field declaration (an add, a change, an unchanged field and an acknowledged
removal) with a record and a lock, through ``UpdateTableFieldsOperator.execute``, against the
tests' requests-mock Blink; ``sys.setprofile`` and ``threading.setprofile`` see every call. The
sandbox is left out (it is not the provider's client). Figures to read, not targets: #73 retired the
budgets of #66 (15 modules, 6 frames), which bent the code to meet them; what the walk of an apply reads
like is the measure. The profiler is ``tests/unit/operators/test_tables.py``'s.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' fake Blink
os.environ["AIRFLOW_CONN_BLINK_DEFAULT"] = json.dumps(
    {"conn_type": "blink", "host": "https://blink.test", "password": "profile-key-123456"}
)

from tests.unit.operators.test_tables import profile_apply  # noqa: E402  (the apply the tests profile)


def main() -> None:
    result, entered, sends = profile_apply(Path(tempfile.mkdtemp(prefix="blink-profile-")))
    assert result["outcomes"] == {"title": "unchanged", "sev": "changed", "New": "added", "old": "removed"}, result
    deepest = max(sends, key=len)
    print(f"One apply (add, change, unchanged, acknowledged removal; record and lock): {len(sends)} sends")
    print(f"provider modules entered: {len(entered)}")
    for name in sorted(entered):
        print(f"  {name}")
    print(f"provider frames at the deepest send: {len(deepest)}")
    for frame in deepest:
        print(f"  {frame}")


if __name__ == "__main__":
    main()
