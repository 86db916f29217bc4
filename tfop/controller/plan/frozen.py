"""`replace` and `make` for the planner's frozen dataclasses: what `dataclasses.replace` and the class's own
`__init__` (with keywords) do, at a third to a half of their cost.

A pass replaces its status and replica counts some 27 times; `dataclasses.replace` walks the class's fields and
calls the frozen `__init__`, which sets every field through `object.__setattr__`; replace and the views' and
status records' `__init__` were two fifths of a plan's CPU (hack/bench/plan_bench.py under bench.cpu_sampler).
Here each class gets, once, functions that set every slot straight through its descriptor, and check nothing
else: so only a class whose `__init__` does nothing but assign its fields is handled this way (slots, no
`__post_init__`, no InitVar, no field left out of `__init__`); any other goes to `dataclasses.replace` and
its own `__init__`. A keyword the class has no field for is a TypeError either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any, TypeVar

T = TypeVar("T")
_Copier = Callable[[Any, dict[str, Any]], Any]
_COPIERS: dict[type, _Copier | None] = {}
_MAKERS: dict[type, Callable[[dict[str, Any]], Any] | None] = {}


def replace(obj: T, /, **changes: Any) -> T:
    cls = type(obj)
    if cls not in _COPIERS:
        _COPIERS[cls] = _make_copier(cls)
    copier = _COPIERS[cls]
    if copier is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    return copier(obj, changes)  # type: ignore[no-any-return]


def make(cls: type[T], /, **values: Any) -> T:
    """`cls(**values)`."""
    if cls not in _MAKERS:
        _MAKERS[cls] = _make_maker(cls)
    maker = _MAKERS[cls]
    if maker is None:
        return cls(**values)
    return maker(values)  # type: ignore[no-any-return]


def _plain_fields(cls: type) -> tuple[dataclasses.Field[Any], ...] | None:
    """The fields of a slotted dataclass whose `__init__` only assigns them; None for any other class."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if len(fields) != len(cls.__dataclass_fields__) or not all(field.init for field in fields):  # an InitVar
        return None
    if not all(isinstance(getattr(cls, field.name, None), MemberDescriptorType) for field in fields):
        return None  # a field kept in a __dict__ (a base class without slots)
    return fields


def _make_maker(cls: type) -> Callable[[dict[str, Any]], Any] | None:
    fields = _plain_fields(cls)
    if fields is None:
        return None
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_names": frozenset(f.name for f in fields)}
    lines = ["def make(values):",
             "    if not values.keys() <= _names:",
             "        return _cls(**values)  # raises the TypeError __init__ raises",
             "    new = _new(_cls)"]
    for position, field in enumerate(fields):
        scope[f"_set{position}"] = getattr(cls, field.name).__set__
        name = repr(field.name)
        if field.default is not dataclasses.MISSING:
            scope[f"_default{position}"] = field.default
            given = f"values[{name}] if {name} in values else _default{position}"
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory{position}"] = field.default_factory
            given = f"values[{name}] if {name} in values else _factory{position}()"
        else:  # required: missing, __init__ says so
            given = f"values[{name}] if {name} in values else _cls(**values)"
        lines.append(f"    _set{position}(new, {given})")
    lines.append("    return new")
    exec("\n".join(lines), scope)
    return scope["make"]  # type: ignore[no-any-return]


def _make_copier(cls: type) -> _Copier | None:
    fields = _plain_fields(cls)
    if fields is None:
        return None
    names = tuple(field.name for field in fields)
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_names": frozenset(names),
                             "_replace": dataclasses.replace}
    lines = ["def copy(obj, changes):",
             "    if not changes.keys() <= _names:",
             "        return _replace(obj, **changes)  # raises the TypeError dataclasses.replace raises",
             "    new = _new(_cls)"]
    for position, name in enumerate(names):
        scope[f"_set{position}"] = getattr(cls, name).__set__  # the slot's descriptor: bypasses the frozen check
        lines.append(f"    _set{position}(new, changes[{name!r}] if {name!r} in changes else obj.{name})")
    lines.append("    return new")
    exec("\n".join(lines), scope)
    return scope["copy"]  # type: ignore[no-any-return]
