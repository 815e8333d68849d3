"""
``blink-sandbox``: run the Blink sandbox from a shell (``python -m blinkops_sandbox.cli`` is the same).

:func:`main` takes the arguments a shell would give and returns the exit status (0: done; 2: a
mistake in the arguments or the sandbox's answer to them); :func:`build_parser` is its parser,
for scripts that check a printed command.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sqlite3
import sys
import threading
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from blinkops_sandbox._blink_models import errors_text
from blinkops_sandbox._faults import FaultConfig
from blinkops_sandbox._server import DEFAULT_CONNECTION_TYPES, SandboxDependencyError, check_dependencies

__all__ = ["build_parser", "main"]


def _faults(text: str) -> list[str | int]:
    return [int(item) if item.strip().isdigit() else item.strip() for item in text.split(",") if item.strip()]


def _port(text: str) -> int:
    """Return a TCP port, 0 to 65535 (argparse says what was wrong and exits 2)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is a whole number from 0 to 65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a whole number from 0 to 65535, got {port}")
    return port


def _credential(text: str) -> str:
    """
    Return an API key or admin token.

    Text a header can carry (Latin-1, no control character), so a mistake is one line and exit 2 (argparse's), never a
    traceback after the banner.
    """
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            "a key or token is Latin-1 text that a header can carry (this one holds other characters, or bytes "
            "that are not UTF-8)"
        ) from None
    if not text or any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in text):
        raise argparse.ArgumentTypeError("a key or token is non-empty text without control characters (a line break?)")
    return text


def _url(text: str) -> str:
    """Return a running sandbox's URL, as ``serve`` prints it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a URL ({err}); give the sandbox's URL as serve prints it"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an http:// or https:// URL with a host; give the sandbox's URL as serve prints it, "
            "e.g. http://127.0.0.1:43211"
        )
    return text


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``blink-sandbox``: ``serve``, and the commands of a running sandbox's admin API."""
    parser = argparse.ArgumentParser(prog="blink-sandbox", description="A local Blink API for tests and demos.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the sandbox until SIGINT or SIGTERM")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=0, help="port, 0 to 65535; 0 picks a free one (default)")
    serve.add_argument("--db", help="SQLite file that keeps the state across runs (default: in memory)")
    serve.add_argument(
        "--seed-connection-types",
        type=int,
        default=DEFAULT_CONNECTION_TYPES,
        metavar="N",
        help=f"connection types to generate when the store is empty (default {DEFAULT_CONNECTION_TYPES})",
    )
    serve.add_argument("--api-key", type=_credential, help="the API key clients must send (default: a random one)")
    serve.add_argument(
        "--admin-token", type=_credential, help="token of the /_sandbox admin API (default: a random one)"
    )
    faults = serve.add_argument_group("fault injection")
    faults.add_argument("--latency-ms", type=float, default=0, help="added to every API request")
    faults.add_argument("--error-rate", type=float, default=0, help="share of requests answered with an error")
    faults.add_argument(
        "--error-statuses",
        type=lambda text: [int(s) for s in text.split(",")],
        default=[503],
        help="statuses --error-rate draws from, e.g. 429,503 (default 503)",
    )
    faults.add_argument("--drop-rate", type=float, default=0, help="share of connections closed before a response")
    faults.add_argument("--truncate-rate", type=float, default=0, help="share of 200s whose JSON is cut in half")
    faults.add_argument("--non-json-rate", type=float, default=0, help="share of requests answered with HTML")
    faults.add_argument(
        "--fault-sequence",
        type=_faults,
        default=[],
        metavar="LIST",
        help="faults of the first requests, in order, e.g. 429,503,drop,truncate,non-json,ok",
    )
    faults.add_argument("--retry-after", default="1", help="Retry-After of a 429: seconds or an HTTP date")
    faults.add_argument("--seed", type=int, default=0, help="seeds the fault draws and the generated catalogue")
    faults.add_argument(
        "--fields-read-status",
        type=int,
        choices=(404, 405),
        help="answer every GET .../fields with it, as a Blink or proxy that does not serve the read",
    )
    faults.add_argument(
        "--workflows-read-status",
        type=int,
        choices=(403, 404, 405),
        help="answer every GET .../playbooks with it, as a key that may not read workflows or a Blink that does not "
        "serve the read",
    )
    put = _admin_command(commands, "put-connection-type", "add or change a connection type of a running sandbox")
    put.add_argument("--id", required=True, help="the connection type's id, e.g. ct-demo (an existing id changes it)")
    put.add_argument("--name", required=True, help="its name")
    put.add_argument("--display-name", help="its display name (default: the name)")
    table = _admin_command(
        commands, "create-table", "create a table with its fields in a running sandbox", "made when new"
    )
    table.add_argument("--schema", required=True, help='a declared schema file: {"fields": [{"field", "type", ...}]}')
    flows = _admin_command(commands, "put-workflows", "add or change workflows of a running sandbox, all or none")
    flows.add_argument("--ws-id", required=True, help="the workspace, e.g. ws-demo")
    flows.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a workflow's definition (YAML), one per file: named by its 'name:' line, else by the file's name; "
        "one of that name is changed",
    )
    flows.add_argument("--inactive", action="store_true", help="load them as inactive workflows (default: active)")
    rows = _admin_command(commands, "put-records", "load rows into a table of a running sandbox, all or none", "")
    rows.add_argument("--file", required=True, help='a JSON file: a list of rows, [{"Title": "...", ...}, ...]')
    edit = _admin_command(
        commands,
        "update-field",
        "change a field of a running sandbox as a person in Blink's UI would: the next plan shows it as drift",
        "",
    )
    edit.add_argument("--field", required=True, help="Blink's name of the field, e.g. Title")
    edit.add_argument("--display-name", help="its new display name")
    edit.add_argument("--description", help="its new description")
    edit.add_argument(
        "--attribute",
        action="append",
        type=_attribute,
        default=[],
        metavar="NAME=VALUE",
        help='an attribute to set, its value as JSON (required=true, options=\'["Low","High"]\') or else as '
        "text; repeatable; the field's other attributes are kept",
    )
    edit.add_argument("--by", help="who the change is recorded as (default: ui-user@sandbox.blink)")
    return parser


def _admin_command(commands: Any, name: str, help_text: str, workspace: str | None = None) -> argparse.ArgumentParser:
    """
    Return a command of a running sandbox's admin API.

    Its URL and admin token, and (``workspace`` given: what to say of it, "" for the usual) the workspace and table it
    acts on.
    """
    command: argparse.ArgumentParser = commands.add_parser(name, help=help_text)
    command.add_argument("url", type=_url, help="the sandbox's URL, as 'serve' or make airflow-ui prints it")
    command.add_argument("--admin-token", type=_credential, required=True, help="the sandbox's admin token, as printed")
    if workspace is not None:
        command.add_argument("--ws-id", required=True, help=f"the workspace ({workspace or 'e.g. ws-demo'})")
        command.add_argument("--table", required=True, help="Blink's name of the table, e.g. Incidents")
    return command


def _attribute(text: str) -> tuple[str, Any]:
    """Return ``NAME=VALUE``: the value as JSON when it is JSON, else as text."""
    import json

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"give an attribute as NAME=VALUE, e.g. required=true; got {text!r}")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value


def _admin(args: argparse.Namespace, path: str, body: Any, done: str, method: str = "PUT") -> int:
    """Return one call (a PUT by default) to a running sandbox's admin API; what it did, or why not."""
    import requests

    url = f"{args.url.rstrip('/').removesuffix('/api/v1')}/_sandbox/{path}"
    try:
        answer = requests.request(method, url, json=body, headers={"X-Sandbox-Token": args.admin_token}, timeout=30)
    except (requests.RequestException, ValueError) as err:  # ValueError: a URL requests cannot use
        print(f"blink-sandbox: the sandbox at {args.url} did not answer ({type(err).__name__})", file=sys.stderr)
        return 1
    if not answer.ok:  # a wrong token (401), a schema it refuses (400), a table it has (409): the user's to fix
        said = " ".join(answer.text[:300].split())
        print(f"blink-sandbox: the sandbox refused it ({answer.status_code}): {said}", file=sys.stderr)
        return 2
    print(done)
    return 0


def create_table(args: argparse.Namespace) -> int:
    """Run ``create-table``: a table with the fields a declared-schema file names."""
    declared = _json_file(args.schema, "schema")
    path = _admin_path("workspace/{}/table/{}", ws_id=args.ws_id, table=args.table)
    if declared is None or path is None:
        return 2
    return _admin(args, path, declared, f"Table {args.ws_id}/{args.table} created in the sandbox at {args.url}")


def _admin_path(template: str, **names: str) -> str | None:
    """
    Return an admin API path, ``template`` filled with ``names`` quoted as path segments, in order.

    None (said on stderr, naming the options) when one holds bytes that are not text.
    """
    from urllib.parse import quote

    try:
        return template.format(*(quote(value, safe="") for value in names.values()))
    except UnicodeEncodeError:
        options = [f"--{name.replace('_', '-')}" for name in names]
        said = " and ".join([", ".join(options[:-1]), options[-1]] if len(options) > 1 else options)
        they = "they hold" if len(options) > 1 else "it holds"
        print(f"blink-sandbox: {said} must be text ({they} bytes that are not)", file=sys.stderr)
        return None


def _json_file(path: str, what: str) -> Any:
    """Return a JSON file's content; None (said on stderr) when it cannot be read."""
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError) as err:
        why = "it nests too deeply" if isinstance(err, RecursionError) else str(err)
        print(f"blink-sandbox: the {what} file {path!r} cannot be read as JSON: {why}", file=sys.stderr)
        return None


def put_records(args: argparse.Namespace) -> int:
    """
    Run ``put-records``.

    The rows of a JSON file written to a table, each checked as Blink checks a new record (a required field empty, a
    unique value taken, an option not offered): all or none.
    """
    rows = _json_file(args.file, "records")
    if not isinstance(rows, list):
        if rows is not None:
            print(f'blink-sandbox: {args.file!r} must hold a JSON list of rows, [{{"Title": "..."}}]', file=sys.stderr)
        return 2
    path = _admin_path("workspace/{}/table/{}/rows", ws_id=args.ws_id, table=args.table)
    if path is None:
        return 2
    done = f"{len(rows)} row(s) written to {args.ws_id}/{args.table} in the sandbox at {args.url}"
    return _admin(args, path, rows, done, method="POST")


def put_workflows(args: argparse.Namespace) -> int:
    """Run ``put-workflows``: each file's text is a workflow's definition, sent as it is (the sandbox parses none)."""
    import re
    from pathlib import Path

    workflows = []
    for name in args.files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            print(f"blink-sandbox: the workflow file {name!r} cannot be read: {err}", file=sys.stderr)
            return 2
        named = re.search(r"^name:[ \t]*['\"]?(.+?)['\"]?[ \t]*$", text, re.MULTILINE)
        title = named.group(1) if named else Path(name).stem
        workflows.append({"name": title, "active": not args.inactive, "playbook": text})
    path = _admin_path("workspace/{}/playbooks", ws_id=args.ws_id)
    if path is None:
        return 2
    done = f"{len(workflows)} workflow(s) written to {args.ws_id} in the sandbox at {args.url}"
    return _admin(args, path, workflows, done)


def update_field(args: argparse.Namespace) -> int:
    """
    Run ``update-field``.

    One field changed through the running sandbox's admin API, the members not given kept, recorded as changed by
    ``--by``: drift, as a person in Blink's UI makes it.
    """
    body: dict[str, Any] = {}
    if args.display_name is not None:
        body["display_name"] = args.display_name
    if args.description is not None:
        body["description"] = args.description
    if args.attribute:
        body["attributes"] = dict(args.attribute)
    if not body:
        print(
            "blink-sandbox: give what to change: --display-name, --description or --attribute NAME=VALUE",
            file=sys.stderr,
        )
        return 2
    if args.by:
        body["by"] = args.by
    path = _admin_path("workspace/{}/table/{}/fields/{}", ws_id=args.ws_id, table=args.table, field=args.field)
    if path is None:
        return 2
    changed = ", ".join(sorted(key for key in body if key != "by"))
    done = f"Field {args.field!r} of {args.ws_id}/{args.table} changed ({changed}) in the sandbox at {args.url}"
    return _admin(args, path, body, done, method="PATCH")


def put_connection_type(args: argparse.Namespace) -> int:
    """Run ``put-connection-type``: one connection type written through the running sandbox's admin API."""
    doc = {"id": args.id, "name": args.name, "display_name": args.display_name or args.name, "plugin_name": args.name}
    done = f"Connection type {args.id!r} ({args.name}) written to the sandbox at {args.url}"
    return _admin(args, "connection_types", [doc], done)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``blink-sandbox`` with ``argv`` (default: the process's arguments) and return its exit status."""
    # Signals are handled from the first moment: one that comes while the store is seeded or the
    # server built only asks the sandbox to stop once it can, and it then exits 0, its store whole.
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: stop.set())
    args = build_parser().parse_args(argv)
    admin = {
        "put-connection-type": put_connection_type,
        "create-table": create_table,
        "update-field": update_field,
        "put-records": put_records,
        "put-workflows": put_workflows,
    }
    if args.command in admin:
        return admin[args.command](args)
    try:
        check_dependencies()  # before anything is printed
    except SandboxDependencyError as err:
        print(f"blink-sandbox: {err}", file=sys.stderr)
        return 2
    try:
        faults = FaultConfig(
            latency_ms=args.latency_ms,
            error_rate=args.error_rate,
            error_statuses=args.error_statuses,
            drop_rate=args.drop_rate,
            truncate_rate=args.truncate_rate,
            non_json_rate=args.non_json_rate,
            sequence=args.fault_sequence,
            retry_after=args.retry_after,
            seed=args.seed,
            fields_read_status=args.fields_read_status,
            workflows_read_status=args.workflows_read_status,
        )
    except ValidationError as err:
        print(f"blink-sandbox: invalid fault settings: {errors_text(err.errors())}", file=sys.stderr)
        return 2
    if args.seed_connection_types < 0:
        print("blink-sandbox: --seed-connection-types must be 0 or more", file=sys.stderr)
        return 2
    try:
        from blinkops_sandbox._server import BlinkSandbox

        sandbox = BlinkSandbox(
            host=args.host,
            port=args.port,
            db=args.db,
            connection_types=args.seed_connection_types,
            api_key=args.api_key,
            admin_token=args.admin_token,
            faults=faults,
            seed=args.seed,
        )
    except OSError as err:  # a port in use, a host that does not resolve: the user's to fix
        print(f"blink-sandbox: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 2
    except sqlite3.Error as err:
        print(f"blink-sandbox: --db {args.db!r} cannot be used as the sandbox's SQLite file: {err}", file=sys.stderr)
        return 2
    if not _loopback(args.host):
        print(
            f"WARNING: listening on {args.host}, not only on this machine: anyone who can reach it can use "
            "the API key and the admin token printed below. Use --host 127.0.0.1 unless you mean it.",
            flush=True,
        )
    print(f"Blink sandbox listening on {sandbox.url}", flush=True)
    print(f"  base URL:    {sandbox.base_url}")
    print(f"  API key:     {sandbox.api_key}   (header BLINK-API-KEY)")
    print(f"  admin token: {sandbox.admin_token}   (header X-Sandbox-Token, {sandbox.url}/_sandbox/...)")
    print(f"  connection:  export AIRFLOW_CONN_BLINK_DEFAULT='{sandbox.connection_json()}'")
    print("Stop with Ctrl-C.", flush=True)
    sandbox.serve_forever(stop)
    print("Blink sandbox stopped.", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
