"""
``blink-schema plan``: what applying each declaration would do, printed; it reads Blink and the record, writes nothing.

One table (``WS_ID TABLE DECLARATION``) or a fleet's folder (``--folder``), printed as text, Markdown (a pull request's
comment) or JSON (the plan's XCom), and written as JSON with ``--out``. With ``--detailed-exitcode`` the exit status
says whether anything would change (``exit_status.EXIT_STATUSES``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

from blinkops_provider.cli.connection import quiet_hook, said
from blinkops_provider.cli.exit_status import EXIT_CHANGES, EXIT_FAILED, EXIT_OK
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import fleet_review, plan_markdown, plan_schema, plan_xcom
from blinkops_provider.models import read_declaration


def plan(args: argparse.Namespace) -> int:
    """
    Run ``plan``: 0 (with ``--detailed-exitcode``: 0 nothing would change, 2 something would), or 1 on a mistake.

    A mistake is said in one line on stderr, the API key never shown.
    """
    logging.getLogger("airflow.hooks.base").setLevel(logging.WARNING)
    try:
        targets = _targets(args)
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the plan alone, whatever logs
            hook = quiet_hook(args.conn_id, clock=args.clock)
            plans = [
                plan_schema(
                    hook,
                    ws_id,
                    table,
                    _declared(path),
                    record_path=args.record_path,
                    workflow_usage=args.workflow_usage,
                )
                for ws_id, table, path in targets
            ]
        _print_plans([plan_xcom(one) for one in plans], args)
    except Exception as err:  # one line, never a traceback, never the key
        print(f"blink-schema: {said(err, 'plan', args.conn_id)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_CHANGES if args.detailed_exitcode and any(one.has_changes for one in plans) else EXIT_OK


def _targets(args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """
    Return ``(ws_id, table, declaration file)`` of each table to plan.

    The three arguments, or each ``<ws_id>/<table>.json`` of ``--folder``.
    """
    given = [args.ws_id, args.table, args.declaration]
    if args.folder:
        if any(given):
            raise BlinkInputError("give WS_ID TABLE DECLARATION, or --folder FOLDER (not both)")
        found = sorted(Path(args.folder).glob("*/*.json"))
        if not found:
            raise BlinkInputError(f"{args.folder} holds no <ws_id>/<table>.json declaration (the fleet's layout)")
        return [(path.parent.name, path.stem, path) for path in found]
    if not all(given):
        raise BlinkInputError("give WS_ID TABLE DECLARATION (the workspace, Blink's name of the table, the file)")
    return [(args.ws_id, args.table, Path(args.declaration))]


def _declared(path: Path) -> Any:
    """Return a declaration file's content, read as JSON by the plan (which names the file in its errors)."""
    return read_declaration(path.read_bytes(), source=f"declaration file {str(path)!r}")


def _print_plans(plans: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Print the plans in ``--format`` on stdout; with ``--out``, write their JSON in that file too."""
    shown: Any = plans[0] if len(plans) == 1 else plans
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.format == "json":
        sys.stdout.write(json.dumps(shown, indent=2, ensure_ascii=False) + "\n")
    elif args.format == "markdown":
        sys.stdout.write((plan_markdown(plans[0]) if len(plans) == 1 else fleet_review(plans)) + "\n")
    else:
        sys.stdout.write("\n\n".join(str(one["text"]) for one in plans) + "\n")
