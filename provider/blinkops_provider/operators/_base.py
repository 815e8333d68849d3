"""What both Blink operators share: the connection, ``hook_params`` and the lazily built hook."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import BaseOperator

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.hooks.blink import BlinkHook

HOOK_PARAMS = tuple(
    name
    for name in inspect.signature(BlinkHook.__init__).parameters
    if name not in ("self", "blink_conn_id", "clock", "session_factory")
)
"""What ``hook_params`` may set: the keyword arguments of :class:`BlinkHook` a DAG author tunes
(not the collaborators tests inject)."""


class BaseBlinkOperator(BaseOperator):
    """Base of the Blink operators.

    :param blink_conn_id: the ``blink`` connection to use.
    :param hook_params: keyword arguments for :class:`~blinkops_provider.hooks.blink.BlinkHook`
        (``timeout``, ``retry_limit``, ``retry_delay``).
    """

    template_fields: Sequence[str] = ()

    def __init__(
        self,
        *,
        blink_conn_id: str = BlinkHook.default_conn_name,
        hook_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
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
