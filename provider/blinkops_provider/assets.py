"""Blink tables and the connection-type catalogue as Airflow assets: the ``blink://`` URI scheme.

- ``blink://<host>/<ws_id>/<table>``: a table (its schema, which the migration operators change);
- ``blink://<host>/connection_types``: the connection-type catalogue.

``<host>`` is the host of the connection's Base URL, lowercased, with its port unless it is 443;
``/api/v1`` is not part of it. ``<ws_id>`` and ``<table>`` are percent-encoded, so any table name
fits one path segment. The scheme is registered with Airflow through the provider info
(``asset-uris``), which runs :func:`normalize_uri` on every ``blink://`` asset a DAG declares.

The operators learn the host when they run, so they declare an asset *alias* as their outlet
(:data:`TABLES_ALIAS`, :data:`CATALOGUE_ALIAS`) and add the event of the concrete asset through
it. A DAG scheduled on :func:`blink_table_asset` runs after such an event, as on any asset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, quote, unquote, urlsplit

from blinkops_provider import API_PREFIX

__all__ = [
    "CATALOGUE_ALIAS",
    "SCHEME",
    "TABLES_ALIAS",
    "asset_host",
    "blink_catalogue_asset",
    "blink_table_asset",
    "convert_asset_to_openlineage",
    "create_asset",
    "normalize_uri",
    "table_uri",
]

SCHEME = "blink"
CATALOGUE = "connection_types"
DEFAULT_PORT = 443

TABLES_ALIAS = "blink-tables"
"""The asset alias the table operators emit their table's event through (their default outlet)."""

CATALOGUE_ALIAS = "blink-catalogue"
"""The asset alias of the catalogue: the catalogue operator's default inlet, and the alias the
nightly example announces the catalogue's diff through."""

_FORMS = f"blink://<host>/<ws_id>/<table> or blink://<host>/{CATALOGUE}"


def asset_host(base_url: str) -> str:
    """The ``<host>`` of a Base URL: lowercased, with its port unless it is 443.

    :raises ValueError: the URL has no host.
    """
    parts = urlsplit(base_url if "://" in base_url else f"https://{base_url}")
    return _netloc(parts, base_url)


def _netloc(parts: SplitResult, shown: str) -> str:
    if "@" in parts.netloc:  # checked first: the URI is not echoed, it may hold a secret
        raise ValueError(f"a Blink asset URI that carries credentials (user:password@) is refused; it is {_FORMS}")
    if not parts.hostname:
        raise ValueError(f"{shown!r} has no host; a Blink asset URI is {_FORMS}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{shown!r} has an invalid port; a Blink asset URI is {_FORMS}") from None
    return parts.hostname if port in (None, DEFAULT_PORT) else f"{parts.hostname}:{port}"


def normalize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's hook for ``blink://`` URIs: the host lowercased, port 443 and ``/api/v1``
    dropped, and the path checked.

    :raises ValueError: not one of the two forms (Airflow then refuses the asset, with this message).
    """
    shown = uri.geturl()
    netloc = _netloc(uri, shown)
    if uri.query or uri.fragment:
        raise ValueError(f"{shown!r} has a query or fragment; a Blink asset URI is {_FORMS}")
    path = uri.path.rstrip("/")
    if path == API_PREFIX or path.startswith(f"{API_PREFIX}/"):
        path = path[len(API_PREFIX) :]
    segments = path.lstrip("/").split("/")
    if segments != [CATALOGUE] and (len(segments) != 2 or not all(map(unquote, segments))):
        raise ValueError(f"{shown!r} names neither a table nor the catalogue; a Blink asset URI is {_FORMS}")
    return SplitResult(SCHEME, netloc, "/" + "/".join(segments), "", "")


def table_uri(host: str, ws_id: str, table: str) -> str:
    """``blink://<host>/<ws_id>/<table>``, percent-encoded."""
    if not ws_id or not table:
        raise ValueError("a Blink table asset needs a workspace id and a table name")
    return f"{SCHEME}://{asset_host(host)}/{quote(ws_id, safe='')}/{quote(table, safe='')}"


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
    """The asset of a Blink table, e.g. to schedule a DAG on its schema's changes::

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
    """The asset of a Blink's connection-type catalogue, ``blink://<host>/connection_types``
    (``host`` as for :func:`blink_table_asset`)."""
    from airflow.providers.common.compat.sdk import Asset

    return Asset(uri=f"{SCHEME}://{_host(host, blink_conn_id)}/{CATALOGUE}", extra=extra or {})


def create_asset(
    *, host: str, ws_id: str | None = None, table: str | None = None, extra: dict[str, Any] | None = None
) -> Any:
    """The ``factory`` of the provider info: a table's asset, or the catalogue's without a table."""
    if ws_id is None and table is None:
        return blink_catalogue_asset(host=host, extra=extra)
    return blink_table_asset(ws_id or "", table or "", host=host, extra=extra)


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Any:
    """An OpenLineage dataset for a ``blink://`` asset: namespace ``blink://<host>``, name
    ``<ws_id>/<table>`` or ``connection_types`` (the provider info's ``to_openlineage_converter``)."""
    from airflow.providers.common.compat.openlineage.facet import Dataset

    parts = normalize_uri(urlsplit(asset.uri))
    return Dataset(namespace=f"{SCHEME}://{parts.netloc}", name=unquote(parts.path.lstrip("/")))


# -- OpenLineage (the [openlineage] extra; imported only when the OpenLineage provider asks) --------


def table_lineage(base_url: str, ws_id: str, table: str, fields: list[dict[str, Any]]) -> Any:
    """The lineage of a migration: the table as an output dataset, with a schema facet of the
    declared fields (name, type, and the display name as description)."""
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
    host = asset_host(base_url)
    output = Dataset(namespace=f"{SCHEME}://{host}", name=f"{ws_id}/{table}", facets={"schema": schema})
    return OperatorLineage(outputs=[output])


def catalogue_lineage(base_url: str, output_path: str | None) -> Any:
    """The lineage of a catalogue sync: the catalogue as an input dataset and, with an
    ``output_path``, the snapshot as an output dataset named as OpenLineage names that storage
    (``file`` and the path; ``s3://bucket`` and the key; ``<scheme>://<bucket>`` and the path)."""
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    inputs = [Dataset(namespace=f"{SCHEME}://{asset_host(base_url)}", name=CATALOGUE)]
    outputs = []
    if output_path:
        parts = urlsplit(output_path)
        if parts.scheme in ("", "file") or len(parts.scheme) == 1:
            local = unquote(parts.path) if parts.scheme == "file" else output_path
            outputs.append(Dataset(namespace="file", name=str(Path(local).absolute())))
        else:
            outputs.append(Dataset(namespace=f"{parts.scheme}://{parts.netloc}", name=parts.path.lstrip("/")))
    return OperatorLineage(inputs=inputs, outputs=outputs)
