"""A local Kubernetes cluster on loopback: etcd, kube-apiserver (TLS, admin client certificate),
kube-controller-manager, kube-scheduler and kwok with fake nodes; optionally real nodes (node.py: containerd and
kubelet each, on one pod network with CoreDNS: pod_network.py) that run pods for real; and a watchdog that
restarts whatever dies, except what was stopped on purpose (a node failed by `node stop`, say).

Used by `make run` (a developer cluster) and by the test fixtures (one cluster per test session). Standard
library only, so it runs before anything is installed. Binaries come from hack/build-controlplane.sh and
hack/build-node.sh; hack/local_cluster.py is the command line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ports import free_port

from . import node as real_node
from . import pod_network
from .addons.firewall_state import stop_firewall
from .api_objects import AdminAPI, get_text, unverified_tls
from .controlplane import COMPONENTS, ControlPlane, build_controlplane
from .host import HostError
from .listeners import Address
from .node_layout import NODE_LABEL, ClusterNetwork, NodeError, NodeLayout
from .pki import PKIError, kubeconfig, make_pki
from .slots import claim_slot, owns_slot, release_slot
from .supervisor import WATCHDOG, ClusterError, Supervisor, log

HACK_DIR = Path(__file__).resolve().parents[1]
DEFAULT_DIR = HACK_DIR.parent / ".local" / "cluster"


@dataclass
class LocalCluster(Supervisor):
    """One cluster whose state (ports, pids, certificates, data, logs) lives in `directory`.

    `real_nodes`: None keeps what the cluster had (none for a new one); a number starts or stops nodes to match.
    """

    directory: Path = DEFAULT_DIR
    bin_dir: Path | None = None
    ports: dict[str, int] = field(default_factory=dict)
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    real_nodes: int | None = None
    slot: int | None = None
    node_binaries: dict[str, Path] = field(default_factory=dict)
    pause_image: str = ""

    def __post_init__(self) -> None:
        self.directory = Path(self.directory).resolve()
        saved = self._saved()
        self.ports = saved.get("ports", {})
        if self.bin_dir is None and saved.get("bin_dir"):
            self.bin_dir = Path(saved["bin_dir"])
        self.slot = saved.get("slot")
        if self.real_nodes is None:
            self.real_nodes = int(saved.get("real_nodes", 0))
        self.node_binaries = {name: Path(path) for name, path in saved.get("node_binaries", {}).items()}
        self.pause_image = saved.get("pause_image", "")

    # --- paths and parts ---------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.directory / "pki"

    @property
    def shared_dir(self) -> Path:
        """One host directory every real node's pods may mount (hostPath), as they would an NFS share."""
        return self.directory / "shared"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def etcd_url(self) -> str:
        return self.control_plane.etcd_url

    @property
    def network(self) -> ClusterNetwork:
        if self.slot is None:
            raise ClusterError(f"{self.directory} has no address slot yet; run `up` first")
        return ClusterNetwork(self.slot)

    @property
    def admin(self) -> AdminAPI:
        return AdminAPI(self.server, self.pki)

    @property
    def control_plane(self) -> ControlPlane:
        return ControlPlane(self.ports, self.pki, self.directory / "data", self.kubeconfig, self.network.service_cidr)

    @property
    def pods_network(self) -> pod_network.PodNetwork:
        return pod_network.PodNetwork(self.directory, self.network, self.ports["apiserver"],
                                      self.node_binaries.get("coredns", Path("coredns")))

    def node(self, name: str = "real-0") -> real_node.RealNode:
        """A real node by name (real-0, real-1, ...)."""
        index = int(name.rsplit("-", 1)[1]) if name.startswith("real-") and name[5:].isdigit() else -1
        if not 0 <= index < (self.real_nodes or 0):
            raise ClusterError(f"this cluster has no real node {name!r} (it has {self.node_names or 'none'})")
        port = self.ports.get(f"kubelet-healthz-{name}", 0)  # allocated by up()
        return real_node.RealNode(NodeLayout(self.directory, self.network.node(index), self.ports["apiserver"], port,
                                             self.pause_image), self.node_binaries)

    @property
    def node_names(self) -> list[str]:
        return [f"real-{i}" for i in range(self.real_nodes or 0)]

    @property
    def nodes(self) -> list[real_node.RealNode]:
        return [self.node(name) for name in self.node_names]

    @property
    def components(self) -> tuple[str, ...]:
        on_nodes = pod_network.COMPONENTS + tuple(c for n in self.nodes for c in n.components)
        return COMPONENTS + (on_nodes if self.real_nodes else ())

    def _state_file(self) -> Path:
        return self.directory / "state.json"

    def _saved(self) -> dict[str, Any]:
        state = self._state_file()
        return json.loads(state.read_text()) if state.exists() else {}

    def _save_state(self) -> None:
        self._state_file().write_text(json.dumps({
            "ports": self.ports, "bin_dir": str(self.bin_dir), "slot": self.slot, "real_nodes": self.real_nodes,
            "node_binaries": {n: str(p) for n, p in self.node_binaries.items()}, "pause_image": self.pause_image,
        }, indent=2))

    def _binary(self, name: str) -> str:
        assert self.bin_dir is not None, "bin_dir is known once the control plane is built"
        return str(self.bin_dir / name)

    # --- lifecycle -------------------------------------------------------------------------------------------
    def up(self) -> None:
        """Starts whatever is not running (idempotent), with as many real nodes as asked, and waits until the
        cluster is usable. Nodes failed on purpose (`node stop`, `node partition`) stay failed."""
        started = time.monotonic()
        if self.bin_dir is None or not (self.bin_dir / "kube-apiserver").exists():
            self.bin_dir = build_controlplane()
        wanted = self.real_nodes or 0
        self.slot = claim_slot(self.directory, self.slot, wanted > 0)
        for sub in ("run", "logs", "data", "shared"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        had = int(self._saved().get("real_nodes", 0))
        net = self.network
        try:
            make_pki(self.pki, net.api_service_ip, {f"real-{i}": net.node(i).ip for i in range(wanted)})
        except (PKIError, NodeError) as error:
            raise ClusterError(str(error)) from error
        kubelets = [f"kubelet-healthz-real-{i}" for i in range(wanted)]
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok", *kubelets):
            if name not in self.ports:
                self.ports[name] = free_port()
        images: list[tuple[str, Path]] = []
        if wanted:
            try:
                self.node_binaries = real_node.build_node()
                images = real_node.node_images()
            except NodeError as error:
                raise ClusterError(str(error)) from error
            self.pause_image = real_node.pause_image(images)
        for index in reversed(range(wanted, had)):  # fewer nodes than before: the extra ones go
            self._remove_node(f"real-{index}", had)
        self._save_state()
        self.kubeconfig.write_text(kubeconfig(self.server, self.pki, "admin"))
        for component in COMPONENTS:
            self.start(component)
        self.admin.ensure_fake_nodes(self.log_file("kwok"))
        if wanted:
            self._nodes_up(images)
        elif had:
            self._pod_network_down()
        self.start(WATCHDOG)
        log(f"cluster up in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")

    def _nodes_up(self, images: list[tuple[str, Path]]) -> None:
        network = self.pods_network
        try:
            network.prepare()
            for component in pod_network.COMPONENTS:
                self.start(component)
            for node in self.nodes:
                if node.failed():
                    continue  # failed on purpose: `node start` brings it back
                self._node_up(node, images)
        except (NodeError, HostError) as error:
            raise ClusterError(f"the real nodes: {error}") from error

    def _node_up(self, node: real_node.RealNode, images: list[tuple[str, Path]]) -> None:
        started = time.monotonic()
        node.prepare()
        self.admin.bind_system_node(node.name)
        containerd, kubelet = node.components
        self.start(containerd)
        imported = node.import_images(images)
        if imported:
            log(f"imported {', '.join(imported)} into {node.name}'s containerd")
        self.start(kubelet)
        self.admin.wait_node_ready(node.name, f"{self.log_file(kubelet)} and {self.log_file(containerd)}")
        log(f"real node {node.name} ({node.layout.network.ip}) Ready in {time.monotonic() - started:.1f}s; pods "
            f"reach it with nodeSelector {NODE_LABEL}=true and a toleration of the taint {NODE_LABEL}")

    def down(self) -> None:
        self.stop(WATCHDOG)
        # The NetworkPolicy firewall's rules name the nodes' pods and live in the host's iptables: they go first.
        stop_firewall(self.directory)
        for node in self.nodes:
            self._node_down(node)
        if self.real_nodes:
            self._pod_network_down()
        for component in reversed(COMPONENTS):
            self.stop(component)

    def _node_down(self, node: real_node.RealNode) -> None:
        """Stops the node's processes, kills its pods' containers and undoes every host change it made."""
        if not self.node_binaries:
            return  # no node ever started here
        containerd, kubelet = node.components
        try:
            self._thaw_if_partitioned(node)
            self.stop(kubelet)
            owned = owns_slot(self.directory, self.network)  # not if another cluster's bridge holds the slot
            if owned:
                node.kill_containers()
            self.stop(containerd)
            if owned:
                node.teardown_host()
            node.mark_powered_off(False)  # down and up again is a fresh start
        except (NodeError, HostError) as error:
            raise ClusterError(f"tearing the real node {node.name} down: {error}") from error

    def _remove_node(self, name: str, had: int) -> None:
        self.real_nodes, wanted = had, self.real_nodes
        try:
            self._node_down(self.node(name))
        finally:
            self.real_nodes = wanted
        if self.pid("kube-apiserver"):
            self.admin.delete_node(name)

    def _pod_network_down(self) -> None:
        for component in reversed(pod_network.COMPONENTS):
            self.stop(component)
        try:
            self.pods_network.teardown()
        except HostError as error:
            raise ClusterError(f"tearing the pod network down: {error}") from error

    def destroy(self) -> None:
        """Stops everything and removes the state directory (etcd data included)."""
        self.down()
        release_slot(self.directory, self.slot)
        shutil.rmtree(self.directory, ignore_errors=True)

    # --- failing a node, the two ways real clusters see it ----------------------------------------------------
    def node_stop(self, name: str) -> None:
        """Power loss: kubelet, containerd and every process of the node's pods die at once (SIGKILL); the pods'
        addresses vanish. The watchdog leaves the node dead until node_start."""
        node = self.node(name)
        self._thaw_if_partitioned(node)
        for component in reversed(node.components):
            self.kill(component)
        try:
            node.kill_everything()
            node.teardown_host()
            node.mark_powered_off(True)
        except (NodeError, HostError) as error:
            raise ClusterError(f"stopping {name}: {error}") from error
        log(f"{name} stopped (power loss)")

    def node_partition(self, name: str) -> None:
        """The node is cut off: kubelet and containerd freeze, its pods lose the pod network, its processes live
        on. node_start heals it."""
        node = self.node(name)
        pids = [pid for pid in (self.pid(c) for c in node.components) if pid is not None]
        if len(pids) != len(node.components):
            raise ClusterError(f"{name} is not running; only a running node can be partitioned")
        for component in node.components:
            self._held_file(component).touch()
        node.freeze(pids)
        log(f"{name} partitioned")

    def node_start(self, name: str) -> None:
        """Heals a partition, or powers a stopped node on (like a rebooted machine: empty runtime state)."""
        node = self.node(name)
        if node.partitioned():
            self._thaw_if_partitioned(node)
            log(f"{name} healed")
            return
        try:
            self._node_up(node, real_node.node_images())
            node.mark_powered_off(False)
        except (NodeError, HostError) as error:
            raise ClusterError(f"starting {name}: {error}") from error

    def _thaw_if_partitioned(self, node: real_node.RealNode) -> None:
        if node.partitioned():
            node.thaw([pid for pid in (self.pid(c) for c in node.components) if pid is not None])
            for component in node.components:
                self._held_file(component).unlink(missing_ok=True)

    # --- what the supervisor needs to know ---------------------------------------------------------------------
    def _node_of(self, component: str) -> real_node.RealNode | None:
        name = component.rsplit("-", 1)[0]
        return self.node(name) if name in self.node_names else None

    def _binary_name(self, component: str) -> str:
        if self._node_of(component):
            return component.rsplit("-", 1)[1]
        return pod_network.BINARY_NAMES.get(component, component)

    def _env(self, component: str) -> dict[str, str] | None:
        node = self._node_of(component)
        return node.env() if node else None

    def _refresh(self) -> bool:
        if not self._state_file().exists():
            return False
        # `up --real-nodes N` may have changed the set since the watchdog started.
        self.real_nodes = int(self._saved().get("real_nodes", 0))
        return True

    def status(self) -> dict[str, str]:
        result = {}
        for component in (*self.components, WATCHDOG):
            pid = self.pid(component)
            result[component] = f"running (pid {pid})" if pid else "stopped"
        if self.pid("kube-apiserver"):
            for node in self.nodes:
                result[f"node {node.name}"] = (f"{self.admin.node_ready_text(node.name)}"
                                               f"{' (partitioned)' if node.partitioned() else ''}")
        return result

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([self._binary("kubectl"), "--kubeconfig", str(self.kubeconfig), *args], input=input,
                                capture_output=True, text=True, check=False, timeout=timeout)
        if check and result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    def apply(self, source: str, *, manager: str, input: str | None = None) -> None:
        """Server-side apply of the add-ons' manifests (a path, or "-" with input): client-side apply first fetches
        the whole OpenAPI document (32-s timeout), which a starved apiserver rebuilding it after a CRD missed."""
        self.kubectl("apply", "--server-side", "--force-conflicts", "--validate=false", f"--field-manager={manager}",
                     "-f", source, input=input)

    def _command(self, component: str) -> list[str]:
        node = self._node_of(component)
        if node:
            return node.command(component.rsplit("-", 1)[1])
        if component in pod_network.COMPONENTS:
            return self.pods_network.command(component)
        if component == WATCHDOG:
            return [sys.executable, str(HACK_DIR / "local_cluster.py"), "watch", "--dir", str(self.directory)]
        return [self._binary(component), *self.control_plane.args(component), *self.extra_args.get(component, [])]

    def _addresses(self, component: str) -> list[Address]:
        return self.pods_network.addresses(component) if component in pod_network.COMPONENTS else []

    def _probe(self, component: str) -> bool:
        node = self._node_of(component)
        if node:
            return node.probe(component.rsplit("-", 1)[1])
        if component in pod_network.COMPONENTS:
            return self.pods_network.probe(component)
        if component == WATCHDOG:
            return True
        if component == "etcd":
            return bool(json.loads(get_text(f"{self.control_plane.etcd_url}/health", None)).get("health") == "true")
        if component == "kube-apiserver":
            return get_text(f"{self.server}/readyz", self.admin.tls()) == "ok"
        if component in ("kube-controller-manager", "kube-scheduler"):
            port = self.ports["controller-manager" if component == "kube-controller-manager" else "scheduler"]
            return get_text(f"https://127.0.0.1:{port}/healthz", unverified_tls()) == "ok"
        if component == "kwok":
            return get_text(f"http://127.0.0.1:{self.ports['kwok']}/healthz", None) == "ok"
        raise ValueError(component)

    def api(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        """A minimal admin REST call, for set-up before any Python client is installed."""
        return self.admin.call(method, path, body)

    def version(self) -> str:
        return str(self.api("GET", "/version")["gitVersion"])
