"""
``blink-schema``'s entry point: its arguments, and the command they choose.

The arguments are parsed, and ``--help`` or a mistake in them answered, before anything heavy is imported (Airflow takes
seconds to import, and more on a busy machine); each command is its own module, imported once it is chosen.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from blinkops_provider.cli.exit_status import EXIT_FAILED, EXIT_STATUSES

if TYPE_CHECKING:
    from blinkops_provider.hooks.blink import Clock

__all__ = ["main"]

_EPILOG = "exit status: " + "; ".join(f"{status} {meaning}" for status, meaning in EXIT_STATUSES.items())


class _Arguments(argparse.ArgumentParser):
    """The parser: a usage mistake exits 1 like every other mistake (argparse's own is 2, plan's "changes")."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_FAILED, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    """Return the command's arguments (imports nothing but argparse)."""
    parser = _Arguments(prog="blink-schema", description="Blink schema migrations from a shell.", epilog=_EPILOG)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Arguments)
    pull = commands.add_parser("pull", help="write a live table's declaration, which then plans all unchanged")
    pull.add_argument("ws_id", help="the workspace, e.g. ws-demo")
    pull.add_argument("table", nargs="?", help="Blink's name of the table (or its display name); or --all")
    pull.add_argument("--all", action="store_true", help="every table of the workspace (needs -o FOLDER)")
    pull.add_argument("-o", "--output", help="the file to write (default: stdout); with --all, a folder")
    pull.add_argument("--conn-id", default="blink_default", help="the Airflow connection (default blink_default)")
    pull.add_argument("--record-path", help="also write each table's record there (a folder ending in '/', or a file)")
    pull.add_argument("--force", action="store_true", help="replace files that exist")
    check = commands.add_parser(
        "validate", help="check declaration files (or fleet folders) offline, as a plan would: exit 0 valid, 1 not"
    )
    check.add_argument(
        "paths", nargs="+", metavar="PATH", help="a declaration file, or a folder of <ws_id>/<table>.json"
    )
    check.add_argument("--format", choices=("text", "github", "json"), default="text", help="how problems are printed")
    plan = commands.add_parser(
        "plan", help="print what applying a declaration would do to a live table (reads only; never writes)"
    )
    plan.add_argument("ws_id", nargs="?", help="the workspace, e.g. ws-demo")
    plan.add_argument("table", nargs="?", help="Blink's name of the table")
    plan.add_argument("declaration", nargs="?", help="the declaration file")
    plan.add_argument("--folder", help="every <ws_id>/<table>.json declaration of a fleet's folder, instead")
    plan.add_argument("--record-path", help="the drift baseline: the applies' record_path (read, never written)")
    plan.add_argument("--conn-id", default="blink_default", help="the Airflow connection (default blink_default)")
    plan.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="how the plan is printed")
    plan.add_argument("--out", help="also write the plan as JSON (the plan's XCom, fingerprint included) to this file")
    plan.add_argument(
        "--workflow-usage",
        choices=("review", "refuse"),
        default="review",
        help="a change that breaks an active Blink workflow's step: review (destructive, the default) or refuse",
    )
    plan.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="exit 0 when nothing would change, 2 when something would, 1 on error",
    )
    back = commands.add_parser(
        "rollback", help="print the rollback of an apply, planned from live state; --apply-now carries it out"
    )
    back.add_argument("ws_id", help="the workspace, e.g. ws-demo")
    back.add_argument("table", help="Blink's name of the table")
    back.add_argument("--record-path", required=True, help="the applies' record_path (their backups are beside it)")
    back.add_argument("--apply", metavar="PLAN_ID", help="the plan id of the apply to undo (default: the newest)")
    back.add_argument("--apply-now", action="store_true", help="carry the rollback out, approved by you (no prompt)")
    back.add_argument("--approved", metavar="FINGERPRINT", help="with --apply-now: refuse unless the plan is this one")
    back.add_argument("--overwrite-drift", action="store_true", help="put saved values back over a person's since")
    back.add_argument("--conn-id", default="blink_default", help="the Airflow connection (default blink_default)")
    back.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="how the plan is printed")
    back.add_argument("--out", help="also write the plan as JSON (its fingerprint included) to this file")
    back.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="without --apply-now: exit 0 when nothing would be put back, 2 when something would, 1 on error",
    )
    kept = commands.add_parser("backups", help="list the backups of a table's applies; --prune deletes old ones")
    kept.add_argument("ws_id", help="the workspace, e.g. ws-demo")
    kept.add_argument("table", help="Blink's name of the table")
    kept.add_argument("--record-path", required=True, help="the applies' record_path (their backups are beside it)")
    kept.add_argument("--prune", action="store_true", help="delete the backups beyond the newest --keep")
    kept.add_argument("--keep", type=int, help="with --prune: how many to keep, at least 1 (default 10)")
    kept.add_argument("--format", choices=("text", "json"), default="text", help="how the list is printed")
    listing = commands.add_parser("locks", help="list the locks held under a records location")
    listing.add_argument("records", help="the record_path of the applies (a folder ending in '/', or a record)")
    unlock = commands.add_parser("unlock", help="release one lock by its id (its apply is gone)")
    unlock.add_argument("records", help="the record_path of the applies (a folder ending in '/', or a record)")
    unlock.add_argument("table", help="WS_ID/TABLE, as the refusal or 'blink-schema locks' prints it")
    unlock.add_argument("lock_id", help="the lock's id, as the refusal or 'blink-schema locks' prints it")
    return parser


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    """
    Run ``blink-schema``: the arguments parsed here, then the command; its exit status (``exit_status``).

    :param argv: the arguments a shell would give (default: the process's).
    :param clock: the waits between the hook's attempts (``pull``, ``plan`` and ``rollback``), the real ones by
        default; a script or a test that gives its own records them instead of sleeping.
    """
    args = parser().parse_args(argv)
    args.clock = clock
    if args.command == "validate":  # offline: no Airflow, no connection
        from blinkops_provider.cli.validate import validate

        return validate(args.paths, args.format)
    # The command prints its own output only: Airflow's import-time warnings (2.11's deprecations) and
    # its info logs (3.1's alembic plugins) are not that; this process's Airflow logs errors only.
    os.environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "ERROR"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from blinkops_provider.cli import backups, locks, plan, pull, rollback  # (Airflow is imported only now)

    logging.getLogger("airflow.models.crypto").setLevel(logging.ERROR)  # "empty cryptography key": nothing is stored
    commands = {"pull": pull.pull, "plan": plan.plan, "rollback": rollback.rollback_command}
    commands |= {"backups": backups.backups, "locks": locks.locks, "unlock": locks.unlock}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
