#!/usr/bin/env python3
"""A local Kubernetes control plane on loopback: etcd, kube-apiserver (TLS, admin client certificate),
kube-controller-manager, kube-scheduler and kwok with fake nodes; optionally a real node (hack/real_node.py:
containerd, kubelet, CoreDNS) that runs pods for real; and a watchdog that restarts whatever dies.

Used by `make run` (a developer cluster) and by the test fixtures (one cluster per test session). Standard
library only, so it runs before anything is installed. Binaries come from hack/build-controlplane.sh and
hack/build-node.sh.

    python3 hack/local_cluster.py up [--real-node|--no-real-node] [--dir DIR]
    python3 hack/local_cluster.py down|destroy|status [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from addon import run_cli
from cluster_pki import PKIError, make_pki, openssl
from node_host import HostError, bridge_owner
from ports import free_port
from real_node import (
    KWOK_NODE_IP,
    KWOK_POD_CIDR,
    NODE_BINARY_NAMES,
    NODE_COMPONENTS,
    NODE_LABEL,
    NodeError,
    NodeNetwork,
    RealNode,
    build_node,
    node_images,
    pause_image,
    slot_for,
)
from supervisor import WATCHDOG, ClusterError, Supervisor, log

__all__ = ["ClusterError", "LocalCluster", "openssl"]

HACK_DIR = Path(__file__).resolve().parent
REPO_DIR = HACK_DIR.parent
DEFAULT_DIR = REPO_DIR / ".local" / "cluster"

# Start order; stopped in reverse. The real node's components (NODE_COMPONENTS) follow when it is on.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
FAKE_NODES = 4


def build_controlplane() -> Path:
    """Builds (or reuses from the per-user cache) the pinned binaries and returns their directory."""
    result = subprocess.run(
        ["bash", str(HACK_DIR / "build-controlplane.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise ClusterError(f"building the control plane failed (exit {result.returncode}); see the output above")
    return Path(result.stdout.strip().splitlines()[-1])



@dataclass
class LocalCluster(Supervisor):
    """One cluster whose state (ports, pids, certificates, data, logs) lives in `directory`.

    `real_node`: None keeps what the cluster had (off for a new one); True or False turns the node on or off.
    """

    directory: Path = DEFAULT_DIR
    bin_dir: Path | None = None
    ports: dict[str, int] = field(default_factory=dict)
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    real_node: bool | None = None
    slot: int | None = None
    node_binaries: dict[str, Path] = field(default_factory=dict)
    pause_image: str = ""

    def __post_init__(self) -> None:
        self.directory = Path(self.directory).resolve()
        state = self._state_file()
        if state.exists():
            saved = json.loads(state.read_text())
            self.ports = saved.get("ports", {})
            if self.bin_dir is None and saved.get("bin_dir"):
                self.bin_dir = Path(saved["bin_dir"])
            self.slot = saved.get("slot")
            if self.real_node is None:
                self.real_node = bool(saved.get("real_node"))
            self.node_binaries = {name: Path(path) for name, path in saved.get("node_binaries", {}).items()}
            self.pause_image = saved.get("pause_image", "")
        if self.real_node is None:
            self.real_node = False

    # --- paths -----------------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.directory / "pki"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    @property
    def network(self) -> NodeNetwork:
        """Addresses and names of this cluster's slot (hack/real_node.py explains the layout)."""
        if self.slot is None:
            raise ClusterError(f"{self.directory} has no address slot yet; run `up` first")
        return NodeNetwork(self.slot)

    @property
    def node(self) -> RealNode:
        return RealNode(self.directory, self.network, self.ports["apiserver"], self.ports["kubelet-healthz"],
                        self.node_binaries, self.pause_image)

    @property
    def components(self) -> tuple[str, ...]:
        return COMPONENTS + (NODE_COMPONENTS if self.real_node else ())

    def _state_file(self) -> Path:
        return self.directory / "state.json"

    def _save_state(self) -> None:
        self._state_file().write_text(json.dumps({
            "ports": self.ports, "bin_dir": str(self.bin_dir), "slot": self.slot, "real_node": self.real_node,
            "node_binaries": {name: str(path) for name, path in self.node_binaries.items()},
            "pause_image": self.pause_image,
        }, indent=2))

    def _binary(self, name: str) -> str:
        assert self.bin_dir is not None, "bin_dir is known once the control plane is built"
        return str(self.bin_dir / name)

    # --- lifecycle -------------------------------------------------------------------------------------------
    def up(self) -> None:
        """Starts whatever is not running (idempotent) and waits until the cluster is usable."""
        started = time.monotonic()
        if self.bin_dir is None or not (self.bin_dir / "kube-apiserver").exists():
            self.bin_dir = build_controlplane()
        if self.slot is None:
            if (self.directory / "data" / "etcd").exists():
                raise ClusterError(f"the cluster in {self.directory} was made before its addresses moved to "
                                   f"198.18.0.0/15; destroy it once (make cluster-destroy) and start it again")
            self.slot = slot_for(self.directory, lambda slot: bridge_owner(NodeNetwork(slot).bridge) is not None)
        for sub in ("run", "logs", "data"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        net = self.network
        try:
            make_pki(self.pki, net.api_service_ip, net.node_name, net.node_ip)
        except PKIError as error:
            raise ClusterError(str(error)) from error
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok", "kubelet-healthz"):
            if name not in self.ports:
                self.ports[name] = free_port()
        if self.real_node:
            try:
                self.node_binaries = build_node()
                images = node_images()
            except NodeError as error:
                raise ClusterError(str(error)) from error
            self.pause_image = pause_image(images)
        node_was_on = self._state_file().exists() and json.loads(self._state_file().read_text()).get("real_node")
        if node_was_on and not self.real_node:
            self.node_down()  # turned off: its processes and host changes go, and so does its Node object
        self._save_state()
        self._write_kubeconfig()
        for component in COMPONENTS:
            self.start(component)
        self._ensure_nodes()
        if node_was_on and not self.real_node:
            self._delete_node_object()
        if self.real_node:
            self._node_up(images)
        self.start(WATCHDOG)
        log(f"cluster up in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")

    def _node_up(self, images: list[tuple[str, Path]]) -> None:
        started = time.monotonic()
        node = self.node
        try:
            node.prepare()
            self._ensure_node_rbac()
            self.start("containerd")
            imported = node.import_images(images)
            if imported:
                log(f"imported {', '.join(imported)} into the node's containerd")
            for component in NODE_COMPONENTS[1:]:
                self.start(component)
        except (NodeError, HostError) as error:
            raise ClusterError(f"the real node: {error}") from error
        self._wait_node_ready()
        log(f"real node {self.network.node_name} ({self.network.node_ip}) Ready in {time.monotonic() - started:.1f}s; "
            f"pods reach it with nodeSelector {NODE_LABEL}=true and a toleration of the taint {NODE_LABEL}")

    def down(self) -> None:
        self.stop(WATCHDOG)
        self.node_down()
        for component in reversed(COMPONENTS):
            self.stop(component)

    def node_down(self) -> None:
        """Stops the node's processes, kills its pods' containers and undoes every host change it made."""
        if self.slot is None or not self.node_binaries:
            return  # the node never started here
        node = self.node
        self.stop("kubelet")
        try:
            if self.node_binaries:
                node.kill_containers()
            for component in ("apiserver-relay", "coredns", "containerd"):
                self.stop(component)
            node.teardown_host()
        except (NodeError, HostError) as error:
            raise ClusterError(f"tearing the real node down: {error}") from error

    def destroy(self) -> None:
        """Stops everything and removes the state directory (etcd data included)."""
        self.down()
        shutil.rmtree(self.directory, ignore_errors=True)

    # --- what the supervisor needs to know ---------------------------------------------------------------------
    def _binary_name(self, component: str) -> str:
        return NODE_BINARY_NAMES.get(component, component)

    def _env(self, component: str) -> dict[str, str] | None:
        return self.node.env() if component in NODE_COMPONENTS else None

    def _refresh(self) -> bool:
        if not self._state_file().exists():
            return False
        # `up --real-node`/`--no-real-node` may have changed the set since the watchdog started.
        self.real_node = bool(json.loads(self._state_file().read_text()).get("real_node"))
        return True

    def status(self) -> dict[str, str]:
        result = {}
        for component in (*self.components, WATCHDOG):
            pid = self.pid(component)
            result[component] = f"running (pid {pid})" if pid else "stopped"
        if self.real_node and self.slot is not None and self.pid("kube-apiserver"):
            result[f"node {self.network.node_name}"] = self._node_ready_text()
        return result

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self._binary("kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=input, capture_output=True, text=True, check=False, timeout=120,
        )
        if check and result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    # --- component command lines -----------------------------------------------------------------------------
    def _command(self, component: str) -> list[str]:
        if component in NODE_COMPONENTS:
            return self.node.command(component)
        if component == WATCHDOG:
            return [sys.executable, str(Path(__file__).resolve()), "watch", "--dir", str(self.directory)]
        return [self._binary(component), *self._args(component), *self.extra_args.get(component, [])]

    def _args(self, component: str) -> list[str]:
        p, pki, data = self.ports, self.pki, self.directory / "data"
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
                # bridge carries and the relay serves (hack/real_node.py).
                f"--service-cluster-ip-range={self.network.service_cidr}",
                # kubectl logs/exec reach the real node's kubelet by its InternalIP, as a client it trusts.
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'kubelet-client.key'}",
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                "--authorization-mode=RBAC",
                # It taints new nodes not-ready until the node lifecycle controller's next pass clears it; off, so
                # kwok's fake nodes take pods as soon as they are Ready.
                "--disable-admission-plugins=TaintNodesByCondition",
                # The `kubernetes` Service's endpoints would be a loopback address, which validation rejects.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
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
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
                "--profiling=false",
            ]
        if component == "kube-scheduler":
            return [
                *common, f"--secure-port={p['scheduler']}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                "--profiling=false",
            ]
        if component == "kwok":
            return [
                f"--kubeconfig={self.kubeconfig}", "--manage-all-nodes=false",
                # Renews each fake node's Lease, the heartbeat the node lifecycle controller reads.
                "--node-lease-duration-seconds=40",
                "--manage-nodes-with-label-selector=type=kwok",
                f"--server-address=127.0.0.1:{p['kwok']}",
                f"--config={HACK_DIR / 'kwok-stages.yaml'}",
                # Fake pod IPs, on no interface and never routed: a /17 so thousands of benchmark pods each get one.
                f"--cidr={KWOK_POD_CIDR}", f"--node-ip={KWOK_NODE_IP}", "--v=WARN",
            ]
        raise ValueError(f"unknown component {component}")

    # --- health ----------------------------------------------------------------------------------------------
    def _probe(self, component: str) -> bool:
        if component in NODE_COMPONENTS:
            return self.node.probe(component)
        if component == WATCHDOG:
            return True
        if component == "etcd":
            return _get(f"{self.etcd_url}/health", None).get("health") == "true"
        if component == "kube-apiserver":
            return _get_text(f"{self.server}/readyz", self._admin_tls()) == "ok"
        if component in ("kube-controller-manager", "kube-scheduler"):
            port = self.ports["controller-manager" if component == "kube-controller-manager" else "scheduler"]
            insecure = ssl.create_default_context()
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            return _get_text(f"https://127.0.0.1:{port}/healthz", insecure) == "ok"
        if component == "kwok":
            return _get_text(f"http://127.0.0.1:{self.ports['kwok']}/healthz", None) == "ok"
        raise ValueError(component)

    def _admin_tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def api(self, method: str, path: str, body: object = None) -> dict[str, object]:
        """A minimal admin REST call, for set-up before any Python client is installed."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.server}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self._admin_tls(), timeout=30) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def version(self) -> str:
        return str(self.api("GET", "/version")["gitVersion"])

    # --- cluster contents ------------------------------------------------------------------------------------
    def _write_kubeconfig(self) -> None:
        pki = self.pki
        self.kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: tfop-local
  cluster:
    server: {self.server}
    certificate-authority: {pki / 'ca.crt'}
users:
- name: tfop-admin
  user:
    client-certificate: {pki / 'admin.crt'}
    client-key: {pki / 'admin.key'}
contexts:
- name: tfop-local
  context: {{cluster: tfop-local, user: tfop-admin}}
current-context: tfop-local
""")

    def _ensure_nodes(self, timeout: float = 60.0) -> None:
        """Fake nodes that kwok keeps Ready; big enough for the benchmark's thousands of pods."""
        for i in range(FAKE_NODES):
            node = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": f"kwok-node-{i}",
                    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {"type": "kwok", "kubernetes.io/hostname": f"kwok-node-{i}",
                               "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                },
                "status": {
                    "allocatable": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                    "capacity": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                },
            }
            try:
                self.api("POST", "/api/v1/nodes", node)
            except urllib.error.HTTPError as error:
                if error.code != 409:
                    raise ClusterError(f"creating node {i} failed: {error.read().decode()}") from error
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = self.api("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
            ready = [n for n in nodes if any(  # type: ignore[union-attr]
                c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))]
            if len(ready) >= FAKE_NODES:
                return
            time.sleep(0.2)
        raise ClusterError(f"kwok did not make the fake nodes Ready within {timeout:.0f}s; "
                           f"see {self.log_file('kwok')}")


    def _ensure_node_rbac(self) -> None:
        """The apiserver authorizes by RBAC alone (no Node authorizer), so the node's user needs the system:node
        ClusterRole, which Kubernetes ships unbound."""
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"tfop-real-node-{self.network.node_name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": f"system:node:{self.network.node_name}"}],
        }
        try:
            self.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise ClusterError(f"binding system:node to the node failed: {error.read().decode()}") from error

    def _node_ready_text(self) -> str:
        try:
            node = self.api("GET", f"/api/v1/nodes/{self.network.node_name}")
        except urllib.error.HTTPError as error:
            return "not registered" if error.code == 404 else f"unknown ({error.code})"
        conditions = node.get("status", {}).get("conditions", [])  # type: ignore[union-attr]
        ready = [c for c in conditions if c["type"] == "Ready"]
        return "Ready" if ready and ready[0]["status"] == "True" else \
            f"NotReady: {ready[0].get('message', '') if ready else 'no Ready condition yet'}"

    def _wait_node_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        text = self._node_ready_text()
        while text != "Ready":
            if time.monotonic() > deadline:
                raise ClusterError(f"the real node {self.network.node_name} is not Ready after {timeout:.0f}s "
                                   f"({text}); see {self.log_file('kubelet')} and {self.log_file('containerd')}")
            time.sleep(0.1)
            text = self._node_ready_text()

    def _delete_node_object(self) -> None:
        if self.slot is None or self.pid("kube-apiserver") is None:
            return
        try:
            self.api("DELETE", f"/api/v1/nodes/{self.network.node_name}")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise ClusterError(f"deleting the node object failed: {error.read().decode()}") from error


def _get(url: str, context: ssl.SSLContext | None) -> dict[str, object]:
    return json.loads(_get_text(url, context))  # type: ignore[no-any-return]


def _get_text(url: str, context: ssl.SSLContext | None) -> str:
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        return str(response.read().decode().strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "destroy", "build", "watch"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"state directory (default {DEFAULT_DIR})")
    node = parser.add_mutually_exclusive_group()
    node.add_argument("--real-node", dest="real_node", action="store_true", default=None,
                      help="up: also run the real node (kubelet, containerd, CoreDNS); kept for later `up`s")
    node.add_argument("--no-real-node", dest="real_node", action="store_false",
                      help="up: run without the real node (and stop it if it ran)")
    args = parser.parse_args(argv)
    if args.command == "build":
        print(build_controlplane())
        return 0
    cluster = LocalCluster(args.dir, real_node=args.real_node)

    def command() -> None:
        if args.command == "up":
            cluster.up()
            print(f"Kubernetes {cluster.version()} is up at {cluster.server}")
            if cluster.real_node:
                net = cluster.network
                print(f"real node {net.node_name} at {net.node_ip}: pods run there with nodeSelector "
                      f"{NODE_LABEL}=true and a toleration of the taint {NODE_LABEL}=true:NoSchedule")
            print(f"export KUBECONFIG={cluster.kubeconfig}")
            print(f"kubectl: {cluster.bin_dir}/kubectl")
        elif args.command == "down":
            cluster.down()
            log("stopped")
        elif args.command == "destroy":
            cluster.destroy()
            log(f"stopped and removed {args.dir}")
        elif args.command == "watch":
            cluster.watch()
        else:
            for component, state in cluster.status().items():
                print(f"{component:26} {state}")
            print(f"kubeconfig: {cluster.kubeconfig}")

    return run_cli(command, log)


if __name__ == "__main__":
    sys.exit(main())
