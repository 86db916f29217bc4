"""The pods of an admitted Workload that Kueue may stop counting: `status.reclaimablePods`, one {name, count} per
pod set, with which Kueue releases their share of the quota while the job goes on (for the next job in the queue).

A pod set's count is the number of its replicas that have ended for good, as the job's status records them
(replicas/finished.py: succeeded, or a tolerated dynamic worker failed for good): tfop never makes their pods
again while the Workload lasts, and an ended pod holds no node resources. A replica that is restarted (a
retryable failure) is not counted: it will run again.

Kueue's webhook refuses, while the Workload holds a quota reservation, a count that decreases or an entry that
goes, and at any time a count above its pod set's: the wanted counts are the stored ones raised, never lowered,
and capped at the pod set's count. A Workload is never resized (a new replica count makes a new one: its list
starts empty), so the record and the counts only grow together.
"""

from __future__ import annotations

from collections.abc import Mapping

ReclaimablePods = tuple[tuple[str, int], ...]  # (pod set name, count), in the Workload's pod set order


def wanted_reclaimable(pod_sets: tuple[tuple[str, int], ...], ended: Mapping[str, int],
                       stored: ReclaimablePods) -> ReclaimablePods:
    """The list the Workload should carry: per pod set (name, count as stored), `ended` (by pod set name) capped at
    the count and never below what `stored` says; a pod set with nothing to reclaim is left out unless it is
    stored (an entry may not go). Stored entries for pod sets the Workload lacks are kept as they are."""
    before = dict(stored)
    wanted = []
    for name, count in pod_sets:
        reclaimable = max(before.get(name, 0), min(ended.get(name, 0), count))
        if reclaimable > 0 or name in before:
            wanted.append((name, reclaimable))
    known = {name for name, _ in pod_sets}
    return (*wanted, *((name, count) for name, count in stored if name not in known))
