"""The nightly sync's snapshots of Blink's connection-type catalogue and the diff between two of
them (see the nightly example)."""

from __future__ import annotations

from blinkops_provider._catalogue import record_catalogue_diff, snapshot_name

__all__ = ["record_catalogue_diff", "snapshot_name"]
