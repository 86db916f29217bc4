"""How the local cluster's metrics-server is wired to the apiserver (hack/localcluster/addons/metrics_server.py),
and how the tests read CPU quantities: the parts that need no cluster. test/e2e/test_resource_metrics_on_real_nodes.py
runs the whole of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from localcluster.addons.metrics_server import API_SERVICE, release_manifests
from localcluster.supervisor import ClusterError
from support.resource_metrics import cpu_millicores

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics-server", "namespace": "kube-system"},
           "spec": {"ports": [{"name": "https", "port": 443, "targetPort": "https"}]}}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:m"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}


def module(tmp_path: Path, api_service_name: str = API_SERVICE) -> Path:
    """A stand-in for the module's manifests/base, shaped as v0.8.0's."""
    base = tmp_path / "manifests" / "base"
    base.mkdir(parents=True)
    api_service = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                   "metadata": {"name": api_service_name},
                   "spec": {"service": {"name": "metrics-server", "namespace": "kube-system"},
                            "group": "metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True,
                            "groupPriorityMinimum": 100, "versionPriority": 100}}
    (base / "rbac.yaml").write_text(yaml.safe_dump_all([ROLE]))
    (base / "service.yaml").write_text("---\n" + yaml.safe_dump(SERVICE))
    (base / "apiservice.yaml").write_text(yaml.safe_dump(api_service))
    return tmp_path


def test_the_apiservice_verifies_the_loopback_server_through_an_external_name_service(tmp_path: Path) -> None:
    role, service, api_service = release_manifests(module(tmp_path), 40123, "Q0E=")
    assert role == ROLE
    assert service["metadata"] == SERVICE["metadata"]
    assert service["spec"] == {"type": "ExternalName", "externalName": "127.0.0.1",
                               "ports": [{"name": "https", "port": 40123, "protocol": "TCP"}]}
    spec = api_service["spec"]
    assert "insecureSkipTLSVerify" not in spec and spec["caBundle"] == "Q0E="
    assert spec["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 40123}


def test_another_apiservice_in_the_release_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=r"registers v1beta2\.metrics\.k8s\.io"):
        release_manifests(module(tmp_path, "v1beta2.metrics.k8s.io"), 40123, "Q0E=")


@pytest.mark.parametrize(("quantity", "millicores"), [
    ("123456789n", 123.456789), ("2500u", 2.5), ("15m", 15.0), ("1", 1000.0), ("0", 0.0)])
def test_cpu_quantities_as_metrics_server_writes_them(quantity: str, millicores: float) -> None:
    assert cpu_millicores(quantity) == pytest.approx(millicores)
