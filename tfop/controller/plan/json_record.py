"""A typed record of a JSON object other writers share: what the record types is read into attributes, and what it
does not (another writer's fields, a value not of its type) is kept as stored, so a record read and written back
unchanged is the same JSON, keys in the same order. job_status.py's records are built on it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from tfop.controller.plan.frozen import make
from tfop.objects import Object

NOTHING: Mapping[str, Any] = MappingProxyType({})
_Value = TypeVar("_Value")
_Choice = TypeVar("_Choice", bound=enum.Enum)
_Record = TypeVar("_Record", bound="JsonRecord")


@dataclass(frozen=True, slots=True)
class Key(Generic[_Value]):
    """One JSON key of a record: its attribute, and how a value is read (None: not of its type) and written."""

    name: str
    attribute: str
    read: Callable[[object], _Value | None]
    write: Callable[[_Value], object]


def text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def uids(value: object) -> tuple[str, ...] | None:
    return tuple(uid for uid in value if isinstance(uid, str)) if isinstance(value, list) else None


def same(value: object) -> object:
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonRecord:
    # What the record does not type, as stored (another writer's fields, values not of their type).
    extra: Mapping[str, Any] = field(default_factory=lambda: NOTHING)
    # The keys as the stored JSON had them: a record written back keeps that order, new keys after.
    order: tuple[str, ...] = field(default=(), compare=False)
    # Typed keys whose stored JSON is not what their value writes (read leniently), as stored.
    stored: Mapping[str, Any] = field(default_factory=lambda: NOTHING, compare=False)


def parse_record(cls: type[_Record], keys: tuple[Key[Any], ...], raw: Object) -> _Record:
    by_name = {key.name: key for key in keys}
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    for name, value in raw.items():
        key = by_name.get(name)
        typed = key.read(value) if key is not None else None
        if key is None or typed is None:
            extra[name] = value
            continue
        values[key.attribute] = typed
        if key.write(typed) != value:
            stored[name] = value
    return make(cls, **values, extra=MappingProxyType(extra) if extra else NOTHING, order=tuple(raw),
                stored=MappingProxyType(stored) if stored else NOTHING)


def dump_record(record: JsonRecord, keys: tuple[Key[Any], ...]) -> Object:
    """The record's JSON: typed values written, what `extra` kept where no typed value replaces it, in the stored
    order with new keys after."""
    written = {key.name: record.stored[key.name] if key.name in record.stored and key.read(record.stored[key.name])
               == value else key.write(value) for key in keys if (value := getattr(record, key.attribute)) is not None}
    out: Object = {}
    for name in (*record.order, *(key.name for key in keys), *record.extra):
        if name in out:
            continue
        if name in written:
            out[name] = written[name]
        elif name in record.extra:
            out[name] = record.extra[name]
    return out



def enum_of(kind: type[_Choice]) -> Callable[[object], _Choice | None]:
    """A reader of one of `kind`'s values (None for any other)."""
    by_value = {member.value: member for member in kind}
    return lambda value: by_value.get(value) if isinstance(value, str) else None

