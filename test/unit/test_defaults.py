"""Table tests of apply_defaults: what the operator assumes for every field left out."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tfop.api.defaults import apply_defaults, canonical_replica_type


def job_with(replica_specs: Any, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "mnist", "namespace": "ns", "uid": "u"},
            "spec": {"tfReplicaSpecs": replica_specs, **spec}}


def replica(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": list(containers or [{"name": "tensorflow", "image": "tf"}])}
    pod_spec.update(fields.pop("pod_spec", {}))
    return {"template": {"spec": pod_spec}, **fields}


@pytest.mark.parametrize(("name", "expected"), [
    ("Worker", "Worker"), ("worker", "Worker"), ("WORKER", "Worker"), ("wOrKeR", "Worker"),
    ("MASTER", "Master"), ("master", "Master"), ("ps", "PS"), ("Ps", "PS"), ("chief", "Chief"),
    ("CHIEF", "Chief"), ("evaluator", "Evaluator"), ("Evaluator", "Evaluator"),
    ("boss", None), ("", None), ("workers", None), (3, None), (None, None),
], ids=repr)
def test_canonical_replica_type(name: object, expected: str | None) -> None:
    assert canonical_replica_type(name) == expected


@pytest.mark.parametrize(("keys", "expected"), [
    (["worker"], ["Worker"]),
    (["MASTER", "WORKER", "PS"], ["Master", "Worker", "PS"]),
    (["chief", "evaluator", "ps"], ["Chief", "Evaluator", "PS"]),
    (["Worker", "worker"], ["Worker", "worker"]),  # a duplicate is left for validation to reject
    (["Worker", "WORKER", "ps"], ["Worker", "WORKER", "PS"]),
    (["boss", "worker"], ["boss", "Worker"]),  # an unknown key is left as is
], ids=["lower", "seed-style upper", "mixed", "duplicate kept", "duplicate beside a good key", "unknown kept"])
def test_replica_keys_are_normalised(keys: list[str], expected: list[str]) -> None:
    defaulted = apply_defaults(job_with({key: replica() for key in keys}))
    assert list(defaulted["spec"]["tfReplicaSpecs"]) == expected


@pytest.mark.parametrize(("given", "expected"), [
    (replica(), 1),
    (replica(replicas=None), 1),
    (replica(replicas=0), 0),
    (replica(replicas=5), 5),
    (replica(replicas="three"), "three"),  # wrong types are validation's to report
], ids=["absent", "null", "zero kept", "five", "wrong type left"])
def test_replicas_default_to_one(given: dict[str, Any], expected: object) -> None:
    assert apply_defaults(job_with({"Worker": given}))["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == expected


@pytest.mark.parametrize(("given", "expected"), [
    (replica(), "ExitCode"),
    (replica(restartPolicy="Never"), "Never"),
    (replica(pod_spec={"restartPolicy": "OnFailure"}), "OnFailure"),  # the seeds put it on the template
    (replica(restartPolicy="Always", pod_spec={"restartPolicy": "OnFailure"}), "Always"),
    (replica(pod_spec={"restartPolicy": ""}), "ExitCode"),
    (replica(restartPolicy=None, pod_spec={"restartPolicy": "Never"}), "Never"),
], ids=["default", "replica's", "template's", "replica's wins", "empty template value", "null replica value"])
def test_restart_policy(given: dict[str, Any], expected: str) -> None:
    defaulted = apply_defaults(job_with({"Worker": given}))
    assert defaulted["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] == expected


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, {"cleanPodPolicy": "Running"}),
    ({"runPolicy": None}, {"cleanPodPolicy": "Running"}),
    ({"runPolicy": {"backoffLimit": 3}}, {"backoffLimit": 3, "cleanPodPolicy": "Running"}),
    ({"runPolicy": {"cleanPodPolicy": "All"}}, {"cleanPodPolicy": "All"}),
    ({"runPolicy": {"cleanPodPolicy": None}}, {"cleanPodPolicy": "Running"}),
    ({"runPolicy": "fast"}, "fast"),
], ids=["absent", "null", "other fields kept", "explicit", "null policy", "wrong type left"])
def test_clean_pod_policy_defaults_to_running(spec: dict[str, Any], expected: object) -> None:
    assert apply_defaults(job_with({"Worker": replica()}, **spec))["spec"]["runPolicy"] == expected


@pytest.mark.parametrize(("containers", "expected_ports"), [
    ([{"name": "tensorflow"}], [[{"name": "tfjob-port", "containerPort": 2222}]]),
    ([{"name": "tensorflow", "ports": None}], [[{"name": "tfjob-port", "containerPort": 2222}]]),
    ([{"name": "tensorflow", "ports": [{"name": "metrics", "containerPort": 9090}]}],
     [[{"name": "metrics", "containerPort": 9090}, {"name": "tfjob-port", "containerPort": 2222}]]),
    ([{"name": "tensorflow", "ports": [{"name": "tfjob-port", "containerPort": 3333}]}],
     [[{"name": "tfjob-port", "containerPort": 3333}]]),
    ([{"name": "sidecar"}, {"name": "tensorflow"}], [None, [{"name": "tfjob-port", "containerPort": 2222}]]),
    ([{"name": "tensorflow", "ports": "2222"}], ["2222"]),
], ids=["no ports", "null ports", "beside another port", "user's port kept", "only on tensorflow",
        "wrong type left"])
def test_the_tfjob_port_is_added_to_the_tensorflow_container(containers: list[dict[str, Any]],
                                                               expected_ports: list[object]) -> None:
    defaulted = apply_defaults(job_with({"Worker": replica(*containers)}))
    found = defaulted["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert [container.get("ports") for container in found] == expected_ports


@pytest.mark.parametrize("job", [
    {}, {"spec": None}, {"spec": "x"}, {"spec": {"tfReplicaSpecs": []}}, job_with({"Worker": None}),
    job_with({"Worker": {"template": "x"}}), job_with({"Worker": {"template": {"spec": {"containers": "x"}}}}),
    job_with({"Worker": {"template": {"spec": {"containers": [None, 3, {"name": "tensorflow"}]}}}}),
    job_with({3: replica()}),
], ids=["empty", "null spec", "string spec", "list of replicas", "null replica", "string template",
        "string containers", "junk containers", "non-string key"])
def test_defaulting_never_fails(job: dict[str, Any]) -> None:
    assert isinstance(apply_defaults(job), dict)


def test_defaulting_does_not_mutate_its_input() -> None:
    job = job_with({"worker": replica(replicas=None)})
    before = copy.deepcopy(job)
    defaulted = apply_defaults(job)
    assert job == before
    defaulted["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert job == before


def test_defaulting_twice_changes_nothing_more() -> None:
    once = apply_defaults(job_with({"WORKER": replica(), "ps": replica(restartPolicy="Never")}))
    assert apply_defaults(once) == once
