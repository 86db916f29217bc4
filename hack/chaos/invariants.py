"""The invariants a chaos run must keep, each a function of what was observed that answers the violations it
finds (none: it held). Pure: the harness gathers the observations, these judge them (test/unit/test_chaos_*)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from chaos.observations import JobEnd, JobView, PodLife, ProcessClaim
from chaos.workload import DELETED, JobPlan

# How long the cluster may take to converge after a fault is healed: a standby's takeover waits out the Lease (15 s)
# and a restarted apiserver's clients back off (at most 30 s), each then a pass or two; the rest is margin for a
# loaded 2-core machine shared with other work. The report gives the times measured.
CONVERGENCE_BOUND = 180.0
# The operator's RSS at the end of its life over its RSS once warm: the bound, and from when a process is "warm".
RSS_RATIO_BOUND = 1.5
RSS_WARMUP = 30.0
RSS_MIN_LIFE = 90.0  # a process that lived less says nothing about growth
# How a fault's detail starts when it could not be made or healed, and when it had nothing to hit.
ERRORED = "error:"
SKIPPED = "skipped:"


@dataclass(frozen=True)
class Verdict:
    name: str
    violations: tuple[str, ...]

    @property
    def held(self) -> bool:
        return not self.violations


def outcomes(plans: Iterable[JobPlan], ends: Mapping[str, JobEnd]) -> list[str]:
    """Every job ended as its plan says (condition and reason), or is gone if it was deleted."""
    found = []
    for plan in plans:
        end = ends.get(plan.name)
        if plan.expected == DELETED:
            if not plan.deleted:
                found.append(f"{plan.name}: meant to be deleted, never was")
            continue
        if end is None:
            found.append(f"{plan.name}: expected {'/'.join(plan.expected)}, never ended")
        elif (end.condition, end.reason) != plan.expected:
            found.append(f"{plan.name}: expected {'/'.join(plan.expected)}, ended {end.condition}/{end.reason}")
    return found


def restart_counts(plans: Iterable[JobPlan], ends: Mapping[str, JobEnd]) -> list[str]:
    """Each ended job's status counts exactly the restarts its faults caused, per replica type (a resize counts
    none). Jobs failed by backoffLimit 0 are left out: the restart that failed them is theirs to count or not; so
    are real TensorFlow jobs, whose restarts depend on when a node was lost."""
    found = []
    for plan in plans:
        end = ends.get(plan.name)
        if end is None or plan.expected == DELETED or plan.end == "backoff" or plan.real:
            continue
        for kind in sorted(set(plan.replicas) | set(end.restarts) | set(plan.restarts)):
            want, got = plan.restarts.get(kind, 0), end.restarts.get(kind, 0)
            if want != got:
                found.append(f"{plan.name}: {kind} restarts {got}, expected {want}")
    return found


def orphans(children: Iterable[tuple[str, str, str]], job_uids: set[str]) -> list[str]:
    """No child (kind, name, controller uid) outlives its TFJob."""
    return [f"{kind} {name}: its TFJob {uid or '(none)'} is gone" for kind, name, uid in children
            if uid not in job_uids]


def created_after_finish(pods: Iterable[PodLife], ends_by_uid: Mapping[str, JobEnd]) -> list[str]:
    """No pod is created after its job finished (timestamps are whole seconds: the same second is allowed)."""
    found = []
    for pod in pods:
        end = ends_by_uid.get(pod.job_uid)
        if end is not None and pod.created > end.finished_at:
            found.append(f"pod {pod.name} created {pod.created - end.finished_at:.0f} s after {end.name} "
                         f"ended {end.condition}")
    return found


def one_live_pod_per_task(pods: Sequence[PodLife]) -> list[str]:
    """Never two live pods for one task (job, replica type, index) at once."""
    by_task: dict[tuple[str, str, int], list[PodLife]] = defaultdict(list)
    for pod in pods:
        if pod.live_from is not None:
            by_task[(pod.job_uid, *pod.task)].append(pod)
    found = []
    for (_, kind, index), lives in by_task.items():
        lives.sort(key=lambda pod: pod.live_from or 0.0)
        for before, after in pairwise(lives):
            if before.live_to is None or (after.live_from or 0.0) < before.live_to:
                found.append(f"{kind} {index}: {after.name} ({after.uid[:8]}) live while {before.name} "
                             f"({before.uid[:8]}) still was")
    return found


def one_process_per_task(claims: Iterable[ProcessClaim]) -> list[str]:
    """Never two live processes claiming one TensorFlow task: within one run of a job, no process says it is a task
    (its log's `task=` line) before another that said so did its last work as it (docs/tfjob/node-loss.md)."""
    by_task: dict[tuple[str, str], list[ProcessClaim]] = defaultdict(list)
    for claim in claims:
        if claim.task is not None and claim.held_from is not None:
            by_task[(claim.job, claim.task)].append(claim)
    found = []
    for (job, task), held in sorted(by_task.items()):
        held.sort(key=lambda claim: claim.held_from or 0.0)
        latest = held[0]  # of those before, the one that held the task the longest
        for claim in held[1:]:
            if (claim.held_from or 0.0) <= (latest.held_to or 0.0):
                found.append(f"{job} {task}: {claim.pod} ({claim.uid[:8]}, {claim.attempt}) claimed it while "
                             f"{latest.pod} ({latest.uid[:8]}, {latest.attempt}) still worked as it")
            if (claim.held_to or 0.0) > (latest.held_to or 0.0):
                latest = claim
    return found


def memory_flat(samples: Mapping[str, Sequence[tuple[float, int]]], ratio: float = RSS_RATIO_BOUND,
                warmup: float = RSS_WARMUP, min_life: float = RSS_MIN_LIFE) -> list[str]:
    """For each operator process (samples: seconds since it started, RSS bytes) that lived long enough, its last
    RSS is at most `ratio` times its first once warm. A run in which no process lived that long has not shown
    the memory flat: that is a violation too, not a pass."""
    found = []
    judged = judged_for_memory(samples, warmup, min_life)
    if not judged:
        found.append(f"judged nothing: none of {len(samples)} operator processes was sampled {min_life:.0f} s "
                     f"after its start")
    for process in judged:
        warm = [rss for at, rss in samples[process] if at >= warmup]
        first, last = warm[0], warm[-1]
        if last > ratio * first:
            found.append(f"{process}: RSS {first / 2**20:.0f} MiB -> {last / 2**20:.0f} MiB "
                         f"(x{last / first:.2f} > x{ratio})")
    return found


def judged_for_memory(samples: Mapping[str, Sequence[tuple[float, int]]], warmup: float = RSS_WARMUP,
                      min_life: float = RSS_MIN_LIFE) -> list[str]:
    """The processes that lived long enough for memory_flat to judge their growth: sampled warm, the last time at
    least `min_life` after their start."""
    return [process for process, points in samples.items()
            if any(at >= warmup for at, _ in points) and points[-1][0] >= min_life]


def as_asked(jobs_asked: int, jobs_created: int, faults: Iterable[tuple[str, str]]) -> list[str]:
    """The run did what it was asked: it created at least the jobs it was to keep running, played at least one
    fault, and none of its faults (label, detail) errored. A fault with nothing to hit (detail "skipped: ...") is
    the job mix's doing, reported apart, not a failure of the run."""
    found = []
    if jobs_created < jobs_asked:
        found.append(f"{jobs_created} jobs created, {jobs_asked} asked")
    played = list(faults)
    if not played:
        found.append("no fault played")
    found += [f"{label}: {detail}" for label, detail in played if detail.startswith(ERRORED)]
    return found


def converged(recoveries: Iterable[tuple[str, float | None]], bound: float = CONVERGENCE_BOUND) -> list[str]:
    """Every fault (a label, seconds from its healing to convergence or None) was followed by convergence within
    `bound`."""
    return [f"{label}: {'no convergence' if took is None else f'{took:.0f} s'} (bound {bound:.0f} s)"
            for label, took in recoveries if took is None or took > bound]


def unsettled(views: Iterable[JobView], ending: set[str]) -> list[str]:
    """What keeps the cluster from having converged: a job whose end was set off and has not ended, or a running
    job without a Running pod for each task or without its Running condition. Empty: converged."""
    found = []
    for view in views:
        if view.terminal or view.deleting:
            continue
        if view.name in ending:
            found.append(f"{view.name}: not ended yet")
            continue
        missing = [f"{kind} {index}" for kind, count in sorted(view.replicas.items()) for index in range(count)
                   if (kind.lower(), index) not in view.running_tasks]
        extra = sorted(task for task in view.running_tasks
                       if not any(kind.lower() == task[0] and task[1] < count for kind, count in view.replicas.items()))
        if missing:
            found.append(f"{view.name}: no running pod for {', '.join(missing)}")
        elif extra:
            found.append(f"{view.name}: pods beyond its spec still run: {extra}")
        elif not view.running:
            found.append(f"{view.name}: every pod runs, the Running condition is not True")
    return found
