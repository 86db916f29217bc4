"""The capacity auto-scaler's decision, pure: given the nodes' room, the elastic jobs, the pods that wait and what
the last look remembered, which jobs to resize to what, and what to remember.

Callers may rely on, for every job it resizes: its elasticPolicy lets its size move (min < max), it has no HPA
of its own, it is steady (no resize under way), and the new size is within [min, max]. One look decides at most
one kind of move: giving up unschedulable extra workers, else shrinking for a waiting job, else growing into idle
capacity; a job that was shrunk for a waiting job does not grow while that job still waits.

- Give up: a job's highest workers from its minimum up that the scheduler found no node for during
  `give_up_after` are given up: its size drops to below them (never below its minimum), instead of leaving them
  Pending. The job then does not grow again until the nodes have room for more of its workers than they had at
  the give-up (a node added, a pod ended), or until `give_up_after` doubled per give-up (at most 64 times) has
  passed: a worker the scheduler refuses for what the model does not see (affinity, topology spread) would
  otherwise be added and given up again every window.
- Shrink: when pods of another TFJob waited `shrink_after` for resources (the scheduler said which it lacked),
  elastic jobs above their minimum give up workers, most fulfilled (workers / max) first, then the newest, one at
  a time, until the workers given up free what the waiting pods request of the resources they lack. If all of
  them together cannot, none shrinks. Shrinking again for the same job waits another `shrink_after`.
- Grow: once no TFJob's pod waits, every elastic job is steady, and a worker of some job below its maximum has
  fitted on a node for `grow_after`, the jobs grow by the workers that fit, the least fulfilled first (then the
  oldest), one worker at a time, each placed on a node whose room it then takes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from fractions import Fraction

from tfop.controller.capacity.model import (
    ElasticJob,
    GiveUp,
    Memory,
    NodeRoom,
    Resize,
    WaitingPod,
    added,
    covered,
    fits,
    frozen,
    taken,
)
from tfop.controller.plan.controller_config import CapacityScalingSettings

WORKER = "worker"  # the replica-type label's value of a Worker
MAX_DOUBLINGS = 6  # a job that keeps being refused waits at most 64 give-up windows before growing again


@dataclass(frozen=True)
class Decision:
    resizes: tuple[Resize, ...]
    memory: Memory


def decide(now: datetime, settings: CapacityScalingSettings, nodes: Sequence[NodeRoom], jobs: Sequence[ElasticJob],
           waiting: Sequence[WaitingPod], memory: Memory) -> Decision:
    if not settings.enabled:
        return Decision((), Memory())
    elastic = [job for job in jobs if job.min_workers < job.max_workers and not job.has_hpa]
    waiting_jobs = {pod.job for pod in waiting}
    elastic_keys = {job.key for job in elastic}
    # Forget shrinks for jobs that no longer wait (their pods were scheduled, or they are gone), and the give-ups
    # of jobs that are no longer elastic.
    memory = Memory(memory.idle_since,
                    frozen((job, at) for job, at in memory.shrunk_at.items() if job in waiting_jobs),
                    frozen((job, cause) for job, cause in memory.shrunk_for.items() if cause in waiting_jobs),
                    frozen((job, last) for job, last in memory.given_up.items() if job in elastic_keys))
    given_up = _give_up(now, settings, elastic, waiting)
    if given_up:
        remembered = dict(memory.given_up)
        for _, job in given_up:
            before = remembered.get(job.key)
            remembered[job.key] = GiveUp(now, (before.count if before else 0) + 1, _fitting(job, nodes))
        return Decision(tuple(resize for resize, _ in given_up),
                        replace(memory, idle_since=None, given_up=frozen(remembered.items())))
    shrunk, memory = _shrink(now, settings, elastic, waiting, memory)
    if shrunk:
        return Decision(shrunk, memory)
    return _grow(now, settings, nodes, elastic, waiting, memory)


def _give_up(now: datetime, settings: CapacityScalingSettings, elastic: Sequence[ElasticJob],
             waiting: Sequence[WaitingPod]) -> list[tuple[Resize, ElasticJob]]:
    resizes = []
    for job in elastic:
        if not job.steady:
            continue
        stuck = {pod.index: pod.since for pod in waiting
                 if pod.job == job.key and pod.replica_type == WORKER and pod.index >= job.min_workers
                 and _seconds(now, pod.since) >= settings.give_up_after}
        size = job.workers
        while size - 1 in stuck and size - 1 >= job.min_workers:
            size -= 1
        if size < job.workers:
            longest = max(_seconds(now, stuck[index]) for index in range(size, job.workers))
            reason = f"Worker {job.workers} -> {size}: {_workers(size, job.workers)} found no node for {longest:.0f} s"
            resizes.append((Resize(job.key, job.workers, size, reason), job))
    return resizes


def _shrink(now: datetime, settings: CapacityScalingSettings, elastic: Sequence[ElasticJob],
            waiting: Sequence[WaitingPod], memory: Memory) -> tuple[tuple[Resize, ...], Memory]:
    by_job: dict[str, list[WaitingPod]] = defaultdict(list)
    minimums = {job.key: job.min_workers for job in elastic}
    for pod in waiting:
        extra = pod.replica_type == WORKER and pod.index >= minimums.get(pod.job, pod.index + 1)
        if pod.short_of and not extra:  # an elastic job's extra workers are given up, never shrunk for
            by_job[pod.job].append(pod)
    sizes = {job.key: job.workers for job in elastic}
    shrunk_at, shrunk_for = dict(memory.shrunk_at), dict(memory.shrunk_for)
    resizes: dict[str, Resize] = {}
    for waiter, pods in sorted(by_job.items(), key=lambda item: min(pod.since for pod in item[1])):
        waited = _seconds(now, min(pod.since for pod in pods))
        again = waiter in shrunk_at and _seconds(now, shrunk_at[waiter]) < settings.shrink_after
        if waited < settings.shrink_after or again:
            continue  # not long enough, or shrunk for it lately: the room made is on its way
        short_of = sorted({name for pod in pods for name in pod.short_of})
        need = {name: amount for name, amount in added(*(pod.request for pod in pods)).items() if name in short_of}
        donors = [job for job in elastic if job.key != waiter and job.steady and job.key not in by_job
                  and any(job.worker_request.get(name, Fraction(0)) > 0 for name in need)]
        plan = dict(sizes)
        freed: dict[str, Fraction] = {}
        while not covered(need, freed):
            able = [job for job in donors if plan[job.key] > job.min_workers]
            if not able:
                break
            donor = max(able, key=lambda job: (Fraction(plan[job.key], job.max_workers), job.created, job.key))
            plan[donor.key] -= 1
            freed = added(freed, donor.worker_request)
        if not covered(need, freed):
            continue  # all of them together cannot make room: shrinking would only cost them
        for job in donors:
            if plan[job.key] < sizes[job.key]:
                before = resizes[job.key].before if job.key in resizes else job.workers
                resizes[job.key] = Resize(job.key, before, plan[job.key],
                                          f"Worker {before} -> {plan[job.key]}: {waiter}'s pods waited "
                                          f"{waited:.0f} s for {', '.join(short_of)}")
                shrunk_for[job.key] = waiter
        sizes = plan
        shrunk_at[waiter] = now
    return tuple(resizes.values()), replace(memory, idle_since=None if resizes else memory.idle_since,
                                            shrunk_at=frozen(shrunk_at.items()), shrunk_for=frozen(shrunk_for.items()))


def _grow(now: datetime, settings: CapacityScalingSettings, nodes: Sequence[NodeRoom],
          elastic: Sequence[ElasticJob], waiting: Sequence[WaitingPod], memory: Memory) -> Decision:
    idle = replace(memory, idle_since=None)
    if waiting or not all(job.steady for job in elastic):
        return Decision((), idle)  # something waits or is moving: capacity is not idle
    rooms = {node.name: node.room for node in nodes}
    sizes = {job.key: job.workers for job in elastic}
    growing = [job for job in elastic if job.workers < job.max_workers and job.key not in memory.shrunk_for
               and not _held_back(now, settings, memory.given_up.get(job.key), job, nodes)]
    while growing:
        job = min(growing, key=lambda job: (Fraction(sizes[job.key], job.max_workers), job.created, job.key))
        node = next((node for node in nodes if job.placement.allows(node) and fits(job.worker_request,
                                                                                   rooms[node.name])), None)
        if node is None:
            growing.remove(job)
            continue
        rooms[node.name] = taken(rooms[node.name], job.worker_request)
        sizes[job.key] += 1
        if sizes[job.key] == job.max_workers:
            growing.remove(job)
    grown = [job for job in elastic if sizes[job.key] > job.workers]
    if not grown:
        return Decision((), idle)
    since = memory.idle_since or now
    waited = _seconds(now, since)
    if waited < settings.grow_after:
        return Decision((), replace(memory, idle_since=since))
    return Decision(tuple(Resize(job.key, job.workers, sizes[job.key],
                                 f"Worker {job.workers} -> {sizes[job.key]}: {_count(sizes[job.key] - job.workers)} "
                                 f"fit in capacity idle for {waited:.0f} s") for job in grown), idle)


def _held_back(now: datetime, settings: CapacityScalingSettings, last: GiveUp | None, job: ElasticJob,
               nodes: Sequence[NodeRoom]) -> bool:
    """Whether a job that gave workers up must not grow yet: no more room for its workers than at the give-up,
    and its backoff not yet passed."""
    if last is None:
        return False
    backoff = settings.give_up_after * 2 ** min(last.count - 1, MAX_DOUBLINGS)
    return _seconds(now, last.at) < backoff and _fitting(job, nodes) <= last.fitting


def _fitting(job: ElasticJob, nodes: Sequence[NodeRoom]) -> int:
    """How many of the job's workers the nodes' room holds, each whole on one node, counted up to its maximum."""
    count = 0
    for node in nodes:
        if not job.placement.allows(node):
            continue
        room = node.room
        while count < job.max_workers and fits(job.worker_request, room):
            room = taken(room, job.worker_request)
            count += 1
    return count


def _seconds(now: datetime, since: datetime) -> float:
    return (now - since).total_seconds()


def _workers(first: int, end: int) -> str:
    return f"worker {first}" if end - first == 1 else f"workers {first}-{end - 1}"


def _count(workers: int) -> str:
    return "1 worker" if workers == 1 else f"{workers} workers"
