"""
RQL, the query language of Blink's list endpoints.

An RQL query is a JSON object that travels, compact, in the ``q`` query parameter::

    RQLQuery(filter={"name": {"$like": "aws%"}}, sort=["-updated_at"], limit=100).to_param()
    # '{"filter":{"name":{"$like":"aws%"}},"sort":["-updated_at"],"limit":100}'

Filters follow Blink's parser (the a8m/rql library): ``{"field": value}`` means equals; an
object of predicates (``$eq $neq $gt $lt $gte $lte $like``) is ANDed; several fields are ANDed;
``{"$or": [condition, ...]}`` matches when any condition does, ``{"$and": [...]}`` when all do.
A value is a string, number or boolean: RQL has no null. Parts that set no condition (``{}``,
``{"name": {}}``, ``{"$or": []}``) are accepted and left out of what is sent.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from blinkops_provider.exceptions import BlinkInputError
from blinkops_provider.models import ConnectionType, scalar_fields
from blinkops_provider.utils.blink_api import MAX_LIMIT
from blinkops_provider.utils.inputs import MAX_NESTING, parse_json_object, validate_input

__all__ = ["RQLQuery"]

OPERATORS = ("$eq", "$neq", "$gt", "$lt", "$gte", "$lte", "$like")
"""The predicates a field condition may use; ``$or`` and ``$and`` combine conditions."""


_ORDERED = frozenset({"$gt", "$lt", "$gte", "$lte"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_SORT_ITEM = re.compile(r"^[+-]?[A-Za-z_][A-Za-z0-9_.]*$")
_Scalar = (str, int, float, bool)
_COMBINATORS = ("$or", "$and")


def _check_sendable(value: str, where: str) -> None:
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
    for operator, value in predicates.items():
        if operator not in OPERATORS:
            raise ValueError(f"filter on {field!r}: unknown operator {operator!r}; allowed: {', '.join(OPERATORS)}")
        _check_value(field, value, operator)
        if operator == "$like" and not isinstance(value, str):
            raise ValueError(f"filter on {field!r}: $like takes a string pattern with '%' wildcards")
        if operator in _ORDERED and isinstance(value, bool):
            raise ValueError(f"filter on {field!r}: {operator} takes a number or a string")


def _check_value(field: str, value: object, operator: str = "equals") -> None:
    """Refuse what RQL cannot compare: null, arrays, objects, NaN, infinities, lone surrogates."""
    if value is None:
        raise ValueError(
            f"filter on {field!r}: null is not a value RQL can compare ({operator}); "
            "use a string, number or boolean (Blink's parser refuses null)"
        )
    if not isinstance(value, _Scalar):
        raise ValueError(
            f"filter on {field!r}: {operator} takes a string, number or boolean, not {type(value).__name__}"
            + (" (there is no $in: use $or)" if isinstance(value, (list, tuple)) else "")
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"filter on {field!r}: {value!r} is not a number JSON can carry")
    if isinstance(value, str):
        _check_sendable(value, f"filter on {field!r}")


def _check_condition(condition: object, where: str = "filter", depth: int = 0) -> None:
    if not isinstance(condition, Mapping):
        raise ValueError(f"{where} must be an object of conditions, not {type(condition).__name__}")
    for key, value in condition.items():
        if key in _COMBINATORS:
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"{where}: {key} takes an array of condition objects, not {type(value).__name__}")
            if depth >= MAX_NESTING:
                raise ValueError(f"{where}: $or and $and may nest {MAX_NESTING} deep, no deeper")
            for index, item in enumerate(value):
                _check_condition(item, f"{where}.{key}[{index}]", depth + 1)
        elif isinstance(key, str) and key.startswith("$"):
            raise ValueError(
                f"{where}: {key!r} is not allowed here; $or and $and combine conditions, and the "
                f"predicates {', '.join(OPERATORS)} go inside a field's object"
            )
        else:
            field = _check_name(key, where)
            if isinstance(value, Mapping):
                _check_predicates(field, value)
            else:
                _check_value(field, value)


def _prune(condition: Mapping[str, Any]) -> dict[str, Any] | None:
    """
    Return the condition without the parts that set no condition; None when nothing is left.

    ``{}``, ``{"name": {}}``, ``{"$or": []}`` and ``{"$and": []}`` set no condition, and an ``$or``
    with such a term is always true. Blink's parser accepts them, but writes nothing for them, so
    beside another condition they would make it build broken SQL. They are not sent.
    """
    kept: dict[str, Any] = {}
    for key, value in condition.items():
        if key in _COMBINATORS:
            terms = _pruned_terms(key, value)
            if terms:
                kept[key] = terms
        elif not isinstance(value, Mapping) or value:
            kept[key] = dict(value) if isinstance(value, Mapping) else value
    return kept or None


def _pruned_terms(key: str, terms: Any) -> list[dict[str, Any]]:
    """Return an ``$or``'s or ``$and``'s terms that set a condition (none for an ``$or`` that is always true)."""
    pruned = [_prune(term) for term in terms]
    if key == "$or" and (not pruned or None in pruned):
        return []
    return [term for term in pruned if term is not None]


_KIND_OPERATORS = {bool: ("$eq", "$neq"), int: tuple(op for op in OPERATORS if op != "$like"), str: OPERATORS}
_KIND_NAMES = {bool: "a boolean", int: "an integer", str: "a string"}


def _fits(kind: type, value: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return not isinstance(value, bool) and (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        )
    return isinstance(value, kind)


def check_field_types(condition: Mapping[str, Any] | None, kinds: Mapping[str, type], where: str = "filter") -> None:
    """
    Refuse a value of the wrong type for a field whose type is known, as Blink's parser would.

    ``kinds`` maps field names to ``str``, ``int`` or ``bool``; other fields are left to Blink.
    An integer field takes a whole number (``1000.0`` too); a boolean field takes ``$eq`` and
    ``$neq`` only; ``$like`` is for strings.

    :raises ValueError: naming the field, its type, and what was given.
    """
    for key, value in (condition or {}).items():
        if key in _COMBINATORS:
            for index, item in enumerate(value):
                check_field_types(item, kinds, f"{where}.{key}[{index}]")
        elif key in kinds:
            kind = kinds[key]
            for operator, operand in (value if isinstance(value, Mapping) else {"$eq": value}).items():
                if operator not in _KIND_OPERATORS[kind]:
                    raise ValueError(
                        f"{where}: {operator} does not apply to {key!r}, {_KIND_NAMES[kind]} field; "
                        f"allowed: {', '.join(_KIND_OPERATORS[kind])}"
                    )
                if not _fits(kind, operand):
                    raise ValueError(
                        f"{where}: {key!r} is {_KIND_NAMES[kind]} field, so it takes {_KIND_NAMES[kind]}, "
                        f"not {operand!r}"
                    )


def _names_list(value: Any, what: str) -> Any:
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


class RQLQuery(BaseModel):
    """
    A validated RQL query.

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
        if value is None:
            return None
        _check_condition(value)
        return _prune(value)

    @field_validator("sort", mode="before")
    @classmethod
    def _validate_sort(cls, value: Any) -> Any:
        value = _names_list(value, "sort")
        for item in value or ():
            if not isinstance(item, str) or not _SORT_ITEM.fullmatch(item):
                raise ValueError(f"sort item {item!r} must be a field name, '+name' or '-name'")
        return value

    @field_validator("select", mode="before")
    @classmethod
    def _validate_select(cls, value: Any) -> Any:
        value = _names_list(value, "select")
        for item in value or ():
            _check_name(item, "select")
        return value

    def to_dict(self) -> dict[str, Any]:
        """Return the RQL object, without the members that were not given."""
        return self.model_dump(exclude_none=True)

    def to_param(self) -> str:
        """Return the compact JSON text for the ``q`` query parameter."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


KEY = "id"
"""The unique, unchanging member every walk sorts on."""


def sort_value(value: Any) -> tuple[int, Any]:
    """Return one member's value as a client-side sort orders it: numbers, then text, then anything else, then none."""
    if value is None:
        return (3, "")
    if type(value) in (int, float, bool):
        return (0, value)
    return (1, value) if isinstance(value, str) else (2, json.dumps(value, sort_keys=True))


def sort_items(items: list[dict[str, Any]], sort: list[str]) -> None:
    """
    Sort ``items`` in place by a query's ``sort`` (``-name`` descending), ties by id.

    How a walk applies a user's sort, once every page is in.
    """
    for key in reversed([*sort, KEY]):
        name = key.lstrip("+-")
        items.sort(key=lambda item: sort_value(item.get(name)), reverse=key.startswith("-"))


MAX_Q_CHARS = 3000
"""The longest URL-encoded ``q`` a walk sends: with the base URL, requests stay under 4 KB."""


def encoded_length(query: dict[str, Any]) -> int:
    """Return the length of ``q`` in a URL, as the hook sends it."""
    return len(quote(json.dumps(query, separators=(",", ":"), ensure_ascii=False), safe=""))


def connection_type_query(**members: Any) -> RQLQuery:
    """
    Return a query of the connection-type listing, checked before any request.

    RQL's rules, and the types of the fields it compares (the API contract's).

    :raises BlinkInputError: saying what is wrong and what is allowed.
    """
    query = validate_input(RQLQuery, members, "RQL query")
    try:
        check_field_types(query.filter, scalar_fields(ConnectionType))
    except ValueError as err:
        raise BlinkInputError(f"invalid RQL query: {err}") from None
    return query
