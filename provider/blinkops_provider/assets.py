"""Blink's tables and catalogue as Airflow assets: a migration's outlet, a sync's inlet, and what
a DAG scheduled on them is told (see the docs' Assets and lineage page)."""

from __future__ import annotations

from blinkops_provider._assets import (
    CATALOGUE_ALIAS,
    TABLES_ALIAS,
    announce_applied,
    blink_catalogue_asset,
    blink_table_asset,
)

__all__ = ["CATALOGUE_ALIAS", "TABLES_ALIAS", "announce_applied", "blink_catalogue_asset", "blink_table_asset"]
