"""Worker threads for concurrent API calls, each call on an HTTP session no other thread uses.

``requests.Session`` is not safe to share between threads that use it at the same moment. The
pool makes one session per worker and lends one to each call for its duration, so at most one
thread uses a session at a time. All calls still go through the hook's one request path, so the
retry policy and the shared backoff (:class:`~blinkops_provider.hooks._retry.SharedPause`) apply.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import requests

T = TypeVar("T")


class WorkerPool:
    """``workers`` threads and as many HTTP sessions (made by ``new_session``), closed on exit.

    ``submit(call, *args)`` runs ``call(*args, session=<a free session>)`` in a worker.
    """

    def __init__(self, workers: int, new_session: Callable[[], requests.Session], name: str) -> None:
        self._sessions: queue.SimpleQueue[requests.Session] = queue.SimpleQueue()
        self._made = [new_session() for _ in range(workers)]
        for session in self._made:
            self._sessions.put(session)
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def submit(self, call: Callable[..., T], *args: Any) -> Future[T]:
        return self._executor.submit(self._lend, call, *args)

    def _lend(self, call: Callable[..., T], *args: Any) -> T:
        session = self._sessions.get()
        try:
            return call(*args, session=session)
        finally:
            self._sessions.put(session)

    def close(self) -> None:
        """Drop what has not started, wait for what has, and close the sessions."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        for session in self._made:
            session.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.close()
        else:  # interrupted: do not wait for calls in flight (their sessions go with their threads)
            self._executor.shutdown(wait=False, cancel_futures=True)
