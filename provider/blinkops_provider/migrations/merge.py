"""A field update merged with the field as Blink holds it, so that Blink's whole-field PUT keeps
what the update leaves out."""

from __future__ import annotations

from blinkops_provider.exceptions import BlinkInputError, BlinkNotFoundError, BlinkReadUnavailableError
from blinkops_provider.hooks.blink import BlinkHook
from blinkops_provider.models import FieldBatch, FieldUpdate, contradictions, merge_field

__all__ = ["merged_with_blink"]


def merged_with_blink(hook: BlinkHook, ws_id: str, table: str, batch: list[tuple[str, FieldUpdate]]) -> FieldBatch:
    """Each update merged with its field as Blink holds it (one read of the table's fields), so
    what an update leaves out is sent as Blink holds it, and judged; nothing is sent here.

    :raises BlinkNotFoundError: a field (or the table) Blink does not have.
    :raises BlinkReadUnavailableError: Blink does not serve the read: without it the merge
        cannot be made, and ``replace=True`` is the way to send the updates as given.
    :raises BlinkInputError: a merged body that contradicts itself.
    """
    try:
        held = {field.name: field for field in hook.get_table_fields(ws_id, table)}
    except BlinkReadUnavailableError as err:
        raise err.restated(
            f"{err.message}. Without Blink's fields the update cannot keep what it leaves out, so nothing was sent; "
            "replace=True sends the update as given (Blink then resets what it leaves out)"
        ) from None
    missing = [name for name, _ in batch if name not in held]
    if missing:
        raise BlinkNotFoundError(
            f"no field {', '.join(map(repr, missing[:20]))} in table {table!r} of workspace {ws_id!r}; create "
            "it in Blink first (a field update cannot add one). Nothing was sent"
        )
    merged = [(name, merge_field(update, held[name], name=name)) for name, update in batch]
    problems = [f"{name!r}: {'; '.join(found)}" for name, update in merged if (found := contradictions(update))]
    if problems:
        raise BlinkInputError("contradicting field settings, so nothing was sent: " + " | ".join(problems))
    return FieldBatch(merged, named=True, judged=True)
