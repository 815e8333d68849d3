"""
Blink tables and the connection-type catalogue as Airflow assets: the ``blink://`` URI scheme.

- ``blink://<host>/<ws_id>/<table>``: a table (its schema, which the migration operators change);
- ``blink://<host>/connection_types``: the connection-type catalogue.

``<host>``, ``<ws_id>`` and ``<table>`` are in canonical forms:
the host lowercased, IPv6 in brackets, no default port, no ``/api/v1``; the workspace and the
table each one percent-encoded segment, so any name fits and two names never share a URI. The
scheme is registered with Airflow through the provider info (``asset-uris``), which runs
``normalize_uri`` on every ``blink://`` asset a DAG declares: every spelling of one table
comes to one URI.

The operators learn the host when they run, so they declare an asset *alias* as their outlet
(:data:`TABLES_ALIAS`, :data:`CATALOGUE_ALIAS`) and add the event of the concrete asset through
it. A DAG scheduled on :func:`blink_table_asset` runs after such an event, as on any asset.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final
from urllib.parse import SplitResult, unquote, urlsplit

from blinkops_provider.utils.blink_api import API_PREFIX
from blinkops_provider.utils.names import blink_host, canonical_segment, host_of, table_ref

__all__ = ["CATALOGUE_ALIAS", "TABLES_ALIAS", "announce_applied", "blink_catalogue_asset", "blink_table_asset"]

_log = logging.getLogger(__name__)


SCHEME = "blink"
CATALOGUE = "connection_types"

TABLES_ALIAS: Final = "blink-tables"
"""The asset alias the table operators emit their table's event through (their default outlet)."""

CATALOGUE_ALIAS: Final = "blink-catalogue"
"""The asset alias of the catalogue: the catalogue operator's default inlet, and the alias the
nightly example announces the catalogue's diff through."""

_FORMS = f"blink://<host>/<ws_id>/<table> or blink://<host>/{CATALOGUE}"


def asset_host(base_url: str) -> str:
    """
    Return the ``<host>`` of a Base URL (or a bare host): :func:`blinkops_provider.utils.names.blink_host`.

    :raises ValueError: the URL has no usable host.
    """
    try:
        return blink_host(base_url)
    except ValueError as err:
        raise ValueError(f"{err}; a Blink asset URI is {_FORMS}") from None


def normalize_uri(uri: SplitResult) -> SplitResult:
    """
    Airflow's hook for ``blink://`` URIs.

    Any spelling of a table or the catalogue in its canonical form (host lowercased, IPv6 bracketed, port 443 and a
    leading ``/api/v1`` dropped, each name one percent-encoded segment with upper-case hex).

    :raises ValueError: not one of the two forms (Airflow then refuses the asset, with this message).
    """
    shown = "the URI" if "@" in uri.netloc else repr(uri.geturl())  # it may hold a secret
    try:
        netloc = host_of(uri)
    except ValueError as err:
        raise ValueError(f"{shown} {err}; a Blink asset URI is {_FORMS}") from None
    if uri.query or uri.fragment:
        raise ValueError(f"{shown} has a query or fragment; a Blink asset URI is {_FORMS}")
    return SplitResult(SCHEME, netloc, f"/{_canonical_path(uri.path, shown)}", "", "")


def _canonical_path(path: str, shown: str) -> str:
    """Return a ``blink://`` URI's path as ``<ws_id>/<table>`` or the catalogue, each name canonical."""
    segments = path.rstrip("/").lstrip("/").split("/")
    if len(segments) > 2 and "/" + "/".join(segments[:2]) == API_PREFIX:  # the base path, never a name
        segments = segments[2:]
    if segments != [CATALOGUE] and (len(segments) != 2 or not all(segments)):
        raise ValueError(f"{shown} names neither a table nor the catalogue; a Blink asset URI is {_FORMS}")
    try:
        return "/".join(canonical_segment(part) for part in segments)
    except ValueError as err:
        raise ValueError(f"{shown}: {err}; a Blink asset URI is {_FORMS}") from None


def table_uri(host: str, ws_id: str, table: str) -> str:
    """Return ``blink://<host>/<ws_id>/<table>``, percent-encoded."""
    if not ws_id or not table:
        raise ValueError("a Blink table asset needs a workspace id and a table name")
    return normalize_uri(SplitResult(SCHEME, asset_host(host), f"/{table_ref(ws_id, table)}", "", "")).geturl()


def _host(host: str | None, blink_conn_id: str) -> str:
    if host is not None:
        return asset_host(host)
    from blinkops_provider.hooks.blink import BlinkHook

    return asset_host(BlinkHook(blink_conn_id).base_url)


def blink_table_asset(
    ws_id: str,
    table: str,
    *,
    host: str | None = None,
    blink_conn_id: str = "blink_default",
    extra: dict[str, Any] | None = None,
) -> Any:
    """
    Return the asset of a Blink table, e.g. to schedule a DAG on its schema's changes:.

        with DAG(..., schedule=[blink_table_asset("ws-demo", "Incidents", host="app.blinkops.com")]):

    :param host: the Blink's host (or its Base URL). When None, the host of ``blink_conn_id``'s
        Base URL, read when this is called: in a DAG file that is at parse time, so give
        ``host`` there unless the connection comes from an environment variable or a secrets
        backend that is cheap to read.
    """
    from airflow.providers.common.compat.sdk import Asset

    return Asset(uri=table_uri(_host(host, blink_conn_id), ws_id, table), extra=extra or {})


def blink_catalogue_asset(
    *, host: str | None = None, blink_conn_id: str = "blink_default", extra: dict[str, Any] | None = None
) -> Any:
    """
    Return the asset of a Blink's connection-type catalogue.

    ``blink://<host>/connection_types`` (``host`` as for :func:`blink_table_asset`).
    """
    from airflow.providers.common.compat.sdk import Asset

    return Asset(
        uri=normalize_uri(urlsplit(f"{SCHEME}://{_host(host, blink_conn_id)}/{CATALOGUE}")).geturl(), extra=extra or {}
    )


def add_alias_event(outlet_events: Any, alias: str, asset: Any, extra: dict[str, Any] | None = None) -> None:
    """
    Add ``asset``'s event through the asset alias named ``alias`` (one of the task's outlets).

    On Airflow 2.11 and 3.x alike: ``add_alias_event(context["outlet_events"], CATALOGUE_ALIAS, blink_catalogue_asset(),
    extra={...})``.

    On Airflow 2 it first makes sure the metadata DB knows the alias. Airflow 2 records an alias
    event only for an alias already in its DB, which only a DAG sync writes (the DAG processor,
    ``sync_to_db``), and fails the run otherwise (apache/airflow#42495): the first ``dag.test()``
    or ``airflow dags test`` on a fresh DB failed. Tasks on Airflow 2 reach the DB; Airflow 3
    registers aliases itself.
    """
    from airflow.providers.common.compat.sdk import AssetAlias

    if _airflow_major() == 2:
        try:
            _register_alias_on_airflow_2(alias)
        except Exception as err:  # no metadata DB here (a bare execute()): the event is added all the same
            logging.getLogger(__name__).warning(
                "Could not register the asset alias %r in Airflow's metadata DB (%s); on Airflow 2 an event "
                "through it fails the run unless the DAG was synced first (airflow dags reserialize)",
                alias,
                type(err).__name__,
            )
    outlet_events[AssetAlias(alias)].add(asset, extra=extra or {})


EVENT_NAMES = 100
"""The most field names of each outcome an asset event's extra lists (the counts cover all)."""


CHANGING = ("added", "changed", "removed", "retyped")
"""The outcomes of a field that change the table in Blink: an apply with any announces it."""


def event_extra(
    ws_id: str,
    table: str,
    applied: list[str],
    planned: dict[str, list[str]] | None = None,
    *,
    backup: str = "",
    workflows: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """
    Return a table event's extra, flat.

    With tuples for the names (Airflow 2.11 hashes the values of an extra added through an alias):

    - always ``ws_id``, ``table``, ``applied`` (the fields Blink confirmed, at most
      :data:`EVENT_NAMES` names) and ``applied_count``;
    - with a plan: ``added``, ``changed``, ``removed`` and ``retyped`` (names, at most
      :data:`EVENT_NAMES` each), their ``_count``, and ``unchanged_count``, zeros included;
    - with a ``backup``: ``backup``, where the apply saved what it changed and destroyed first (a rollback reads it);
    - with ``workflows`` (per field, the workflows the plan said its change breaks): ``workflows``, the ids (at most
      :data:`EVENT_NAMES`), and ``workflows_count``.
    """
    extra: dict[str, Any] = {
        "ws_id": ws_id,
        "table": table,
        "applied": tuple(applied[:EVENT_NAMES]),
        "applied_count": len(applied),
    }
    if planned is not None:
        for outcome in CHANGING:
            names = planned.get(outcome, [])
            extra[outcome] = tuple(names[:EVENT_NAMES])
            extra[f"{outcome}_count"] = len(names)
        extra["unchanged_count"] = len(planned.get("unchanged", []))
    if backup:
        extra["backup"] = backup
    if workflows:
        ids = sorted({one for named in workflows.values() for one in named})
        extra["workflows"] = tuple(ids[:EVENT_NAMES])
        extra["workflows_count"] = len(ids)
    return extra


def announce_applied(outlet_events: Any, report: Any, *, blink_conn_id: str = "blink_default") -> bool:
    """
    Return the table's event for what an apply changed in Blink before it failed.

    From its XCom report (``UpdateTableFieldsOperator`` pushes it on every way out), through :data:`TABLES_ALIAS`: for a
    task downstream of the apply with ``trigger_rule="all_done"`` (a failed task emits no asset event, so the apply
    cannot announce it itself). Nothing when the apply succeeded (it announced its own event), was skipped, or changed
    nothing.

    :returns: whether an event was added.
    """
    if not isinstance(report, dict) or not (report.get("failed") or report.get("unknown")):
        return False
    why = _malformed(report)
    if why:
        _log.warning("No asset event: the apply's report is not one UpdateTableFieldsOperator pushes (%s)", why)
        return False
    grouped: dict[str, list[str]] = {}
    for name, outcome in report["outcomes"].items():
        grouped.setdefault(outcome, []).append(name)
    if not any(grouped.get(outcome) for outcome in CHANGING):
        return False
    ws_id, table = report["ws_id"], report["table"]
    asset = blink_table_asset(ws_id, table, blink_conn_id=blink_conn_id)
    add_alias_event(outlet_events, TABLES_ALIAS, asset, event_extra(ws_id, table, list(report["updated"]), grouped))
    return True


def _malformed(report: dict[str, Any]) -> str:
    """Return what makes an apply's report unusable for an event (empty when it is usable)."""
    for member in ("ws_id", "table"):
        if not isinstance(report.get(member), str) or not report[member]:
            return f"{member} is missing or not text"
    outcomes, updated = report.get("outcomes"), report.get("updated")
    if not isinstance(outcomes, dict) or not all(isinstance(o, str) for o in outcomes.values()):
        return "outcomes is not a mapping of field name to outcome"
    if not isinstance(updated, list):
        return "updated is not a list of field names"
    return ""


def _airflow_major() -> int:
    import airflow

    return int(airflow.__version__.split(".", 1)[0])


def _register_alias_on_airflow_2(name: str) -> None:
    from airflow.models.dataset import DatasetAliasModel  # Airflow 2 only; no public API writes an alias
    from airflow.utils.session import create_session

    with create_session() as session:  # the session's own query API: no SQLAlchemy import of ours
        if session.query(DatasetAliasModel.id).filter_by(name=name).first() is None:
            session.add(DatasetAliasModel(name=name))


def create_asset(
    *, host: str, ws_id: str | None = None, table: str | None = None, extra: dict[str, Any] | None = None
) -> Any:
    """Return the ``factory`` of the provider info: a table's asset, or the catalogue's without a table."""
    if ws_id is None and table is None:
        return blink_catalogue_asset(host=host, extra=extra)
    return blink_table_asset(ws_id or "", table or "", host=host, extra=extra)


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Any:
    """
    Return an OpenLineage dataset for a ``blink://`` asset.

    Namespace ``blink://<host>``, name ``<ws_id>/<table>`` or ``connection_types`` (the provider info's
    ``to_openlineage_converter``).
    """
    from airflow.providers.common.compat.openlineage.facet import Dataset

    parts = normalize_uri(urlsplit(asset.uri))
    return Dataset(namespace=f"{SCHEME}://{parts.netloc}", name=parts.path.lstrip("/"))


# -- OpenLineage (the [openlineage] extra; imported only when the OpenLineage provider asks) --------


def table_lineage(base_url: str, ws_id: str, table: str, fields: list[dict[str, Any]]) -> Any:
    """
    Return the lineage of a migration.

    The table as an output dataset, with a schema facet of the declared fields (name, type, and the display name as
    description).
    """
    from airflow.providers.common.compat.openlineage.facet import (
        Dataset,
        SchemaDatasetFacet,
        SchemaDatasetFacetFields,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    schema = SchemaDatasetFacet(
        fields=[
            SchemaDatasetFacetFields(
                name=str(entry["field"]), type=entry.get("type"), description=entry.get("display_name")
            )
            for entry in fields
        ]
    )
    output = Dataset(
        namespace=f"{SCHEME}://{asset_host(base_url)}", name=table_ref(ws_id, table), facets={"schema": schema}
    )
    return OperatorLineage(outputs=[output])


def storage_dataset(location: str) -> tuple[str, str]:
    """
    Return the OpenLineage ``(namespace, name)`` of a file the provider writes, by OpenLineage's naming conventions.

    ``file`` and the absolute path for a local file; ``<scheme>://<bucket>`` and the key for object storage
    (``s3://bucket``, ``gs://bucket``), without the Airflow connection id that ``ObjectStoragePath`` lets a URL carry
    (``s3://aws_default@bucket/key``).
    """
    parts = urlsplit(location)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a path, or a drive letter
        local = unquote(parts.path) if parts.scheme == "file" else location
        return "file", str(Path(local).absolute())
    bucket = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme.lower()}://{bucket}", parts.path.lstrip("/")


def catalogue_lineage(base_url: str, output_path: str | None) -> Any:
    """
    Return the lineage of a catalogue sync.

    The catalogue as an input dataset and, with an ``output_path``, the snapshot as an output dataset
    (:func:`storage_dataset`).
    """
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    inputs = [Dataset(namespace=f"{SCHEME}://{asset_host(base_url)}", name=CATALOGUE)]
    outputs = []
    if output_path:
        namespace, name = storage_dataset(output_path)
        outputs.append(Dataset(namespace=namespace, name=name))
    return OperatorLineage(inputs=inputs, outputs=outputs)
