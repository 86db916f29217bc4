"""The control plane's command lines: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, each
setting that is not a default with the reason it is there."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .feature_gates import controllers_flag, gate_flags, pinned_kubernetes, runtime_config_flags
from .node_layout import KWOK_NODE_IP, KWOK_POD_CIDR
from .pki import FRONT_PROXY_CA, FRONT_PROXY_CLIENT
from .supervisor import ClusterError

HACK_DIR = Path(__file__).resolve().parents[1]
KWOK_STAGES = Path(__file__).resolve().parent / "kwok-stages.yaml"
# Start order; stopped in reverse. The real nodes' components follow when they are on.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def build_controlplane() -> Path:
    """Builds (or reuses from the per-user cache) the pinned binaries and returns their directory."""
    result = subprocess.run(
        ["bash", str(HACK_DIR / "build-controlplane.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise ClusterError(f"building the control plane failed (exit {result.returncode}); see the output above")
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class ControlPlane:
    """What the command lines depend on: the cluster's ports, certificates, data directory and addresses."""

    ports: dict[str, int]
    pki: Path
    data: Path
    kubeconfig: Path
    service_cidr: str
    # What the binaries are (hack/versions.env): the gates and API versions turned on depend on it.
    kubernetes_version: str = field(default_factory=pinned_kubernetes)

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    def args(self, component: str) -> list[str]:
        p, pki, data = self.ports, self.pki, self.data
        # Beta APIs tfop uses and their gates, on the releases that have them (hack/localcluster/feature_gates.py).
        gates = gate_flags(self.kubernetes_version)
        if component == "etcd":
            peer = f"http://127.0.0.1:{p['etcd-peer']}"
            return [
                "--name=tfop", f"--data-dir={data / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=tfop={peer}",
                # A throwaway cluster: durability is not worth an fsync on every write.
                "--unsafe-no-fsync", "--quota-backend-bytes=8589934592", "--log-level=warn",
            ]
        if component == "kube-apiserver":
            return [
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={p['apiserver']}",
                f"--cert-dir={data / 'apiserver'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                # Virtual IPs, in etcd only, except the first (the `kubernetes` Service), which the real node's
                # bridge carries and the relay serves (hack/localcluster/node.py).
                f"--service-cluster-ip-range={self.service_cidr}",
                # kubectl logs/exec reach the real node's kubelet by its InternalIP, as a client it trusts.
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'kubelet-client.key'}",
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                "--authorization-mode=RBAC",
                # The aggregation layer (APIServices such as metrics-server's v1beta1.metrics.k8s.io): it proxies
                # a request as this front-proxy client, naming the user in these headers, and publishes the CA and
                # the name in kube-system/extension-apiserver-authentication, where the aggregated server reads
                # whom to believe. Aggregator routing stays off: it would send to an EndpointSlice's address, which
                # may not be loopback, whereas off it sends to a Service's cluster IP or, for an ExternalName
                # Service, to its external name, which may be 127.0.0.1 (hack/localcluster/addons/metrics_server.py).
                f"--requestheader-client-ca-file={pki / f'{FRONT_PROXY_CA}.crt'}",
                f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
                "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / f'{FRONT_PROXY_CLIENT}.crt'}",
                f"--proxy-client-key-file={pki / f'{FRONT_PROXY_CLIENT}.key'}",
                # It taints new nodes not-ready until the node lifecycle controller's next pass clears it; off, so
                # kwok's fake nodes take pods as soon as they are Ready.
                "--disable-admission-plugins=TaintNodesByCondition",
                # The `kubernetes` Service's endpoints would be a loopback address, which validation rejects.
                "--endpoint-reconciler-type=none",
                "--profiling=false", *gates, *runtime_config_flags(self.kubernetes_version),
            ]
        common = [f"--kubeconfig={self.kubeconfig}", "--bind-address=127.0.0.1", "--leader-elect=false"]
        if component == "kube-controller-manager":
            return [
                *common, f"--secure-port={p['controller-manager']}", f"--cert-dir={data / 'controller-manager'}",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                # The node lifecycle controller runs, as in a real cluster, with Kubernetes' default settings: a
                # node whose kubelet (or, for kwok's nodes, kwok: --node-lease-duration-seconds) renews neither
                # its Lease nor its status for --node-monitor-grace-period (50 s) goes Ready Unknown and gets the
                # unreachable taints; its pods are evicted after the apiserver's default 300 s toleration. Node
                # CIDRs, cloud nodes, load balancers and routes have nothing to do here.
                controllers_flag(self.kubernetes_version),
                "--profiling=false", *gates,
            ]
        if component == "kube-scheduler":
            return [
                *common, f"--secure-port={p['scheduler']}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                "--profiling=false", *gates,
            ]
        if component == "kwok":
            return [
                f"--kubeconfig={self.kubeconfig}", "--manage-all-nodes=false",
                # Renews each fake node's Lease, the heartbeat the node lifecycle controller reads.
                "--node-lease-duration-seconds=40",
                "--manage-nodes-with-label-selector=type=kwok",
                f"--server-address=127.0.0.1:{p['kwok']}",
                f"--config={KWOK_STAGES}",
                # Fake pod IPs, on no interface and never routed: a /17 so thousands of benchmark pods each get one.
                f"--cidr={KWOK_POD_CIDR}", f"--node-ip={KWOK_NODE_IP}", "--v=WARN",
            ]
        raise ValueError(f"unknown component {component}")
