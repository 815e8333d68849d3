"""What both Blink operators share: the connection, ``hook_params`` and the lazily built hook."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import BaseOperator

from blinkops_provider.assets import event_extra
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.retry_policy import default_retry_policy

HOOK_PARAMS = tuple(
    name
    for name in inspect.signature(BlinkHook.__init__).parameters
    if name not in ("self", "blink_conn_id", "clock", "session_factory")
)
"""What ``hook_params`` may set: the keyword arguments of :class:`BlinkHook` a DAG author tunes
(not the collaborators tests inject)."""


def with_alias(declared: Any, name: str) -> list[Any]:
    """Return the inlets or outlets given, with the asset alias ``name`` added when it is not there."""
    from airflow.providers.common.compat.sdk import AssetAlias

    items = list(declared) if isinstance(declared, (list, tuple)) else [] if declared is None else [declared]
    if not any(isinstance(item, AssetAlias) and item.name == name for item in items):
        items.append(AssetAlias(name))
    return items


TABLE_PAGE_KEY = "blink_table_page"
"""The XCom key under which a table task keeps the address of its table in Blink's UI."""


class BaseBlinkOperator(BaseOperator):
    """
    Base of the Blink operators.

    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for :class:`~blinkops_provider.hooks.blink.BlinkHook`
        (``timeout``, ``retry_limit``, ``retry_delay``).

    On Airflow 3.3 and later the operators take
    :class:`~blinkops_provider.retry_policy.BlinkRetryPolicy` as their ``retry_policy`` unless
    given one (``retry_policy=None`` turns it off).
    """

    template_fields: Sequence[str] = ()

    def __init__(
        self,
        *,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if "retry_policy" not in kwargs and (policy := default_retry_policy()) is not None:
            kwargs["retry_policy"] = policy  # Airflow 3.3+: Blink's failures decide the task's retries
        super().__init__(**kwargs)
        self.blink_conn_id = blink_conn_id
        self.hook_params = hook_params or {}
        unknown = sorted(set(self.hook_params) - set(HOOK_PARAMS)) if isinstance(self.hook_params, dict) else None
        if unknown is None or unknown:
            what = f"unknown name(s) {', '.join(map(repr, unknown))}" if unknown else "not a dict"
            raise BlinkInputError(f"hook_params: {what}; allowed: {', '.join(HOOK_PARAMS)}")

    @cached_property
    def hook(self) -> BlinkHook:
        """The hook, made on first use (never at DAG-parse time)."""
        return BlinkHook(blink_conn_id=self.blink_conn_id, **self.hook_params)

    def keep_table_page(self, context: Any, ws_id: str, table: str) -> None:
        """
        Keep the table's address in Blink's UI for the "Blink table" link.

        See :class:`~blinkops_provider.operators.tables.BlinkTableLink`. Never fails the task: a
        connection that cannot be read fails it in its first request, with its own message.
        """
        ti = context.get("ti")
        if ti is None:  # a bare execute() outside Airflow
            return
        try:
            ti.xcom_push(key=TABLE_PAGE_KEY, value=self.hook.table_page(ws_id, table))
        except Exception as err:
            self.log.warning("No link to the table in Blink's UI (%s: %s)", type(err).__name__, err)

    def announce_table(
        self,
        context: Any,
        ws_id: str,
        table: str,
        applied: list[str],
        planned: dict[str, list[str]] | None = None,
        *,
        backup: str = "",
        workflows: dict[str, list[str]] | None = None,
    ) -> None:
        """
        Add the event of the table's ``blink://`` asset, its extra naming the fields applied, the backup, the workflows.

        On that asset when the task declares it among its outlets (Airflow then lists the task as a producer), else
        through the operator's alias :data:`~blinkops_provider.assets.TABLES_ALIAS`. Airflow records it when the task
        succeeds. A failure here is logged, never raised: the fields were applied, and the task must not fail for its
        announcement.
        """
        from blinkops_provider.assets import TABLES_ALIAS, add_alias_event, blink_table_asset

        events = context.get("outlet_events")
        if events is None:  # a bare execute() outside Airflow
            return
        try:
            asset = blink_table_asset(ws_id, table, host=self.hook.base_url)
            extra = event_extra(ws_id, table, applied, planned, backup=backup, workflows=workflows)
            declared = next((item for item in self.outlets if getattr(item, "uri", None) == asset.uri), None)
            if declared is not None:
                events[declared].extra.update(extra)
            else:
                add_alias_event(events, TABLES_ALIAS, asset, extra)
        except Exception as err:  # the apply succeeded: its announcement must not undo that
            self.log.warning(
                "The table's asset event was not added (%s: %s); the fields were applied", type(err).__name__, err
            )
