"""
``blink-schema rollback``: the rollback of one apply, planned from live state and printed; applied with ``--apply-now``.

It reads the apply's backup beside the table's record (``--apply PLAN_ID``, or the newest apply's), Blink's fields and
its rows, and prints the plan as ``plan`` does (text, Markdown or JSON, ``--out``, ``--detailed-exitcode``). With
``--apply-now`` it carries the plan out, the person at the terminal being its approver (their login name, in the
rollback's own backup); ``--approved FINGERPRINT`` refuses it when it is no longer the plan that was reviewed.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import logging
import sys
from pathlib import Path
from typing import Any

from blinkops_provider.cli.connection import quiet_hook, said
from blinkops_provider.cli.exit_status import EXIT_CHANGES, EXIT_FAILED, EXIT_OK
from blinkops_provider.migrations import RollbackRequest, plan_rollback, rollback


def rollback_command(args: argparse.Namespace) -> int:
    """
    Run ``rollback``: 0 (with ``--detailed-exitcode``: 0 nothing to put back, 2 something), or 1 on a mistake.

    A mistake is said in one line on stderr, the API key never shown.
    """
    logging.getLogger("airflow.hooks.base").setLevel(logging.WARNING)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the plan alone, whatever logs
            hook = quiet_hook(args.conn_id, clock=args.clock)
            request = _request(args, hook)
            planned = plan_rollback(hook, request)
            shown = planned.to_xcom()
            done = rollback(hook, request).to_xcom() if args.apply_now else None
        _print(shown, done, args)
    except Exception as err:  # one line, never a traceback, never the key
        print(f"blink-schema: {said(err, 'rollback', args.conn_id)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_CHANGES if args.detailed_exitcode and shown["has_changes"] and done is None else EXIT_OK


def _request(args: argparse.Namespace, hook: Any) -> RollbackRequest:
    """Return the rollback's request; with ``--apply-now``, approved by the person at the terminal, now."""
    approval = None
    if args.apply_now:
        approval = {"approved_by": getpass.getuser(), "approved_at": hook.clock.now().isoformat(timespec="seconds")}
    return RollbackRequest(
        args.ws_id,
        args.table,
        args.record_path,
        apply=args.apply,
        approved=args.approved,
        approval=approval,
        overwrite_drift=args.overwrite_drift,
    )


def _print(shown: dict[str, Any], done: dict[str, Any] | None, args: argparse.Namespace) -> None:
    """Print the plan in ``--format`` on stdout (and what was done, with ``--apply-now``); ``--out`` its JSON too."""
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.format == "json":
        sys.stdout.write(json.dumps({**shown, "done": done} if done else shown, indent=2, ensure_ascii=False) + "\n")
        return
    if args.format == "markdown":
        sys.stdout.write(f"**Rollback `{shown['fingerprint']}`** for {shown['ws_id']}/{shown['table']}\n\n")
    sys.stdout.write(str(shown["text"]) + "\n")
    if done is not None:
        restored = sum(done["restored"].values())
        sys.stdout.write(
            f"\nRolled back: {restored:,} row(s) restored; re-created "
            + (", ".join(f"{saved!r} as {name!r}" for saved, name in done["names"].items()) or "none")
            + f"; its own backup (blink-schema rollback --apply {done['fingerprint']} undoes it): {done['backup']}\n"
        )
