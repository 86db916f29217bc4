"""When a job succeeds (successPolicy), and how long its success waits for the replicas that end with it.

With a chief (Chief or Master) the job succeeds with it. Without one, with worker 0, or with every worker under
successPolicy AllWorkers (failed dynamic workers aside). A job of only PS and evaluators succeeds when all of them
have.

When the chief (or whichever replica decides success) ends, its peers usually end within moments: they finish the
same last step. A plan that declared success at the chief's exit would find them still running, delete them
(cleanPodPolicy Running), and so cut their last log lines and report them deleted rather than ended; it would also
take several writes (the pods and their services deleted, a SuccessfulDelete event, the status written again once
they are gone) where one says it all. So success waits, at most SETTLE_SECONDS after the last replica ended, while
some replica still runs. A replica that never ends by itself (a parameter server) is deleted when the wait is
over, as before; the job's Succeeded condition comes that much later. An evaluator the success waits for
(evaluator.py: its final evaluation, up to a grace of minutes) is spared: it has a wait of its own, and the
settle would only put off the start of that wait. With no such wait (a grace of 0, cleanPodPolicy None) an
evaluator is a replica like the others.

The time a replica ended is its kubelet's (the container's finishedAt, to the second). A node clock ahead of ours
makes an end look like it is in the future: then nothing waits, since the wait could not be bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from tfop.api.constants import CHIEF_REPLICA_TYPES, REPLICA_WORKER, SUCCESS_POLICY_ALL_WORKERS
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState
from tfop.controller.plan.slots import ReplicaSlot

SETTLE_SECONDS = 2.0


def succeeded(spec: TFJobSpec, slots: list[Slot]) -> bool:
    """Whether the replicas the job's success depends on have succeeded."""
    states = {slot.slot: slot.state for slot in slots}
    for chief in CHIEF_REPLICA_TYPES:
        if spec.replicas(chief) > 0:
            return states.get(ReplicaSlot(chief, 0)) is SlotState.SUCCEEDED
    workers = [states.get(ReplicaSlot(REPLICA_WORKER, index)) for index in range(spec.replicas(REPLICA_WORKER))]
    if workers and spec.success_policy == SUCCESS_POLICY_ALL_WORKERS:
        return SlotState.SUCCEEDED in workers and all(
            state in (SlotState.SUCCEEDED, SlotState.TOLERATED) for state in workers)
    if workers:
        return workers[0] is SlotState.SUCCEEDED
    return bool(slots) and all(slot.state is SlotState.SUCCEEDED for slot in slots)


def settle_remaining(slots: Iterable[Slot], now: datetime, window: float = SETTLE_SECONDS, *,
                     spared: frozenset[ReplicaSlot] = frozenset()) -> float:
    """Seconds a job whose success is decided should still wait for its running replicas, but for the `spared`
    ones; 0.0 to finish now."""
    slots = list(slots)
    if not any(slot.state is SlotState.RUNNING and slot.slot not in spared for slot in slots):
        return 0.0
    ends = [end for slot in slots if slot.pod is not None and (end := slot.pod.ended_at) is not None]
    if not ends:
        return 0.0
    elapsed = (now - max(ends)).total_seconds()
    if elapsed < 0:
        return 0.0
    return max(0.0, window - elapsed)
