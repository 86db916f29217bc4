"""The nodes of `bench.nodeloss`: kwok nodes made in bulk, and a rack of them lost at once.

A node is lost as a real one is: kwok stops renewing its Lease and status (its `type=kwok` label is taken away, so
kwok no longer manages it, as a powered-off kubelet stops), and the node goes Ready Unknown with the unreachable
taints, as the node lifecycle controller writes after its grace. The bench writes that itself, for all the rack at
once, rather than waiting the controller's 50 s node by node: the node lifecycle controller, which still runs,
finds the same condition and taints already there and leaves them. Pods keep the apiserver's default 300 s
toleration of the unreachable NoExecute taint (DefaultTolerationSeconds), so nothing evicts them within a
measurement: whatever replaces a replica in it is the operator.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists
from tfop.kube.resource import NODES

KWOK_LABEL = "type"  # hack/localcluster/controlplane.py: kwok manages the nodes labelled type=kwok
BENCH_LABEL = "tfop.bench/nodeloss"  # the bench's own nodes, apart from the cluster's 4 fake ones
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "110"}  # a common node's pod limit
WRITERS = 16


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_name(index: int) -> str:
    return f"nodeloss-{index:05d}"


def create_nodes(client: KubeClient, count: int) -> list[str]:
    """`count` nodes kwok keeps Ready; returns their names (the same names from run to run)."""
    names = [node_name(index) for index in range(count)]

    def create(name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {KWOK_LABEL: "kwok", BENCH_LABEL: "yes", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
            "status": {"allocatable": CAPACITY, "capacity": CAPACITY}}
        with suppress(AlreadyExists):  # left from an earlier run on the same cluster
            client.create(NODES, body)

    with ThreadPoolExecutor(WRITERS, thread_name_prefix="create-node") as pool:
        list(pool.map(create, names))
    return names


def ready_count(client: KubeClient) -> int:
    nodes, _ = client.list(NODES, label_selector=f"{BENCH_LABEL}=yes")
    return sum(is_ready(node) for node in nodes)


def is_ready(node: dict[str, Any]) -> bool:
    return any(entry.get("type") == "Ready" and entry.get("status") == "True"
               for entry in (node.get("status") or {}).get("conditions") or [])


def cordon_others(client: KubeClient) -> list[str]:
    """Mark every node that is not the bench's unschedulable (the cluster's own fake nodes), so the jobs' pods are
    spread over the bench's nodes only; returns their names."""
    nodes, _ = client.list(NODES)
    others = [node["metadata"]["name"] for node in nodes
              if (node["metadata"].get("labels") or {}).get(BENCH_LABEL) != "yes"]
    for name in others:
        client.patch(NODES, name, {"spec": {"unschedulable": True}})
    return others


def release_from_kwok(client: KubeClient, names: list[str]) -> None:
    """kwok stops managing the nodes: no more Lease renewals nor Ready heartbeats, as when a kubelet dies."""
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="release-node") as pool:
        list(pool.map(lambda name: client.patch(NODES, name, {"metadata": {"labels": {KWOK_LABEL: None}}}), names))


def mark_unreachable(client: KubeClient, names: list[str], since: datetime) -> None:
    """Ready Unknown since `since` and the unreachable NoSchedule and NoExecute taints, on every node at once, as
    the node lifecycle controller writes them."""
    moment = stamp(since)

    def mark(name: str) -> None:
        client.patch(NODES, name, {"status": {"conditions": [{
            "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": moment,
            "lastTransitionTime": moment}]}}, patch_type="strategic", subresource="status")
        client.patch(NODES, name, {"spec": {"taints": [
            {"key": TAINT_UNREACHABLE, "effect": effect, "timeAdded": moment}
            for effect in ("NoSchedule", "NoExecute")]}})

    with ThreadPoolExecutor(WRITERS, thread_name_prefix="lose-node") as pool:
        list(pool.map(mark, names))


def still_lost(client: KubeClient, names: list[str]) -> int:
    """How many of the nodes are still not Ready (kwok, had it kept one, would have made it Ready again)."""
    return sum(not is_ready(client.get(NODES, name)) for name in names)


def now_to_the_second() -> datetime:
    """Now, truncated as the condition's timestamp will be: the grace counts from that instant."""
    return datetime.now(UTC).replace(microsecond=0)
