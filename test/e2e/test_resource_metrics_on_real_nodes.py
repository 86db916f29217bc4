"""CPU metrics of pods on the real nodes, end to end: metrics-server (the `metrics_server` fixture) reads each
kubelet's /metrics/resource and serves metrics.k8s.io through the apiserver's aggregation layer, so `kubectl top`
shows a busy pod's CPU, and the kube-controller-manager's HPA controller scales a Deployment on it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from localcluster import LocalCluster
from localcluster.addons.metrics_server import MetricsServer
from support.real_node_jobs import apply, get, on_real_node, shell_container, story
from support.resource_metrics import cpu_hpa, hpa_cpu_utilization, pod_cpu_millicores, raw
from support.waiting import KUBECTL_INTERVAL, wait_for

# A shell spinning on a builtin; the trap lets it end at once when its pod is deleted (as PID 1 it would otherwise
# ignore SIGTERM for the whole grace period).
BUSY = "trap 'exit 0' TERM; while :; do :; done"
# It asks for 50m and may use 100m (the CFS quota keeps it there): twice its request, far above an HPA target of 50%,
# at a tenth of a core per pod beside the other lanes' work.
RESOURCES = {"requests": {"cpu": "50m"}, "limits": {"cpu": "100m"}}
# Two scrapes (15 s apart) make metrics-server's first CPU rate of a new pod; the HPA controller reads every 15 s.
METRICS_TIMEOUT = 120.0


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
    [pod] = wait_for(lambda: running_pods(real_node, namespace, "spin"), timeout=60,
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


def test_an_hpa_on_cpu_scales_a_busy_deployment_up(
        real_node: LocalCluster, metrics_server: MetricsServer, namespace: str, busybox: str) -> None:
    apply(real_node, namespace, busy_deployment("spin", busybox))
    apply(real_node, namespace, cpu_hpa("spin", {"apiVersion": "apps/v1", "kind": "Deployment", "name": "spin"},
                                        max_replicas=2, utilization=50))

    def scaled() -> dict[str, Any] | None:
        hpa = get(real_node, namespace, "hpa", "spin")
        return hpa if hpa.get("status", {}).get("desiredReplicas") == 2 else None

    with explained(lambda: real_node.kubectl("describe", "hpa", "spin", "-n", namespace, check=False).stdout):
        hpa = wait_for(scaled, timeout=2 * METRICS_TIMEOUT, interval=KUBECTL_INTERVAL,
                       message="the HPA to want 2 replicas of the busy Deployment")
    utilization = hpa_cpu_utilization(hpa)
    assert utilization is not None and utilization > 50, hpa["status"]
    print(f"the HPA read {utilization}% CPU utilization and wants {hpa['status']['desiredReplicas']} replicas")

    assert get(real_node, namespace, "deployment", "spin")["spec"]["replicas"] == 2
    pods = wait_for(lambda: len(found := running_pods(real_node, namespace, "spin")) == 2 and found, timeout=60,
                    message="the second replica to run", interval=KUBECTL_INTERVAL)
    assert {pod["spec"]["nodeName"] for pod in pods} <= set(real_node.node_names)
    rescaled = real_node.kubectl("get", "events", "-n", namespace, "--field-selector",
                                 "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale",
                                 "-o", "jsonpath={.items[*].message}").stdout
    assert "New size: 2" in rescaled and "cpu resource utilization" in rescaled, rescaled
