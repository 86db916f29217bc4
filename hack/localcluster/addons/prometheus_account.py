"""Prometheus' identity in a local cluster, for a ServiceMonitor whose endpoint sends `bearerTokenFile`: in a
cluster that file is the token the kubelet mounts in Prometheus' pod; here it is a token of the ServiceAccount
monitoring/prometheus from the TokenRequest API (as `kubectl create token` gets one), written to a file that
Prometheus reads again before every scrape. The kubelet renews a pod's token; here every `start` (so every `up`)
gets a fresh one.

The ServiceAccount may do what the chart's metrics-reader ClusterRole allows, as rendered, through a ClusterRole
of its own holding those rules (kube-prometheus likewise gives its Prometheus a role of its own with that grant).
Binding the chart's role by its name would mean creating it here, and then `helm install` of the chart into the
same cluster fails: Helm does not adopt an object it did not make.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..supervisor import ClusterError

if TYPE_CHECKING:
    from ..cluster import LocalCluster

NAMESPACE, ACCOUNT = "monitoring", "prometheus"  # where kube-prometheus runs its Prometheus, and its usual name
USER = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
ROLE = "local-prometheus"  # the ClusterRole and its binding; not the chart's name (see above)
# A day: long enough for a Prometheus left running overnight; `up` again renews it.
TOKEN_LIFETIME = "24h"
READER_SUFFIX = "-metrics-reader"  # the chart names its reader role <fullname>-metrics-reader


def reader_rules(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules of the chart's metrics-reader ClusterRole; none where the chart renders none (metrics.secure
    false)."""
    roles = [doc for doc in documents if doc["kind"] == "ClusterRole"
             and doc["metadata"]["name"].endswith(READER_SUFFIX)]
    if len(roles) > 1:
        raise ClusterError(f"the chart renders {len(roles)} ClusterRoles named *{READER_SUFFIX}; this reads one")
    return list(roles[0]["rules"]) if roles else []


def grant(cluster: LocalCluster, rules: list[dict[str, Any]], timeout: float = 30.0) -> None:
    """Creates or updates the ServiceAccount and its grant, and returns once the apiserver's authorizer allows
    it `get /metrics`: tfop caches a refusal for a minute, so a scrape that came before would fail that long."""
    if not rules:
        raise ClusterError("the ServiceMonitor sends a bearer token, but the chart renders no metrics-reader "
                           "ClusterRole to grant it")
    labels = {"app.kubernetes.io/managed-by": "hack-local-cluster"}
    rbac = "rbac.authorization.k8s.io/v1"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": NAMESPACE}},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": ROLE, "labels": labels}, "rules": rules},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": ROLE, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}]},
    ]
    cluster.apply("-", manager="tfop-hack-prometheus",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    deadline = time.monotonic() + timeout
    while cluster.kubectl("auth", "can-i", "get", "/metrics", "--as", USER, check=False).stdout.strip() != "yes":
        if time.monotonic() > deadline:
            raise ClusterError(f"{USER} may still not get /metrics {timeout:.0f}s after its binding was made")
        time.sleep(0.2)


def write_token(cluster: LocalCluster, path: Path, lifetime: str = TOKEN_LIFETIME) -> float:
    """A new token of the ServiceAccount in `path` (readable by its owner only, replaced whole); returns its
    expiry (Unix seconds)."""
    token = cluster.kubectl("create", "token", ACCOUNT, "-n", NAMESPACE, f"--duration={lifetime}").stdout.strip()
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    partial.touch(mode=0o600)
    partial.write_text(token)
    partial.replace(path)
    return expiry(token)


def expiry(token: str) -> float:
    """A ServiceAccount token's `exp` claim: it is a JWT, whose middle part is base64url JSON."""
    payload = token.split(".")[1]
    return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
