"""The seam between the migrations and the Airflow side (the operators and the task groups):
what those use of the migrations besides the public names, in one place. Import-linter lets the
operators and the task groups import this module and the package itself, and no other module of
the migrations (``pyproject.toml``'s "Operators and task groups: the migrations' front door
only"). Nothing here is public API."""

from __future__ import annotations

from blinkops_provider._declaration import read_declaration as read_declaration
from blinkops_provider.migrations._apply import Request as Request
from blinkops_provider.migrations._apply import apply_request as apply_request
from blinkops_provider.migrations._apply import approved_plan as approved_plan
from blinkops_provider.migrations._apply import check_names as check_names
from blinkops_provider.migrations._apply import plan_request as plan_request
from blinkops_provider.migrations._report import ApplyReport as ApplyReport
from blinkops_provider.migrations._report import grouped as grouped
from blinkops_provider.migrations._report import not_applied as not_applied
from blinkops_provider.migrations._review import REJECTED_IN_REVIEW as REJECTED_IN_REVIEW
from blinkops_provider.migrations._review import approval_from_record as approval_from_record
from blinkops_provider.migrations._review import approval_from_review as approval_from_review
from blinkops_provider.migrations._review import check_review_policy as check_review_policy
from blinkops_provider.migrations._review import chosen as chosen
from blinkops_provider.migrations._review import plan_markdown as plan_markdown
from blinkops_provider.migrations._review import rejection as rejection
from blinkops_provider.migrations._review import review_needed as review_needed
from blinkops_provider.migrations._review import who_let_through as who_let_through
