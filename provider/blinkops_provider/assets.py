"""Blink's tables and catalogue as Airflow assets: a migration's outlet, a sync's inlet, and what
a DAG scheduled on them is told (see the docs' Assets and lineage page)."""

from __future__ import annotations

from typing import Final

from blinkops_provider import _assets
from blinkops_provider._assets import announce_applied, blink_catalogue_asset, blink_table_asset

TABLES_ALIAS: Final = _assets.TABLES_ALIAS
"""The asset alias the table operators emit their table's event through (their default outlet)."""

CATALOGUE_ALIAS: Final = _assets.CATALOGUE_ALIAS
"""The asset alias of the catalogue: the catalogue operator's default inlet, and the alias the
nightly example announces the catalogue's diff through."""

__all__ = ["CATALOGUE_ALIAS", "TABLES_ALIAS", "announce_applied", "blink_catalogue_asset", "blink_table_asset"]
