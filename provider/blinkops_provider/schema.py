"""The names of schema migrations as they were first published: kept importable from here. The
code lives in :mod:`blinkops_provider.migrations`."""

from __future__ import annotations

from blinkops_provider.migrations.apply import declared_schema
from blinkops_provider.migrations.plan import (
    ADD,
    BASELINE,
    CHANGE,
    REFUSED,
    UNCHANGED,
    FieldPlan,
    SchemaPlan,
    differing_members,
    plan_fields,
)
from blinkops_provider.migrations.record import SchemaRecord, record_location

__all__ = [
    "ADD",
    "BASELINE",
    "CHANGE",
    "REFUSED",
    "UNCHANGED",
    "FieldPlan",
    "SchemaPlan",
    "SchemaRecord",
    "declared_schema",
    "differing_members",
    "plan_fields",
    "record_location",
]
