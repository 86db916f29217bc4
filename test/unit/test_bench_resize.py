"""When `bench.resize` counts a job's resize done (hack/bench/resize_done.py), on pods and TFJobs written out as its
watches keep them, and its summary line (hack/bench/resize_report.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.resize import elastic_job, parse_args, replicas_of
from bench.resize_done import Target, cluster_counts, old_pods_gone, pods_done, resize_done, status_done
from bench.resize_report import step_line
from bench.resize_watch import slim_job, slim_pod

WIDE = {"Chief": 1, "PS": 2, "Worker": 3}
NARROW = {"Chief": 1, "PS": 2, "Worker": 2}


def pod(replica_type: str, index: int, *, uid: str = "", cluster: str = "Chief=1,PS=2,Worker=3",
        phase: str = "Running", deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": f"job-0000-{replica_type.lower()}-ab12-{index}", "uid": uid or f"new-{replica_type}-{index}",
        "labels": {"training.kubeflow.org/job-name": "job-0000",
                   "training.kubeflow.org/replica-type": replica_type.lower(),
                   "training.kubeflow.org/replica-index": str(index)},
        "annotations": {"tfop.kubeflow.org/tf-cluster": cluster}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-28T02:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase}}


def pods_of(counts: dict[str, int], **kwargs: Any) -> list[dict[str, Any]]:
    return [pod(replica_type, index, **kwargs) for replica_type, count in counts.items() for index in range(count)]


def job(*, workers: int | None = 3, state: str = "Running", active: int = 3) -> dict[str, Any]:
    status: dict[str, Any] = {"state": state, "replicaStatuses": {
        "Chief": {"active": 1}, "PS": {"active": 2}, "Worker": {"active": active}}}
    if workers is not None:
        status["workerReplicas"] = workers
    return {"metadata": {"name": "job-0000"}, "status": status}


BY_RESTART = Target(WIDE, by_restart=True, before=frozenset({"old-Chief-0", "old-Worker-0"}))
IN_PLACE = Target(WIDE, by_restart=False)


def test_the_new_pods_of_the_new_size_all_running_are_done() -> None:
    assert pods_done(pods_of(WIDE), BY_RESTART)
    assert pods_done(pods_of(WIDE, cluster="PS=2"), IN_PLACE)


@pytest.mark.parametrize(("pods", "why"), [
    (pods_of(NARROW), "a worker of the new size is missing"),
    ([*pods_of(WIDE), pod("Worker", 3)], "a removed worker still exists"),
    ([*pods_of(WIDE)[:-1], pod("Worker", 2, phase="Pending")], "a new worker is not running yet"),
    ([*pods_of(WIDE), pod("Worker", 3, deleting=True)], "a removed worker is still terminating"),
    ([*pods_of(WIDE)[1:], pod("Chief", 0, deleting=True)], "the chief is being deleted"),
    ([*pods_of(WIDE)[:-1], pod("Worker", 2), pod("Worker", 2, uid="twin")], "two pods of one replica"),
])
def test_pods_are_not_done(pods: list[dict[str, Any]], why: str) -> None:
    assert not pods_done(pods, IN_PLACE), why
    assert not pods_done(pods, BY_RESTART), why


def test_by_restart_every_pod_is_a_new_one_made_for_the_new_size() -> None:
    kept_chief = [pod("Chief", 0, uid="old-Chief-0"), *pods_of(WIDE)[1:]]
    old_cluster = [*pods_of(WIDE)[:-1], pod("Worker", 2, cluster="Chief=1,PS=2,Worker=2")]
    assert not pods_done(kept_chief, BY_RESTART)
    assert not pods_done(old_cluster, BY_RESTART)
    assert pods_done(kept_chief, IN_PLACE)  # in place the chief runs on


def test_by_restart_the_old_pods_are_gone_once_none_is_left_even_terminating() -> None:
    assert old_pods_gone(pods_of(NARROW), BY_RESTART)  # the new pods need not run yet
    assert not old_pods_gone([*pods_of(NARROW), pod("Chief", 0, uid="old-Chief-0", deleting=True)], BY_RESTART)
    assert not old_pods_gone(pods_of(WIDE), IN_PLACE)  # in place no pod has to go


def test_the_watch_keeps_of_a_pod_and_a_job_what_done_reads() -> None:
    full_pod = pod("Worker", 2, deleting=True)
    full_pod["metadata"].update(namespace="resize-restart", resourceVersion="7", ownerReferences=[{"uid": "j"}])
    full_pod["metadata"]["annotations"]["other"] = "x"
    full_pod["spec"] = {"nodeName": "n", "containers": [{"env": [{"name": "TF_CONFIG", "value": "{}"}]}]}
    full_pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert slim_pod(full_pod) == {
        "metadata": {"name": "job-0000-worker-ab12-2", "namespace": "resize-restart", "uid": "new-Worker-2",
                     "resourceVersion": "7", "deletionTimestamp": "2026-11-28T02:00:00Z",
                     "labels": full_pod["metadata"]["labels"],
                     "annotations": {"tfop.kubeflow.org/tf-cluster": "Chief=1,PS=2,Worker=3"}},
        "status": {"phase": "Running"}}
    full_job = {**job(), "spec": {"tfReplicaSpecs": {}}}
    full_job["metadata"].update(namespace="resize-restart", uid="j", resourceVersion="8", labels={"a": "b"})
    assert slim_job(full_job) == {"metadata": {"name": "job-0000", "namespace": "resize-restart", "uid": "j",
                                               "resourceVersion": "8"}, "status": job()["status"]}
    assert resize_done(slim_job(full_job), [slim_pod(p) for p in pods_of(WIDE)], BY_RESTART)


def test_the_status_says_done_once_it_records_the_new_count_running_with_as_many_active_workers() -> None:
    assert status_done(job(), 3)
    assert not status_done(job(workers=2, active=2), 3)  # Running, but of the size before tfop saw the scale
    assert not status_done(job(workers=None), 3)
    assert not status_done(job(state="Restarting"), 3)
    assert not status_done(job(state="Pending", active=3), 3)
    assert not status_done(job(active=4), 3)  # a removed worker's pod is not gone yet
    assert not status_done({"metadata": {"name": "job-0000"}}, 3)


def test_done_is_both_the_pods_and_the_status() -> None:
    assert resize_done(job(), pods_of(WIDE), BY_RESTART)
    assert not resize_done(job(state="Restarting"), pods_of(WIDE), BY_RESTART)
    assert not resize_done(job(), pods_of(NARROW), BY_RESTART)


def test_cluster_counts_read_the_annotation() -> None:
    assert cluster_counts(pod("PS", 0, cluster="Chief=1,PS=2,Worker=8")) == {"Chief": 1, "PS": 2, "Worker": 8}
    assert cluster_counts({"metadata": {}}) == {}


def test_the_jobs_are_elastic_and_in_place_only_when_asked() -> None:
    spec = elastic_job("job-0001", 4, 8, in_place=True)["spec"]
    assert spec["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 8}
    assert spec["enableDynamicWorker"] is True
    assert spec["tfReplicaSpecs"]["Worker"]["replicas"] == 4
    assert "enableDynamicWorker" not in elastic_job("job-0001", 4, 8, in_place=False)["spec"]
    assert replicas_of(8) == {"Chief": 1, "Worker": 8, "PS": 2}


def test_the_arguments_are_checked() -> None:
    assert parse_args([]).modes == ["restart", "inplace"]
    assert parse_args(["--modes", "inplace", "--jobs", "20", "--nodes", "2"]).modes == ["inplace"]
    for wrong in (["--modes", "sideways"], ["--to", "4"], ["--jobs", "500", "--nodes", "10"]):
        with pytest.raises(SystemExit):
            parse_args(wrong)


def test_a_step_is_one_line() -> None:
    step = {"mode": "inplace", "jobs": 20, "from": 4, "to": 8, "done": 19, "window_s": 600.0, "done_first_s": 1.5,
            "done_p50_s": 3.0, "done_p99_s": 9.0, "done_last_s": 9.0, "recorded_first_s": 0.5, "recorded_p50_s": 1.0,
            "recorded_p99_s": 2.0, "recorded_last_s": 2.0, "sent_s": 0.4, "last_resize_told": 20, "pods_kept": 140,
            "pods_to_keep": 140,
            "pods_seen_terminating": 0, "cpu_s": 2.5, "peak_rss_mb": 44.0, "passes_per_job": 3.5,
            "requests_per_job": 12.0, "requests_by_kind": {"create pods": 80}, "passes_failed": 1,
            "requests_failed": {"update tfjobs/status 409": 1}}
    assert step_line({**step, "mode": "restart", "old_pods_gone_first_s": 0.8, "old_pods_gone_p50_s": 1.2,
                      "old_pods_gone_p99_s": 2.0, "old_pods_gone_last_s": 2.0}).startswith(
        "restart 20 jobs, Worker 4 -> 8: 19/20 done within 600.0 s; done first/p50/p99/last 1.5/3.0/9.0/9.0 s "
        "(count recorded 0.5/1.0/2.0/2.0, old pods gone 0.8/1.2/2.0/2.0, pods -/-/-/-, status -/-/-/-); ")
    assert step_line(step) == (
        "inplace 20 jobs, Worker 4 -> 8: 19/20 done within 600.0 s; done first/p50/p99/last 1.5/3.0/9.0/9.0 s "
        "(count recorded 0.5/1.0/2.0/2.0, pods -/-/-/-, status -/-/-/-); scales sent in 0.4 s; "
        "lastResize told 20/20; pods kept 140/140, seen terminating 0; CPU 2.5 s, peak RSS 44.0 MB; "
        "3.5 passes (1 failed) and 12.0 requests per job: {'create pods': 80}, failed {'update tfjobs/status 409': 1}")
