"""The feature gates and API versions the local cluster turns on beyond Kubernetes' defaults, by the version it runs.

From 1.37 on: the Workload API (scheduling.k8s.io/v1beta1 Workloads and PodGroups), which is beta and so off by
default, for tfop's `gangScheduler: kubernetes`. GenericWorkload serves the API (kube-apiserver), adds the
GangScheduling plugin to the default profile (kube-scheduler) and runs the PodGroup protection controller
(kube-controller-manager); kubelet has the gate too and gets the same value, so no component disagrees. Older
releases get nothing: their alpha API has another shape, and a gate a release does not know stops its components.
"""

from __future__ import annotations

from pathlib import Path

VERSIONS = Path(__file__).resolve().parents[1] / "versions.env"
WORKLOAD_API_SINCE = (1, 37)
CLOUD_CONTROLLERS_GONE_SINCE = (1, 37)  # kube-controller-manager no longer knows their names
WORKLOAD_API = "scheduling.k8s.io/v1beta1"
GATES = ("GenericWorkload",)


def pinned_kubernetes() -> str:
    """KUBERNETES_VERSION in hack/versions.env, which hack/build-controlplane.sh and build-node.sh build."""
    pinned = dict(line.split("=", 1) for line in VERSIONS.read_text().splitlines()
                  if "=" in line and not line.startswith("#"))
    return pinned["KUBERNETES_VERSION"]


def minor(version: str) -> tuple[int, int]:
    """(1, 37) for v1.37.2."""
    major, minor_part = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor_part)


def feature_gates(version: str) -> dict[str, bool]:
    return dict.fromkeys(GATES, True) if minor(version) >= WORKLOAD_API_SINCE else {}


def gate_flags(version: str) -> list[str]:
    """The --feature-gates flag of kube-apiserver, kube-scheduler and kube-controller-manager, if any."""
    gates = feature_gates(version)
    return [f"--feature-gates={','.join(f'{name}={str(on).lower()}' for name, on in gates.items())}"] if gates else []


def runtime_config_flags(version: str) -> list[str]:
    """kube-apiserver's --runtime-config: the beta API versions it serves beyond the default ones."""
    return [f"--runtime-config={WORKLOAD_API}=true"] if minor(version) >= WORKLOAD_API_SINCE else []


def kubelet_gates(version: str) -> str:
    """The featureGates block of a KubeletConfiguration ("" when there is none)."""
    gates = feature_gates(version)
    if not gates:
        return ""
    return "featureGates:\n" + "".join(f"  {name}: {str(on).lower()}\n" for name, on in gates.items())


def controllers_flag(version: str) -> str:
    """kube-controller-manager's --controllers: all but those with nothing to do here (node CIDRs; before 1.37 also
    cloud nodes, load balancers and routes, which 1.37 no longer has and whose names it refuses)."""
    if minor(version) >= CLOUD_CONTROLLERS_GONE_SINCE:
        return "--controllers=*,-nodeipam"
    return "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route"
