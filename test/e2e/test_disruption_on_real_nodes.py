"""A disruption is not a failure, shown on two real nodes with real TensorFlow (docs/tfjob/disruptions.md): the three
ways a cluster takes a replica away, each of a job whose chief runs on real-0 and whose worker runs on real-1:

- `kubectl drain real-1` (cordon, then the Eviction API), the jobs annotated with the budget the docs recommend for
  drains (`tfop.kubeflow.org/disruption-budget: OneAtATime`): one drain under a Keras `fit` job
  (MultiWorkerMirroredStrategy, BackupAndRestore, restart scope Job) and a ParameterServerStrategy job at once;
- a higher-priority job (a PriorityClass) whose pod needs what the worker holds: the scheduler preempts the worker;
- a spot reclaim: the AWS termination handler's notice taint on real-1, and real-1 powered off 30 s later.

Each time the disrupted replica is replaced, the Keras job restarts together and resumes from its last backup (the
PS job's coordinator trains on once its worker is back), no restart is counted, and the job Succeeds. Each test
prints its row of the docs' table (support/disruption.py says how each cell is read); hack/bench/disruptions.py
prints the Go operator's beside them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bench.disruption_scenarios import (
    DISRUPTED,
    HEADER,
    KEPT,
    KERAS_EPOCHS,
    Row,
    Target,
    Watched,
    bring_back,
    budget_allows,
    diagnosis,
    drain,
    finish,
    higher_priority_class,
    keras_job,
    off_node,
    pods_by_task,
    power_off_when_due,
    preempt,
    ps_job,
    reclaim_notice,
    row,
    slots_on,
    start,
    uncordoned_after,
    wait_until_training,
)
from localcluster import LocalCluster
from support.real_node_jobs import get, scenario_namespace, story
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

WINDOW = 900.0  # seconds a disrupted job is given to end: the replacements import TensorFlow again, under load
ONE_AT_A_TIME = {"tfop.kubeflow.org/disruption-budget": "OneAtATime"}


@dataclass
class Outcome:
    cluster: LocalCluster
    namespace: str
    watched: dict[str, Watched]  # by job name
    rows: dict[str, Row]
    stories: dict[str, str]  # by job name: its pods' last lines and the namespace's events, for a failure's message
    seen: dict[str, Any]  # what the scenario saw besides


def outcome(cluster: LocalCluster, namespace: str, scenario: str, watched: list[Watched], disrupted: float,
            **seen: Any) -> Outcome:
    ends = finish(cluster, watched, WINDOW)
    rows = {w.target.job: row(cluster, scenario, w, ends[w.target], disrupted) for w in watched}
    stories = {w.target.job: diagnosis(cluster, w) for w in watched}
    return Outcome(cluster, namespace, {w.target.job: w for w in watched}, rows, stories, seen)


@pytest.fixture(scope="module")
def drained(real_node: LocalCluster, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    """One `kubectl drain real-1` under both jobs at once: the Keras job's worker and the PS job's worker go."""
    cluster = real_node
    bring_back(cluster)
    with scenario_namespace(cluster, "drain", tmp_path_factory.mktemp("drain")) as (namespace, _):
        keras, ps = (Target(namespace, "keras-drained", "tfop", "keras"),
                     Target(namespace, "ps-drained", "tfop", "ps"))
        watched = [start(cluster, keras, keras_job(cluster, keras, annotations=ONE_AT_A_TIME)),
                   start(cluster, ps, ps_job(ps, annotations=ONE_AT_A_TIME))]
        try:
            wait_until_training(cluster, watched)
            # Each job's own budget, as the docs recommend for drains: it lets one eviction through at a time.
            wait_for(lambda: all(budget_allows(cluster, namespace, job, 1) for job in (keras.job, ps.job)), DEADLINE,
                     "each job's budget to allow one eviction", interval=KUBECTL_INTERVAL)
            with uncordoned_after(cluster):  # cordoned until the jobs end, as for a node's maintenance
                disrupted = drain(cluster)
                result = outcome(cluster, namespace, "kubectl drain", watched, disrupted)
        finally:
            for w in watched:
                w.logs.close()
        yield result


@pytest.fixture(scope="module")
def preempted(real_node: LocalCluster, tfjob_crd: Path, busybox: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    """The Keras job's worker needs real-1's one slot; a higher-priority job's pod then needs it too."""
    cluster = real_node
    bring_back(cluster)
    with (scenario_namespace(cluster, "preempt", tmp_path_factory.mktemp("preempt")) as (namespace, _),
          slots_on(cluster, 1), higher_priority_class(cluster) as priority):
        keras = Target(namespace, "keras-preempted", "tfop", "keras")
        watched = [start(cluster, keras, keras_job(cluster, keras, slot=True))]
        try:
            wait_until_training(cluster, watched)
            disrupted = preempt(cluster, namespace, priority, 1, busybox)
            result = outcome(cluster, namespace, "preempted by a higher-priority job", watched, disrupted,
                             higher=wait_for(partial(completed, cluster, namespace, "higher-priority"), DEADLINE,
                                             "the higher-priority Job to complete", interval=KUBECTL_INTERVAL))
        finally:
            for w in watched:
                w.logs.close()
        yield result


@pytest.fixture(scope="module")
def reclaimed(real_node: LocalCluster, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    """The spot notice on real-1 under the Keras job, real-1 powered off 30 s after it; real-1 back afterwards."""
    cluster = real_node
    bring_back(cluster)
    with scenario_namespace(cluster, "reclaim", tmp_path_factory.mktemp("reclaim")) as (namespace, _):
        keras = Target(namespace, "keras-reclaimed", "tfop", "keras")
        watched = [start(cluster, keras, keras_job(cluster, keras))]
        try:
            wait_until_training(cluster, watched)
            noticed = reclaim_notice(cluster)
            moved, powered_off = power_off_when_due(cluster, noticed, lambda: off_node(cluster, watched))
            result = outcome(cluster, namespace, "spot reclaim: notice, power-off 30 s later", watched, noticed,
                             moved=moved, powered_off=powered_off)
        finally:
            for w in watched:
                w.logs.close()
            bring_back(cluster)
        yield result


def completed(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The batch Job once its controller has written it Complete (which follows its pod's end by a sync or more)."""
    job = get(cluster, namespace, "job", name)
    done = any(c["type"] == "Complete" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))
    return job if done else None


def show(result: Outcome, job: str) -> Row:
    printed = result.rows[job]
    print(f"\n{HEADER}\n{printed.line()}")
    return printed


def assert_restarted_together_from_its_backup(result: Outcome, job: str, reason: str, worker_on: str) -> Row:
    """The Keras job: Succeeded, every replica in a new pod (restart scope Job), the worker's on `worker_on`, the
    new chief resuming from the old one's last backup (epoch 1 or later, before the last), no restart counted, and
    the disruption recorded with its reason."""
    cluster, namespace, r = result.cluster, result.namespace, show(result, job)
    why = result.stories[job]
    assert r.succeeded, f"{get(cluster, namespace, 'tfjob', job)['status']}\n{why}"
    assert r.restarts == 0, why
    assert reason in r.reasons, (r.reasons, why)
    before = {task: pod["metadata"]["uid"] for task, pod in result.watched[job].before.items()}
    after = pods_by_task(cluster, namespace, job)
    assert set(after) == set(before) and not {p["metadata"]["uid"] for p in after.values()} & set(before.values())
    assert after["worker:0"]["spec"]["nodeName"] == worker_on and after["chief:0"]["spec"]["nodeName"] == KEPT
    assert r.saved and r.resumed, (r.saved, r.resumed, why)
    # The last epoch line the old chief printed came after its backup; a stop between the two resumes one later.
    assert 1 <= r.saved[1] <= r.resumed[1] <= r.saved[1] + 1 and r.resumed[1] < KERAS_EPOCHS, (r.saved, r.resumed)
    assert r.running_again is not None
    assert r.disrupted < r.running_again <= r.resumed[0] <= r.succeeded, r.cells()
    return r


def test_a_drained_keras_job_restarts_together_from_its_backup_uncounted(drained: Outcome) -> None:
    assert_restarted_together_from_its_backup(drained, "keras-drained", "EvictionByEvictionAPI", KEPT)


def test_a_drained_ps_jobs_worker_moves_alone_and_the_coordinator_trains_on_uncounted(drained: Outcome) -> None:
    cluster, namespace, job = drained.cluster, drained.namespace, "ps-drained"
    r, why = show(drained, job), drained.stories[job]
    assert r.succeeded, f"{get(cluster, namespace, 'tfjob', job)['status']}\n{why}"
    assert r.restarts == 0, why
    assert "EvictionByEvictionAPI" in r.reasons, (r.reasons, why)
    before = {task: pod["metadata"]["uid"] for task, pod in drained.watched[job].before.items()}
    after = pods_by_task(cluster, namespace, job)
    # Restart scope Replica: the chief and the PS kept their pods, the worker moved off the drained node.
    assert {task: after[task]["metadata"]["uid"] for task in ("chief:0", "ps:0")} == \
        {task: before[task] for task in ("chief:0", "ps:0")}
    assert after["worker:0"]["metadata"]["uid"] != before["worker:0"]
    assert after["worker:0"]["spec"]["nodeName"] == KEPT
    assert r.resumed and r.resumed[1] > 5 and r.running_again is not None, (r.cells(), why)
    assert r.disrupted < r.running_again <= r.resumed[0] <= (r.succeeded or 0), r.cells()


def test_a_keras_job_preempted_by_a_higher_priority_job_restarts_together_once_it_fits_again(
        preempted: Outcome) -> None:
    r = assert_restarted_together_from_its_backup(preempted, "keras-preempted", "PreemptionByScheduler", DISRUPTED)
    assert preempted.seen["higher"]["status"].get("succeeded") == 1, preempted.seen["higher"]["status"]
    # The worker's replacement needed the slot the higher-priority job held: it ran once that job was done.
    assert r.running_again is not None and r.running_again > r.disrupted


def test_a_spot_reclaim_notice_moves_a_keras_job_before_its_node_goes(reclaimed: Outcome) -> None:
    r = assert_restarted_together_from_its_backup(reclaimed, "keras-reclaimed", "ReclaimNotice", KEPT)
    moved, powered_off = reclaimed.seen["moved"], reclaimed.seen["powered_off"]
    print(f"moved off {DISRUPTED} {moved - r.disrupted:.0f} s after the notice; powered off "
          f"{powered_off - r.disrupted:.0f} s after it" if moved else "never moved before the power-off")
    assert moved is not None and moved < powered_off, (moved, powered_off, reclaimed.stories["keras-reclaimed"])
    lost = json.loads(reclaimed.cluster.kubectl("get", "events", "-n", reclaimed.namespace, "-o", "json",
                                                "--field-selector", "reason=NodeLost").stdout)["items"]
    assert not lost, story(reclaimed.cluster, reclaimed.namespace)
