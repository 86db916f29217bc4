"""Issue 53's scale benches (hack/bench/pile.py, hack/bench/bigjob.py): the piled jobs as tfop left their template,
the layouts, the big jobs' shapes against tfop's own rules, the rounds' order, the restart's bookkeeping, and the
tables' arithmetic with their targets, written out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench.bigjob import big_job, order, restart_job
from bench.bigjob import summary as big_summary
from bench.pile import pile_job, piled, piled_status, rounds_order, spread
from bench.pile import summary as pile_summary
from bench.replicas import Replicas
from bench.targets import DEPLOYMENT_MEMORY_MB
from tfop import yamlio
from tfop.api.runtime_id import runtime_id
from tfop.api.validation import validate
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job

REPO = Path(__file__).resolve().parents[2]


def test_a_pile_spreads_evenly_over_its_namespaces() -> None:
    assert spread(7, 3) == [("pile-3-00", 3), ("pile-3-01", 2), ("pile-3-02", 2)]
    assert spread(10_000, 1) == [("pile-1-00", 10_000)]
    layout = spread(10_000, 50)
    assert len(layout) == 50 and {count for _, count in layout} == {200}


def test_a_piled_job_is_the_finished_template_under_its_own_name_and_uid() -> None:
    old, new = runtime_id("u-1"), runtime_id("u-2")
    template: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "job-template", "namespace": "pile-template", "uid": "u-1", "resourceVersion": "9",
                     "generation": 1, "creationTimestamp": "2026-12-03T07:00:00Z", "managedFields": [{}],
                     "labels": {"team": "a"}, "finalizers": ["f"]},
        "spec": {"runPolicy": {"cleanPodPolicy": "All"}},
        "status": {"conditions": [{"type": "Succeeded", "status": "True",
                                   "message": "TFJob pile-template/job-template successfully completed."}],
                   "runtimeId": old, "replicaStatuses": {"PS": {"succeeded": 2, "selector": (
                       f"training.kubeflow.org/job-name=job-template,training.kubeflow.org/runtime-id={old}")}}}}
    assert piled(template, "job-00042", "pile-1-00") == {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "job-00042", "namespace": "pile-1-00", "labels": {"team": "a"}, "finalizers": ["f"]},
        "spec": {"runPolicy": {"cleanPodPolicy": "All"}}}
    assert piled_status(template, "job-00042", "pile-1-00", "u-2") == {"status": {
        "conditions": [{"type": "Succeeded", "status": "True",
                        "message": "TFJob pile-1-00/job-00042 successfully completed."}],
        "runtimeId": new, "replicaStatuses": {"PS": {"succeeded": 2, "selector": (
            f"training.kubeflow.org/job-name=job-00042,training.kubeflow.org/runtime-id={new}")}}}}
    assert template["metadata"]["name"] == "job-template" and template["status"]["runtimeId"] == old  # as it was
    assert pile_job("j")["spec"]["runPolicy"] == {"cleanPodPolicy": "All"}


def test_each_round_turns_the_order() -> None:
    assert rounds_order(["pile", "empty"], 3) == [(0, "pile"), (0, "empty"), (1, "empty"), (1, "pile"),
                                                  (2, "pile"), (2, "empty")]
    assert order(2) == [(0, "limit"), (0, "tfop"), (1, "tfop"), (1, "limit")]


def named(job: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**job, "metadata": {**job["metadata"], "namespace": namespace, "uid": "0f1e2d3c"}}


def test_the_big_job_is_ten_thousand_replicas_tfop_accepts() -> None:
    job = big_job("big", 10_000, 10)
    specs = job["spec"]["tfReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in specs.items()} == {"Worker": 9_990, "PS": 10}
    assert job["spec"]["enableDynamicWorker"] is True
    assert validate(named(job, "big-tfop-0")) == []
    dense = {**job, "spec": {**job["spec"], "enableDynamicWorker": False}}
    assert [error.path for error in validate(named(dense, "big-tfop-0"))] == ["spec.tfReplicaSpecs"]


def test_the_restart_job_restarts_together() -> None:
    job = restart_job("sync", 1000)
    model = parse_job(named(job, "restart"), ControllerConfig())
    assert isinstance(model, TFJobModel)
    assert model.options.restart_scope == "Job"
    assert {name: spec["replicas"] for name, spec in job["spec"]["tfReplicaSpecs"].items()} == {
        "Chief": 1, "Worker": 995, "PS": 4}


def test_the_memory_target_is_the_deployments_limit() -> None:
    values = yamlio.load((REPO / "deploy" / "helm" / "tfop" / "values.yaml").read_text())
    assert values["resources"]["limits"]["memory"] == f"{DEPLOYMENT_MEMORY_MB:.0f}Mi"
    manifest = (REPO / "deploy" / "manifests" / "deployment.yaml").read_text()
    assert re.search(rf"limits:\s+cpu: \"1\"\s+memory: {DEPLOYMENT_MEMORY_MB:.0f}Mi", manifest)


def pod(name: str, uid: str, phase: str = "Running", deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-03T07:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": "kwok-0"}, "status": {"phase": phase}}


def test_a_restart_together_counts_every_replica_in_a_new_pod() -> None:
    replicas = Replicas()
    for name in ("w-0", "w-1"):
        replicas.apply("ADDED", pod(name, f"{name}-old"))
    assert replicas.restart_all().keys() == {"w-0", "w-1"}
    replicas.apply("MODIFIED", pod("w-0", "w-0-old", phase="Failed"))
    replicas.apply("MODIFIED", pod("w-1", "w-1-old", deleting=True))
    replicas.apply("DELETED", pod("w-0", "w-0-old", phase="Failed"))
    assert replicas.marked_at.keys() == {"w-0", "w-1"}
    replicas.apply("DELETED", pod("w-1", "w-1-old", deleting=True))
    replicas.apply("ADDED", pod("w-0", "w-0-new", phase="Pending"))
    assert replicas.created_at.keys() == {"w-0"} and replicas.replaced() == 0
    replicas.apply("MODIFIED", pod("w-0", "w-0-new"))
    replicas.apply("ADDED", pod("w-1", "w-1-new"))
    assert replicas.replaced() == 2 and replicas.running() == 2
    replicas.apply("MODIFIED", pod("w-1", "w-1-new", deleting=True))  # a new pod going is no mark of the old
    assert replicas.marked_at.keys() == {"w-0", "w-1"} and replicas.running() == 1


def burst(layout: str, side: str, p99: float, rss: float = 60.0) -> dict[str, Any]:
    return {"layout": layout, "side": side, "ready_s": 2.0, "settled_s": 10.0, "startup_writes": 0,
            "rss_settled_mb": rss, "start_p50_s": 1.0, "start_p99_s": p99, "jobs_running_s": 8.0,
            "peak_rss_mb": rss + 10}


def test_the_pile_table_divides_the_burst_p99_over_the_pile_by_beside_it() -> None:
    report = {"pile": 10_000, "burst": 100, "runs": [
        burst("none", "before", 4.0, 40.0),
        burst("1ns", "pile", 4.4, 150.0), burst("1ns", "empty", 4.0, 40.0), burst("1ns", "empty", 3.6, 40.0),
        burst("1ns", "pile", 5.2, 160.0)],
        "layouts": [{"layout": "1ns", "namespaces": 1, "pile_s": 120.0,
                     "kubectl": [{"command": "kubectl get tfjobs -n pile-1-00", "median_s": 3.21, "min_s": 3.1,
                                  "max_s": 3.5, "rows": 10_000}],
                     "ui": [{"name": "the list of 10,000 jobs, rows cached", "median_s": 0.25, "html_mb": 9.0}]}]}
    text, checks = pile_summary(report)
    assert [(entry["key"], round(entry["value"], 3), entry["met"]) for entry in checks] == [
        ("pile_burst", round(4.8 / 3.8, 3), False), ("pile_rss", 155.0, True)]
    lines = text.splitlines()
    assert "| 1ns | every namespace, the pile too | 2 | 2.0 | 10.0 | 0 | 155.0 | 1.00 / 4.80 | 8.0 | 165.0 |" in lines
    assert "| 1ns | the burst's namespace only | 2 | 2.0 | 10.0 | 0 | 40.0 | 1.00 / 3.80 | 8.0 | 50.0 |" in lines
    assert "Burst start p99 over the pile / beside it: 1ns 1.26x" in lines
    assert "| 1ns | 120 | `kubectl get tfjobs -n pile-1-00` | 3.21 | 3.10 / 3.50 | 10,000 |" in lines
    assert "| 1ns | the list of 10,000 jobs, rows cached | 250 | 9.00 |" in lines
    assert lines[-2:] == [
        ("  [MISS] tfop burst of 100 jobs' start p99 over 10,000 finished jobs within 1.1x of beside them, "
         "1 namespace: 1.26x, target <= 1.1x: missed by 0.16x"),
        ("  [MET ] tfop RSS over 10,000 finished jobs within the Deployment's memory limit, 1 namespace: "
         "155.00 MB, target <= 512 MB: met with 357.00 MB to spare")]


def test_the_big_job_table_divides_tfops_running_by_the_limits_pods_running() -> None:
    report = {"big_replicas": 10_000, "restart_replicas": 1000, "runs": [
        {"scenario": "big job", "side": "limit", "running_s": 200.0, "pods_running_s": 200.0, "cpu_s": 50.0},
        {"scenario": "big job", "side": "tfop", "running_s": 230.0, "pods_running_s": 228.0, "cpu_s": 80.0,
         "peak_rss_mb": 300.0},
        {"scenario": "restart together", "side": "tfop", "restart_s": 30.0, "last_marked_s": 4.0,
         "first_created_s": 10.0, "decision_s": 0.5, "from_exit_s": 30.5, "cpu_s": 9.0},
        {"scenario": "restart together", "side": "limit", "restart_s": 20.0, "last_marked_s": 2.0,
         "first_created_s": 6.0, "cpu_s": 3.0}]}
    text, checks = big_summary(report)
    assert [(entry["key"], round(entry["value"], 3), entry["met"]) for entry in checks] == [
        ("big_job", 1.15, True), ("big_job_rss", 300.0, True), ("restart_together", 1.5, False)]
    lines = text.splitlines()
    assert "| limit | 1 | 200.0 | 200.0 | 50.0 | - |" in lines
    assert "| tfop | 1 | 230.0 | 228.0 | 80.0 | 300.0 |" in lines
    assert "| tfop | 1 | 30.0 | 4.0 | 10.0 | 0.50 | 30.5 | 9.0 |" in lines
    assert "| limit | 1 | 20.0 | 2.0 | 6.0 | - | - | 3.0 |" in lines
    assert lines[-1] == ("  [MISS] tfop restart together of 1,000 pods, decision to every pod running, within 1.2x "
                         "of the limit's delete-and-create: 1.50x, target <= 1.2x: missed by 0.30x")
