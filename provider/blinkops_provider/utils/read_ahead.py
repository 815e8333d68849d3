"""Reading the next page of a walk while this one is worked on: the one place a walk is read ahead."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def read_ahead(items: Iterator[T], size: int, name: str) -> Iterator[list[T]]:
    """
    Return ``items`` a page of ``size`` at a time, the next page read on a thread of its own while this one is used.

    A walk then takes one walk's time, not a walk's and its work's; two pages are held at most. The walk is advanced by
    that one thread only, a page at a time; an error it raises is raised here, at the page it came with.

    :param name: the reading thread's name prefix (seen in a thread dump).
    """
    with ThreadPoolExecutor(1, thread_name_prefix=name) as reader:
        ahead = reader.submit(_page, items, size)
        while page := ahead.result():
            ahead = reader.submit(_page, items, size)
            yield page


def _page(items: Iterator[T], size: int) -> list[T]:
    return list(islice(items, size))
