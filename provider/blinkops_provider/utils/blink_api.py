"""Facts of Blink's API that both the client and the sandbox follow (no code of either)."""

from __future__ import annotations

API_PREFIX = "/api/v1"
"""The path of Blink's REST API below its host; the client adds it, the sandbox serves under it."""

DEFAULT_HEADER = "BLINK-API-KEY"
"""The header that carries the API key unless the connection names another."""

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
"""The statuses of a fault that may pass: Blink's rate limit and its 5xx. The client retries them
(its status table, ``_statuses``); the sandbox's faults serve them."""

MAX_LIMIT = 1000
"""The largest page Blink serves (an RQL ``limit`` is 1 to 1000, Blink's docs say)."""

MAX_BODY = 32 << 20
"""The largest body (in bytes, once decompressed) an answer may have: a page of 1,000 connection
types is about 1 MiB. A larger one is refused as soon as the bound is passed, so a small
compressed answer that inflates without end costs at most this much memory."""
