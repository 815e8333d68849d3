"""Operators for Blink's connection-type catalogue."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from blinkops_provider.assets import CATALOGUE_ALIAS, catalogue_lineage
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.operators._base import BaseBlinkOperator, with_alias
from blinkops_provider.utils.blink_api import MAX_LIMIT
from blinkops_provider.utils.inputs import check_paging
from blinkops_provider.utils.storage import replacing, storage_path

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

__all__ = ["ConnectionTypesToXComOperator"]

_LARGE_XCOM_ITEMS = 5_000
"""Above this many items returned to XCom, the operator warns and suggests ``output_path``."""


class ConnectionTypesToXComOperator(BaseBlinkOperator):
    """
    Fetch Blink's connection-type catalogue, every page of it, into XCom or a file.

    :param filter: an RQL filter, e.g. ``{"name": {"$like": "aws%"}}`` (a dict, or a JSON string
        as a template renders it).
    :param sort: field names, ``-name`` for descending.
    :param select: the fields to keep of each connection type.
    :param page_size: items per request, 1 to 1000.
    :param max_items: stop after this many items (all when None).
    :param output_path: where to write the whole catalogue as a JSON array: a local path or an
        object-storage URI (``s3://bucket/key.json``, anything Airflow's ``ObjectStoragePath``
        reads). Then only ``{"path", "count", "total", "paging"}`` goes to XCom, so a large
        catalogue stays out of the metadata database. A local path is written with the standard
        library; a symlink is written through to its target; a path that is a directory, device,
        pipe or socket is refused before any request.
    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for the hook (``timeout``, ``retry_limit``, ``retry_delay``).
    :returns: (XCom ``return_value``) the connection types as JSON-ready dicts, or with
        ``output_path`` the summary ``{"path": ..., "count": ..., "total": ..., "paging": ...}``,
        where ``paging`` is ``"keyset"`` (exact under change) or ``"offset"`` (the server does not
        honour the keyset condition; see :meth:`~blinkops_provider.hooks.blink.BlinkHook.walk_connection_types`).
        More than 5,000 items returned to XCom log a warning that suggests ``output_path``.
    :raises BlinkInputError: an invalid query, before any request.
    """

    template_fields: Sequence[str] = ("filter", "sort", "select", "output_path")
    template_fields_renderers = {"filter": "json"}
    ui_color = "#d8e9ff"

    def __init__(
        self,
        *,
        filter: dict[str, Any] | str | None = None,
        sort: list[str] | str | None = None,
        select: list[str] | str | None = None,
        page_size: int = MAX_LIMIT,
        max_items: int | None = None,
        output_path: str | None = None,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["inlets"] = with_alias(kwargs.get("inlets"), CATALOGUE_ALIAS)
        super().__init__(blink_conn_id=blink_conn_id, hook_params=hook_params, **kwargs)
        check_paging(page_size, max_items)
        self.filter = filter
        self.sort = sort
        self.select = select
        self.page_size = page_size
        self.max_items = max_items
        self.output_path = output_path

    def execute(self, context: Context) -> list[dict[str, Any]] | dict[str, Any]:
        target = storage_path(str(self.output_path)) if self.output_path else None  # checked before any request
        pages = self.hook.walk_connection_types(
            filter=self.filter,
            sort=self.sort,
            select=self.select,
            page_size=self.page_size,
            max_items=self.max_items,
        )
        if target is not None:
            return self._write(pages, target)
        items: list[dict[str, Any]] = []
        paging = "keyset"  # the walk's first mode, until a page says
        for page in pages:
            items.extend(page.items)
            paging = page.paging
        self.log.info("Fetched %d connection types (paging: %s)", len(items), paging)
        if len(items) > _LARGE_XCOM_ITEMS:
            self.log.warning(
                "Returning %d connection types through XCom, into Airflow's metadata database; "
                "give output_path to write large catalogues to a file instead",
                len(items),
            )
        return items

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """
        OpenLineage.

        The catalogue as an input dataset and, with ``output_path``, the snapshot as an output dataset (no request: the
        hook already knows its Base URL).
        """
        return catalogue_lineage(self.hook.base_url, str(self.output_path) if self.output_path else None)

    def _write(self, pages: Iterable[Any], target: Any) -> dict[str, Any]:
        """
        Stream the catalogue to a file of this run's own, then move it into place.

        Nothing half-written stays: on any failure the partial file is removed, and the target
        (a previous snapshot, say) is left as it was. Each item is written as the JSON object
        Blink sent, one per line, serialised by pydantic-core without a model. A local path is
        written with the standard library (no object-storage discovery); any other through
        Airflow's ``ObjectStoragePath``.
        """
        count, total, paging = 0, 0, "keyset"
        with replacing(target) as out:
            out.write(b"[")
            for page in pages:
                if page.items:
                    out.write(b",\n" if count else b"\n")
                    out.write(b",\n".join([to_json(item) for item in page.items]))  # UTF-8 JSON
                    count += len(page.items)
                total = page.total if page.total is not None else count
                paging = page.paging
            out.write(b"\n]\n")
        total = max(total, count)
        self.log.info("Wrote %d of %d connection types to %s (paging: %s)", count, total, target, paging)
        return {"path": str(target), "count": count, "total": total, "paging": paging}
