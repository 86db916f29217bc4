"""The fault schedule: a pure function of the seed, so a run can be replayed by its seed alone.

A schedule is a sequence of rounds. A round's faults start together (each after a small offset of its own) and
overlap; the round ends when every one is healed, and the harness then waits for the cluster to converge. Which
job or pod a fault hits is drawn at run time from the same seeded generator, in a fixed order of candidates.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# What any cluster can suffer; kwok pods are ended by writing their status, as a kubelet would.
OPERATOR_KILL = "operator-kill"  # SIGKILL the leading replica: the standby takes the Lease over
APISERVER_RESTART = "apiserver-restart"  # SIGKILL, down for the fault's hold, started again
ETCD_COMPACT = "etcd-compact"  # every older revision gone: watches resuming from one get 410 Gone
JOB_DELETE_MID_RESTART = "job-delete-mid-restart"  # a pod fails retryably, then its job is deleted at once
SPEC_EDIT = "spec-edit"  # a running job's Worker count moved by one
POD_RETRYABLE = "pod-retryable"  # a container SIGKILLed (exit 137): the replica restarts, counted
POD_PERMANENT = "pod-permanent"  # a container exits 1: the job fails (restartPolicy ExitCode)
# Only with real nodes.
NODE_STOP = "node-stop"  # power loss, then powered on again after the hold
NODE_PARTITION = "node-partition"  # kubelet and containerd frozen for the hold, then thawed
COREDNS_RESTART = "coredns-restart"

KWOK_KINDS = (OPERATOR_KILL, APISERVER_RESTART, ETCD_COMPACT, JOB_DELETE_MID_RESTART, SPEC_EDIT, POD_RETRYABLE,
              POD_PERMANENT)
REAL_NODE_KINDS = (NODE_STOP, NODE_PARTITION, COREDNS_RESTART)
# Faults that take a component down: at most one of each kind per round (two apiserver restarts cannot overlap).
EXCLUSIVE_KINDS = frozenset({OPERATOR_KILL, APISERVER_RESTART, NODE_STOP, NODE_PARTITION, COREDNS_RESTART})
# A node down for a moment comes back before anything notices; one down long enough is lost: the node lifecycle
# controller marks it after its grace (--node-monitor-grace-period, 50 s on the local cluster), tfop replaces its
# replicas once its own grace has passed (nodeLoss.graceSeconds, 30 s by default), and a partitioned node's
# processes live on beside their replacements until it is healed. Half the node faults are held that long.
NODE_LOSS_KINDS = frozenset({NODE_STOP, NODE_PARTITION})
BLIP_HOLD = (1.0, 8.0)
LOSS_HOLD = (95.0, 125.0)
LOSS_SHARE = 0.5


@dataclass(frozen=True)
class Fault:
    kind: str
    offset: float  # seconds after the round starts
    hold: float  # seconds the fault lasts before it is healed (for those that take something down)


@dataclass(frozen=True)
class Round:
    index: int
    faults: tuple[Fault, ...]

    @property
    def overlapping(self) -> bool:
        return len(self.faults) > 1


def rounds(seed: int, kinds: Sequence[str] = KWOK_KINDS, *, max_faults: int = 3,
           overlap_probability: float = 0.5) -> Iterator[Round]:
    """Endless rounds for `seed`: one fault, or (with `overlap_probability`) two to `max_faults` overlapping."""
    rng = random.Random(seed)
    index = 0
    while True:
        count = 1 if rng.random() >= overlap_probability else rng.randint(2, max_faults)
        if all(kind in EXCLUSIVE_KINDS for kind in kinds):
            count = min(count, len(set(kinds)))
        chosen: list[str] = []
        while len(chosen) < count:
            kind = rng.choice(kinds)
            if kind in EXCLUSIVE_KINDS and kind in chosen:
                continue
            chosen.append(kind)
        yield Round(index, tuple(Fault(kind, round(rng.uniform(0.0, 3.0), 2), hold(rng, kind)) for kind in chosen))
        index += 1


def hold(rng: random.Random, kind: str) -> float:
    """How long a fault lasts. Only a node fault draws whether it is lost, so kwok-only schedules (the short form's
    seeds) stay as they were."""
    blip = round(rng.uniform(*BLIP_HOLD), 2)
    if kind in NODE_LOSS_KINDS and rng.random() < LOSS_SHARE:
        return round(rng.uniform(*LOSS_HOLD), 2)
    return blip
