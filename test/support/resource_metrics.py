"""The resource metrics API (metrics.k8s.io, served by the `metrics_server` fixture's metrics-server) as tests read
it, and the HorizontalPodAutoscaler that scales on it: what a test of CPU-driven scaling needs, whatever it scales
(a TFJob through its scale subresource, or anything else that has one)."""

from __future__ import annotations

import json
from typing import Any

from localcluster import LocalCluster

# Quantity suffixes metrics-server writes CPU in (nanocores mostly), as fractions of a core.
_CPU_SUFFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3}


def cpu_millicores(quantity: str) -> float:
    """A CPU quantity as metrics.k8s.io writes it ("123456789n", "15m", "1") in millicores."""
    scale = _CPU_SUFFIXES.get(quantity[-1:])
    return float(quantity[:-1]) * scale * 1000 if scale else float(quantity) * 1000


def raw(cluster: LocalCluster, path: str) -> dict[str, Any] | None:
    """GET `path` through the apiserver (the aggregator proxies metrics.k8s.io); None while it answers an error,
    e.g. NotFound until metrics-server has two samples of a new pod."""
    result = cluster.kubectl("get", "--raw", path, check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def pod_cpu_millicores(cluster: LocalCluster, namespace: str, pod: str) -> float | None:
    """The pod's CPU usage (its containers' sum) over metrics-server's last window, or None while it has none."""
    metrics = raw(cluster, f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{pod}")
    if not metrics or not metrics.get("containers"):
        return None
    return sum(cpu_millicores(c["usage"]["cpu"]) for c in metrics["containers"])


def cpu_utilization_metric(utilization: int) -> dict[str, Any]:
    """An autoscaling/v2 MetricSpec (as in an HPA's spec.metrics, or a TFJob's spec.elasticPolicy.metrics) holding
    the scaled pods' average CPU at `utilization` percent of their requests."""
    return {"type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}}}


def hpa_cpu_utilization(hpa: dict[str, Any]) -> int | None:
    """The average CPU utilization (percent of requests) the HPA controller last read, if it read one."""
    for metric in hpa.get("status", {}).get("currentMetrics") or []:
        if metric.get("type") == "Resource" and metric["resource"]["name"] == "cpu":
            value = metric["resource"]["current"].get("averageUtilization")
            return int(value) if value is not None else None
    return None
