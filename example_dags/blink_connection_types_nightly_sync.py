"""
### Blink connection-type catalogue: nightly sync

Every night, `snapshot` fetches Blink's connection-type catalogue (filtered and projected with
RQL) and writes it, whole, to a dated JSON file: `<snapshot root>/connection_types/<ds>.json`.
`diff` compares it with the latest snapshot dated before it (by id: added, removed, changed; a
rerun for the same day compares the same way and writes the same result), writes the diff beside
it (`<ds>.diff.json`), logs the summary, returns the ids (at most 100 of each kind, with how many
more) as XCom, and emits an event on the catalogue's asset, `blink://<host>/connection_types`
(`blink_catalogue_asset()`; it replaces the asset `blink-connection-types` of earlier versions),
whose extra holds the counts. Schedule downstream DAGs on that asset to react to catalogue
changes. The first run, with no earlier snapshot, reports everything as added.

**Adapt it**: set the Airflow Variable `blink_snapshot_root` to where snapshots belong (a local
folder or an object-storage URI such as `s3://bucket/blink`; default `/tmp/blink_snapshots`),
change `name_like` (an RQL `$like` pattern) or the `filter` and `select` of `snapshot`. The
snapshot goes to the file, not XCom: only `{path, count, total}` reaches the metadata database.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, AssetAlias, Param, get_current_context, task

from blinkops_provider.assets import CATALOGUE_ALIAS
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator

CATALOGUE = AssetAlias(CATALOGUE_ALIAS)  # the event goes to blink://<the connection's host>/connection_types
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
        """Compare with the latest snapshot before this one; log the summary and announce the
        counts on the asset. Returns (XCom) the ids added, removed and changed, at most 100 of
        each, with how many more there are (the whole lists are in ``<ds>.diff.json``)."""
        import json
        import logging

        from airflow.providers.common.compat.sdk import ObjectStoragePath

        from blinkops_provider.assets import add_alias_event, blink_catalogue_asset
        from blinkops_provider.catalogue import diff_catalogues, previous_snapshot, read_snapshot

        current = ObjectStoragePath(summary["path"])
        previous = previous_snapshot(current)  # dated before this one: a rerun compares the same way
        changes = diff_catalogues(read_snapshot(previous) if previous else None, read_snapshot(current))
        report = {
            **changes.counts,
            "total": summary["total"],
            "snapshot": str(current),
            "previous": str(previous) if previous else None,
        }
        current.with_name(current.name.replace(".json", ".diff.json")).write_text(
            json.dumps({**report, **changes.to_dict()}, indent=1)
        )
        add_alias_event(get_current_context()["outlet_events"], CATALOGUE_ALIAS, blink_catalogue_asset(), report)
        logging.getLogger("airflow.task").info(
            "Catalogue %s: %s (previous: %s)", current.name, changes.describe(), previous.name if previous else "none"
        )
        return {**changes.to_xcom(), "snapshot": str(current), "previous": report["previous"]}

    diff(snapshot.output)
    # [END howto_catalogue_diff_asset]
