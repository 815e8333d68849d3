"""A running sandbox: its store, faults, request log, keys and the uvicorn server in front of them."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import secrets
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

from blinkops_sandbox._faults import FaultConfig, FaultInjector, FaultMiddleware, RequestLog
from blinkops_sandbox._store import SandboxStore

DEFAULT_CONNECTION_TYPES = 200


INSTALL_HINT = "pip install fastapi uvicorn (blinkops-sandbox's dependencies)"
"""What to run when the sandbox's server libraries are missing."""


class SandboxDependencyError(ImportError):
    """FastAPI or uvicorn, which the sandbox's server needs, is not installed."""


def check_dependencies() -> None:
    """
    Check, without importing them, that the sandbox's server libraries are installed.

    :raises SandboxDependencyError: FastAPI or uvicorn is missing (the message says what to install).
    """
    missing = [name for name in ("fastapi", "uvicorn") if not _installed(name)]
    if missing:
        raise SandboxDependencyError(
            f"the Blink sandbox needs {' and '.join(missing)}, not installed here (Airflow 3 ships both; "
            f"Airflow 2.11 does not): {INSTALL_HINT}"
        )


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class BlinkSandbox:
    """
    A local Blink API for tests, demos and DAG development.

    Use it as a context manager (the server runs in a background thread), or call
    :meth:`serve_forever` (the CLI does, in the foreground). Binds to 127.0.0.1 unless told.

    :param host: the address to listen on.
    :param port: the port; 0 picks a free one.
    :param db: a SQLite file that keeps the state across runs; in memory when None.
    :param connection_types: how many connection types to seed (when the store is empty).
    :param api_key: the key clients must send; a random one when None.
    :param admin_token: the token of the ``/_sandbox`` admin API; a random one when None.
    :param faults: the faults to inject from the start.
    :param seed: seeds the generated catalogue.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        db: str | None = None,
        connection_types: int = DEFAULT_CONNECTION_TYPES,
        api_key: str | None = None,
        admin_token: str | None = None,
        faults: FaultConfig | None = None,
        seed: int = 0,
    ) -> None:
        check_dependencies()
        self.host = host
        self.connection_types = connection_types
        self.seed = seed
        self.api_key = api_key or f"sandbox-{secrets.token_urlsafe(24)}"
        self.admin_token = admin_token or secrets.token_hex(24)  # hex: never begins with "-", an option to a CLI
        self.store = SandboxStore(db or ":memory:")
        if self.store.is_empty():
            self.reset()
        self.faults = FaultInjector(faults)
        self.log = RequestLog()
        self._socket = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.port: int = self._socket.getsockname()[1]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- addresses ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:8123``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The API's base URL, ending in ``/api/v1``."""
        return f"{self.url}/api/v1"

    def connection_json(self) -> str:
        """Return an Airflow connection pointing at this sandbox, for ``AIRFLOW_CONN_BLINK_DEFAULT``."""
        from blinkops_sandbox._app import TABLE_PAGE

        return json.dumps(
            {"conn_type": "blink", "host": self.url, "password": self.api_key, "extra": {"table_page": TABLE_PAGE}}
        )

    # -- state ----------------------------------------------------------------------------

    def create_table(self, ws_id: str, table: str, declared: dict[str, Any]) -> None:
        """
        Create a table with its fields.

        Declared as a schema is (``{"fields": [{"field", "type", "display_name", "attributes"}]}``), as ``blink-sandbox
        create-table`` makes one.

        :raises ValueError: a wrong entry, named.
        :raises StoreError: the table exists already (the store's error, a 409).
        """
        from blinkops_sandbox._blink_models import declared_fields

        self.store.add_table(ws_id, table, declared_fields(declared.get("fields") or []))

    def add_field(self, ws_id: str, table: str, body: dict[str, Any], by: str = "seed@sandbox.blink") -> dict[str, Any]:
        """
        Add a field as Blink's ``POST .../fields`` adds it, changed ``by`` someone; return it as the sandbox holds it.

        Its name is derived from its display name, as Blink derives it.

        :raises ValueError: a body that is not a field's.
        :raises StoreError: what Blink refuses (a second reference to one table, a select without options), or no such
            workspace or table.
        """
        from blinkops_sandbox._blink_models import FieldUpdate

        return self.store.add_field(ws_id, table, FieldUpdate.model_validate(body), by)

    def set_records(self, ws_id: str, table: str, count: int) -> None:
        """
        Set a table's ``estimated_records_count`` (what a removal's plan says is lost).

        :raises StoreError: no such workspace or table (the store's error, a 404).
        """
        self.store.set_records(ws_id, table, count)

    def reset(self) -> None:
        """Back to the seed data (the demo workspace and the generated catalogue)."""
        self.store.reset(self.connection_types, self.seed)

    def set_faults(self, **settings: Any) -> None:
        """Inject faults from now on (see :class:`~blinkops_sandbox._faults.FaultConfig`)."""
        self.faults.configure(FaultConfig(**settings))

    def clear_faults(self) -> None:
        self.faults.configure(FaultConfig())

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The API requests received so far, oldest first (the API key shown as ``***``)."""
        return self.log.entries()

    # -- serving --------------------------------------------------------------------------

    def _make_server(self) -> Any:
        import uvicorn

        from blinkops_sandbox._app import KEY_HEADER, create_app

        app = FaultMiddleware(
            create_app(self), injector=self.faults, log=self.log, key_header=KEY_HEADER, api_key=self.api_key
        )

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                # The sandbox handles SIGINT/SIGTERM itself (see serve_forever), so that it
                # exits with status 0 instead of re-raising the signal once stopped.
                yield

        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        return Server(config)

    def start(self) -> BlinkSandbox:
        """Serve in a background thread. The socket already listens, so clients may call at once."""
        if self._thread is None:
            self._server = self._make_server()
            self._thread = threading.Thread(
                target=self._server.run, kwargs={"sockets": [self._socket]}, name="blink-sandbox", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and release the socket and the database."""
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout)
            self._thread = None
        self._socket.close()
        self.store.close()

    def serve_forever(self, stop: threading.Event | None = None) -> None:
        """
        Serve in this thread until SIGINT or SIGTERM, then release everything.

        :param stop: set by a signal that came before serving began (the CLI handles signals from
            its first moment): then the sandbox stops at once, its store closed cleanly.
        """
        server = self._server = self._make_server()

        def on_signal(signum: int, frame: object) -> None:
            server.should_exit = True

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            if stop is None or not stop.is_set():
                server.run(sockets=[self._socket])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._socket.close()
            self.store.close()

    def __enter__(self) -> BlinkSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
