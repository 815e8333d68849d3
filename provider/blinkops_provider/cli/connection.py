"""
How ``pull`` and ``plan`` reach Blink, and how they say a mistake.

Blink is reached through the Airflow connection ``--conn-id`` (``blink_default``), looked up as ``airflow connections
get`` finds it, or through ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` when both are set (:func:`quiet_hook`). A mistake
is one line on stderr, the API key never in it (:func:`said`), its words on the connection in the terms the user gave
it.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from blinkops_provider.exceptions import (
    BlinkApiError,
    BlinkConfigurationError,
    BlinkInputError,
    BlinkLockedError,
)
from blinkops_provider.hooks.blink import BlinkHook

QUIET = logging.getLogger("blinkops_provider.cli.blink_schema")
"""The commands' hook logs nothing: a mistake is one line, said by the command (retries are not shown)."""
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False

SAID_ERRORS = (BlinkApiError, BlinkInputError, BlinkConfigurationError, BlinkLockedError, OSError)
"""The errors a command says as they say themselves; any other is named with its type."""


class QuietHook(BlinkHook):
    """The hook of a command: it logs nothing, and takes ``BLINK_BASE_URL``/``BLINK_API_KEY`` when both are set."""

    @property
    def log(self) -> Any:
        return QUIET

    @classmethod
    def get_connection(cls, conn_id: str) -> Any:
        """
        Return ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` when both are set (nothing is written to the environment).

        Else Airflow's connection.
        """
        if not connection_from_env():
            return airflow_connection(conn_id, super().get_connection)
        from airflow.providers.common.compat.sdk import Connection

        url, key = os.environ["BLINK_BASE_URL"], os.environ["BLINK_API_KEY"]
        return Connection(conn_id=conn_id, conn_type="blink", host=url, password=key)


def quiet_hook(conn_id: str, clock: Any = None) -> QuietHook:
    """
    Return a command's hook: the Airflow connection ``conn_id``, or ``BLINK_BASE_URL``/``BLINK_API_KEY``.

    :param clock: the request path's clock (the tests' records its waits).
    """
    return QuietHook(conn_id, clock=clock)


def airflow_connection(conn_id: str, lookup: Any) -> Any:
    """
    Return the Airflow connection ``conn_id``, as ``airflow connections get`` finds it.

    Through the hook's look-up, then, outside a task, in the metadata database (Airflow 3.3's look-up outside a task
    reads the environment and secrets backends only).

    :raises BlinkConfigurationError: no connection of that id, naming ``--conn-id`` and the
        ``BLINK_BASE_URL``/``BLINK_API_KEY`` way.
    """
    from airflow.providers.common.compat.sdk import AirflowNotFoundException

    try:
        return lookup(conn_id)
    except AirflowNotFoundException:
        pass
    try:
        from airflow.models.connection import Connection as StoredConnection  # the metadata DB's, as Airflow's CLI

        return StoredConnection.get_connection_from_secrets(conn_id)
    except Exception:  # not there either, or no metadata database: said below
        raise BlinkConfigurationError(
            f"the Airflow connection {conn_id!r} does not exist (looked up in the environment, the secrets backends "
            "and Airflow's metadata database); give --conn-id the id of a blink connection, or set BLINK_BASE_URL "
            "and BLINK_API_KEY"
        ) from None


def connection_from_env() -> bool:
    """Return whether the connection is given by ``BLINK_BASE_URL`` and ``BLINK_API_KEY`` (both set)."""
    return bool(os.environ.get("BLINK_BASE_URL") and os.environ.get("BLINK_API_KEY"))


_ENV_WORDS = (
    ("its API key (password)", "BLINK_API_KEY"),
    ("its Base URL (host)", "BLINK_BASE_URL"),
    ("put it in the password field (labelled 'API key' in the UI)", "set BLINK_API_KEY"),
)
"""How an error's advice on a connection's members reads when BLINK_BASE_URL and BLINK_API_KEY give it."""


def said_of_connection(message: str, conn_id: str) -> str:
    """
    Return an error's message, its words on the connection in the terms the user gave it.

    Only an error about the connection speaks of one: with ``BLINK_BASE_URL``/``BLINK_API_KEY`` set, of those
    variables (never of Airflow's connection, its password or its extras); an error about anything else is left alone.
    """
    named = f"the connection {conn_id!r}"
    if not connection_from_env() or named not in message:
        return message
    message = message.replace(named, "the connection that BLINK_BASE_URL and BLINK_API_KEY give")
    message = re.sub(r" and its header name \(extra header_name, now ('[^']*')\)", r" (sent in the header \1)", message)
    for words, env in _ENV_WORDS:
        message = message.replace(words, env)
    return message


def without_key(text: str) -> str:
    """Return ``text`` without the API key ``BLINK_API_KEY`` holds (a library's error might carry it)."""
    key = os.environ.get("BLINK_API_KEY") or ""
    return text.replace(key, "***") if len(key) >= 4 else text


def said(err: Exception, what: str, conn_id: str) -> str:
    """
    Return what went wrong, in one line, for ``blink-schema: ...``.

    The provider's error as it says it (with how the connection was given), or Airflow's or a library's, named with its
    type (``<what> failed (<type>: <why>)``); never the API key.
    """
    if isinstance(err, SAID_ERRORS):
        return without_key(said_of_connection(" ".join(str(err).split()), conn_id))
    why = " ".join(str(err).split())[:300] or "no detail"
    return f"{what} failed ({type(err).__name__}: {without_key(why)})"
