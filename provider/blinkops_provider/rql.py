"""RQL, the query language of Blink's list endpoints.

An RQL query is a JSON object that travels, compact, in the ``q`` query parameter::

    RQLQuery(filter={"name": {"$like": "aws%"}}, sort=["-updated_at"], limit=100).to_param()
    # '{"filter":{"name":{"$like":"aws%"}},"sort":["-updated_at"],"limit":100}'

Filters follow Blink's documented subset: ``{"field": value}`` means equals; an object of
predicates (``$eq $neq $gt $lt $gte $lte $like``) is ANDed; several fields are ANDed;
``{"$or": [condition, ...]}`` matches when any condition does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from blinkops_provider.exceptions import BlinkInputError

__all__ = ["MAX_LIMIT", "OPERATORS", "RQLQuery", "check_paging", "parse_json_object"]

MAX_LIMIT = 1000
"""The largest page Blink serves (``limit`` is 1 to 1000)."""

OPERATORS = ("$eq", "$neq", "$gt", "$lt", "$gte", "$lte", "$like")
"""The predicates a field condition may use; ``$or`` combines conditions."""

_ORDERED = frozenset({"$gt", "$lt", "$gte", "$lte"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_SORT_ITEM = re.compile(r"^[+-]?[A-Za-z_][A-Za-z0-9_.]*$")
_Scalar = (str, int, float, bool, type(None))


def _check_text(value: str, where: str) -> None:
    """Refuse text that cannot be sent as UTF-8 JSON (lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: the text contains a lone surrogate (not valid Unicode)") from None


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"{where}: {name!r} is not a field name (letters, digits, '_' and '.', not starting with a digit)"
        )
    return name


def _check_predicates(field: str, predicates: Mapping[str, Any]) -> None:
    if not predicates:
        raise ValueError(f"filter on {field!r}: empty predicate object; use one of {', '.join(OPERATORS)}")
    for operator, value in predicates.items():
        _check_value(field, value)
        if operator not in OPERATORS:
            raise ValueError(f"filter on {field!r}: unknown operator {operator!r}; allowed: {', '.join(OPERATORS)}")
        if not isinstance(value, _Scalar):
            raise ValueError(
                f"filter on {field!r}: {operator} takes a string, number, boolean or null, not {type(value).__name__}"
            )
        if operator == "$like" and not isinstance(value, str):
            raise ValueError(f"filter on {field!r}: $like takes a string pattern with '%' wildcards")
        if operator in _ORDERED and (value is None or isinstance(value, bool)):
            raise ValueError(f"filter on {field!r}: {operator} takes a number or a string")


def _check_value(field: str, value: object) -> None:
    """Refuse values JSON cannot carry: NaN, infinities, lone surrogates."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"filter on {field!r}: {value!r} is not a number JSON can carry")
    if isinstance(value, str):
        _check_text(value, f"filter on {field!r}")


def _check_condition(condition: object, where: str = "filter") -> None:
    if not isinstance(condition, Mapping):
        raise ValueError(f"{where} must be an object of conditions, not {type(condition).__name__}")
    if not condition:
        raise ValueError(f"{where} is an empty object")
    for key, value in condition.items():
        if key == "$or":
            if not isinstance(value, list) or not value:
                raise ValueError(f"{where}: $or takes a non-empty array of condition objects")
            for index, item in enumerate(value):
                _check_condition(item, f"{where}.$or[{index}]")
        elif isinstance(key, str) and key.startswith("$"):
            raise ValueError(
                f"{where}: {key!r} is not allowed here; only $or combines conditions, and the "
                f"predicates {', '.join(OPERATORS)} go inside a field's object"
            )
        else:
            field = _check_name(key, where)
            _check_value(field, value)
            if isinstance(value, Mapping):
                _check_predicates(field, value)
            elif not isinstance(value, _Scalar):
                raise ValueError(
                    f"{where}: the value of {field!r} must be a string, number, boolean, null or an "
                    f"object of predicates, not {type(value).__name__} (there is no $in: use $or)"
                )


def _as_list(value: Any, what: str) -> Any:
    """Accept a list, a JSON array or a comma-separated string (as templates render them)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError as err:
                raise BlinkInputError(f"{what} is not a valid JSON array: {err}") from None
        else:
            return [part.strip() for part in text.split(",") if part.strip()]
    if value is not None and not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of field names (or one string of them), not {type(value).__name__}")
    return value


def check_paging(page_size: Any, max_items: Any) -> None:
    """Check the paging arguments of a catalogue walk.

    :raises BlinkInputError: ``page_size`` is not 1 to 1000, or ``max_items`` not None or 0 or more.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_LIMIT:
        raise BlinkInputError(f"page_size must be an integer from 1 to {MAX_LIMIT}, got {page_size!r}")
    if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0):
        raise BlinkInputError(f"max_items must be None or an integer of 0 or more, got {max_items!r}")


def parse_json_object(value: Any, what: str) -> Any:
    """Turn a rendered template (a JSON string) into an object; leave other values alone."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError as err:
            raise BlinkInputError(f"{what} is not valid JSON: {err}") from None
    return value


class RQLQuery(BaseModel):
    """A validated RQL query.

    :param filter: conditions, e.g. ``{"name": {"$gt": "k8s"}, "oauth_supported": True}``.
    :param sort: field names, ``+name`` ascending (the default) or ``-name`` descending.
    :param select: the fields to return.
    :param limit: page size, 1 to 1000.
    :param offset: number of items to skip, 0 or more.
    :raises ValueError: (a ``pydantic.ValidationError``) saying what is wrong and what is allowed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    filter: dict[str, Any] | None = None
    sort: list[str] | None = None
    select: list[str] | None = None
    limit: int | None = Field(default=None, ge=1, le=MAX_LIMIT, strict=True)
    offset: int | None = Field(default=None, ge=0, strict=True)

    @field_validator("filter", mode="before")
    @classmethod
    def _validate_filter(cls, value: Any) -> Any:
        value = parse_json_object(value, "filter")
        if value is not None:
            _check_condition(value)
        return value

    @field_validator("sort", mode="before")
    @classmethod
    def _validate_sort(cls, value: Any) -> Any:
        value = _as_list(value, "sort")
        for item in value or ():
            if not isinstance(item, str) or not _SORT_ITEM.fullmatch(item):
                raise ValueError(f"sort item {item!r} must be a field name, '+name' or '-name'")
        return value

    @field_validator("select", mode="before")
    @classmethod
    def _validate_select(cls, value: Any) -> Any:
        value = _as_list(value, "select")
        for item in value or ():
            _check_name(item, "select")
        return value

    def to_dict(self) -> dict[str, Any]:
        """The RQL object, without the members that were not given."""
        return self.model_dump(exclude_none=True)

    def to_param(self) -> str:
        """The compact JSON text for the ``q`` query parameter."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)
