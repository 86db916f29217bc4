"""Lenient readers for JSON dicts that may hold anything.

The CRD rejects most malformed TFJobs, but the operator must never crash on one that slips past it (an older CRD,
a status edited by hand), so code that walks a job reads fields through these instead of indexing.
"""

from __future__ import annotations

from typing import Any, TypeVar

_Choice = TypeVar("_Choice", bound=str)


def mapping(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def mapping_at(obj: object, *keys: str) -> dict[str, Any]:
    """The object found by following `keys` from `obj`; empty where any step is missing or not an object."""
    current = mapping(obj)
    for key in keys:
        current = mapping(current.get(key))
    return current


def items(value: object) -> list[Any]:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def integer(value: object) -> int | None:
    """`value` if it is a JSON integer (JSON has no bool-as-int, so True is not 1 here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: object) -> str | None:
    """`value` if it is a string."""
    return value if isinstance(value, str) else None


def one_of(value: object, choices: tuple[_Choice, ...]) -> _Choice | None:
    """`value` as the one of `choices` it equals, typed as their Literal; None if it is none of them."""
    for choice in choices:
        if value == choice:
            return choice
    return None
