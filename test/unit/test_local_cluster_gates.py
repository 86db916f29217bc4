"""What the local cluster turns on beyond Kubernetes' defaults, by version (hack/localcluster/feature_gates.py): the
Workload API from 1.37 on, on every component that reads its gate, and nothing on older releases, whose
components would refuse a gate they do not know."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.controlplane import ControlPlane
from localcluster.feature_gates import kubelet_gates, minor, pinned_kubernetes

ON_137 = "--feature-gates=GenericWorkload=true"
API_137 = "--runtime-config=scheduling.k8s.io/v1beta1=true"

# version -> (component -> the flags it gets beyond the ones every version has)
ROWS: dict[str, dict[str, list[str]]] = {
    "v1.36.3": {"kube-apiserver": [], "kube-scheduler": [], "kube-controller-manager": [], "etcd": [], "kwok": []},
    "v1.37.2": {"kube-apiserver": [ON_137, API_137], "kube-scheduler": [ON_137],
                "kube-controller-manager": [ON_137], "etcd": [], "kwok": []},
    "v1.38.0": {"kube-apiserver": [ON_137, API_137], "kube-scheduler": [ON_137],
                "kube-controller-manager": [ON_137], "etcd": [], "kwok": []},
}


def control_plane(version: str) -> ControlPlane:
    ports = dict.fromkeys(("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"), 1)
    return ControlPlane(ports, Path("/pki"), Path("/data"), Path("/kubeconfig"), "198.18.96.0/24", version)


@pytest.mark.parametrize(("version", "component"), [(v, c) for v, row in ROWS.items() for c in row])
def test_the_flags_each_component_gets(version: str, component: str) -> None:
    flags = control_plane(version).args(component)
    extra = [flag for flag in flags if flag.startswith(("--feature-gates", "--runtime-config"))]
    assert extra == ROWS[version][component]


@pytest.mark.parametrize(("version", "block"), [
    ("v1.36.3", ""),
    ("v1.37.2", "featureGates:\n  GenericWorkload: true\n"),
])
def test_kubelets_gates(version: str, block: str) -> None:
    assert kubelet_gates(version) == block


@pytest.mark.parametrize(("version", "expected"), [("v1.37.2", (1, 37)), ("1.36.3", (1, 36)), ("v1.100.0", (1, 100))])
def test_minor(version: str, expected: tuple[int, int]) -> None:
    assert minor(version) == expected


def test_the_default_is_the_pinned_release() -> None:
    text = (Path(__file__).resolve().parents[2] / "hack" / "versions.env").read_text()
    pinned = next(line.split("=", 1)[1] for line in text.splitlines() if line.startswith("KUBERNETES_VERSION="))
    made = ControlPlane({}, Path("/pki"), Path("/data"), Path("/kubeconfig"), "198.18.96.0/24")
    assert made.kubernetes_version == pinned == pinned_kubernetes()


@pytest.mark.parametrize(("version", "flag"), [
    ("v1.36.3", "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route"),
    ("v1.37.2", "--controllers=*,-nodeipam"),  # 1.37 refuses the names of the cloud controllers it dropped
])
def test_the_controllers_the_controller_manager_runs(version: str, flag: str) -> None:
    flags = control_plane(version).args("kube-controller-manager")
    assert [f for f in flags if f.startswith("--controllers=")] == [flag]
