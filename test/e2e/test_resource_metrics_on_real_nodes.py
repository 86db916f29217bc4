"""CPU metrics of pods on the real nodes, end to end: metrics-server (the `metrics_server` fixture) reads each
kubelet's /metrics/resource and serves metrics.k8s.io through the apiserver's aggregation layer, so `kubectl top`
shows a busy pod's CPU; and the HPA tfop makes from a TFJob's elasticPolicy, run by the kube-controller-manager's
HPA controller on that CPU through the job's scale subresource, adds busy workers in place and removes them once
they idle."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster import LocalCluster
from localcluster.addons.metrics_server import MetricsServer
from support.node_loss import timestamp
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, on_real_node, shell_container, story, tfjob
from support.resource_metrics import cpu_utilization_metric, hpa_cpu_utilization, pod_cpu_millicores, raw
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.api.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE

# A shell spinning on a builtin; the trap lets it end at once when its pod is deleted (as PID 1 it would otherwise
# ignore SIGTERM for the whole grace period).
BUSY = "trap 'exit 0' TERM; while :; do :; done"
# It asks for 50m and may use 100m (the CFS quota keeps it there): twice its request, far above an HPA target of 50%,
# at a tenth of a core per pod beside the other lanes' work.
RESOURCES = {"requests": {"cpu": "50m"}, "limits": {"cpu": "100m"}}
# Two scrapes (15 s apart) make metrics-server's first CPU rate of a new pod; the HPA controller reads every 15 s:
# a step of the control plane like any other, given the suite's deadline (each HPA step below a few of them).
METRICS_TIMEOUT = DEADLINE


@contextlib.contextmanager
def explained(details: Callable[[], str]) -> Iterator[None]:
    """A wait that times out says, besides what it waited for, what `details` reads at that moment."""
    try:
        yield
    except AssertionError as error:
        raise AssertionError(f"{error}\n{details()}") from None


def busy_deployment(name: str, image: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": on_real_node({"containers": [shell_container(image, BUSY, name="busy", resources=RESOURCES)]}),
        }},
    }


def running_pods(cluster: LocalCluster, namespace: str, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", f"app={app}", "-o", "json").stdout)["items"]
    return [pod for pod in items if pod["status"].get("phase") == "Running"]


def test_a_busy_pod_shows_its_cpu_in_the_resource_metrics_api_and_kubectl_top(
        real_node: LocalCluster, metrics_server: MetricsServer, namespace: str, busybox: str) -> None:
    apply(real_node, namespace, busy_deployment("spin", busybox))
    [pod] = wait_for(lambda: running_pods(real_node, namespace, "spin"), timeout=DEADLINE,
                     message="the busy pod to run on a real node", interval=KUBECTL_INTERVAL)
    name = pod["metadata"]["name"]

    # An idle shell reads about 0; a spinning one its whole quota. A quarter of the request tells them apart.
    with explained(lambda: f"metrics-server: {metrics_server.status()}; events:\n{story(real_node, namespace)}"):
        used = wait_for(lambda: (cpu := pod_cpu_millicores(real_node, namespace, name)) is not None and cpu > 12.5
                        and cpu, timeout=METRICS_TIMEOUT, interval=KUBECTL_INTERVAL,
                        message=f"metrics.k8s.io to show the busy pod {name} using CPU")
    print(f"{name} uses {used:.0f}m CPU per metrics.k8s.io")

    top = real_node.kubectl("top", "pod", name, "-n", namespace, "--no-headers").stdout.split()
    assert top[0] == name and top[1].endswith("m") and int(top[1][:-1]) > 0, top

    # Every real node is reported, and only they: kwok's fake nodes have no kubelet to scrape.
    nodes = wait_for(lambda: (found := raw(real_node, "/apis/metrics.k8s.io/v1beta1/nodes"))
                     and {item["metadata"]["name"] for item in found["items"]} == set(real_node.node_names) and found,
                     timeout=METRICS_TIMEOUT, interval=KUBECTL_INTERVAL,
                     message=f"node metrics of exactly {real_node.node_names}")
    assert all(item["usage"]["cpu"] and item["usage"]["memory"] for item in nodes["items"]), nodes




# The elastic job's bounds. A spinning worker uses twice its request, so the HPA wants ceil(n * 200 / 50) = 4n
# workers: it goes to the maximum (in one step, or two if it first counts a new worker without metrics as idle).
MAX_WORKERS = 3
RESIZED = re.compile(r"Worker (\d+) -> (\d+), asked by (.+?);")
BY_HPA = "the job's HorizontalPodAutoscaler"


def busy_until(stop: str) -> str:
    """BUSY until the file `stop` exists, then idle. The file ends the load of every worker at once, those the HPA
    added later too, which a deadline each pod computed at its start would not. Idle, it sleeps a second at a time,
    since a shell runs its trap only between commands and a removed worker should leave at once."""
    return f"trap 'exit 0' TERM; while [ ! -e {stop} ]; do :; done; echo idle; while :; do sleep 1; done"


def elastic_busy_job(name: str, image: str, shared: Path, stop: str) -> dict[str, Any]:
    """Workers only, resized in place, that spin on CPU until `stop` (a path under /shared, the cluster's shared
    directory) exists; tfop keeps an HPA holding their CPU at half their request, with 1 to MAX_WORKERS workers."""
    worker = {"restartPolicy": "Never", "spec": {
        "terminationGracePeriodSeconds": 5,
        "volumes": [{"name": "shared", "hostPath": {"path": str(shared), "type": "Directory"}}],
        "containers": [shell_container(image, busy_until(stop), resources=RESOURCES,
                                       volumeMounts=[{"name": "shared", "mountPath": "/shared"}])]}}
    job = tfjob(name, {"Worker": worker})
    job["spec"]["enableDynamicWorker"] = True
    job["spec"]["elasticPolicy"] = {
        "minReplicas": 1, "maxReplicas": MAX_WORKERS, "metrics": [cpu_utilization_metric(50)],
        "behavior": {
            # The default scale-down window is five minutes of lower recommendations; none here, and all the
            # surplus may go in one period, so the idle workers leave at the HPA's next sync.
            "scaleDown": {"stabilizationWindowSeconds": 0,
                          "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleUp": {"stabilizationWindowSeconds": 0}}}
    return job


@dataclass(frozen=True)
class Resized:
    """One Resized event of the job, as tfop told it."""
    at: float
    before: int
    after: int
    asked_by: str


def resizes(cluster: LocalCluster, namespace: str, job: str) -> list[Resized]:
    """The job's Resized events in the order they happened."""
    items = json.loads(cluster.kubectl(
        "get", "events", "-n", namespace, "-o", "json", "--field-selector",
        f"involvedObject.kind=TFJob,involvedObject.name={job},reason=Resized").stdout)["items"]
    found = []
    for event in items:
        told = RESIZED.search(event["message"])
        assert told, event["message"]
        at = event.get("eventTime") or event.get("lastTimestamp") or event["firstTimestamp"]
        found.append(Resized(timestamp(at), int(told[1]), int(told[2]), told[3]))
    return sorted(found, key=lambda resize: resize.at)


def hpa_rescales(cluster: LocalCluster, namespace: str, name: str) -> str:
    """What the HPA controller said of each rescale it made ("New size: 3; reason: cpu resource utilization ...")."""
    return str(cluster.kubectl("get", "events", "-n", namespace, "--field-selector",
                               f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name},"
                               "reason=SuccessfulRescale", "-o", "jsonpath={.items[*].message}").stdout)


def worker_pods(cluster: LocalCluster, namespace: str, job: str) -> dict[int, dict[str, Any]]:
    """index -> the job's Worker pod, those being deleted included."""
    return {int(pod["metadata"]["labels"][LABEL_REPLICA_INDEX]): pod for pod in job_pods(cluster, namespace, job)
            if pod["metadata"]["labels"].get(LABEL_REPLICA_TYPE, "").lower() == "worker"}


def running(pod: dict[str, Any]) -> bool:
    return pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def true_conditions(obj: dict[str, Any]) -> set[str]:
    return {c["type"] for c in obj.get("status", {}).get("conditions") or [] if c["status"] == "True"}


def worker_restarts(job: dict[str, Any]) -> int:
    return int(job["status"].get("replicaStatuses", {}).get("Worker", {}).get("restarts") or 0)


def chain(steps: list[Resized]) -> list[int]:
    """The Worker counts the resizes went through, checking each starts where the one before ended."""
    counts = [steps[0].before]
    for step in steps:
        assert step.before == counts[-1], steps
        counts.append(step.after)
    return counts


def test_a_tfjobs_own_hpa_adds_busy_workers_in_place_and_removes_them_once_idle(
        real_node: LocalCluster, metrics_server: MetricsServer, operator: OperatorProcess, namespace: str,
        busybox: str) -> None:
    name = "spin"
    # The stop file's directory, on the host directory every real node's pods may mount.
    stop_dir = real_node.shared_dir / namespace
    stop_dir.mkdir()
    apply(real_node, namespace, elastic_busy_job(name, busybox, real_node.shared_dir, f"/shared/{namespace}/stop"))
    job = get(real_node, namespace, "tfjob", name)
    born = timestamp(job["metadata"]["creationTimestamp"])
    # Every Worker count the job's spec and the HPA's recommendation were seen at, to show neither left the bounds.
    counts: set[int] = set()

    def details() -> str:
        return (real_node.kubectl("describe", "hpa", name, "-n", namespace, check=False).stdout
                + json.dumps(get(real_node, namespace, "tfjob", name).get("status"), indent=1)
                + f"\nmetrics-server: {metrics_server.status()}; events:\n{story(real_node, namespace)}")

    def hpa() -> dict[str, Any] | None:
        found = json.loads(real_node.kubectl("get", "hpa", name, "-n", namespace, "-o", "json", check=False).stdout
                           or "null")
        if found:
            counts.add(int(found.get("status", {}).get("desiredReplicas") or 1))
        return found  # type: ignore[no-any-return]

    # 1. tfop makes the HPA, owned by the job and aimed at its scale subresource.
    with explained(details):
        autoscaler = wait_for(hpa, timeout=DEADLINE, message="tfop to create the job's HPA", interval=KUBECTL_INTERVAL)
    assert [ref for ref in autoscaler["metadata"].get("ownerReferences", [])
            if ref["uid"] == job["metadata"]["uid"] and ref.get("controller")], autoscaler["metadata"]
    assert autoscaler["spec"]["scaleTargetRef"] == {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": name}
    assert (autoscaler["spec"]["minReplicas"], autoscaler["spec"]["maxReplicas"]) == (1, MAX_WORKERS)

    with explained(details):
        first = wait_for(lambda: (pod := worker_pods(real_node, namespace, name).get(0)) and running(pod) and pod,
                         timeout=DEADLINE, message="worker 0 to run on a real node", interval=KUBECTL_INTERVAL)
    uid = first["metadata"]["uid"]

    def at_size(size: int) -> dict[str, Any] | None:
        """The job, once its spec asks for `size` workers and exactly those pods exist and run."""
        hpa()
        current = get(real_node, namespace, "tfjob", name)
        counts.add(current["spec"]["tfReplicaSpecs"]["Worker"]["replicas"])
        pods = worker_pods(real_node, namespace, name)
        wanted = current["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == size
        return current if wanted and set(pods) == set(range(size)) and all(map(running, pods.values())) else None

    # Two scrapes for worker 0's first CPU rate, the HPA's sync, the new workers' start; perhaps once more.
    with explained(details):
        job = wait_for(lambda: at_size(MAX_WORKERS), timeout=4 * METRICS_TIMEOUT, interval=KUBECTL_INTERVAL,
                       message=f"the HPA to scale the busy workers up to {MAX_WORKERS}, and them to run")
    autoscaler = hpa() or {}
    utilization = hpa_cpu_utilization(autoscaler)
    assert utilization is not None and utilization > 50, autoscaler["status"]
    # It got the scale (AbleToScale: SucceededGetScale) and read CPU for the pods of its selector (ScalingActive).
    assert {"AbleToScale", "ScalingActive"} <= true_conditions(autoscaler), autoscaler["status"]
    scale = raw(real_node, f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}/scale") or {}
    assert scale["spec"]["replicas"] == MAX_WORKERS, scale
    assert f"{LABEL_REPLICA_TYPE}=worker" in scale["status"]["selector"], scale
    rescaled = hpa_rescales(real_node, namespace, name)
    assert f"New size: {MAX_WORKERS}" in rescaled and "cpu resource utilization" in rescaled, rescaled

    # In place: worker 0 is the pod it was, never restarted, and the job is not failing.
    pods = worker_pods(real_node, namespace, name)
    assert pods[0]["metadata"]["uid"] == uid, pods[0]["metadata"]
    assert {pod["spec"]["nodeName"] for pod in pods.values()} <= set(real_node.node_names)
    assert worker_restarts(job) == 0 and "Failed" not in true_conditions(job), job["status"]
    assert job["status"]["lastResize"]["cause"] == "HPA" and job["status"]["lastResize"]["to"] == MAX_WORKERS
    assert job["status"]["lastResize"]["strategy"] == "InPlace", job["status"]["lastResize"]
    up = resizes(real_node, namespace, name)
    assert up and all(step.asked_by == BY_HPA for step in up), up
    path_up = chain(up)
    assert path_up[0] == 1 and path_up[-1] == MAX_WORKERS and path_up == sorted(set(path_up)), up
    print(f"the HPA read {utilization}% CPU utilization; workers {' -> '.join(map(str, path_up))}")

    # 2. The load stops; the HPA takes the workers back down to the minimum.
    (stop_dir / "stop").touch()
    stopped = time.time()
    with explained(details):
        job = wait_for(lambda: at_size(1), timeout=3 * METRICS_TIMEOUT, interval=KUBECTL_INTERVAL,
                       message="the HPA to scale the idle workers down to 1, and the others to be gone")
    [zero] = worker_pods(real_node, namespace, name).values()
    assert zero["metadata"]["uid"] == uid, zero["metadata"]
    assert [s["restartCount"] for s in zero["status"]["containerStatuses"]] == [0], zero["status"]
    assert worker_restarts(job) == 0 and "Failed" not in true_conditions(job), job["status"]
    assert job["status"]["lastResize"]["cause"] == "HPA" and job["status"]["lastResize"]["to"] == 1
    assert "below target" in hpa_rescales(real_node, namespace, name)
    steps = resizes(real_node, namespace, name)
    assert steps[:len(up)] == up and all(step.asked_by == BY_HPA for step in steps), steps
    path_down = chain(steps[len(up) - 1:])[1:]
    assert path_down[0] == MAX_WORKERS and path_down[-1] == 1 and path_down == sorted(set(path_down), reverse=True)
    assert min(counts) >= 1 and max(counts) <= MAX_WORKERS, counts

    # 3. The timeline, in seconds from the job's creation (the apiserver's and tfop's clocks, this host's).
    hpa_at = timestamp(autoscaler["metadata"]["creationTimestamp"]) - born
    up_at, down_at = up[-1].at - born, steps[-1].at - born
    print("| HPA created | scaled up (workers) | load stopped | scaled down (workers) |")
    print(f"| {hpa_at:.0f} s | {up_at:.0f} s ({' -> '.join(map(str, path_up))}) | {stopped - born:.0f} s "
          f"| {down_at:.0f} s ({' -> '.join(map(str, path_down))}) |")
