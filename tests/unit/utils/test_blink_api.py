"""The facts of Blink's API (blinkops_provider.utils.blink_api): the client and the sandbox, which share no code (the
sandbox is its own distribution, #73 item 7), follow the same published ones. Private imports of both: the facts
are not public API."""

from __future__ import annotations

from blinkops_provider.utils import blink_api as client
from blinkops_sandbox import _blink_api as sandbox


def test_the_client_and_the_sandbox_follow_the_same_published_facts() -> None:
    facts = ("API_PREFIX", "DEFAULT_HEADER", "TRANSIENT_STATUSES", "MAX_LIMIT")
    assert {fact: getattr(client, fact) for fact in facts} == {fact: getattr(sandbox, fact) for fact in facts}
    assert client.API_PREFIX == "/api/v1" and client.DEFAULT_HEADER == "BLINK-API-KEY"
