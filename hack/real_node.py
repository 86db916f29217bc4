"""The local cluster's real node: containerd, kubelet, CoreDNS and a relay that lets pods reach the apiserver, on a
bridge of the cluster's own with addresses from 198.18.0.0/15 (no NAT, no route off the machine).

LocalCluster runs these as components like the control plane's (pid files, logs, health probes, restarts); this
module says how: command lines, config files, certificates, health probes, image import, and teardown.

Addresses, by the cluster's slot N (0-15, chosen when the cluster is created, recorded in its state.json):
  198.18.N.0/24      the node's pod bridge; 198.18.N.1 is the node: kubelet, CoreDNS, the node's InternalIP
  198.19.16N.0/20    the Service CIDR; its first address, the `kubernetes` Service's ClusterIP, is also on the bridge
                     and pods get a route to it (via the node, which owns it), where the relay serves the apiserver
  198.18.128.0/17    kwok's fake pod IPs (never on any interface); 198.18.255.254 the kwok nodes' IP
Names carry the slot: bridge tfop-brN, node tfop-node-N, cgroup root /tfop-node-N. Two clusters can run nodes at
once if their slots differ; the bridge's alias names the cluster directory that owns it, and a second cluster
with a taken slot is refused with that directory in the message.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import node_host
from node_config import HOST_TOOLS, NODE_LABEL, cni_config, containerd_config, corefile, kubelet_config

HACK_DIR = Path(__file__).resolve().parent
SLOTS = 16
NODE_COMPONENTS = ("containerd", "kubelet", "coredns", "apiserver-relay")
NODE_BINARY_NAMES = {"apiserver-relay": "socat"}  # the others' executables are named like the component
KWOK_POD_CIDR = "198.18.128.0/17"
KWOK_NODE_IP = "198.18.255.254"
K8S_NAMESPACE = "k8s.io"  # containerd namespace the CRI plugin uses


class NodeError(RuntimeError):
    """The real node cannot start here; the message says what is missing and how to get it."""


def slot_for(directory: Path, taken: Callable[[int], bool]) -> int:
    """A stable first choice from the directory's path, then the next slot nobody's bridge uses."""
    first = int(hashlib.sha256(str(directory).encode()).hexdigest(), 16) % SLOTS
    for i in range(SLOTS):
        slot = (first + i) % SLOTS
        if not taken(slot):
            return slot
    raise NodeError(f"all {SLOTS} node slots have a bridge (tfop-br0..tfop-br{SLOTS - 1}); destroy a cluster")


@dataclass(frozen=True)
class NodeNetwork:
    """Every address and name that depends on the cluster's slot."""

    slot: int

    @property
    def bridge(self) -> str:
        return f"tfop-br{self.slot}"

    @property
    def node_name(self) -> str:
        return f"tfop-node-{self.slot}"

    @property
    def cgroup_root(self) -> str:
        return f"/tfop-node-{self.slot}"

    @property
    def node_ip(self) -> str:
        return f"198.18.{self.slot}.1"

    @property
    def pod_subnet(self) -> str:
        return f"198.18.{self.slot}.0/24"

    @property
    def service_cidr(self) -> str:
        return f"198.19.{16 * self.slot}.0/20"

    @property
    def api_service_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the apiserver allocates the range's first address to it."""
        return f"198.19.{16 * self.slot}.1"

    @property
    def cni_network(self) -> str:
        return f"tfop-pods-{self.slot}"


@dataclass
class RealNode:
    """Paths and configuration of one cluster's node; `directory` is the cluster's state directory."""

    directory: Path
    network: NodeNetwork
    apiserver_port: int
    kubelet_healthz_port: int
    binaries: dict[str, Path]
    pause_image: str  # the sandbox image's reference; imported before kubelet starts

    # --- paths ---------------------------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.directory / "node"

    @property
    def pki(self) -> Path:
        return self.directory / "pki"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def containerd_state(self) -> Path:
        """Volatile runtime state (tasks, shims' runc state, pod network namespaces, IPAM), removed by down."""
        return self.root / "containerd" / "state"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    def env(self) -> dict[str, str]:
        """containerd finds its shim on PATH; kubelet needs iptables and mount from the system's sbin."""
        bins = {str(path.parent) for path in self.binaries.values()}
        return {**os.environ, "PATH": ":".join([*sorted(bins), "/usr/local/sbin", "/usr/sbin", "/usr/bin",
                                                "/sbin", "/bin"])}

    # --- checks and set-up ---------------------------------------------------------------------------------------
    def check_host(self) -> None:
        """Fail with a clear message before touching anything, rather than half-way through."""
        if os.geteuid() != 0:
            raise NodeError("the real node needs root (bridges, mounts, cgroups, iptables); run as root, or "
                            "start the cluster without it (--no-real-node)")
        missing = [f"{what} ({path})" for what, path in HOST_TOOLS.items() if not Path(path).exists()]
        if missing:
            raise NodeError(f"missing: {', '.join(missing)}; hack/build-node.sh installs them with apt-get")
        if not Path("/sys/fs/cgroup/memory").is_dir() and not Path("/sys/fs/cgroup/cgroup.controllers").exists():
            raise NodeError("no memory cgroup controller under /sys/fs/cgroup; kubelet cannot run pods")
        longest = self.kubelet_root / "plugins_registry" / "x" / "kubelet.sock.xxxxxxxx"
        if len(str(longest)) > 100:
            raise NodeError(f"the cluster directory {self.directory} is too deep for unix socket paths (limit "
                            f"108 bytes): use a shorter --dir")

    def prepare(self) -> None:
        """Host and file set-up before the node's processes start; idempotent."""
        self.check_host()
        for sub in ("containerd", "cni/net.d", "kubelet", "pod-logs", "coredns"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        node_host.ensure_bridge(self.network.bridge, str(self.directory),
                                [f"{self.network.node_ip}/24", f"{self.network.api_service_ip}/32"])
        node_host.ensure_cgroups(self.network.cgroup_root)
        node_host.record_sysctls()
        self._write_configs()

    def _write_configs(self) -> None:
        (self.root / "containerd" / "config.toml").write_text(containerd_config(self))
        (self.root / "cni" / "net.d" / "10-tfop.conflist").write_text(json.dumps(cni_config(self), indent=2))
        (self.root / "kubelet-config.yaml").write_text(kubelet_config(self))
        (self.root / "coredns" / "Corefile").write_text(corefile(self))
        self._kubeconfig(self.root / "kubelet.kubeconfig", "node")
        self._kubeconfig(self.root / "coredns" / "kubeconfig", "admin")

    def _kubeconfig(self, path: Path, user: str) -> None:
        pki = self.pki
        path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "https://127.0.0.1:{self.apiserver_port}", certificate-authority: "{pki / 'ca.crt'}"}}
users:
- name: {user}
  user: {{client-certificate: "{pki / f'{user}.crt'}", client-key: "{pki / f'{user}.key'}"}}
contexts:
- name: local
  context: {{cluster: local, user: {user}}}
current-context: local
""")

    # --- processes -------------------------------------------------------------------------------------------------
    def command(self, component: str) -> list[str]:
        net, b = self.network, self.binaries
        if component == "containerd":
            return [str(b["containerd"]), "--config", str(self.root / "containerd" / "config.toml"),
                    "--log-level", "warn"]
        if component == "kubelet":
            return [str(b["kubelet"]), f"--config={self.root / 'kubelet-config.yaml'}",
                    f"--kubeconfig={self.root / 'kubelet.kubeconfig'}", f"--hostname-override={net.node_name}",
                    f"--node-ip={net.node_ip}", f"--node-labels={NODE_LABEL}=true",
                    f"--root-dir={self.kubelet_root}", f"--cert-dir={self.kubelet_root / 'pki'}", "--v=1"]
        if component == "coredns":
            return [str(b["coredns"]), "-conf", str(self.root / "coredns" / "Corefile")]
        if component == "apiserver-relay":
            # socat forks one child per connection; each carries TLS end to end between a pod and the apiserver.
            return [HOST_TOOLS["socat"], f"TCP-LISTEN:443,bind={net.api_service_ip},fork,reuseaddr",
                    f"TCP:127.0.0.1:{self.apiserver_port}"]
        raise ValueError(component)

    def probe(self, component: str) -> bool:
        net = self.network
        if component == "containerd":
            return self.ctr("version", check=False).returncode == 0
        if component == "kubelet":
            return _http(f"http://127.0.0.1:{self.kubelet_healthz_port}/healthz") == "ok"
        if component == "coredns":
            return _http(f"http://{net.node_ip}:8181/ready") == "OK"
        if component == "apiserver-relay":
            with socket.create_connection((net.api_service_ip, 443), timeout=2):
                return True
        raise ValueError(component)

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(self.binaries["ctr"]), "--address", str(self.containerd_socket),
                                 "--namespace", K8S_NAMESPACE, *args],
                                capture_output=True, text=True, check=False, timeout=600)
        if check and result.returncode != 0:
            raise NodeError(f"ctr {' '.join(args[:3])} failed: {result.stderr.strip()}")
        return result

    # --- images ------------------------------------------------------------------------------------------------------
    def import_images(self, images: list[tuple[str, Path]]) -> list[str]:
        """Imports each (reference, OCI archive) unless containerd already has that reference; returns what was
        imported. --base-name because an archive packed by umoci names its image by the tag alone."""
        present = set(self.ctr("images", "list", "--quiet").stdout.split())
        imported = []
        for reference, archive in images:
            if reference in present:
                continue
            # umoci records the tag alone as the archive's ref.name, and ctr then needs --base-name to name the
            # image; an archive that names its image in full is imported under that name. Either way the image
            # also gets the reference the builder announced, so pods can use what it printed.
            name = _archive_image_name(archive)
            if "/" in name or ":" in name:
                self.ctr("images", "import", str(archive))
                as_imported = name
            else:
                base = reference.rsplit(":", 1)[0]
                self.ctr("images", "import", "--base-name", base, str(archive))
                as_imported = f"{base}:{name}"
            if as_imported != reference:
                self.ctr("images", "tag", "--force", as_imported, reference)
            imported.append(reference)
        return imported

    # --- teardown --------------------------------------------------------------------------------------------------
    def kill_containers(self) -> None:
        """Kills every container and pod sandbox (their shims exit with them and remove their sockets), so that
        nothing keeps a mount, a veth or a cgroup of this node. Pods come back when kubelet starts again."""
        ids = set(_shim_ids(node_host.processes_mentioning(str(self.containerd_socket))))
        if self.containerd_socket.exists() and self.ctr("version", check=False).returncode == 0:
            for task in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
                ids.add(task)
                self.ctr("tasks", "delete", "--force", task, check=False)
        # Whatever survived (containerd already gone, a wedged shim): every shim has our socket in its argv.
        node_host.kill_all(node_host.processes_mentioning(str(self.containerd_socket)))
        # A shim removes its socket when it exits cleanly, not when it is killed; the sockets live in a fixed
        # directory, named by a hash of our containerd socket, the namespace and the shim's id.
        for shim_id in ids:
            for suffix in ("", "/debug"):
                name = hashlib.sha256(f"{self.containerd_socket}/{K8S_NAMESPACE}/{shim_id}{suffix}".encode())
                Path("/run/containerd/s", name.hexdigest()).unlink(missing_ok=True)

    def teardown_host(self) -> None:
        """After the node's processes are stopped: undo every host change. Idempotent."""
        node_host.unmount_all(self.directory)
        node_host.delete_bridge(self.network.bridge, str(self.directory))
        node_host.remove_cgroups(self.network.cgroup_root)
        if not node_host.running_binaries("kubelet"):  # the last node on the machine
            node_host.remove_kubelet_chains()
            node_host.restore_sysctls()
        shutil.rmtree(self.containerd_state, ignore_errors=True)
        for socket_path in (self.containerd_socket, Path(f"{self.containerd_socket}.ttrpc")):
            socket_path.unlink(missing_ok=True)
        _remove_links_into(Path("/var/log/containers"), self.directory)
        for cached in Path("/var/lib/cni/results").glob(f"{self.network.cni_network}-*"):
            cached.unlink(missing_ok=True)

    def leftovers(self) -> list[str]:
        """What teardown should have removed and is still there (for tests and `status`)."""
        left = [f"mount {m}" for m in node_host.mounts_under(self.directory)]
        if node_host.bridge_owner(self.network.bridge) in ("", str(self.directory)):
            left.append(f"bridge {self.network.bridge}")
        left += [f"cgroup {h / self.network.cgroup_root.strip('/')}" for h in sorted(node_host.CGROUP_MOUNT.iterdir())
                 if (h / self.network.cgroup_root.strip("/")).is_dir()]
        left += [f"process {pid}" for pid in node_host.processes_mentioning(str(self.containerd_socket))]
        if self.containerd_state.exists():
            left.append(f"runtime state {self.containerd_state}")
        return left


def _archive_image_name(archive: Path) -> str:
    """The name the OCI archive gives its (first) image: containerd's annotation, else the OCI ref.name (which
    may be a tag alone)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        if member is None:
            raise NodeError(f"{archive} has no index.json: not an OCI image archive")
        index = json.load(member)
    annotations = index["manifests"][0].get("annotations", {})
    return str(annotations.get("io.containerd.image.name")
               or annotations.get("org.opencontainers.image.ref.name", "latest"))


def _shim_ids(pids: list[int]) -> list[str]:
    """The `-id` argument of each shim process (the pod sandbox it serves)."""
    ids = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if "-id" in argv[:-1]:
            ids.append(argv[argv.index("-id") + 1])
    return ids


def _remove_links_into(directory: Path, target: Path) -> None:
    """kubelet links each container's log into /var/log/containers (a fixed path); drop the links to our logs."""
    if not directory.is_dir():
        return
    for link in directory.iterdir():
        if link.is_symlink() and os.readlink(link).startswith(str(target)):
            link.unlink(missing_ok=True)


def _http(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as response:
        return str(response.read().decode().strip())


# --- binaries and images ----------------------------------------------------------------------------------------
def build_node() -> dict[str, Path]:
    """Builds (or reuses) kubelet, containerd and CoreDNS, installing the Debian packages the node needs."""
    result = subprocess.run(["bash", str(HACK_DIR / "build-node.sh")], stdout=subprocess.PIPE, text=True,
                            check=False)
    if result.returncode != 0:
        raise NodeError(f"building the real node failed (exit {result.returncode}); see the output above")
    return {Path(line).name: Path(line) for line in result.stdout.split()}


def node_images() -> list[tuple[str, Path]]:
    """(reference, OCI archive) of every image the node gets: the busybox image (sandbox and test image) and
    whatever hack/build-images.sh builds, if it exists; it prints one `reference archive` pair a line."""
    lines = []
    for command in (["python3", str(HACK_DIR / "busybox_image.py")], ["bash", str(HACK_DIR / "build-images.sh")]):
        if not Path(command[1]).exists():
            continue
        result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise NodeError(f"{' '.join(command)} failed (exit {result.returncode}); see the output above")
        lines += [line.split() for line in result.stdout.splitlines() if line.strip()]
    images = []
    for fields in lines:
        if len(fields) != 2:
            raise NodeError(f"an image builder printed {' '.join(fields)!r}, not `reference archive`")
        images.append((fields[0], Path(fields[1])))
    return images


def pause_image(images: list[tuple[str, Path]]) -> str:
    """A pause image if one is built, else the busybox image, whose default command only sleeps."""
    for reference, _ in images:
        if reference.rsplit(":", 1)[0].endswith("/pause"):
            return reference
    return next(reference for reference, _ in images if reference.rsplit(":", 1)[0].endswith("/busybox"))
