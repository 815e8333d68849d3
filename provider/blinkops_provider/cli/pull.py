"""
``blink-schema pull``: a live table's declaration, which then plans all ``unchanged`` (``migrations._pull``).

One table, or every table of a workspace (``--all -o FOLDER``, as ``FOLDER/<ws_id>/<table>.json``); ``--record-path``
also writes each table's record, as if the declaration had just been applied (the drift baseline). The declaration goes
to stdout (or the files), everything else to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from pathlib import Path

from blinkops_provider.cli.connection import quiet_hook, said
from blinkops_provider.cli.exit_status import EXIT_FAILED, EXIT_OK
from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.migrations import record_location
from blinkops_provider.migrations._pull import Pulled, pull_table, pull_workspace, record_pulled


def pull(args: argparse.Namespace) -> int:
    """
    Run ``pull``: the declaration of one table, or of every table of a workspace.

    Each mistake is one line on stderr (exit 1), the API key never shown.
    """
    logging.getLogger("airflow.hooks.base").setLevel(logging.WARNING)  # Airflow 2's "Retrieving connection"
    try:
        target = _output_of(args)
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the declaration alone, whatever logs
            hook = quiet_hook(args.conn_id, clock=args.clock)
            pulled = pull_workspace(hook, args.ws_id) if args.all else [pull_table(hook, args.ws_id, args.table)]
        for one, output in zip(pulled, _outputs(args, target, pulled), strict=True):
            _write(one, output)
            if args.record_path:
                where = record_pulled(hook, one, args.record_path)
                print(f"blink-schema: the record of {one.ws_id}/{one.table} written to {where}", file=sys.stderr)
    except Exception as err:  # one line, never a traceback, never the key
        print(f"blink-schema: {said(err, 'pull', args.conn_id)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _output_of(args: argparse.Namespace) -> str | None:
    """Return the output (a file, a folder, or None for stdout), once the arguments are known to agree."""
    if args.all == bool(args.table):
        raise BlinkInputError("give a TABLE, or --all for every table of the workspace (not both)")
    if args.all and not args.output:
        raise BlinkInputError("--all writes one file per table: give -o FOLDER")
    if not args.ws_id.strip():
        raise BlinkInputError("give the workspace id (WS_ID), e.g. ws-demo")
    return str(args.output) if args.output else None


def _outputs(args: argparse.Namespace, target: str | None, pulled: list[Pulled]) -> list[Path | None]:
    """Return where each table's declaration goes; files that exist are refused (all checked before any is written)."""
    if target is None:
        return [None]
    if args.all:
        paths = [Path(record_location(f"{target.rstrip('/')}/", one.ws_id, one.table)) for one in pulled]
    else:
        paths = [Path(target)]
    taken = [str(path) for path in paths if path.exists()]
    if taken and not args.force:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise BlinkInputError(f"{shown} exist(s): nothing was written; give --force to replace")
    return list(paths)


def _write(pulled: Pulled, output: Path | None) -> None:
    """Write one declaration to ``output`` or stdout; what it leaves out is said on stderr."""
    text = json.dumps(pulled.declaration, indent=2, ensure_ascii=False) + "\n"
    for name, attributes in pulled.unsettable.items():
        print(
            f"blink-schema: field {name!r} of {pulled.ws_id}/{pulled.table} holds attribute(s) "
            f"{', '.join(map(repr, attributes))}, which a declaration may not set: left out; every apply keeps them",
            file=sys.stderr,
        )
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    fields = len(pulled.declaration["fields"])
    print(f"blink-schema: {pulled.ws_id}/{pulled.table} ({fields} fields) written to {output}", file=sys.stderr)
