"""Table tests of the one parse step (tfop/controller/plan/job/parse.py): a raw TFJob in, the typed model or the
FieldErrors out. Every expected model and error is written out, never computed by the code under test."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest

from tfop.api.constants import ReplicaBackendName, ReplicaType
from tfop.api.errors import FieldError
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.legacy_gpu import GpuRename
from tfop.controller.plan.job.model import (
    ElasticPolicy,
    JobMeta,
    JobNodePolicy,
    JobOptions,
    NetworkIsolation,
    ReplicaSpec,
    RunPolicy,
    SchedulingPolicy,
    TFJobModel,
    TFJobSpec,
)
from tfop.controller.plan.job.parse import InvalidJob, lenient_run_policy, parse_job

SERVER_DIR = "/opt/mlkube/grpc_tensorflow_server"  # the controller config's default grpcServerFilePath
TF_PORT = {"name": "tfjob-port", "containerPort": 2222}
DEFAULT_OPTIONS = JobOptions("pods", "Replica", JobNodePolicy("Replace", timedelta(seconds=30)),
                             timedelta(seconds=300), timedelta(seconds=600))


def worker_template(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "tensorflow", "image": "tf", **container}]}}


def tfjob(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
          replicas: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A raw TFJob as a user writes it: one Worker unless told otherwise."""
    metadata: dict[str, Any] = {"name": "mnist", "namespace": "ns", "uid": "uid-1", "generation": 2}
    if annotations is not None:
        metadata["annotations"] = annotations
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata,
            "spec": {"tfReplicaSpecs": {"Worker": {"template": worker_template()}} if replicas is None else replicas,
                     **spec}}


CPU_METRIC = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": 80}}}
SLOW_SCALE_DOWN = {"scaleDown": {"stabilizationWindowSeconds": 600,
                                 "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
META = JobMeta("mnist", "ns", "uid-1", 2)
ONE_WORKER: dict[ReplicaType, ReplicaSpec] = {
    "Worker": ReplicaSpec("Worker", 1, "ExitCode", worker_template(ports=[TF_PORT]))}
DEFAULT_SPEC = TFJobSpec(ONE_WORKER, RunPolicy("Running"))


@dataclass(frozen=True)
class Parsed:
    """What one row expects of a job that parses: its spec and options (metadata is always META)."""

    spec: TFJobSpec = DEFAULT_SPEC
    options: JobOptions = DEFAULT_OPTIONS


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    expected: Parsed | list[FieldError]
    config: ControllerConfig = field(default_factory=ControllerConfig)
    settled_backend: ReplicaBackendName | None = None


def annotation(name: str) -> str:
    return f"metadata.annotations[tfop.kubeflow.org/{name}]"


ROWS: dict[str, Row] = {
    # --- defaults ---------------------------------------------------------------------------------------------
    "defaults: one replica, ExitCode, TensorFlow's port, cleanPodPolicy Running": Row(tfjob(), Parsed()),
    "a replica type in another spelling is renamed, the template's restartPolicy honoured": Row(
        tfjob(replicas={"WORKER": {"replicas": 3, "template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "tensorflow", "image": "tf"}]}}}}),
        Parsed(TFJobSpec({"Worker": ReplicaSpec("Worker", 3, "OnFailure", {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "tensorflow", "image": "tf", "ports": [TF_PORT]}]}})},
            RunPolicy("Running")))),
    "every runPolicy field, successPolicy and enableDynamicWorker": Row(
        tfjob(runPolicy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600,
                         "backoffLimit": 3, "suspend": True, "managedBy": "kubeflow.org/training-operator",
                         "schedulingPolicy": {"minAvailable": 1, "queue": "q", "priorityClass": "high",
                                              "minResources": {"cpu": "1"}, "scheduleTimeoutSeconds": 30}},
              successPolicy="AllWorkers", enableDynamicWorker=True),
        Parsed(TFJobSpec(ONE_WORKER, RunPolicy("All", 60, 600, 3, SchedulingPolicy(1, "q", "high", {"cpu": "1"}, 30),
                                               True, "kubeflow.org/training-operator"),
                         "AllWorkers", True))),
    "a PS without a tensorflow container gets the default PS server": Row(
        tfjob(replicas={"Worker": {"template": worker_template()}, "PS": {"replicas": 1}},
              annotations={"tfop.kubeflow.org/tf-image": "tensorflow/tensorflow:1.15"}),
        Parsed(TFJobSpec({**ONE_WORKER, "PS": ReplicaSpec("PS", 1, "ExitCode", {"spec": {
            "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:1.15",
                            "command": ["python", f"{SERVER_DIR}/grpc_tensorflow_server.py"],
                            "ports": [TF_PORT],
                            "volumeMounts": [{"name": "tfop-grpc-server", "mountPath": SERVER_DIR,
                                              "readOnly": True}]}],
            "volumes": [{"name": "tfop-grpc-server", "configMap": {
                "name": "tfop-grpc-server",
                "items": [{"key": "grpc_tensorflow_server.py", "path": "grpc_tensorflow_server.py"}]}}]}})},
            RunPolicy("Running")))),
    # --- the elastic policy ------------------------------------------------------------------------------------
    "an elastic policy with metrics and behavior, passed through as given": Row(
        tfjob(replicas={"Worker": {"replicas": 2, "template": worker_template()}}, elasticPolicy={
            "minReplicas": 2, "maxReplicas": 8, "metrics": [CPU_METRIC], "behavior": SLOW_SCALE_DOWN}),
        Parsed(TFJobSpec({"Worker": ReplicaSpec("Worker", 2, "ExitCode", worker_template(ports=[TF_PORT]))},
                         RunPolicy("Running"), elastic_policy=ElasticPolicy(2, 8, (CPU_METRIC,), SLOW_SCALE_DOWN)))),
    "an elastic policy with only its maximum: at least one worker, no metrics, no HPA": Row(
        tfjob(elasticPolicy={"maxReplicas": 3}),
        Parsed(TFJobSpec(ONE_WORKER, RunPolicy("Running"), elastic_policy=ElasticPolicy(1, 3, (), None)))),
    "elastic minimum above its maximum": Row(
        tfjob(replicas={"Worker": {"replicas": 3, "template": worker_template()}},
              elasticPolicy={"minReplicas": 4, "maxReplicas": 2}),
        [FieldError("spec.elasticPolicy.minReplicas", "must not be greater than spec.elasticPolicy.maxReplicas")]),
    "workers outside the elastic bounds": Row(
        tfjob(replicas={"worker": {"replicas": 5, "template": worker_template()}}, elasticPolicy={"maxReplicas": 4}),
        [FieldError("spec.tfReplicaSpecs[Worker].replicas",
                    "5 is not within spec.elasticPolicy.minReplicas and maxReplicas (1 to 4)")]),
    "an elastic policy without workers, its maximum missing, a metric without a type": Row(
        tfjob(replicas={"Chief": {"template": worker_template()}},
              elasticPolicy={"minReplicas": 0, "metrics": [{"resource": {"name": "cpu"}}], "behavior": []}),
        [FieldError("spec.elasticPolicy.maxReplicas", "is required"),
         FieldError("spec.elasticPolicy.minReplicas", "must be at least 1"),
         FieldError("spec.elasticPolicy.metrics[0].type", "is required"),
         FieldError("spec.elasticPolicy.behavior", "must be an object"),
         FieldError("spec.tfReplicaSpecs", "spec.elasticPolicy needs a Worker replica spec: it bounds the number of "
                    "workers")]),
    "an elastic maximum above the replica bound": Row(
        tfjob(elasticPolicy={"maxReplicas": 5001}),
        [FieldError("spec.elasticPolicy.maxReplicas", "must be between 1 and 5000")]),
    # --- the legacy GPU rewrite -------------------------------------------------------------------------------
    "the alpha GPU resource is renamed, and the rename kept for the event": Row(
        tfjob(replicas={"Worker": {"template": worker_template(resources={
            "limits": {"alpha.kubernetes.io/nvidia-gpu": 1}})}}),
        Parsed(TFJobSpec({"Worker": ReplicaSpec("Worker", 1, "ExitCode", worker_template(
            resources={"limits": {"nvidia.com/gpu": 1}}, ports=[TF_PORT]))}, RunPolicy("Running")),
            replace(DEFAULT_OPTIONS, gpu_renamed=(GpuRename("Worker", "tensorflow", "limits", "1"),)))),
    "both GPU names with different amounts": Row(
        tfjob(replicas={"Worker": {"template": worker_template(resources={
            "limits": {"alpha.kubernetes.io/nvidia-gpu": 1, "nvidia.com/gpu": 2}})}}),
        [FieldError("spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits",
                    "asks for alpha.kubernetes.io/nvidia-gpu: 1 and nvidia.com/gpu: 2, which tfop takes as one "
                    "resource; keep only nvidia.com/gpu")]),
    # --- an invalid spec --------------------------------------------------------------------------------------
    "no replica specs": Row(tfjob(replicas={}), [
        FieldError("spec.tfReplicaSpecs", "must declare at least one replica type")]),
    "an unknown restartPolicy and a negative backoffLimit": Row(
        tfjob(replicas={"Worker": {"restartPolicy": "Sometimes", "template": worker_template()}},
              runPolicy={"backoffLimit": -1}),
        [FieldError("spec.tfReplicaSpecs[Worker].restartPolicy",
                    "must be one of 'Always', 'OnFailure', 'Never', 'ExitCode'"),
         FieldError("spec.runPolicy.backoffLimit", "must not be negative")]),
    "a job queued by Kueue's adapter: its keys must be TitleCase": Row(
        tfjob(labels={"kueue.x-k8s.io/queue-name": "q"}, replicas={"worker": {"template": worker_template()}}),
        [FieldError("spec.tfReplicaSpecs[worker]",
                    "must be spelt Worker in a job queued by Kueue (label kueue.x-k8s.io/queue-name=q): Kueue counts "
                    "quota only for the keys Chief, Master, Worker, PS, Evaluator, so its pods would run outside the "
                    "queue's quota")],
        config=ControllerConfig(kueue_integration="kueue")),
    # --- each annotation: valid, then invalid -----------------------------------------------------------------
    "replica-backend jobs": Row(
        tfjob({"tfop.kubeflow.org/replica-backend": "jobs"}),
        Parsed(options=replace(DEFAULT_OPTIONS, replica_backend="jobs"))),
    "replica-backend misspelt": Row(tfjob({"tfop.kubeflow.org/replica-backend": "Jobs"}), [
        FieldError(annotation("replica-backend"), "must be one of pods, jobs, not 'Jobs'")]),
    "replica-backend settled by the job's children: the annotation is not read": Row(
        tfjob({"tfop.kubeflow.org/replica-backend": "Jobs"}), Parsed(), settled_backend="pods"),
    "replica-backend default from the operator's config": Row(
        tfjob(), Parsed(options=replace(DEFAULT_OPTIONS, replica_backend="jobs")),
        config=ControllerConfig(replica_backend="jobs")),
    "restart-scope Job": Row(
        tfjob({"tfop.kubeflow.org/restart-scope": "Job"}),
        Parsed(options=replace(DEFAULT_OPTIONS, restart_scope="Job"))),
    "restart-scope misspelt": Row(tfjob({"tfop.kubeflow.org/restart-scope": "job"}), [
        FieldError(annotation("restart-scope"), "must be one of Replica, Job, not 'job'")]),
    "restart-scope Job with the jobs backend": Row(
        tfjob({"tfop.kubeflow.org/restart-scope": "Job", "tfop.kubeflow.org/replica-backend": "jobs"}), [
            FieldError(annotation("restart-scope"), "Job needs the pods replica backend, not jobs")]),
    "node-loss policy and grace": Row(
        tfjob({"tfop.kubeflow.org/node-loss-policy": "WaitForProof",
               "tfop.kubeflow.org/node-loss-grace-seconds": "90.5"}),
        Parsed(options=replace(DEFAULT_OPTIONS, node_policy=JobNodePolicy("WaitForProof",
                                                                          timedelta(seconds=90.5))))),
    "node-loss policy and grace invalid": Row(
        tfjob({"tfop.kubeflow.org/node-loss-policy": "Sometimes",
               "tfop.kubeflow.org/node-loss-grace-seconds": "86401"}), [
            FieldError(annotation("node-loss-policy"), "must be one of Replace, WaitForProof, not 'Sometimes'"),
            FieldError(annotation("node-loss-grace-seconds"),
                       "must be a number of seconds from 0 to 86400, not '86401'")]),
    "evaluator grace": Row(
        tfjob({"tfop.kubeflow.org/evaluator-grace-seconds": "0"}),
        Parsed(options=replace(DEFAULT_OPTIONS, evaluator_grace=timedelta(0)))),
    "unknown-scheduling grace": Row(
        tfjob({"tfop.kubeflow.org/unknown-scheduling-grace-seconds": "30"}),
        Parsed(options=replace(DEFAULT_OPTIONS, unknown_scheduling_grace=timedelta(seconds=30)))),
    "unknown-scheduling grace from the operator's config": Row(
        tfjob(), Parsed(options=replace(DEFAULT_OPTIONS, unknown_scheduling_grace=timedelta(seconds=120))),
        config=ControllerConfig(unknown_scheduling_grace_seconds=120.0)),
    "unknown-scheduling grace negative": Row(tfjob({"tfop.kubeflow.org/unknown-scheduling-grace-seconds": "-5"}), [
        FieldError(annotation("unknown-scheduling-grace-seconds"),
                   "must be a number of seconds from 0 to 86400, not '-5'")]),
    "evaluator grace not a number": Row(tfjob({"tfop.kubeflow.org/evaluator-grace-seconds": "nan"}), [
        FieldError(annotation("evaluator-grace-seconds"), "must be a number of seconds from 0 to 86400, not 'nan'")]),
    "network isolation with a peer": Row(
        tfjob({"tfop.kubeflow.org/network-policy": "Isolated",
               "tfop.kubeflow.org/network-policy-from": '[{"ipBlock": {"cidr": "198.18.0.0/15"}}]'}),
        Parsed(options=replace(DEFAULT_OPTIONS, isolation=NetworkIsolation(
            True, ({"ipBlock": {"cidr": "198.18.0.0/15"}},))))),
    "network isolation peer invalid": Row(
        tfjob({"tfop.kubeflow.org/network-policy": "Isolated",
               "tfop.kubeflow.org/network-policy-from": '[{"podSelector": {"matchLabels": {"a": "b c"}}}]'}), [
            FieldError(f"{annotation('network-policy-from')}[0].podSelector.matchLabels[a]",
                       "'b c' is not a label value (at most 63 letters, digits, '-', '_' or '.')")]),
    "every error at once, in the parse's order": Row(
        tfjob({"tfop.kubeflow.org/network-policy": "on", "tfop.kubeflow.org/evaluator-grace-seconds": "-1",
               "tfop.kubeflow.org/restart-scope": "all"}, runPolicy={"cleanPodPolicy": "Some"}), [
            FieldError("spec.runPolicy.cleanPodPolicy", "must be one of 'All', 'Running', 'None'"),
            FieldError(annotation("restart-scope"), "must be one of Replica, Job, not 'all'"),
            FieldError(annotation("evaluator-grace-seconds"),
                       "must be a number of seconds from 0 to 86400, not '-1'"),
            FieldError(annotation("network-policy"), "must be one of Isolated, None, not 'on'")]),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_parse_job(row: Row) -> None:
    raw = copy.deepcopy(row.job)
    parsed = parse_job(row.job, row.config, settled_backend=row.settled_backend)
    assert row.job == raw  # the cached job is never changed
    if isinstance(row.expected, Parsed):
        assert isinstance(parsed, TFJobModel), parsed
        assert (parsed.metadata, parsed.spec, parsed.options) == (META, row.expected.spec, row.expected.options)
    else:
        assert isinstance(parsed, InvalidJob)
        assert list(parsed.errors) == row.expected


def test_an_invalid_backend_annotation_leaves_the_backend_unknown() -> None:
    parsed = parse_job(tfjob({"tfop.kubeflow.org/replica-backend": "vms"}), ControllerConfig())
    assert isinstance(parsed, InvalidJob) and parsed.replica_backend is None


@pytest.mark.parametrize(("run_policy", "expected"), [
    ({}, RunPolicy("Running")),
    ({"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 0}, RunPolicy("None", 0)),
    ({"cleanPodPolicy": "Some", "ttlSecondsAfterFinished": -5}, RunPolicy("Running")),
    ({"cleanPodPolicy": 3, "ttlSecondsAfterFinished": "60"}, RunPolicy("Running")),
])
def test_a_rejected_job_is_cleaned_up_by_its_run_policy_read_leniently(run_policy: dict[str, Any],
                                                                       expected: RunPolicy) -> None:
    assert lenient_run_policy(tfjob(runPolicy=run_policy)) == expected
