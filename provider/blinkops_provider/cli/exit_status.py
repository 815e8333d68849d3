"""The one exit status rule of every ``blink-schema`` command, said by ``--help`` and the docs (``docs/ci.md``)."""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_CHANGES = 0, 1, 2
EXIT_STATUSES = {
    EXIT_OK: "done (with plan --detailed-exitcode: nothing would change; validate: every declaration is valid)",
    EXIT_FAILED: "a mistake or a failure, said in one line on stderr (a usage mistake, an invalid declaration too)",
    EXIT_CHANGES: "plan --detailed-exitcode only: something would change",
}
"""The one exit status rule of every command (Terraform's, for plan's ``--detailed-exitcode``)."""
