"""tfop's own Kueue integration against Kueue v0.19 as released (no kubeflow.org/tfjob adapter), the scenarios the
docs' Kueue page has tables of, each printing its table (`pytest -s`): a job preempted by one whose pods name a
higher PriorityClass (no WorkloadPriorityClass label: the Workload's priority is the pods' class), requeued and
admitted again with no restart counted; a job whose Worker pod set asks for one rack
(`kueue.x-k8s.io/podset-required-topology`) on a flavor with a Kueue Topology, whose pods land on the nodes the
admission's topology assignment names; a job resized while it runs, admitted again at its new size.

A cluster of its own (kwok nodes only), set up as test_kueue_own.py's (support/kueue_own.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from fake_kubelet import exit_pod
from support.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NODES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Timeline,
    cluster_queue,
    flavor,
    gpu_replica,
    is_true,
    live_pods,
    local_queue,
    queued_tfjob,
    running_pods,
    workload_of,
)
from support.kueue_own import (
    REPLICA_TYPE_LABEL,
    Setup,
    event_of,
    evicted_event,
    kwok_node,
    markdown_table,
    own_integration_cluster,
    restarts,
    suspended,
)
from support.tfjobs import TFJOBS, condition
from support.waiting import DEADLINE, wait_for
from tfop.kube.resource import Resource

POD_PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
TOPOLOGIES = Resource("kueue.x-k8s.io", "v1beta2", "topologies", "Topology", namespaced=False)
RACK_LABEL = "tfop.test/rack"
HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture(scope="module")
def own_integration(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with own_integration_cluster(tmp_path_factory.mktemp("kueueownscenarios")) as setup:
        yield setup


def with_pod_priority(job: dict[str, Any], priority_class: str) -> dict[str, Any]:
    for replica in job["spec"]["tfReplicaSpecs"].values():
        replica["template"]["spec"]["priorityClassName"] = priority_class
    return job


def priority_of(workload: dict[str, Any] | None) -> tuple[object, object]:
    spec = (workload or {}).get("spec", {})
    return spec.get("priorityClassRef"), spec.get("priority")


def test_a_job_whose_pods_priorityclass_is_higher_preempts_and_the_preempted_one_is_admitted_again(
        own_integration: Setup) -> None:
    client, ns, pool = own_integration.client, own_integration.namespace, own_integration.pool
    client.create(CLUSTER_QUEUES, cluster_queue("by-pods", pool, 4, ns, preemption=True))
    client.create(LOCAL_QUEUES, local_queue("by-pods", "by-pods"), ns)
    for level, value in (("low", 10), ("high", 1000)):
        client.create(POD_PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                             "metadata": {"name": f"{ns}-{level}"}, "value": value})
    wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, "by-pods"), "Active"), message="the ClusterQueue to be Active")
    timeline = Timeline(client, ns).start()
    low = client.create(TFJOBS, with_pod_priority(queued_tfjob("low", "by-pods", 2), f"{ns}-low"), ns)
    timeline.created(low)
    wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "the low-priority job to be Running")
    running_pods(client, ns, "low", 2)
    assert priority_of(workload_of(client, ns, low)) == (
        {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": f"{ns}-low"}, 10)
    high = client.create(TFJOBS, with_pod_priority(queued_tfjob("high", "by-pods", 2), f"{ns}-high"), ns)
    timeline.created(high)
    stopped = wait_for(lambda: evicted_event(client, ns, "low"), DEADLINE, "the low-priority job to be evicted")
    assert "Preempted" in stopped["message"], stopped
    wait_for(lambda: condition(client, ns, "high", "Running"), DEADLINE, "the high-priority job to run")
    assert priority_of(workload_of(client, ns, high))[1] == 1000
    assert live_pods(client, ns, "low") == []
    chief = next(p for p in running_pods(client, ns, "high", 2)
                 if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "chief")
    exit_pod(client, ns, chief["metadata"]["name"], 0)
    wait_for(lambda: condition(client, ns, "high", "Succeeded"), DEADLINE, "the high-priority job to succeed")
    again = wait_for(lambda: (e := event_of(client, ns, "low", "AdmittedByKueue")) and "again" in e["message"] and e,
                     DEADLINE, "the preempted job to be admitted again")
    wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "the preempted job to run again")
    running_pods(client, ns, "low", 2)
    wait_for(lambda: timeline.first("low", "running ended") and len(
        [e for e in timeline.events if e[1] == "low" and e[2] == "running"]) == 2, DEADLINE,
        "the timeline to see the preempted job run twice")
    timeline.stop()
    print(markdown_table("Priority preemption by the pods' PriorityClass (seconds since the low job was created)",
                         ("s", "job", "what"), timeline.rows()))
    print(f"evicted: {stopped['message']}\nadmitted again: {again['message']}")
    assert "again after 1 eviction (Preempted)" in again["message"] and f"flavors chief: {pool}" in again["message"]
    assert restarts(client, ns, "low") == {"Chief": 0, "Worker": 0}
    assert condition(client, ns, "low", "Failed") is None
    client.delete(TFJOBS, "low", ns)
    client.delete(TFJOBS, "high", ns)
    wait_for(lambda: not client.list(WORKLOADS, ns)[0], DEADLINE, "the jobs' Workloads to go with them")


def domains(assignment: dict[str, Any]) -> Counter[str]:
    """The pods a topology assignment puts on each node: the lowest level's value (the hostname) of every domain
    of every slice, each value its level's universal one or prefix + root + suffix."""
    levels = assignment["levels"]
    assert levels[-1] == HOSTNAME, levels
    placed: Counter[str] = Counter()
    for piece in assignment["slices"]:
        lowest, counts = piece["valuesPerLevel"][-1], piece["podCounts"]
        for index in range(piece["domainCount"]):
            if "universal" in lowest:
                host = lowest["universal"]
            else:
                individual = lowest["individual"]
                host = individual.get("prefix", "") + individual["roots"][index] + individual.get("suffix", "")
            placed[host] += counts["universal"] if "universal" in counts else counts["individual"][index]
    return placed


def test_the_pods_land_where_the_topology_assignment_put_them(own_integration: Setup) -> None:
    client, ns = own_integration.client, own_integration.namespace
    pool = f"{ns}-tas"
    for rack in ("a", "b"):
        for index in range(2):
            client.create(NODES, kwok_node(f"{pool}-{rack}{index}", {"tfop.test/tas-pool": pool,
                                                                     RACK_LABEL: f"{pool}-{rack}"}, 2))
    client.create(TOPOLOGIES, {"apiVersion": TOPOLOGIES.api_version, "kind": "Topology",
                               "metadata": {"name": pool},
                               "spec": {"levels": [{"nodeLabel": RACK_LABEL}, {"nodeLabel": HOSTNAME}]}})
    tas_flavor = flavor(pool, {"tfop.test/tas-pool": pool})
    tas_flavor["spec"]["topologyName"] = pool
    client.create(RESOURCE_FLAVORS, tas_flavor)
    client.create(CLUSTER_QUEUES, cluster_queue("racks", pool, 8, ns))
    client.create(LOCAL_QUEUES, local_queue("racks", "racks"), ns)
    wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, "racks"), "Active"), message="the ClusterQueue to be Active")
    # Three workers of 1 GPU that must share a rack (4 GPUs each), and a chief the job places nowhere in particular.
    job = queued_tfjob("placed", "racks", 1)
    job["spec"]["tfReplicaSpecs"]["Worker"] = gpu_replica(1, 3)
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": RACK_LABEL}}
    placed = client.create(TFJOBS, job, ns)
    wait_for(lambda: condition(client, ns, "placed", "Running"), DEADLINE, "the job to be Running")
    pods = running_pods(client, ns, "placed", 4)
    workload = workload_of(client, ns, placed)
    assert workload is not None
    request = next(s["topologyRequest"] for s in workload["spec"]["podSets"] if s["name"] == "worker")
    assert request == {"required": RACK_LABEL, "podIndexLabel": "training.kubeflow.org/replica-index"}, request
    assigned = {a["name"]: domains(a["topologyAssignment"]) for a in workload["status"]["admission"][
        "podSetAssignments"]}
    landed = {name: Counter(p["spec"]["nodeName"] for p in pods if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == name)
              for name in assigned}
    racks = {node["metadata"]["name"]: node["metadata"]["labels"][RACK_LABEL]
             for node in client.list(NODES, label_selector=f"tfop.test/tas-pool={pool}")[0]}
    rows = [(p["metadata"]["name"], p["metadata"]["labels"][REPLICA_TYPE_LABEL],
             ", ".join(f"{host} x{count}" for host, count in sorted(
                 assigned[p["metadata"]["labels"][REPLICA_TYPE_LABEL]].items())),
             p["spec"]["nodeName"], racks[p["spec"]["nodeName"]], p["spec"]["nodeSelector"].get(HOSTNAME, ""))
            for p in sorted(pods, key=lambda p: p["metadata"]["name"])]
    print(markdown_table("Topology placement: 4 nodes of 2 GPUs in 2 racks; workers must share a rack",
                         ("pod", "pod set", "admission's domains", "node", "rack", "nodeSelector hostname"), rows))
    assert landed == assigned, (landed, assigned)
    assert len({racks[host] for host in assigned["worker"]}) == 1, assigned
    assert all(not p["spec"].get("schedulingGates") for p in pods)  # Kueue lifted the gate it placed them by
    assert restarts(client, ns, "placed") == {"Chief": 0, "Worker": 0}
    client.delete(TFJOBS, "placed", ns)
    wait_for(lambda: not client.list(WORKLOADS, ns)[0], DEADLINE, "the job's Workload to go with it")


def test_a_job_resized_while_it_runs_is_admitted_again_at_its_new_size(own_integration: Setup) -> None:
    client, ns = own_integration.client, own_integration.namespace
    wait_for(lambda: not client.list(WORKLOADS, ns)[0], DEADLINE, "no Workload left from another test")
    timeline = Timeline(client, ns).start()
    job = client.create(TFJOBS, queued_tfjob("grown", "queue", gpus_per_replica=1), ns)
    timeline.created(job)
    wait_for(lambda: condition(client, ns, "grown", "Running"), DEADLINE, "the job to be Running")
    running_pods(client, ns, "grown", 2)
    first = workload_of(client, ns, job)
    assert first is not None
    client.patch(TFJOBS, "grown", {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}}, ns)
    resized_at = timeline.elapsed()

    def new_workload() -> dict[str, Any] | None:
        found = workload_of(client, ns, job)
        return found if found is not None and found["metadata"]["uid"] != first["metadata"]["uid"] else None

    second = wait_for(new_workload, DEADLINE, "a Workload of the new size")
    assert [(s["name"], s["count"]) for s in second["spec"]["podSets"]] == [("chief", 1), ("worker", 2)]
    wait_for(lambda: is_true(new_workload(), "Admitted"), DEADLINE, "the new Workload to be admitted")
    wait_for(lambda: condition(client, ns, "grown", "Running"), DEADLINE, "the resized job to run")
    running_pods(client, ns, "grown", 3)
    timeline.stop()
    rows: list[tuple[str, str, str]] = [(f"{resized_at:.1f}", "grown", "Worker 1 -> 2 (spec edited)"),
                                        *timeline.rows()]
    in_order = sorted(rows, key=lambda row: float(row[0]))
    print(markdown_table("A resize re-admitted: Chief 1 + Worker 1 of 1 GPU each, then Worker 2 (seconds since "
                         "created)", ("s", "job", "what"), in_order))
    assert suspended(client, ns, "grown") is None
    assert restarts(client, ns, "grown") == {"Chief": 0, "Worker": 0}
    assert not client.list(WORKLOADS, ns)[0][1:]  # one Workload: the old one is gone
    client.delete(TFJOBS, "grown", ns)
