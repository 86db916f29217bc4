"""A replica's slot, the place one Pod (or Job) and Service fill, and how a set of slots is told in a message.

At the bottom of plan/: the plan names its children by slot, and the applier tells what it created by slot, so
both import this downward.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tfop.api.constants import ReplicaType


@dataclass(frozen=True, order=True)
class ReplicaSlot:
    """One replica of a job: the place a single Pod and Service fill."""

    replica_type: ReplicaType
    index: int


def replica_ranges(slots: Iterable[ReplicaSlot]) -> str:
    """e.g. `Worker 0-3, 7, PS 0`: each type once, consecutive indexes as a range."""
    by_type: dict[str, list[int]] = defaultdict(list)
    for slot in sorted(slots):
        by_type[slot.replica_type].append(slot.index)
    parts = []
    for replica_type, indexes in by_type.items():
        runs: list[list[int]] = []
        for index in indexes:
            if runs and index == runs[-1][-1] + 1:
                runs[-1].append(index)
            else:
                runs.append([index])
        parts.append(f"{replica_type} " + ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"
                                                    for run in runs))
    return ", ".join(parts)
