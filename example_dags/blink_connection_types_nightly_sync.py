"""
### Blink connection-type catalogue: nightly sync

Every night, `snapshot` fetches Blink's connection-type catalogue (filtered and projected with
RQL) and writes it, whole, to a JSON file of this run's own:
`<snapshot root>/connection_types/<when>__<run id>.json`, named so that runs sort as they were
scheduled to run (`snapshot_name`). `diff` compares it with the latest snapshot of an earlier
run, whatever its date (by id: added, removed, changed): a second run the same day reports what
changed since the first, and a retry or a clear of a run rewrites only its own snapshot and
gives the same diff. It writes the diff beside it (`<name>.diff.json`), keeps the latest
`keep_snapshots` snapshots (param, default 90) and deletes older ones, logs the summary, returns
the ids (at most 100 of each kind, with how many more) as XCom, and emits an event on the
catalogue's asset, `blink://<host>/connection_types` (`blink_catalogue_asset()`; it replaces the
asset `blink-connection-types` of earlier versions), whose extra holds the counts. Schedule
downstream DAGs on that asset to react to catalogue changes. The first run, with no earlier
snapshot, reports everything as added. One run at a time (`max_active_runs=1`), so a
scheduled and a manual run never write at once.

**Adapt it**: set the Airflow Variable `blink_snapshot_root` to where snapshots belong (a local
folder or an object-storage URI such as `s3://aws_default@bucket/blink`; default
`/tmp/blink_snapshots`, which is refused under an executor of several machines),
change `name_like` (an RQL `$like` pattern) or the `filter` and `select` of `snapshot`. The
snapshot goes to the file, not XCom: only `{path, count, total}` reaches the metadata database.

**Event-driven** (Airflow 3.0 and later): this file also defines
`blink_connection_types_on_change`, the same sync scheduled by an `AssetWatcher` whose
`BlinkCatalogueChangeTrigger` polls the catalogue every 5 minutes with one small request and
runs the DAG when it changes. It needs a running triggerer (`airflow triggerer`, or
`airflow standalone`). On Airflow 3.3 the trigger keeps its last look in the asset's state store.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, AssetAlias, Param, get_current_context, task

from blinkops_provider.assets import CATALOGUE_ALIAS
from blinkops_provider.catalogue import snapshot_name
from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.triggers import BlinkCatalogueChangeTrigger

try:  # Airflow 3.0+: event-driven scheduling
    from airflow.sdk import AssetWatcher
except ImportError:  # Airflow 2.11: only the nightly DAG
    AssetWatcher = None

CATALOGUE = AssetAlias(CATALOGUE_ALIAS)  # the event goes to blink://<the connection's host>/connection_types
SNAPSHOT_ROOT = "{{ var.value.get('blink_snapshot_root', '/tmp/blink_snapshots') }}"
SNAPSHOT_PATH = SNAPSHOT_ROOT + "/connection_types/{{ snapshot_name(dag_run) }}"  # this run's own file
POLL_SECONDS = float(os.environ.get("BLINK_CATALOGUE_POLL_SECONDS", "300"))  # the event-driven sync's polls


def catalogue_sync(dag_id: str, schedule: Any, doc_md: str | None) -> DAG:
    """The sync: a snapshot of the catalogue, then its diff against the previous look."""
    with DAG(
        dag_id=dag_id,
        schedule=schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        user_defined_macros={"snapshot_name": snapshot_name},
        params={
            "name_like": Param("%", type="string", description="RQL $like pattern on the name"),
            "keep_snapshots": Param(90, type="integer", minimum=2, description="How many snapshots to keep"),
        },
        tags=["blink", "example"],
        doc_md=doc_md,
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
            """Compare with the latest snapshot before this one (the first run records a baseline);
            log the counts and each type added, removed or changed, by name, and announce the
            counts on the asset. Returns (XCom) the counts, then the types added, removed and
            changed (with the members that changed), at most 100 of each, with how many more there
            are (the whole lists are in ``<name>.diff.json``)."""
            import json
            import logging

            from airflow.providers.common.compat.sdk import ObjectStoragePath

            from blinkops_provider.assets import add_alias_event, blink_catalogue_asset
            from blinkops_provider.catalogue import diff_catalogues, previous_snapshot, prune_snapshots, read_snapshot

            current = ObjectStoragePath(summary["path"])
            previous = previous_snapshot(current)  # an earlier run's: a retry compares the same way
            changes = diff_catalogues(read_snapshot(previous) if previous else None, read_snapshot(current))
            report = {
                **changes.counts,
                "baseline": changes.baseline,
                "total": summary["total"],
                "snapshot": str(current),
                "previous": str(previous) if previous else None,
            }
            current.with_name(current.name.removesuffix(".json") + ".diff.json").write_text(
                json.dumps(
                    {**changes.to_dict(), "snapshot": report["snapshot"], "previous": report["previous"]},
                    indent=1,
                    ensure_ascii=False,
                )
            )
            pruned = prune_snapshots(current, int(get_current_context()["params"]["keep_snapshots"]))
            add_alias_event(get_current_context()["outlet_events"], CATALOGUE_ALIAS, blink_catalogue_asset(), report)
            log = logging.getLogger("airflow.task")
            log.info("Catalogue: %s", changes.describe())  # the counts first, then what changed, by name
            for line in changes.lines():
                log.info("  %s", line)
            log.info("Snapshot %s (previous: %s)", current.name, previous.name if previous else "none")
            if pruned:
                log.info("Deleted %d old snapshot(s), the oldest %s", len(pruned), pruned[0])
            return {**changes.to_xcom(), "snapshot": str(current), "previous": report["previous"]}

        diff(snapshot.output)
        # [END howto_catalogue_diff_asset]
    return dag


dag = catalogue_sync("blink_connection_types_nightly_sync", "@daily", __doc__)

if AssetWatcher is not None:
    # [START howto_trigger_catalogue_change]
    CATALOGUE_CHANGES = Asset(
        name="blink_catalogue_changes",
        watchers=[
            AssetWatcher(name="blink_catalogue_poll", trigger=BlinkCatalogueChangeTrigger(poll_interval=POLL_SECONDS)),
        ],
    )
    on_change = catalogue_sync("blink_connection_types_on_change", [CATALOGUE_CHANGES], __doc__)
    # [END howto_trigger_catalogue_change]
