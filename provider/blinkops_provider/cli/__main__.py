"""``python -m blinkops_provider.cli``: ``blink-schema``."""

from __future__ import annotations

import sys

from blinkops_provider.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
