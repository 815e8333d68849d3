"""Seed data that looks like a real Blink tenant: a demo workspace and a connection-type catalogue."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator
from typing import Any

TENANT_ID = "tenant-sandbox"
DEMO_WORKSPACE = "ws-demo"
DEMO_TABLE = "Incidents"
SEED_USER = "seed@sandbox.blink"
SEED_TIME_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, in milliseconds

VENDORS = [
    name
    for line in (
        "aws azure gcp github gitlab bitbucket jira confluence slack teams pagerduty opsgenie okta auth0",
        "onelogin crowdstrike sentinelone splunk datadog newrelic elastic servicenow zendesk salesforce",
        "hubspot workday snowflake databricks mongodb postgres mysql redis kafka rabbitmq kubernetes",
        "terraform vault cloudflare fastly akamai zscaler paloalto fortinet checkpoint wiz lacework orca",
        "snyk sonarqube jenkins circleci argocd twilio sendgrid mailgun box dropbox google-workspace",
        "microsoft365 virustotal shodan abuseipdb misp tenable qualys rapid7 jamf intune",
    )
    for name in line.split()
]
AUTH_KINDS = ("api-key", "oauth", "two-legged")
PAGINATION = ("offset", "cursor", "page", "link-header")


@functools.cache
def _profile(vendor: str, kind: str, is_jwt: bool, pagination: str) -> tuple[str, str]:
    """
    Return the bulky members shared by every connection type of one vendor and auth kind, as JSON.

    The JSON text of ``attributes``, ``metadata`` and ``methods`` (no braces), and the display name; cached.
    """
    display = vendor.replace("-", " ").title()
    keys = {
        "api-key": [{"name": "api_key", "format": "password"}],
        "oauth": [{"name": "client_id", "format": "string"}, {"name": "client_secret", "format": "password"}],
        "two-legged": [{"name": "client_id", "format": "string"}, {"name": "client_secret", "format": "password"}],
    }[kind]
    authentication: dict[str, Any] = {"type": kind, "keys": keys, "staticHeaders": {"Accept": "application/json"}}
    if kind == "two-legged":
        authentication["twoLeggedValues"] = {
            "connectionParams": ["client_id", "client_secret"],
            "actionToRunParamValues": {
                "url": f"https://auth.{vendor}.example.com/oauth/token",
                "method": "POST",
                "contentType": "application/x-www-form-urlencoded",
                "headers": {},
                "body": {"grant_type": "client_credentials"},
                "ignoreSSL": False,
            },
            "extractor": {
                "accessKeyPath": "access_token",
                "isInHeader": False,
                "isJWT": is_jwt,
                "expiry": {"defaultExpiry": 3600, "path": "expires_in", "type": "seconds"},
            },
        }
    address = f"https://api.{vendor}.example.com"
    attributes: dict[str, Any] = {
        key["name"]: {
            "display_name": key["name"].replace("_", " ").title(),
            "input_type": key["format"],
            "required": True,
            "index": position,
            "hidden": False,
        }
        for position, key in enumerate(keys)
    }
    attributes["api_address"] = {
        "display_name": "API address",
        "input_type": "string",
        "required": False,
        "default": address,
        "pattern": "^https?://",
        "index": len(keys),
    }
    shared = {
        "attributes": attributes,
        "metadata": {
            "authentication": authentication,
            "defaultAPIAddress": address,
            "ignoreSSL": False,
            "pagination": {"type": pagination, "descriptor": {"limit_param": "limit"}},
            "testConnection": {
                "type": "http",
                "endpoint": "/v1/me",
                "body": {},
                "expected": {"statusCodes": "200-299", "contentType": "application/json"},
            },
            "validation": {"statusCodes": "200-399", "contentType": "application/json", "formatURL": "^https://"},
            "variables": {},
        },
        "methods": [
            {
                "name": kind.replace("-", "_"),
                "display_name": {"api-key": "API key", "oauth": "OAuth 2.0", "two-legged": "Client credentials"}[kind],
                "description": f"Connect to {display} with {kind} authentication.",
                "documentation_link": f"https://docs.blinkops.com/docs/integrations/{vendor}",
                "attributes": [key["name"] for key in keys],
                "hidden": False,
                "is_recommended": True,
                "oauth_supported": kind == "oauth",
            }
        ],
    }
    return json.dumps(shared, separators=(",", ":"))[1:-1], display


def connection_type_json(index: int, rng: random.Random) -> tuple[dict[str, Any], str]:
    """Return the ``index``-th connection type: its scalar members, and the whole of it as JSON text."""
    vendor = VENDORS[index % len(VENDORS)]
    round_ = index // len(VENDORS)
    kind = AUTH_KINDS[index % len(AUTH_KINDS)]
    is_jwt = kind == "two-legged" and rng.random() < 0.5
    shared, display = _profile(vendor, kind, is_jwt, PAGINATION[index % len(PAGINATION)])
    name = vendor if round_ == 0 else f"{vendor}-{round_}"
    created = SEED_TIME_MS + index * 60_000
    head = {
        "id": f"ct-{index:06d}",
        "name": name,
        "display_name": display if round_ == 0 else f"{display} ({round_})",
        "plugin_name": vendor,
        "documentation_link": f"https://docs.blinkops.com/docs/integrations/{name}",
        "icon_uri": f"https://icons.blinkops.com/{vendor}.svg",
        "oauth_supported": kind == "oauth",
    }
    tail = {
        "tenant_id": TENANT_ID,
        "created_at": created,
        "created_by": SEED_USER,
        "updated_at": created + rng.randrange(0, 86_400_000),
        "updated_by": SEED_USER,
    }
    text = f"{json.dumps(head, separators=(',', ':'))[:-1]},{shared},{json.dumps(tail, separators=(',', ':'))[1:]}"
    return {**head, **tail}, text


def connection_type_rows(count: int, seed: int = 0) -> Iterator[tuple[dict[str, Any], str]]:
    """Yield ``count`` generated connection types as (scalar members, JSON text); the same for the same seed."""
    rng = random.Random(seed)
    for index in range(count):
        yield connection_type_json(index, rng)


def connection_types(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Return ``count`` generated connection types as dicts (see :func:`connection_type_rows`)."""
    return [json.loads(text) for _, text in connection_type_rows(count, seed)]


# One field of each of the API reference's ten types, with the attributes that type uses; a required
# field and a unique one, which a migration that leaves those attributes out must keep.
DEMO_FIELDS: list[dict[str, Any]] = [
    {"name": "Title", "type": "text", "display_name": "Title", "attributes": {"required": True, "default_value": ""}},
    {"name": "Description", "type": "long-text", "display_name": "Description", "attributes": {"is_unique": True}},
    {"name": "Impact", "type": "number", "display_name": "Impact score", "attributes": {"default_value": "0"}},
    {"name": "Risk", "type": "risk-level", "display_name": "Risk", "attributes": {"default_value": "Medium"}},
    {"name": "Resolved", "type": "checkbox", "display_name": "Resolved", "attributes": {"default_value": "false"}},
    {
        "name": "Severity",
        "type": "single-select",
        "display_name": "Severity",
        "attributes": {"options": ["Low", "Medium", "High"], "default_value": "Low"},
    },
    {
        "name": "Tags",
        "type": "multi-select",
        "display_name": "Tags",
        "attributes": {"options": ["phishing", "malware", "insider"]},
    },
    {"name": "Affected hosts", "type": "list", "display_name": "Affected hosts", "attributes": {}},
    {
        "name": "Owner",
        "type": "reference",
        "display_name": "Owner",
        "attributes": {"table_reference": {"table_name": "Users", "display_name_field": "Name"}},
    },
    {"name": "Due", "type": "date", "display_name": "Due", "attributes": {"include_time": True}},
]

DEMO_RECORDS = {DEMO_TABLE: 128, "Users": 12}
"""The demo tables' ``estimated_records_count``: Blink's estimate, not the rows' count (:data:`DEMO_ROWS`)."""

_PEOPLE = [
    "Ada Byron",
    "Alan Turing",
    "Grace Hopper",
    "Linus Torvalds",
    "Margaret Hamilton",
    "Ken Thompson",
    "Barbara Liskov",
    "Dennis Ritchie",
    "Frances Allen",
    "Edsger Dijkstra",
]
_TITLES = [
    "Phishing email reported",
    "Malware on laptop",
    "Suspicious login",
    "Data exfiltration alert",
    "Ransomware note found",
    "Leaked API key",
    "DDoS on the edge",
    "Insider download spike",
]


def _incident(number: int, pick: random.Random) -> dict[str, Any]:
    """Return one seeded incident: some fields left empty, titles repeated, every select option in use."""
    row: dict[str, Any] = {"Title": _TITLES[number % len(_TITLES)] if number % 5 else f"Incident {number}"}
    if number % 9:
        row["Description"] = f"Case {number}: {pick.choice(['seen by the SOC', 'reported by a user', 'alerted'])}"
    if number % 6:
        row["Impact"] = pick.randint(1, 10)
    row["Risk"] = ["Low", "Medium", "High", "Critical"][number % 4]
    row["Resolved"] = number % 3 == 0
    row["Severity"] = ["Low", "Medium", "High"][number % 3]
    if number % 4:
        row["Tags"] = sorted(pick.sample(["phishing", "malware", "insider"], 1 + number % 2))
    if number % 4 != 1:
        row["Affected hosts"] = [f"host-{pick.randint(1, 40):02d}" for _ in range(1 + number % 3)]
    if number % 7:
        row["Due"] = f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}"
    return row


def _rows() -> dict[str, list[dict[str, Any]]]:
    pick = random.Random(7)
    users = [{"Name": name, "Email": f"{name.split()[0].lower()}@example.com"} for name in _PEOPLE]
    users[-1] = {"Name": _PEOPLE[-1]}  # one user without an email
    return {DEMO_TABLE: [_incident(number, pick) for number in range(120)], "Users": users}


DEMO_ROWS: dict[str, list[dict[str, Any]]] = _rows()
"""The demo tables' rows (120 incidents and 10 users, fewer than Blink's estimate says): some values
empty, some repeated, every select option in use."""

DEMO_TABLES: dict[str, list[dict[str, Any]]] = {
    DEMO_TABLE: DEMO_FIELDS,
    "Users": [
        {"name": "Name", "type": "text", "display_name": "Name", "attributes": {}},
        {"name": "Email", "type": "text", "display_name": "Email", "attributes": {}},
    ],
}

DEMO_WORKFLOWS: list[dict[str, Any]] = [
    {
        "id": "pb-triage",
        "name": "Triage new incidents",
        "active": True,
        "playbook": """name: Triage new incidents
steps:
  - id: S1
    action: tables.GetRecordsV3
    inputs:
      table: Incidents
      query_method: By Condition
      ci: '{"Risk": "High", "Resolved": false}'
  - id: S2
    action: tables.CreateOrUpdateRecordV3
    inputs:
      table: Incidents
      ci: '{"Title": "{{ steps.S1.output.title }}"}'
      Title: "{{ steps.S1.output.title }}"
      Risk: Critical
      Severity: High
""",
    },
    {
        "id": "pb-sweep",
        "name": "Nightly host sweep",
        "active": True,
        "playbook": """name: Nightly host sweep
steps:
  - id: S1
    action: tables.GetRecordsV3
    inputs:
      table: Incidents
      query_method: RQL Query
      query: |
        {"filter": {"Resolved": false}, "select": ["Title", "Affected hosts"]}
  - id: S2
    action: system.TableInsert
    inputs:
      table: Incidents
      data: |
        {"Title": "Host sweep finding", "Affected hosts": ["{{ steps.S1.output.host }}"]}
""",
    },
    {
        "id": "pb-report",
        "name": "Weekly risk report",
        "active": False,
        "playbook": """name: Weekly risk report
steps:
  - id: S1
    action: tables.GetRecordsV3
    inputs:
      query_method: SQL Query
      sql: SELECT Title, Risk FROM Incidents WHERE Resolved = false
""",
    },
    {
        "id": "pb-people",
        "name": "Owner directory sync",
        "active": True,
        "playbook": """name: Owner directory sync
steps:
  - id: S1
    action: tables.UpdateRecords
    inputs:
      table: Users
      data: '[{"id": "{{ steps.S0.output.id }}", "Email": "{{ steps.S0.output.email }}"}]'
""",
    },
    {
        "id": "pb-draft",
        "name": "Escalation draft",
        "active": False,
        "playbook": "name: Escalation draft\nsteps:\n  - id: S1\n    action: tables.AddRecordV2\n"
        "    inputs: {table: Incidents\n",
    },
]
"""The demo workspace's workflows: they use the Incidents fields through per-column inputs, a condition, an RQL query,
a JSON body and an SQL query (free text); one uses another table; one does not parse."""
