"""
### Blink connection-type catalogue: nightly sync

Every night, `snapshot` fetches Blink's connection-type catalogue (filtered and projected with
RQL) and writes it, whole, to a dated JSON file: `<snapshot root>/connection_types/<ds>.json`.
`diff` compares it with the latest earlier snapshot (by id: added, removed, changed), writes the
diff beside it (`<ds>.diff.json`), and emits an event on the asset `blink-connection-types` whose
extra holds the counts. Schedule downstream DAGs on that asset to react to catalogue changes. The
first run, with no earlier snapshot, reports everything as added.

**Adapt it**: set the Airflow Variable `blink_snapshot_root` to where snapshots belong (a local
folder or an object-storage URI such as `s3://bucket/blink`; default `/tmp/blink_snapshots`),
change `name_like` (an RQL `$like` pattern) or the `filter` and `select` of `snapshot`. The
snapshot goes to the file, not XCom: only `{path, count, total}` reaches the metadata database.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, Param, get_current_context, task

from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

CATALOGUE = Asset("blink-connection-types")
SNAPSHOT_PATH = "{{ var.value.get('blink_snapshot_root', '/tmp/blink_snapshots') }}/connection_types/{{ ds }}.json"

with DAG(
    dag_id="blink_connection_types_nightly_sync",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={"name_like": Param("%", type="string", description="RQL $like pattern on the name")},
    tags=["blink", "example"],
    doc_md=__doc__,
) as dag:
    # [START howto_operator_connection_types_to_xcom]
    snapshot = ConnectionTypesToXComOperator(
        task_id="snapshot",
        filter={"name": {"$like": "{{ params.name_like }}"}},
        sort=["name"],
        select=[
            "id",
            "name",
            "display_name",
            "plugin_name",
            "oauth_supported",
            "documentation_link",
            "updated_at",
            "metadata",
        ],
        output_path=SNAPSHOT_PATH,
        retries=2,
    )
    # [END howto_operator_connection_types_to_xcom]

    # [START howto_catalogue_diff_asset]
    @task(outlets=[CATALOGUE])
    def diff(summary: dict[str, Any]) -> dict[str, Any]:
        """Compare with the previous snapshot and announce the counts on the asset."""
        import json

        from airflow.providers.common.compat.sdk import ObjectStoragePath

        from blinkops_provider.catalogue import diff_catalogues, previous_snapshot, read_snapshot

        current = ObjectStoragePath(summary["path"])
        previous = previous_snapshot(current)
        changes = diff_catalogues(read_snapshot(previous) if previous else None, read_snapshot(current))
        report = {**changes.counts, "total": summary["total"], "snapshot": str(current),
                  "previous": str(previous) if previous else None}  # fmt: skip
        current.with_name(current.name.replace(".json", ".diff.json")).write_text(
            json.dumps({**report, **changes.to_dict()}, indent=1)
        )
        get_current_context()["outlet_events"][CATALOGUE].extra = report
        print(
            f"Catalogue {current.name}: {report['added']} added, {report['removed']} removed, "
            f"{report['changed']} changed, {report['unchanged']} unchanged "
            f"(previous: {previous.name if previous else 'none'})"
        )
        return report

    diff(snapshot.output)
    # [END howto_catalogue_diff_asset]
