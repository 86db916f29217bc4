"""The chaos soak's invariants (hack/chaos/invariants.py), each on a table of observations written out."""

from __future__ import annotations

import pytest

from chaos import invariants
from chaos.observations import JobEnd, JobView, PodLife
from chaos.workload import BACKOFF_EXCEEDED, DELETED, END_BACKOFF, END_SUCCESS, FAILED, SUCCEEDED, JobPlan


def plan(expected: tuple[str, str] = SUCCEEDED, restarts: dict[str, int] | None = None, *, end: str = END_SUCCESS,
         deleted: bool = False) -> JobPlan:
    return JobPlan("j", {"Worker": 2}, "ExitCode", end, expected, dict(restarts or {}), deleted=deleted)


def end(condition: str = "Succeeded", reason: str = "TFJobSucceeded", restarts: dict[str, int] | None = None,
        finished_at: float = 100.0) -> JobEnd:
    return JobEnd("j", "uid-j", condition, reason, finished_at, dict(restarts or {}))


@pytest.mark.parametrize(("job", "seen", "violated"), [
    (plan(), end(), False),
    (plan(FAILED), end("Failed", "TFJobFailed"), False),
    (plan(BACKOFF_EXCEEDED, end=END_BACKOFF), end("Failed", "BackoffLimitExceeded"), False),
    (plan(), end("Failed", "TFJobFailed"), True),  # a fault changed the outcome
    (plan(FAILED), end("Failed", "BackoffLimitExceeded"), True),  # failed, but for an undocumented reason
    (plan(), None, True),  # never ended
    (plan(DELETED, deleted=True), None, False),
    (plan(DELETED), None, True),
])
def test_outcomes(job: JobPlan, seen: JobEnd | None, violated: bool) -> None:
    assert bool(invariants.outcomes([job], {"j": seen} if seen else {})) == violated


@pytest.mark.parametrize(("job", "seen", "violated"), [
    (plan(restarts={"Worker": 2}), end(restarts={"Worker": 2}), False),
    (plan(), end(restarts={"Worker": 0, "Chief": 0}), False),
    (plan(restarts={"Worker": 1}), end(restarts={"Worker": 2}), True),  # one counted twice
    (plan(restarts={"Worker": 1}), end(restarts={}), True),  # one lost
    (plan(), end(restarts={"Worker": 1}), True),  # a resize or an operator restart counted as a restart
    (plan(BACKOFF_EXCEEDED, end=END_BACKOFF), end("Failed", "BackoffLimitExceeded", {"Worker": 1}), False),
])
def test_restart_counts(job: JobPlan, seen: JobEnd, violated: bool) -> None:
    assert bool(invariants.restart_counts([job], {"j": seen})) == violated


@pytest.mark.parametrize(("children", "jobs", "expected"), [
    ([("Pod", "a", "u1"), ("Service", "a", "u1")], {"u1"}, 0),
    ([("Pod", "a", "u1"), ("Pod", "b", "u2")], {"u1"}, 1),
    ([("Pod", "a", "")], set(), 1),
    ([], set(), 0),
])
def test_orphans(children: list[tuple[str, str, str]], jobs: set[str], expected: int) -> None:
    assert len(invariants.orphans(children, jobs)) == expected


def life(uid: str, created: float = 50.0, live: tuple[float | None, float | None] = (None, None),
         task: tuple[str, int] = ("worker", 0), job_uid: str = "uid-j") -> PodLife:
    return PodLife(uid, f"pod-{uid}", job_uid, task, created, *live)


@pytest.mark.parametrize(("created", "violated"), [(99.0, False), (100.0, False), (101.0, True)])
def test_created_after_finish(created: float, violated: bool) -> None:
    assert bool(invariants.created_after_finish([life("a", created)], {"uid-j": end(finished_at=100.0)})) == violated


@pytest.mark.parametrize(("lives", "violated"), [
    ([life("a", live=(1, 5)), life("b", live=(5, 9))], False),  # one after the other
    ([life("a", live=(1, 5)), life("b", live=(4, 9))], True),  # overlapping
    ([life("a", live=(1, None)), life("b", live=(4, None))], True),  # both still live
    ([life("a", live=(1, None)), life("b", live=(4, None), task=("worker", 1))], False),  # two tasks
    ([life("a", live=(1, None)), life("b", live=(4, None), job_uid="other")], False),  # two jobs of one name
    ([life("a", live=(None, None)), life("b", live=(4, None))], False),  # never live
])
def test_one_live_pod_per_task(lives: list[PodLife], violated: bool) -> None:
    assert bool(invariants.one_live_pod_per_task(lives)) == violated


MIB = 2**20


@pytest.mark.parametrize(("samples", "violations"), [
    ({"tfop-0": [(10, 50 * MIB), (40, 100 * MIB), (200, 120 * MIB)]}, []),  # warm-up growth is not counted
    ({"tfop-0": [(40, 100 * MIB), (200, 151 * MIB)]}, ["tfop-0: RSS 100 MiB -> 151 MiB (x1.51 > x1.5)"]),
    # A process too short-lived to judge is left out, beside one that is judged ...
    ({"tfop-0": [(40, 100 * MIB), (60, 300 * MIB)], "tfop-1": [(40, 100 * MIB), (90, 110 * MIB)]}, []),
    # ... but a run where none lived long enough has judged nothing, and says so.
    ({"tfop-0": [(40, 100 * MIB), (60, 300 * MIB)], "tfop-1": [(10, 50 * MIB)]},
     ["judged nothing: none of 2 operator processes was sampled 90 s after its start"]),
    ({"tfop-0": [(10, 50 * MIB), (95, 55 * MIB)]}, []),  # sampled warm at 95 s: judged
    ({"tfop-0": [(10, 50 * MIB), (20, 55 * MIB)], "tfop-1": []},
     ["judged nothing: none of 2 operator processes was sampled 90 s after its start"]),
    ({}, ["judged nothing: none of 0 operator processes was sampled 90 s after its start"]),
])
def test_memory_flat(samples: dict[str, list[tuple[float, int]]], violations: list[str]) -> None:
    assert invariants.memory_flat(samples) == violations


@pytest.mark.parametrize(("asked", "created", "faults", "violations"), [
    (40, 84, [("round 0 etcd-compact", "compacted at revision 9")], []),
    (40, 40, [("round 0 spec-edit", "skipped: nothing fitted")], []),  # nothing to hit: the mix's doing
    (40, 0, [], ["0 jobs created, 40 asked", "no fault played"]),  # an empty run does not pass
    (12, 11, [("round 0 operator-kill", "killed tfop-0, started tfop-2")], ["11 jobs created, 12 asked"]),
    (12, 12, [("round 0 operator-kill", "killed tfop-0, started tfop-2"),
              ("round 1 apiserver-restart", "error: TimeoutError: not ready within 60 s")],
     ["round 1 apiserver-restart: error: TimeoutError: not ready within 60 s"]),
])
def test_as_asked(asked: int, created: int, faults: list[tuple[str, str]], violations: list[str]) -> None:
    assert invariants.as_asked(asked, created, faults) == violations


@pytest.mark.parametrize(("took", "violated"), [(3.0, False), (180.0, False), (181.0, True), (None, True)])
def test_converged(took: float | None, violated: bool) -> None:
    assert bool(invariants.converged([("round 0 operator-kill", took)])) == violated


def view(replicas: dict[str, int], running: set[tuple[str, int]], *, condition: bool = True, terminal: bool = False,
         deleting: bool = False) -> JobView:
    return JobView("j", replicas, condition, terminal, deleting, frozenset(running))


@pytest.mark.parametrize(("job", "ending", "settled"), [
    (view({"Chief": 1, "Worker": 2}, {("chief", 0), ("worker", 0), ("worker", 1)}), set(), True),
    (view({"Worker": 2}, {("worker", 0)}), set(), False),  # a replica not running yet
    (view({"Worker": 2}, {("worker", 0), ("worker", 1)}, condition=False), set(), False),
    (view({"Worker": 1}, {("worker", 0), ("worker", 1)}), set(), False),  # resized down, the extra still runs
    (view({"Worker": 2}, {("worker", 0), ("worker", 1)}), {"j"}, False),  # its end was set off
    (view({"Worker": 2}, set(), terminal=True), {"j"}, True),
    (view({"Worker": 2}, set(), deleting=True), set(), True),
])
def test_unsettled(job: JobView, ending: set[str], settled: bool) -> None:
    assert (not invariants.unsettled([job], ending)) == settled
