"""Table tests of validate(): each row breaks one thing in a valid job and names the error it must produce."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tfop.api.defaults import apply_defaults
from tfop.api.errors import FieldError
from tfop.api.validation import validate


def valid_job(**replica_counts: int) -> dict[str, Any]:
    counts = replica_counts or {"Chief": 1, "Worker": 2, "PS": 1}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"tfReplicaSpecs": {
            replica_type: {"replicas": count, "restartPolicy": "ExitCode", "template": {
                "metadata": {"labels": {"team": "ml"}, "annotations": {"note": "x"}},
                "spec": {"containers": [{"name": "tensorflow", "image": "tf", "env": [{"name": "A", "value": "1"}],
                                         "ports": [{"name": "tfjob-port", "containerPort": 2222}]}]}}}
            for replica_type, count in counts.items()},
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3, "activeDeadlineSeconds": 60,
                          "ttlSecondsAfterFinished": 0, "suspend": False,
                          "schedulingPolicy": {"minAvailable": 3, "queue": "q", "priorityClass": "high",
                                               "scheduleTimeoutSeconds": 10, "minResources": {"cpu": "1"}}},
            "successPolicy": "", "enableDynamicWorker": False},
    }


def worker(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tfReplicaSpecs"]["Worker"]  # type: ignore[no-any-return]


def tensorflow(job: dict[str, Any]) -> dict[str, Any]:
    return worker(job)["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


Mutation = Callable[[dict[str, Any]], None]


def assign(path: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: object) -> Mutation:
    def mutate(job: dict[str, Any]) -> None:
        path(job)[key] = value
    return mutate


def drop(path: Callable[[dict[str, Any]], dict[str, Any]], key: str) -> Mutation:
    def mutate(job: dict[str, Any]) -> None:
        del path(job)[key]
    return mutate


def replicas_map(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tfReplicaSpecs"]  # type: ignore[no-any-return]


def run_policy(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["runPolicy"]  # type: ignore[no-any-return]


def metadata(job: dict[str, Any]) -> dict[str, Any]:
    return job["metadata"]  # type: ignore[no-any-return]


def spec(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]  # type: ignore[no-any-return]


def dynamic(workers: int) -> Mutation:
    """enableDynamicWorker, with `workers` workers beside the Chief and the PS."""
    def mutate(job: dict[str, Any]) -> None:
        spec(job)["enableDynamicWorker"] = True
        worker(job)["replicas"] = workers
    return mutate


W = "spec.tfReplicaSpecs[Worker]"
TF = f"{W}.template.spec.containers[0]"
INVALID: dict[str, tuple[Callable[[dict[str, Any]], object], str, str]] = {
    "unknown replica type": (assign(replicas_map, "Boss", worker(valid_job())), "spec.tfReplicaSpecs[Boss]",
                             "unknown replica type 'Boss'"),
    "a type named twice in different case": (assign(replicas_map, "worker", worker(valid_job())),
                                             "spec.tfReplicaSpecs[worker]", "again"),
    "a Chief and a Master": (assign(replicas_map, "Master", valid_job()["spec"]["tfReplicaSpecs"]["Chief"]),
                             "spec.tfReplicaSpecs", "not both"),
    "two chiefs": (lambda job: replicas_map(job)["Chief"].update(replicas=2), "spec.tfReplicaSpecs[Chief].replicas",
                   "0 or 1"),
    "negative replicas": (assign(worker, "replicas", -1), f"{W}.replicas", "must not be negative"),
    "replicas as words": (assign(worker, "replicas", "three"), f"{W}.replicas", "must be an integer"),
    "replicas as a float": (assign(worker, "replicas", 2.5), f"{W}.replicas", "must be an integer"),
    "replicas as a boolean": (assign(worker, "replicas", True), f"{W}.replicas", "must be an integer"),
    "no replicas at all": (lambda job: [replica.update(replicas=0) for replica in replicas_map(job).values()],
                           "spec.tfReplicaSpecs", "at least one replica"),
    "more replicas than a pod's TF_CONFIG can list": (assign(worker, "replicas", 5000), "spec.tfReplicaSpecs",
                                                      "5002 replicas in all, more than 5000"),
    "more replicas than a dynamic job's bound": (
        dynamic(9999), "spec.tfReplicaSpecs", "10001 replicas in all, more than 10000 with spec.enableDynamicWorker"),
    "a dynamic job whose chief's TF_CONFIG would not fit": (
        lambda job: (dynamic(9000)(job), job["metadata"].update(name="a" * 40, namespace="n" * 63)),
        "spec.tfReplicaSpecs", "the largest TF_CONFIG a pod gets lists 1205147 bytes of addresses, more than 700000"),
    "an elastic maximum over the dense bound": (assign(spec, "elasticPolicy", {"maxReplicas": 5001}),
                                                "spec.elasticPolicy.maxReplicas", "between 1 and 5000"),
    "an elastic maximum over the dynamic bound": (
        lambda job: (dynamic(2)(job), spec(job).update(elasticPolicy={"maxReplicas": 10001})),
        "spec.elasticPolicy.maxReplicas", "between 1 and 10000"),
    "empty replica map": (assign(spec, "tfReplicaSpecs", {}), "spec.tfReplicaSpecs", "at least one replica type"),
    "no replica map": (drop(spec, "tfReplicaSpecs"), "spec.tfReplicaSpecs", "is required"),
    "replica map as a list": (assign(spec, "tfReplicaSpecs", []), "spec.tfReplicaSpecs", "must be an object"),
    "replica as a string": (assign(replicas_map, "Worker", "many"), W, "must be an object"),
    "bad restartPolicy": (assign(worker, "restartPolicy", "Sometimes"), f"{W}.restartPolicy", "must be one of"),
    "missing template": (drop(worker, "template"), f"{W}.template", "is required"),
    "template without spec": (lambda job: worker(job)["template"].pop("spec"), f"{W}.template.spec", "is required"),
    "no containers": (lambda job: worker(job)["template"]["spec"].update(containers=[]),
                      f"{W}.template.spec.containers", "at least one container"),
    "containers as an object": (lambda job: worker(job)["template"]["spec"].update(containers={}),
                                f"{W}.template.spec.containers", "must be a list"),
    "no tensorflow container": (assign(tensorflow, "name", "trainer"), f"{W}.template.spec.containers",
                                "named 'tensorflow'"),
    "container without name": (drop(tensorflow, "name"), f"{TF}.name", "is required"),
    "container as a string": (lambda job: worker(job)["template"]["spec"]["containers"].append("sidecar"),
                              f"{W}.template.spec.containers[1]", "must be an object"),
    "labels that are not strings": (lambda job: worker(job)["template"]["metadata"].update(labels={"a": 1}),
                                    f"{W}.template.metadata.labels", "strings to strings"),
    "annotations as a list": (lambda job: worker(job)["template"]["metadata"].update(annotations=[]),
                              f"{W}.template.metadata.annotations", "must be an object"),
    "env as an object": (assign(tensorflow, "env", {"A": "1"}), f"{TF}.env", "must be a list"),
    "env entry without name": (assign(tensorflow, "env", [{"value": "1"}]), f"{TF}.env[0].name", "is required"),
    "port out of range": (assign(tensorflow, "ports", [{"name": "tfjob-port", "containerPort": 70000}]),
                          f"{TF}.ports[0].containerPort", "between 1 and 65535"),
    "port as a string": (assign(tensorflow, "ports", [{"name": "tfjob-port", "containerPort": "2222"}]),
                         f"{TF}.ports[0].containerPort", "must be an integer"),
    "duplicate port names": (assign(tensorflow, "ports", [{"name": "p", "containerPort": 1},
                                                          {"name": "p", "containerPort": 2}]),
                             f"{TF}.ports[1].name", "duplicates"),
    "bad cleanPodPolicy": (assign(run_policy, "cleanPodPolicy", "Some"), "spec.runPolicy.cleanPodPolicy",
                           "must be one of"),
    "negative backoffLimit": (assign(run_policy, "backoffLimit", -1), "spec.runPolicy.backoffLimit", "negative"),
    "negative activeDeadlineSeconds": (assign(run_policy, "activeDeadlineSeconds", -5),
                                       "spec.runPolicy.activeDeadlineSeconds", "negative"),
    "zero activeDeadlineSeconds": (assign(run_policy, "activeDeadlineSeconds", 0),
                                   "spec.runPolicy.activeDeadlineSeconds", "at least 1"),
    "negative ttlSecondsAfterFinished": (assign(run_policy, "ttlSecondsAfterFinished", -1),
                                         "spec.runPolicy.ttlSecondsAfterFinished", "negative"),
    "suspend as a string": (assign(run_policy, "suspend", "yes"), "spec.runPolicy.suspend", "true or false"),
    "runPolicy as a list": (assign(spec, "runPolicy", []), "spec.runPolicy", "must be an object"),
    "schedulingPolicy with words for numbers": (
        lambda job: run_policy(job)["schedulingPolicy"].update(minAvailable="all"),
        "spec.runPolicy.schedulingPolicy.minAvailable", "must be an integer"),
    "bad successPolicy": (assign(spec, "successPolicy", "AnyWorker"), "spec.successPolicy", "must be one of"),
    "enableDynamicWorker as a string": (assign(spec, "enableDynamicWorker", "true"), "spec.enableDynamicWorker",
                                        "true or false"),
    "no spec": (drop(lambda job: job, "spec"), "spec", "is required"),
    "no uid": (drop(metadata, "uid"), "metadata.uid", "is required"),
    "no namespace": (drop(metadata, "namespace"), "metadata.namespace", "is required"),
    "empty name": (assign(metadata, "name", ""), "metadata.name", "must not be empty"),
    "name with a dot (fine for a TFJob, not for a Service)": (assign(metadata, "name", "mnist.v2"), "metadata.name",
                                                              "DNS-1035"),
    "name starting with a digit": (assign(metadata, "name", "1mnist"), "metadata.name", "DNS-1035"),
    "name in upper case": (assign(metadata, "name", "Mnist"), "metadata.name", "DNS-1035"),
    "name too long for the children": (assign(metadata, "name", "a" * 50), "metadata.name", "at most 63"),
    "name too long for the tenth replica": (lambda job: (metadata(job).update(name="a" * 49),
                                                         worker(job).update(replicas=11)),
                                            "metadata.name", "at most 63"),
}


@pytest.mark.parametrize(("mutate", "path", "fragment"), list(INVALID.values()), ids=list(INVALID))
def test_each_invalid_field_is_named(mutate: Callable[[dict[str, Any]], object], path: str, fragment: str) -> None:
    job = valid_job()
    mutate(job)
    errors = validate(apply_defaults(job))
    assert any(error.path == path and fragment in error.message for error in errors), errors


VALID = {
    "the full example": valid_job(),
    "only a worker, every optional field left out": {
        "metadata": {"name": "mnist", "namespace": "ns", "uid": "u"},
        "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow"}]}}}}}},
    "seed style: MASTER/WORKER/PS, template restartPolicy": {
        "metadata": {"name": "example-job", "namespace": "default", "uid": "u"},
        "spec": {"tfReplicaSpecs": {key: {"replicas": 1, "template": {"spec": {
            "containers": [{"name": "tensorflow", "image": "tf"}], "restartPolicy": "OnFailure"}}}
            for key in ("MASTER", "WORKER", "PS")}}},
    "a PS without a tensorflow container": {
        **valid_job(Worker=1, PS=2),
        "spec": {"tfReplicaSpecs": {
            "Worker": valid_job(Worker=1)["spec"]["tfReplicaSpecs"]["Worker"],
            "PS": {"replicas": 2, "template": {"spec": {"containers": [{"name": "grpc", "image": "tf"}]}}}}}},
    "a chief with zero replicas": valid_job(Chief=0, Worker=1),
    "10,000 replicas with enableDynamicWorker": {**valid_job(Chief=1, Worker=9998, PS=1), "spec": {
        **valid_job(Chief=1, Worker=9998, PS=1)["spec"], "enableDynamicWorker": True,
        "elasticPolicy": {"maxReplicas": 10000}}},
    "a name exactly at the limit": {**valid_job(Worker=10), "metadata": {"name": "a" * 49, "namespace": "n",
                                                                         "uid": "u"}},
    "a name with a hyphen": {**valid_job(Worker=1), "metadata": {"name": "my-job-2", "namespace": "n", "uid": "u"}},
    "explicit nulls where fields are optional": {
        "metadata": {"name": "mnist", "namespace": "ns", "uid": "u"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": None, "template": {"metadata": None, "spec": {
            "containers": [{"name": "tensorflow", "ports": None, "env": None}]}}}},
            "runPolicy": None, "successPolicy": None}},
}


@pytest.mark.parametrize("job", list(VALID.values()), ids=list(VALID))
def test_valid_jobs_have_no_errors(job: dict[str, Any]) -> None:
    assert validate(apply_defaults(job)) == []


@pytest.mark.parametrize("job", [
    None, "job", [], {}, {"metadata": "x", "spec": "y"}, {"metadata": {}, "spec": {"tfReplicaSpecs": "x"}},
    {"metadata": {"name": 3}, "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
        {"name": "tensorflow", "ports": [None, {"containerPort": None}], "env": [3]}]}}}}}},
], ids=["null", "string", "list", "empty", "wrong types", "replica map string", "junk deep inside"])
def test_validation_never_raises(job: object) -> None:
    errors = validate(job)
    assert errors and all(isinstance(error, FieldError) for error in errors)


def test_errors_are_stable_and_printable() -> None:
    job = valid_job()
    worker(job)["replicas"] = "x"
    run_policy(job)["backoffLimit"] = -1
    errors = validate(job)
    assert errors == validate(copy.deepcopy(job))
    assert [str(error) for error in errors] == [
        "spec.tfReplicaSpecs[Worker].replicas: must be an integer, not 'x'",
        "spec.runPolicy.backoffLimit: must not be negative",
    ]
