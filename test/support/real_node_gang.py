"""Gang jobs on the local cluster's real nodes with Kubernetes' own gang scheduling, as
test/e2e/test_native_gang_on_real_nodes.py makes and watches them: room counted in slots of an extended resource the
nodes' status is patched to offer (as a cluster admin advertises one; the kubelets keep what they did not set), so
what fits does not depend on the CPU and memory earlier tests left in use; and a timeline of what was seen, printed
as a table."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from localcluster.node_layout import NODE_LABEL
from support.gang import bound, pods_of
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import NODES, PODS, Resource

GROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
SLOT = "tfop.kubeflow.org/e2e-gang-slot"
REAL_NODES = ("real-0", "real-1")
WATCH_INTERVAL = 0.2  # the watches read through the API (no kubectl process), so they may look often


def offer_slots(client: KubeClient, node: str, count: int | None) -> None:
    """`node` offers `count` slots from now on (None: none, the resource removed)."""
    value = None if count is None else str(count)
    client.patch_status(NODES, node, {"status": {"capacity": {SLOT: value}, "allocatable": {SLOT: value}}})


def slot_holders(client: KubeClient) -> list[str]:
    """The pods of every namespace that hold or may soon hold a slot: neither Succeeded nor Failed, being deleted or
    not (a pod being deleted keeps its slot until the kubelet has stopped it)."""
    pods, _ = client.list(PODS)
    return [f"{pod['metadata']['namespace']}/{pod['metadata']['name']}" for pod in pods
            if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
            and any(SLOT in (container.get("resources", {}).get("requests") or {})
                    for container in pod["spec"].get("containers", []))]


@contextmanager
def slots(client: KubeClient, per_node: int) -> Iterator[None]:
    """Each real node offers `per_node` slots, once no earlier test's pod holds one (a test's namespace is deleted
    in the background, so its pods may still be going); no slot is offered afterwards."""
    wait_for(lambda: not slot_holders(client), DEADLINE, "earlier tests' pods to give their slots back",
             interval=1.0)
    for node in REAL_NODES:
        offer_slots(client, node, per_node)
    try:
        yield
    finally:
        for node in REAL_NODES:
            offer_slots(client, node, None)


def slot_pod_spec(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A pod spec of one container needing one slot, on a real node, with the `spec` fields given; stopped 1 s after
    it is told to."""
    resources = {SLOT: "1"}
    return {"nodeSelector": {NODE_LABEL: "true"},
            "tolerations": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 1,
            "containers": [{**container, "imagePullPolicy": "Never",
                            "resources": {"requests": resources, "limits": resources}}], **spec}


def gang_job(name: str, workers: int, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A TFJob of `workers` workers of one slot each (slot_pod_spec); a worker still running when the job is done is
    deleted."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
                     "tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "Never",
                                                   "template": {"spec": slot_pod_spec(container, **spec)}}}}}


def group_conditions(client: KubeClient, namespace: str, job: str) -> str:
    """The job's PodGroup's status conditions in one cell: `type=status reason: message`, or why there are none."""
    try:
        group = client.get(GROUPS, job, namespace)
    except NotFound:
        return "(no PodGroup)"
    said = [f"{c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}".rstrip(": ")
            for c in group.get("status", {}).get("conditions") or []]
    return "; ".join(said) or "(no condition yet)"


def assert_none_bound(client: KubeClient, namespace: str, job: str) -> bool:
    """True while no pod of the job is bound; fails at once (with the pods' nodes) when one is."""
    pods = pods_of(client, namespace, job)
    assert bound(pods) == 0, (f"{job}: {bound(pods)} of {len(pods)} pods bound while the gang cannot fit: "
                              f"{sorted((p['metadata']['name'], p['spec'].get('nodeName')) for p in pods)}")
    return True


def nodes_of(client: KubeClient, namespace: str, job: str) -> str:
    """Where the job's pods are bound, e.g. `real-0 x2, real-1 x2`."""
    nodes = [pod["spec"].get("nodeName") or "unbound" for pod in pods_of(client, namespace, job)]
    return ", ".join(f"{node} x{nodes.count(node)}" for node in sorted(set(nodes)))


@dataclass
class Timeline:
    """What a test saw, each row at its seconds since the timeline began: printed as a table at the end."""

    client: KubeClient
    namespace: str
    start: float = field(default_factory=time.monotonic)
    rows: list[tuple[float, str, str, str]] = field(default_factory=list)

    def mark(self, what: str, jobs: dict[str, int]) -> float:
        """A row: `what` happened; then how many of each job's pods (name -> workers) are bound, and its PodGroup's
        conditions. Returns the moment it happened."""
        at = time.monotonic()
        counts = [f"{job} {bound(pods_of(self.client, self.namespace, job))}/{workers}"
                  for job, workers in jobs.items()]
        said = [f"{job}: {group_conditions(self.client, self.namespace, job)}" for job in jobs]
        self.rows.append((at - self.start, what, ", ".join(counts), " / ".join(said)))
        return at

    def table(self) -> str:
        lines = ["| at (s) | what | pods bound | PodGroup status conditions |", "| ---: | --- | --- | --- |"]
        lines += [f"| {at:.1f} | {what} | {count} | {said} |" for at, what, count, said in self.rows]
        return "\n".join(lines)


def whole_gang_bound(client: KubeClient, namespace: str, job: str, workers: int) -> list[int]:
    """Waits until every pod of the job is bound; returns the bound counts seen on the way (each change once), the
    first being the count when the wait began."""
    seen: list[int] = []

    def all_bound() -> bool:
        count = bound(pods_of(client, namespace, job))
        if not seen or seen[-1] != count:
            seen.append(count)
        return count == workers

    wait_for(all_bound, DEADLINE, f"all {workers} pods of {job} bound", interval=WATCH_INTERVAL / 2)
    return seen
