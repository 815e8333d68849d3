"""
A plan's blast radius (#75): which Blink workflows have steps that use what a change takes away.

The risk rules say how a step breaks under each change (``_risks.step_breaks``: it mentions the field, writes it, or
adds whole rows without it). :func:`read_usage` walks the workspace's workflows once (``BlinkHook.iter_workflows``, a
page at a time: memory stays flat), reads each definition's table steps (:mod:`blinkops_provider.workflows`), and keeps,
per changed field, the workflows whose steps on this table break, with how each step uses the field, and the ones that
could not be read (a definition that does not parse, a table named through an expression, a field named only in free
text): listed as such, never guessed. A read Blink refuses (403, 404, 405) is said as "workflows not checked" on every
change that could break a step, and such a change is destructive (``_plan_types.FieldPlan.destructive``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from blinkops_provider.exceptions import BlinkAuthError, BlinkInputError, BlinkReadUnavailableError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.migrations._plan_types import WorkflowUse, digest
from blinkops_provider.migrations._risks import ADDS_ROWS, MENTIONS, WRITES
from blinkops_provider.models import Workflow
from blinkops_provider.workflows import TableStep, names_a_table_action, read_workflow

WORKFLOW_USAGE = ("review", "refuse")
"""The policies of a change that breaks an active workflow: ``review`` (destructive: it needs a person's Approve or
``acknowledge_risks``), ``refuse`` (refused before any write, the workflows and steps named)."""


@dataclass(frozen=True)
class Probe:
    """
    One change whose breakage is looked for.

    :ivar name: Blink's name of the field, as steps name it.
    :ivar breaks: how a step breaks (``_risks.step_breaks``).
    """

    name: str
    breaks: tuple[str, ...]


@dataclass
class Usage:
    """
    What the workflows read found for each probed field.

    :ivar uses: Blink's field name -> the workflows that use it (known uses first, then the unread ones).
    :ivar unread: why the workflows were not read at all ("" when they were).
    """

    uses: dict[str, list[WorkflowUse]] = field(default_factory=dict)
    unread: str = ""

    @property
    def digest(self) -> str:
        """The digest the plan's fingerprint takes: a workflow that starts using a changed field changes it."""
        found = {name: [use.to_xcom() for use in uses] for name, uses in sorted(self.uses.items())}
        return digest([self.unread, found])


def check_workflow_usage(value: object) -> str:
    """
    Return the ``workflow_usage`` policy, checked.

    :raises BlinkInputError: not ``review`` or ``refuse`` (``WORKFLOW_USAGE``).
    """
    if value not in WORKFLOW_USAGE:
        raise BlinkInputError(f"workflow_usage must be one of {', '.join(map(repr, WORKFLOW_USAGE))}, got {value!r}")
    return str(value)


def read_usage(hook: BlinkHook, ws_id: str, table: str, probes: Sequence[Probe]) -> Usage:
    """
    Return which workflows of ``ws_id`` have steps on ``table`` that each probe breaks.

    One paged walk of the workflows, on the calling thread: reading the next page ahead on a thread of its own would
    open a connection of its own (a TLS handshake per plan) to save less than that on most tenants. Blink refusing the
    read (403, 404, 405) is said in :attr:`Usage.unread`, anything else it raises is raised.
    """
    usage = Usage(uses={probe.name: [] for probe in probes})
    try:
        for workflow in hook.iter_workflows(ws_id):  # (on this thread: its session, its open connection)
            _look(workflow, table, probes, usage)
    except (BlinkReadUnavailableError, BlinkAuthError) as err:
        if err.status not in (403, 404, 405):
            raise
        return Usage(unread=f"Blink answered {err.status} to the workflows read")
    for uses in usage.uses.values():
        uses.sort(key=lambda use: bool(use.unread))  # the known uses first, each kind in the order read
    return usage


def could_use(definition: str | None, table: str, probes: Sequence[Probe]) -> bool:
    """
    Return whether a definition's text could hold a step of ``table`` that a probe breaks: else it is not parsed.

    A step names its table literally, or through an expression (``{{``); it names a table action; and it names the
    field, unless it adds rows (``required`` turned on breaks the steps that do not name it).
    """
    if not definition:
        return True  # (said as unread)
    if table not in definition and "{{" not in definition:
        return False
    if not names_a_table_action(definition):
        return False
    return any(ADDS_ROWS in probe.breaks or probe.name in definition for probe in probes)


def _look(workflow: Workflow, table: str, probes: Sequence[Probe], usage: Usage) -> None:
    """Add what one workflow does to the probed fields (nothing kept of it otherwise)."""
    if not could_use(workflow.playbook, table, probes):
        return
    read = read_workflow(workflow.playbook)
    name, active = workflow.name, workflow.active
    if read.unread:
        for probe in probes:
            usage.uses[probe.name].append(WorkflowUse(name, workflow.id, active, unread=read.unread))
        return
    for probe in probes:
        steps: list[tuple[str, str]] = []
        unread: list[str] = []
        for step in read.steps:
            found, why = _step_use(step, table, probe)
            steps += [(step.step, use) for use in found]
            unread += [why] if why else []
        if steps:
            usage.uses[probe.name].append(WorkflowUse(name, workflow.id, active, tuple(steps)))
        if unread:
            usage.uses[probe.name].append(WorkflowUse(name, workflow.id, active, unread="; ".join(unread)))


def _on_table(step: TableStep, table: str) -> bool | None:
    """Whether the step is on ``table``: True, False, or None when it cannot be known (and may be)."""
    if step.table is not None:
        return step.table == table
    return None if step.table_expression or any(table in text for _, text in step.free_text) else False


def _step_use(step: TableStep, table: str, probe: Probe) -> tuple[list[str], str]:
    """Return how ``step`` uses the probed field in a way the change breaks, or why that cannot be known."""
    on_table = _on_table(step, table)
    if on_table is False:
        return [], ""
    uses = step.uses(probe.name)
    found: list[str] = []
    if MENTIONS in probe.breaks:
        found += uses
    if WRITES in probe.breaks and "written" in uses and "written" not in found:
        found.append("written")
    unread_body = step.adds_rows and step.body_unread
    if ADDS_ROWS in probe.breaks and step.adds_rows and "written" not in uses and not unread_body:
        found.append("adds rows without it")
    if on_table is None and found:
        return [], f"step {step.step} ({step.action}) uses {probe.name!r}, on a table it does not name: {_why(step)}"
    if found:
        return found, ""
    if unread_body and ADDS_ROWS in probe.breaks:
        return [], f"step {step.step} ({step.action}) adds rows whose body cannot be read: {_why(step)}"
    texts = step.in_free_text(probe.name) if (MENTIONS in probe.breaks or WRITES in probe.breaks) else []
    if texts:
        return [], f"step {step.step} ({step.action}) names {probe.name!r} only in free text ({', '.join(texts)})"
    return [], ""


def _why(step: TableStep) -> str:
    return "; ".join(step.unread) or "its table is named only in free text"
