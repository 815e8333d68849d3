"""
The facts of Blink's API that the sandbox serves, as Blink publishes them (the sandbox shares no code with the client).

The provider's tests check that the client follows the same facts (``blinkops_provider.utils.blink_api``).
"""

from __future__ import annotations

API_PREFIX = "/api/v1"
"""The path of Blink's REST API below its host."""

DEFAULT_HEADER = "BLINK-API-KEY"
"""The header that carries the API key."""

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
"""The statuses of a fault that may pass: Blink's rate limit and its 5xx (the faults serve them)."""

MAX_LIMIT = 1000
"""The largest page Blink serves (an RQL ``limit`` is 1 to 1000, Blink's docs say)."""
