"""
What a Blink workflow does to tables: the table steps of one workflow's definition, read without running it.

A workflow (Blink's "playbook") is a YAML definition whose steps each name an ``action`` and its ``inputs``. The table
actions (``TABLE_ACTIONS``: ``tables.*`` and the older ``system.Table*``) name their table in the input ``table``,
by its internal name, and its columns by their names. :func:`read_workflow` returns each table step with the columns it
mentions and how (:class:`TableStep`, :class:`FieldMention`); the planner asks it which workflows a change breaks.

What this reader assumes beyond Blink's published notes (docs: "What a change breaks"):

- a step is any mapping in the definition with a string ``action`` and a mapping ``inputs`` (at any depth, so the
  steps of a loop or a branch count); its id is its ``id`` member, else its key in the mapping that holds it;
- a column is mentioned by: one input per column (``tables.AddRecordV2``, ``tables.CreateOrUpdateRecordV3``: every
  input that is not one of the action's own, ``OWN_INPUTS``), a condition (``ci``: the keys of an RQL-style
  filter, or a list of ``{"field"|"column"|"key": name}`` terms), an RQL ``query`` (its ``filter``, ``sort`` and
  ``select``), a JSON body (``data``: its objects' keys), or a ``column`` input;
- an ``sql`` query, text that does not parse as the JSON the input takes, and any other text input are free text: a
  column named there is reported as such, never counted as a use (nor ignored).

What cannot be read is said (the ``unread`` of :class:`WorkflowSteps` and of :class:`TableStep`), never guessed: a
definition that does not parse, a table named through an expression (``{{ steps.S1.output.table }}``), a body that is an
expression.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["FieldMention", "TableStep", "WorkflowSteps", "mentioned_in_text", "names_a_table_action", "read_workflow"]

TABLE_ACTIONS = frozenset(
    {
        "tables.GetRecordsV3",
        "tables.AddRecordV2",
        "tables.CreateOrUpdateRecordV3",
        "tables.UpdateRecords",
        "tables.DeleteRecordsV2",
        "tables.GetTableSchema",
        "tables.CreateTableFromData",
        "tables.GetFileContent",
        "tables.UpdateFileColumn",
        "system.TableCreate",
        "system.TableExists",
        "system.TableRemove",
        "system.TableInsert",
        "system.TableUpdate",
        "system.TableClear",
    }
)
"""The actions that read or write a Blink table (Blink's tool lists them)."""

_ACTION_FAMILIES = tuple(
    sorted({action.split(".")[0] + "." + ("Table" if action.startswith("system.") else "") for action in TABLE_ACTIONS})
)

ADDING_ACTIONS = frozenset({"tables.AddRecordV2", "tables.CreateOrUpdateRecordV3", "system.TableInsert"})
"""The actions that add whole rows (an upsert adds one when none matches): a row they add without a field that
turns ``required`` fails."""

PER_COLUMN_ACTIONS = frozenset({"tables.AddRecordV2", "tables.CreateOrUpdateRecordV3"})
"""The actions that take one input per column."""

WRITING_ACTIONS = ADDING_ACTIONS | {"tables.UpdateRecords", "system.TableUpdate", "tables.UpdateFileColumn"}

OWN_INPUTS = frozenset(
    {
        "table",
        "query_method",
        "ci",
        "query",
        "sql",
        "data",
        "record_data_format",
        "limit",
        "offset",
        "id",
        "ids",
        "record_id",
        "skip",
        "show_output",
        "file_name",
        "column",
        "search_by",
        "schema",
        "condition",
        "sort",
        "select",
    }
)
"""The inputs of the table actions that are not columns."""

_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, in C where PyYAML was built with libyaml (its wheels are): five times faster."""


@dataclass(frozen=True)
class FieldMention:
    """
    One column a step mentions.

    :ivar field: the column's name as the step writes it.
    :ivar input: the input that mentions it (the column's own input, ``ci``, ``query``, ``data``, ``column``).
    :ivar use: ``read``, ``written`` or ``filtered on``.
    """

    field: str
    input: str
    use: str


@dataclass(frozen=True)
class TableStep:
    """
    One table step of a workflow.

    :ivar step: the step's id.
    :ivar action: its action, e.g. ``tables.AddRecordV2``.
    :ivar table: the table it names (internal name); None when it names none that can be read (``unread`` says why).
    :ivar mentions: the columns it mentions, and how.
    :ivar adds_rows: whether it adds whole rows (``ADDING_ACTIONS``).
    :ivar free_text: ``(input, text)`` of each input read as free text (an ``sql`` query, say).
    :ivar unread: what could not be read in the step, in sentences.
    :ivar table_expression: whether it names its table through an expression (which table cannot be known).
    :ivar body_unread: whether its body (``data``) is an expression (which columns it writes cannot be known).
    """

    step: str
    action: str
    table: str | None
    mentions: tuple[FieldMention, ...] = ()
    adds_rows: bool = False
    free_text: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()
    table_expression: bool = False
    body_unread: bool = False

    def uses(self, field: str) -> list[str]:
        """Return how the step uses ``field`` (``read``, ``written``, ``filtered on``), each once, in order."""
        return list(dict.fromkeys(m.use for m in self.mentions if m.field == field))

    def in_free_text(self, field: str) -> list[str]:
        """Return the free-text inputs that name ``field`` as a word."""
        return [name for name, text in self.free_text if mentioned_in_text(text, field)]


@dataclass(frozen=True)
class WorkflowSteps:
    """
    The table steps of one workflow's definition.

    :ivar steps: its table steps, in the definition's order.
    :ivar unread: why the definition could not be read ("" when it was).
    """

    steps: tuple[TableStep, ...] = ()
    unread: str = ""


def names_a_table_action(definition: str) -> bool:
    """Return whether a definition's text names a table action (``tables.*``, ``system.Table*``): else no table step."""
    return any(family in definition for family in _ACTION_FAMILIES)


def mentioned_in_text(text: str, name: str) -> bool:
    """Return whether ``name`` appears in ``text`` as a word (not inside a longer name)."""
    return bool(name) and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text) is not None


def read_workflow(definition: str | None) -> WorkflowSteps:
    """
    Return the table steps of a workflow's definition (its YAML text).

    :returns: the steps; or none and why, when the definition is missing, does not parse, or is not a mapping.
    """
    if not definition:
        return WorkflowSteps(unread="the workflow has no definition")
    try:
        document = yaml.load(definition, Loader=_LOADER)  # (a safe loader: libyaml's when built with it)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        return WorkflowSteps(unread=f"its definition does not parse as YAML{where} ({problem})")
    except RecursionError:
        return WorkflowSteps(unread="its definition nests too deeply to read")
    if not isinstance(document, Mapping):
        return WorkflowSteps(unread="its definition is not a YAML mapping")
    seen: set[int] = set()
    return WorkflowSteps(steps=tuple(_read_step(key, node) for key, node in _steps(document, "", seen)))


def _steps(node: Any, key: str, seen: set[int], depth: int = 0) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """
    Yield ``(key, step)`` for each table step at any depth, in the definition's order.

    Each node once: YAML aliases share nodes, and a definition of nested aliases (a "billion laughs") would otherwise
    take exponential time to walk.
    """
    if depth > 64 or id(node) in seen:
        return
    if isinstance(node, (Mapping, list)):
        seen.add(id(node))
    if isinstance(node, Mapping):
        action = node.get("action")
        if isinstance(action, str) and action in TABLE_ACTIONS:
            yield key, node
        for name, value in node.items():
            yield from _steps(value, str(name), seen, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _steps(item, key, seen, depth + 1)


def _read_step(key: str, node: Mapping[str, Any]) -> TableStep:
    action = str(node["action"])
    step = str(node.get("id") or key or "?")
    inputs = node.get("inputs")
    if not isinstance(inputs, Mapping):
        return TableStep(step, action, None, unread=("its inputs are not a mapping",))
    reader = _StepReader(action)
    table = reader.table(inputs.get("table"))
    for name, value in inputs.items():
        reader.read_input(str(name), value)
    return TableStep(
        step,
        action,
        table,
        tuple(reader.mentions),
        adds_rows=action in ADDING_ACTIONS,
        free_text=tuple(reader.free_text),
        unread=tuple(reader.unread),
        table_expression=reader.table_expression,
        body_unread=reader.body_unread,
    )


class _StepReader:
    """The mentions of one step's inputs, gathered input by input."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.written = "written" if action in WRITING_ACTIONS else "read"
        self.mentions: list[FieldMention] = []
        self.free_text: list[tuple[str, str]] = []
        self.unread: list[str] = []
        self.seen: set[int] = set()
        self.table_expression = False
        self.body_unread = False

    def table(self, value: Any) -> str | None:
        if isinstance(value, str) and value.strip() and not _EXPRESSION.search(value):
            return value.strip()
        if isinstance(value, str) and _EXPRESSION.search(value):
            self.table_expression = True
            self.unread.append(f"its table is named through an expression ({value.strip()[:80]})")
        else:
            self.unread.append("it names no table in its 'table' input")
        return None

    def read_input(self, name: str, value: Any) -> None:
        if name == "table":
            return
        if name in ("ci", "condition"):
            self._structured(name, value, self._condition)
        elif name == "query":
            self._structured(name, value, self._query)
        elif name == "data":
            self._structured(name, value, self._body)
        elif name == "column" and isinstance(value, str) and not _EXPRESSION.search(value):
            self.mentions.append(FieldMention(value, name, self.written))
        elif name not in OWN_INPUTS and self.action in PER_COLUMN_ACTIONS:
            self.mentions.append(FieldMention(name, name, "written"))
        elif isinstance(value, str) and value.strip():
            self.free_text.append((name, value))

    def _structured(self, name: str, value: Any, read: Any) -> None:
        """Read an input that holds JSON (as text or as YAML): as free text when it does not parse."""
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return
            if _EXPRESSION.fullmatch(text):
                self.body_unread |= name == "data"
                self.unread.append(f"its '{name}' input is an expression ({text[:80]})")
                return
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                self.free_text.append((name, value))
                return
        read(name, value)

    def _condition(self, name: str, value: Any, depth: int = 0) -> None:
        if depth > 32 or id(value) in self.seen:  # (each node once: aliases share them)
            return
        if isinstance(value, (Mapping, list)):
            self.seen.add(id(value))
        if isinstance(value, Mapping):
            for key, inner in value.items():
                key = str(key)
                if key.startswith("$"):
                    self._condition(name, inner, depth + 1)
                elif key in ("field", "column", "key") and isinstance(inner, str):
                    self.mentions.append(FieldMention(inner, name, "filtered on"))
                elif key in ("value", "operator", "op"):
                    continue
                else:
                    self.mentions.append(FieldMention(key, name, "filtered on"))
        elif isinstance(value, list):
            for item in value:
                self._condition(name, item, depth + 1)

    def _query(self, name: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            return
        self._condition(name, value.get("filter"))
        for part in ("sort", "select"):
            names = value.get(part)
            for item in names if isinstance(names, list) else []:
                if isinstance(item, str) and item.strip("+-"):
                    self.mentions.append(FieldMention(item.lstrip("+-"), name, "read"))

    def _body(self, name: str, value: Any) -> None:
        rows = value if isinstance(value, list) else [value]
        for row in rows:
            if isinstance(row, Mapping):
                for key in row:
                    if str(key) != "id":
                        self.mentions.append(FieldMention(str(key), name, "written"))
