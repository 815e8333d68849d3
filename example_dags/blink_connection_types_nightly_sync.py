"""
### Blink connection-type catalogue: nightly sync

`snapshot` writes the catalogue (filtered and projected with RQL) to this run's own file,
`<snapshot root>/connection_types/<dag id>/<when>__<run id>.json`: each DAG keeps its own snapshots,
so two syncs never overwrite or compare with each other's. `diff` calls `record_catalogue_diff`:
it compares the file with this DAG's latest earlier snapshot by id (the first run records a baseline),
writes `<name>.diff.json`, keeps the latest `keep_snapshots`, logs what changed by name, and
announces the counts on the asset `blink://<host>/connection_types` for downstream DAGs.

**Adapt it**: set the Variable `blink_snapshot_root` (a folder or a URI such as
`s3://aws_default@bucket/blink`; `/tmp/blink_snapshots` is refused under an executor of several
machines), `name_like` (an RQL `$like` pattern), or `snapshot`'s `filter` and `select`.

**Event-driven** (Airflow 3.0+): `blink_connection_types_on_change`, the same sync run by an
`AssetWatcher` whose trigger polls the catalogue every 5 minutes (it needs a triggerer), and daily
from its unpausing: that first run takes the baseline, so the first change then shows in a diff.
"""

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
# This run's own file, in this DAG's own folder: two syncs' runs of one day share a run id.
SNAPSHOT_PATH = SNAPSHOT_ROOT + "/connection_types/{{ dag_run.dag_id }}/{{ snapshot_name(dag_run) }}"
SELECT = ["id", "name", "display_name", "plugin_name", "oauth_supported", "documentation_link", "updated_at"]
SELECT += ["metadata"]
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
            select=SELECT,
            output_path=SNAPSHOT_PATH,
            retries=2,
        )
        # [END howto_operator_connection_types_to_xcom]

        # [START howto_catalogue_diff_asset]
        @task(outlets=[CATALOGUE])
        def diff(summary: dict[str, Any]) -> dict[str, Any]:
            """The diff with the previous snapshot, pruned, logged and announced (``record_catalogue_diff``);
            returns (XCom) the counts and the types added, removed and changed."""
            from blinkops_provider.catalogue import record_catalogue_diff

            context = get_current_context()
            return record_catalogue_diff(
                summary["path"],
                total=summary["total"],
                keep=int(context["params"]["keep_snapshots"]),
                outlet_events=context["outlet_events"],
            )

        diff(snapshot.output)
        # [END howto_catalogue_diff_asset]
    return dag


dag = catalogue_sync("blink_connection_types_nightly_sync", "@daily", __doc__)

if AssetWatcher is not None:
    try:  # the Task SDK's timetables (Airflow 3.2+), else the core's (3.0, 3.1)
        from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable
    except ImportError:
        from airflow.timetables.assets import AssetOrTimeSchedule
        from airflow.timetables.trigger import CronTriggerTimetable
    # [START howto_trigger_catalogue_change]
    CATALOGUE_CHANGES = Asset(
        name="blink_catalogue_changes",
        watchers=[
            AssetWatcher(name="blink_catalogue_poll", trigger=BlinkCatalogueChangeTrigger(poll_interval=POLL_SECONDS)),
        ],
    )
    DAILY = CronTriggerTimetable("@daily", timezone="UTC", run_immediately=True)
    on_change = catalogue_sync(
        "blink_connection_types_on_change", AssetOrTimeSchedule(timetable=DAILY, assets=[CATALOGUE_CHANGES]), __doc__
    )
    # [END howto_trigger_catalogue_change]
