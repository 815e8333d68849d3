"""How the API key is kept out of everything the provider says: an answer may echo the key whole,
escaped or in pieces, and what the provider quotes of it (messages, logs, XCom) is scrubbed first."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import quote, quote_plus


def key_forms(key: str) -> tuple[str, ...]:
    """The forms a key may come back in, longest first: raw, JSON-escaped (``/`` as ``\\/`` too,
    non-ASCII as ``\\uXXXX``), percent-encoded (either case, ``+`` for spaces), and HTML-escaped."""
    forms = {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1], html.escape(key)}
    forms |= {form.replace("/", "\\/") for form in list(forms)}
    for encoded in (quote(key, safe=""), quote_plus(key, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    return tuple(sorted((form for form in forms if form), key=len, reverse=True))


KEY_RUN = 8
"""The shortest piece of the key that is removed from what the provider quotes of an answer."""


def without_key_runs(text: str, key: str) -> str:
    """``text`` with every run of :data:`KEY_RUN` or more consecutive characters of ``key``
    replaced by ``***`` (each run as long as it goes on matching the key)."""
    if len(key) < KEY_RUN or len(text) < KEY_RUN:
        return text
    starts: dict[str, list[int]] = {}
    for k in range(len(key) - KEY_RUN + 1):
        starts.setdefault(key[k : k + KEY_RUN], []).append(k)
    out, i = [], 0
    while i < len(text):
        longest = max((_run(text, i, key, k) for k in starts.get(text[i : i + KEY_RUN], ())), default=0)
        out.append("***" if longest else text[i])
        i += longest or 1
    return "".join(out)


def _run(text: str, i: int, key: str, k: int) -> int:
    """How far ``text`` from ``i`` goes on matching ``key`` from ``k``."""
    n = 0
    while i + n < len(text) and k + n < len(key) and text[i + n] == key[k + n]:
        n += 1
    return n


class KeyScrubber:
    """``scrubber(text)``: ``text`` with the API key replaced by ``***`` in every form a server may
    echo it (:func:`key_forms`), and any run of :data:`KEY_RUN` or more consecutive characters of
    it (a piece Blink quotes)."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._forms = key_forms(key)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, "***")
        return without_key_runs(text, self._key)

    def __repr__(self) -> str:
        return "KeyScrubber(***)"
