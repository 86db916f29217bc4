"""plan/frozen.py: `replace` and `make` give what `dataclasses.replace` and `__init__` give, for the classes they
speed up and for those they hand back to dataclasses."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from tfop.controller.plan.frozen import make, replace
from tfop.controller.plan.job_status import Condition, ReplicaStatus, TFJobStatus
from tfop.controller.plan.observed.child import Child, Owner
from tfop.controller.plan.observed.pod import PodView


@dataclass(frozen=True, slots=True, kw_only=True)
class Plain:
    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")


@dataclass(frozen=True)
class Unslotted:
    value: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Derived(Plain):
    extra: str = "x"


def test_replace_is_dataclasses_replace_for_the_planners_records() -> None:
    status = TFJobStatus(conditions=(Condition(type="Running", status="True"),), replica_summary="1/2",
                         start_time=datetime(2026, 1, 2, tzinfo=UTC), runtime_id="ab12")
    for changes in ({}, {"replica_summary": "2/2"}, {"conditions": None, "state": "Running", "phase": "Running"}):
        assert replace(status, **changes) == dataclasses.replace(status, **changes)
    counts = ReplicaStatus(active=2, succeeded=1)
    assert replace(counts, failed=3) == dataclasses.replace(counts, failed=3) == ReplicaStatus(active=2, succeeded=1,
                                                                                               failed=3)
    pod = PodView(name="p", uid="u", phase="Running", controller=Owner("v1", "TFJob", "j", "uid-j"))
    assert replace(pod, phase="Failed") == dataclasses.replace(pod, phase="Failed")
    assert type(replace(pod, phase="Failed")) is PodView


def test_make_is_the_classs_init() -> None:
    assert make(Plain, name="a") == Plain(name="a")
    assert make(Plain, name="a", count=2, tags=["t"]) == Plain(name="a", count=2, tags=["t"])
    assert make(Derived, name="a", extra="y") == Derived(name="a", extra="y")
    assert make(Child, name="c", uid="u", terminating=True) == Child(name="c", uid="u", terminating=True)
    assert make(PodView, name="p", phase="Running") == PodView(name="p", phase="Running")


def test_a_default_factory_gives_each_object_its_own_value() -> None:
    first, second = make(Plain, name="a"), make(Plain, name="b")
    assert first.tags == [] and first.tags is not second.tags


def test_what_init_refuses_make_refuses() -> None:
    with pytest.raises(TypeError):
        make(Plain, count=1)  # name is required
    with pytest.raises(TypeError):
        make(Plain, name="a", colour="red")
    with pytest.raises(TypeError):
        replace(Plain(name="a"), colour="red")


def test_the_copies_stay_frozen() -> None:
    copied = replace(Plain(name="a"), count=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        copied.count = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        make(Plain, name="a").name = "b"  # type: ignore[misc]


def test_classes_with_more_than_fields_go_to_dataclasses() -> None:
    with pytest.raises(ValueError, match="negative"):
        replace(Checked(1), value=-1)  # its __post_init__ still runs
    with pytest.raises(ValueError, match="negative"):
        make(Checked, value=-1)
    assert replace(Unslotted(), value=2) == Unslotted(2)
    assert make(Unslotted) == Unslotted()
