"""The real nodes' configuration files: containerd's, the CNI network's and kubelet's for each node, and the cluster
DNS's Corefile. Each setting that is not a default says why it is there."""

from __future__ import annotations

from pathlib import Path

from .feature_gates import kubelet_gates, pinned_kubernetes
from .node_layout import CLUSTER_DOMAIN, NODE_LABEL, PODS_PER_NODE, ClusterNetwork, NodeLayout

# Debian packages the node needs at run time; hack/build-node.sh installs them.
HOST_TOOLS = {"runc": "/usr/sbin/runc", "bridge CNI plugin": "/usr/lib/cni/bridge",
              "host-local CNI plugin": "/usr/lib/cni/host-local", "iptables": "/usr/sbin/iptables",
              "socat": "/usr/bin/socat"}


def containerd_config(node: NodeLayout) -> str:
    state = node.containerd_state
    return f"""version = 3
root = "{node.root / 'containerd' / 'root'}"
state = "{state}"
# Machine-wide plugins that would clash with another containerd: NRI's socket, tracing, the /opt plugin dir.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing", "io.containerd.internal.v1.opt",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.blockfile"]

[grpc]
  address = "{node.containerd_socket}"

[ttrpc]
  address = "{node.containerd_socket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.cri.v1.runtime"]
  # This sandbox lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below containerd's own, and without this
  # every pod sandbox fails ("failed to update /proc/self/oom_score_adj: Permission denied").
  restrict_oom_score_adj = true
  # Pod network namespaces under our state dir instead of /var/run/netns, so teardown finds them.
  netns_mounts_under_state_dir = true
  enable_selinux = false
  disable_apparmor = true
  enable_cdi = false

  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{HOST_TOOLS['runc']}"
        # runc's own state, by default in /run/containerd/runc: keep it with ours.
        Root = "{state / 'runc'}"
        SystemdCgroup = false

  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "{node.root / 'cni' / 'net.d'}"
    max_conf_num = 1

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{node.pause_image}"

[plugins."io.containerd.grpc.v1.cri"]
  # kubelet proxies exec/attach/port-forward streams; they need only listen on loopback.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_config(node: NodeLayout) -> dict[str, object]:
    net = node.network
    first, last = net.pod_range
    return {
        "cniVersion": "1.0.0",
        "name": net.cni_network,
        "plugins": [{
            "type": "bridge",
            "bridge": net.cluster.bridge,
            # The bridge already has the host's addresses: not a gateway, so the plugin neither sets addresses nor
            # turns IP forwarding on, and no masquerading. Pods reach the host's addresses on the bridge and each
            # other (every node's pods share the segment) only.
            "isGateway": False,
            "ipMasq": False,
            "hairpinMode": False,
            "ipam": {
                "type": "host-local",
                # The cluster's subnet, this node's share of its addresses.
                "ranges": [[{"subnet": net.cluster.subnet, "rangeStart": first, "rangeEnd": last,
                             "gateway": net.cluster.gateway}]],
                # The one route besides the on-link subnet: the apiserver's Service IP, which is the host's own
                # address (on the bridge), so the packets end at the host and are never forwarded.
                "routes": [{"dst": f"{net.cluster.api_service_ip}/32", "gw": net.cluster.gateway}],
                "dataDir": str(node.containerd_state / "ipam"),
            },
        }],
    }


def kubelet_config(node: NodeLayout, kubernetes_version: str | None = None) -> str:
    """`kubernetes_version`: kubelet's (hack/versions.env's unless given), for the gates the cluster turns on."""
    net, pki = node.network, node.pki
    gates = kubelet_gates(kubernetes_version or pinned_kubernetes())
    return f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {net.ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {node.kubelet_healthz_port}
tlsCertFile: {pki / f'kubelet-serving-{node.name}.crt'}
tlsPrivateKeyFile: {pki / f'kubelet-serving-{node.name}.key'}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: {pki / 'ca.crt'}}}
# Only holders of the cluster CA's client certificates get past authentication; among those, the apiserver.
authorization: {{mode: AlwaysAllow}}
# This machine has cgroup v1 (hybrid): kubelet refuses v1 unless told not to; no systemd, so cgroupfs.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: {net.cgroup_root}
containerRuntimeEndpoint: unix://{node.containerd_socket}
clusterDNS: [{net.cluster.gateway}]
clusterDomain: {CLUSTER_DOMAIN}
podLogsDir: {node.root / 'pod-logs'}
registerWithTaints:
- {{key: {NODE_LABEL}, value: "true", effect: NoSchedule}}
# Images are imported, never pulled: nothing could bring one back, so image GC must never run, and disk-pressure
# eviction (which also deletes images) only when the disk is really full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {{memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}}
failSwapOn: false
# A local cluster is for trying things: restart crashed containers (OnFailure/Always) after at most 2 s instead of
# backing off to 5 minutes (the KubeletCrashLoopBackOffMax feature, on by default since 1.35).
crashLoopBackOff: {{maxContainerRestartPeriod: 2s}}
serializeImagePulls: false
# As many pods as the node has addresses (its IPAM range).
maxPods: {PODS_PER_NODE}
{gates}"""


def corefile(net: ClusterNetwork, kubeconfig: Path) -> str:
    """One CoreDNS per cluster, on the host's bridge address, so it outlives any one node's failure."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {net.gateway}
    errors
    log . {{
        class denial error
    }}
    health {net.gateway}:8080
    ready {net.gateway}:8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} tfop-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
    loadbalance
}}
"""
