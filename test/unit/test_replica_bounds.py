"""The bytes of the largest cluster a job's pods list in TF_CONFIG: rows worked out by hand, and the bound against
the TF_CONFIG the planner writes."""

from __future__ import annotations

import json

import pytest

from tfop.api.replica_bounds import largest_cluster_bytes
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job


# "mnist-worker-aaaa-0" is 19 bytes, ".ns" 3, ".svc" 4, ":65535" and two quotes and a comma 9: 35 a worker.
@pytest.mark.parametrize(("counts", "dynamic", "domain", "expected"), [
    ({"Worker": 3}, False, "svc", 3 * 35),
    ({"Worker": 12}, False, "svc", 12 * 34 + 10 * 1 + 2 * 2),  # the index's digits counted apart
    ({"Worker": 1}, False, "", 35 - len(".svc")),
    ({"Worker": 1}, False, "svc.cluster.local.", 35 + len(".cluster.local")),
    # A dynamic worker lists every PS ("mnist-ps-aaaa-0": 15 + 16 = 31) and itself, the last one the longest.
    ({"Worker": 3, "PS": 2}, True, "svc", 2 * 31 + 35),
    ({"Worker": 3, "PS": 2}, False, "svc", 3 * 35 + 2 * 31),
    ({"PS": 2}, True, "svc", 31),
    # A chief ("mnist-chief-aaaa-0": 18 + 16 = 34) or an evaluator lists everyone, dynamic or not.
    ({"Chief": 1, "Worker": 3, "PS": 2}, True, "svc", 34 + 3 * 35 + 2 * 31),
    ({"Evaluator": 1, "Worker": 3}, True, "svc", (len("mnist-evaluator-aaaa-0") + 16) + 3 * 35),
])
def test_largest_cluster_bytes(counts: dict[str, int], dynamic: bool, domain: str, expected: int) -> None:
    assert largest_cluster_bytes("mnist", "ns", domain, counts, dynamic_workers=dynamic) == expected


def test_the_bound_is_the_chiefs_tf_config_with_every_port_counted_five_digits() -> None:
    counts = {"Chief": 1, "Worker": 120, "PS": 3}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": "big-job", "namespace": "team-a", "uid": "7f1c2a9e-5b0e-4a55-8a86-1f1f0e1f2d3c"},
           "spec": {"enableDynamicWorker": True, "tfReplicaSpecs": {
               replica_type: {"replicas": count, "template": {"spec": {"containers": [
                   {"name": "tensorflow", "image": "tf"}]}}} for replica_type, count in counts.items()}}}
    model = parse_job(job, ControllerConfig())
    assert isinstance(model, TFJobModel)
    pod = DesiredChildren(model).pod("Chief", 0)
    env = {variable["name"]: variable["value"] for variable in pod["spec"]["containers"][0]["env"]}
    addresses = [address for listed in json.loads(env["TF_CONFIG"])["cluster"].values() for address in listed]
    assert len(addresses) == 124
    exact = sum(len(json.dumps(address)) + 1 for address in addresses)  # quoted, and a comma
    # The default port, 2222, is one digit short of the five counted.
    assert largest_cluster_bytes("big-job", "team-a", "svc", counts, dynamic_workers=True) == exact + 124
