"""
``blink-schema backups``: the backups beside a table's record, listed; the old ones deleted with ``--prune``.

Each line: the plan id (``blink-schema rollback --apply`` takes it), when it was saved, the fields it holds, its rows
and its size; a damaged backup is listed with why. ``--prune`` deletes the backups beyond the newest ``--keep`` (10
by default, at least 1: the newest is never deleted). Nothing is sent to Blink.
"""

from __future__ import annotations

import argparse
import json
import sys

from blinkops_provider.cli.connection import said
from blinkops_provider.cli.exit_status import EXIT_FAILED, EXIT_OK
from blinkops_provider.migrations import Backup, list_backups, prune_backups, record_location


def backups(args: argparse.Namespace) -> int:
    """Run ``backups``: 0, or 1 on a mistake (said in one line on stderr)."""
    try:
        record = record_location(args.record_path, args.ws_id, args.table)
        pruned = (
            (prune_backups(record) if args.keep is None else prune_backups(record, args.keep)) if args.prune else []
        )
        listed = list_backups(record)
    except Exception as err:  # one line, never a traceback
        print(f"blink-schema: {said(err, 'backups', 'blink_default')}", file=sys.stderr)
        return EXIT_FAILED
    if args.format == "json":
        shown = {"backups": [_json(one) for one in listed], "deleted": [one.location for one in pruned]}
        sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    for one in pruned:
        sys.stdout.write(f"deleted {one.plan_id} (saved {one.saved_at}): {one.location}\n")
    if not listed:
        sys.stdout.write(f"no backup beside {record}\n")
    for one in listed:
        sys.stdout.write(_line(one) + "\n")
    return EXIT_OK


def _line(one: Backup) -> str:
    if one.damaged:
        return f"{one.plan_id}  DAMAGED ({one.damaged})  {one.size:,} bytes"
    rollback = " (a rollback's)" if one.header.get("rollback_of") else ""
    fields = ", ".join(one.fields) or "none"
    valued = f"; values of {', '.join(one.valued)} in {one.rows:,} row(s)" if one.valued else ""
    return f"{one.plan_id}{rollback}  saved {one.saved_at}  fields {fields}{valued}  {one.size:,} bytes  {one.location}"


def _json(one: Backup) -> dict[str, object]:
    return {
        "plan_id": one.plan_id,
        "saved_at": one.saved_at,
        "fields": list(one.fields),
        "valued": list(one.valued),
        "rows": one.rows,
        "size": one.size,
        "location": one.location,
        "rollback_of": one.header.get("rollback_of"),
        "damaged": one.damaged,
    }
