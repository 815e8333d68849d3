"""Apache Airflow provider for Blink (BlinkOps)."""

from __future__ import annotations

from typing import Any

from blinkops_provider.utils.blink_api import DEFAULT_HEADER

__version__ = "0.1.0"
"""The provider's version."""

__all__ = ["__version__", "get_provider_info"]


_BLINK_URIS = {
    "schemes": ["blink"],
    "handler": "blinkops_provider.assets.normalize_uri",
    "factory": "blinkops_provider.assets.create_asset",
    "to_openlineage_converter": "blinkops_provider.assets.convert_asset_to_openlineage",
}


def _connection_type() -> dict[str, Any]:
    """Return the ``blink`` connection type: its hook, its form's extra fields and their labels."""
    return {
        "connection-type": "blink",
        "hook-class-name": "blinkops_provider.hooks.blink.BlinkHook",
        "hook-name": "Blink",
        "conn-fields": {
            "header_name": {
                "label": "API key header",
                "description": "Name of the header that carries the API key.",
                "schema": {"type": ["string", "null"], "default": DEFAULT_HEADER},
            },
            "verify_ssl": {
                "label": "Verify TLS certificates",
                "schema": {"type": ["boolean", "null"], "default": True},
            },
            "timeout": {
                "label": "Timeout (seconds)",
                "description": "Seconds to connect and to read, e.g. 30; or both apart, e.g. 5, 120. Empty: 10, 60.",
                "schema": {"type": ["string", "null"]},
            },
            "table_page": {
                "label": "Table page",
                "description": "Where Blink's UI shows a table, a path with {ws_id} and {table}, for the "
                "tasks' 'Blink table' link. Empty: Blink's UI at the Base URL's host.",
                "schema": {"type": ["string", "null"]},
            },
        },
        "ui-field-behaviour": {
            "hidden-fields": ["login", "schema"],
            "relabeling": {"host": "Base URL", "password": "API key", "port": "Port (empty: the Base URL's)"},
            "placeholders": {"host": "https://app.blinkops.com"},
        },
    }


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow (the ``apache_airflow_provider`` entry point)."""
    return {
        "package-name": "airflow-provider-blinkops",
        "name": "Blink",
        "description": "Blink (BlinkOps) workflow-automation platform: table fields and connection types.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Blink",
                "external-doc-url": "https://docs.blinkops.com/docs/api",
                "tags": ["service"],
            }
        ],
        "hooks": [{"integration-name": "Blink", "python-modules": ["blinkops_provider.hooks.blink"]}],
        "operators": [
            {
                "integration-name": "Blink",
                "python-modules": [
                    "blinkops_provider.operators.tables",
                    "blinkops_provider.operators.connection_types",
                    "blinkops_provider.operators.rollback",
                ],
            }
        ],
        "extra-links": ["blinkops_provider.operators.tables.BlinkTableLink"],
        # The blink:// scheme: "asset-uris" on Airflow 3, "dataset-uris" on 2.11.
        "asset-uris": [_BLINK_URIS],
        "dataset-uris": [_BLINK_URIS],
        "connection-types": [_connection_type()],
    }
