"""A real node of the local cluster: its containerd and kubelet, run by LocalCluster as components like the control
plane's (pid files, logs, health probes, restarts). This module says how: command lines, configuration files,
host set-up, image import, teardown, and the two ways a node fails in a real cluster (node_layout.py has the
addresses and paths):

  power loss   kubelet, containerd and every process of the node's pods die at once; the pods' network namespaces
               (and so their addresses) and the runtime's volatile state go, as after a reboot. Powered on again,
               the node starts like a rebooted machine: empty runtime state, images still on disk.
  partition    the node's processes live on, but kubelet and containerd are frozen (no status, no lease, no answer
               to the apiserver) and the node's pods are cut off the pod network. Healed, all of it resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from . import busybox_image
from . import host as node_host
from .node_config import HOST_TOOLS, cni_config, containerd_config, kubelet_config
from .node_layout import NODE_LABEL, NodeError, NodeLayout
from .pki import kubeconfig

HACK_DIR = Path(__file__).resolve().parents[1]
# One node's components, in start order; the supervisor knows each as f"{node}-{component}".
COMPONENTS = ("containerd", "kubelet")
K8S_NAMESPACE = "k8s.io"  # containerd namespace the CRI plugin uses

__all__ = ["NODE_LABEL", "NodeError", "RealNode", "build_node", "node_images", "pause_image"]


def component_name(node: str, component: str) -> str:
    return f"{node}-{component}"


@dataclass(frozen=True)
class RealNode:
    layout: NodeLayout
    binaries: dict[str, Path]

    @property
    def name(self) -> str:
        return self.layout.name

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(component_name(self.name, c) for c in COMPONENTS)

    def env(self) -> dict[str, str]:
        """containerd finds its shim on PATH; kubelet needs iptables and mount from the system's sbin."""
        bins = {str(path.parent) for path in self.binaries.values()}
        return {**os.environ, "PATH": ":".join([*sorted(bins), "/usr/local/sbin", "/usr/sbin", "/usr/bin",
                                                "/sbin", "/bin"])}

    # --- checks and set-up ---------------------------------------------------------------------------------------
    def check_host(self) -> None:
        """Fail with a clear message before touching anything, rather than half-way through."""
        if os.geteuid() != 0:
            raise NodeError("the real nodes need root (bridges, mounts, cgroups, iptables); run as root, or "
                            "start the cluster without them (--no-real-node)")
        missing = [f"{what} ({path})" for what, path in HOST_TOOLS.items() if not Path(path).exists()]
        if missing:
            raise NodeError(f"missing: {', '.join(missing)}; hack/build-node.sh installs them with apt-get")
        if not Path("/sys/fs/cgroup/memory").is_dir() and not Path("/sys/fs/cgroup/cgroup.controllers").exists():
            raise NodeError("no memory cgroup controller under /sys/fs/cgroup; kubelet cannot run pods")
        # The unix sockets the node makes itself (a socket's path has at most 107 bytes): kubelet's device-plugin
        # and pod-resources sockets, containerd's ttrpc one.
        sockets = [self.layout.kubelet_root / "device-plugins" / "kubelet.sock",
                   self.layout.kubelet_root / "pod-resources" / "kubelet.sock",
                   Path(f"{self.layout.containerd_socket}.ttrpc")]
        if max(len(str(path)) for path in sockets) > 107:
            raise NodeError(f"the cluster directory {self.layout.directory} is too deep for unix socket paths "
                            f"(at most 107 bytes): use a shorter --dir")

    def prepare(self) -> None:
        """Host and file set-up before the node's processes start (the pod network is up); idempotent."""
        self.check_host()
        layout = self.layout
        for sub in ("containerd", "cni/net.d", "kubelet", "pod-logs"):
            (layout.root / sub).mkdir(parents=True, exist_ok=True)
        node_host.ensure_cgroups(layout.network.cgroup_root)
        node_host.record_sysctls()
        # The node's own address on the shared bridge (/32: a secondary of the host's /24 would go with it).
        node_host.ensure_address(layout.network.cluster.bridge, f"{layout.network.ip}/32")
        (layout.root / "containerd" / "config.toml").write_text(containerd_config(layout))
        (layout.root / "cni" / "net.d" / "10-tfop.conflist").write_text(json.dumps(cni_config(layout), indent=2))
        (layout.root / "kubelet-config.yaml").write_text(kubelet_config(layout))
        (layout.root / "kubelet.kubeconfig").write_text(
            kubeconfig(f"https://127.0.0.1:{layout.apiserver_port}", layout.pki, f"node-{self.name}", user="node"))

    # --- processes -------------------------------------------------------------------------------------------------
    def command(self, component: str) -> list[str]:
        layout, b = self.layout, self.binaries
        if component == "containerd":
            return [str(b["containerd"]), "--config", str(layout.root / "containerd" / "config.toml"),
                    "--log-level", "warn"]
        if component == "kubelet":
            # The container GC keeps one dead container per container, but counts a new one made and not yet
            # started as dead too: a GC pass in that moment can remove the container before a restart in place, and
            # its log (`logs --previous`). A minute's age before any is collected closes that window.
            return [str(b["kubelet"]), f"--config={layout.root / 'kubelet-config.yaml'}",
                    f"--kubeconfig={layout.root / 'kubelet.kubeconfig'}", f"--hostname-override={self.name}",
                    f"--node-ip={layout.network.ip}", f"--node-labels={NODE_LABEL}=true",
                    f"--root-dir={layout.kubelet_root}", f"--cert-dir={layout.kubelet_root / 'pki'}",
                    "--minimum-container-ttl-duration=1m", "--v=1"]
        raise ValueError(component)

    def probe(self, component: str) -> bool:
        if component == "containerd":
            return self.ctr("version", check=False).returncode == 0
        if component == "kubelet":
            return _http(f"http://127.0.0.1:{self.layout.kubelet_healthz_port}/healthz") == "ok"
        raise ValueError(component)

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(self.binaries["ctr"]), "--address", str(self.layout.containerd_socket),
                                 "--namespace", K8S_NAMESPACE, *args],
                                capture_output=True, text=True, check=False, timeout=600)
        if check and result.returncode != 0:
            raise NodeError(f"ctr {' '.join(args[:3])} failed on {self.name}: {result.stderr.strip()}")
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

    # --- teardown and failures ----------------------------------------------------------------------------------
    def kill_containers(self) -> None:
        """Kills every container and pod sandbox (their shims exit with them and remove their sockets), so that
        nothing keeps a mount, a veth or a cgroup of this node. Pods come back when kubelet starts again."""
        socket_path = self.layout.containerd_socket
        ids = set(_shim_ids(node_host.processes_mentioning(str(socket_path))))
        if socket_path.exists() and self.ctr("version", check=False).returncode == 0:
            for task in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
                ids.add(task)
                self.ctr("tasks", "delete", "--force", task, check=False)
        self.kill_everything(ids)

    def kill_everything(self, shim_ids: set[str] | None = None) -> None:
        """SIGKILL to every process of the node's pods and to their shims, as a power loss would. Everything is
        found by the node's own cgroup root and containerd socket (every shim has it in its argv)."""
        socket_path = self.layout.containerd_socket
        shims = node_host.processes_mentioning(str(socket_path))
        ids = (shim_ids or set()) | set(_shim_ids(shims))
        node_host.kill_all(node_host.processes_in_cgroup(self.layout.network.cgroup_root) + shims)
        # A shim removes its socket when it exits cleanly, not when it is killed; the sockets live in a fixed
        # directory, named by a hash of our containerd socket, the namespace and the shim's id.
        for shim_id in ids:
            for suffix in ("", "/debug"):
                name = hashlib.sha256(f"{socket_path}/{K8S_NAMESPACE}/{shim_id}{suffix}".encode())
                Path("/run/containerd/s", name.hexdigest()).unlink(missing_ok=True)

    def teardown_host(self) -> None:
        """After the node's processes are gone: undo what the node changed on the host, and drop its volatile
        runtime state (pod network namespaces go with their mounts, and their addresses with them). Idempotent."""
        layout = self.layout
        node_host.unmount_all(layout.root)
        node_host.remove_address(layout.network.cluster.bridge, f"{layout.network.ip}/32")
        node_host.remove_cgroups(layout.network.cgroup_root)
        shutil.rmtree(layout.containerd_state, ignore_errors=True)
        for socket_path in (layout.containerd_socket, Path(f"{layout.containerd_socket}.ttrpc")):
            socket_path.unlink(missing_ok=True)
        _remove_links_into(Path("/var/log/containers"), layout.root)
        for cached in Path("/var/lib/cni/results").glob(f"{layout.network.cni_network}-*"):
            cached.unlink(missing_ok=True)

    def pod_interfaces(self) -> list[str]:
        """The host ends of this node's pods' veths: each pod network namespace's eth0 names its peer's index."""
        names = []
        for netns in node_host.netns_mounts_under(self.layout.containerd_state):
            link = node_host.run("nsenter", f"--net={netns}", "ip", "-o", "link", "show", "eth0", check=False)
            if link.returncode == 0 and "@if" in link.stdout:
                index = link.stdout.split("@if", 1)[1].split(":", 1)[0]
                names += node_host.interfaces_with_index(int(index))
        return sorted(names)

    def freeze(self, pids: list[int]) -> None:
        """The partition: kubelet and containerd stop (SIGSTOP: their sockets stay, nobody answers), and the pods'
        veths go down, so nothing reaches the node's pods and they reach nothing. The pods' processes run on."""
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        interfaces = self.pod_interfaces()
        (self.layout.root / "partitioned").write_text("\n".join(interfaces))
        for name in interfaces:
            node_host.run("ip", "link", "set", "dev", name, "down", check=False)

    def thaw(self, pids: list[int]) -> None:
        """Heals the partition: the veths come up, containerd and kubelet resume where they stopped."""
        record = self.layout.root / "partitioned"
        for name in record.read_text().split() if record.exists() else []:
            node_host.run("ip", "link", "set", "dev", name, "up", check=False)
        record.unlink(missing_ok=True)
        for pid in pids:
            os.kill(pid, signal.SIGCONT)

    def partitioned(self) -> bool:
        return (self.layout.root / "partitioned").exists()

    def mark_powered_off(self, off: bool) -> None:
        marker = self.layout.root / "powered-off"
        if off:
            marker.write_text("")
        else:
            marker.unlink(missing_ok=True)

    def failed(self) -> bool:
        """Stopped or partitioned on purpose: `up` leaves it so, and `node start` brings it back."""
        return self.partitioned() or (self.layout.root / "powered-off").exists()

    def leftovers(self) -> list[str]:
        """What teardown should have removed and is still there (for tests and `status`)."""
        layout = self.layout
        root = layout.network.cgroup_root.strip("/")
        left = [f"mount {m}" for m in node_host.mounts_under(layout.root)]
        left += [f"cgroup {h / root}" for h in sorted(node_host.CGROUP_MOUNT.iterdir()) if (h / root).is_dir()]
        left += [f"process {pid}" for pid in node_host.processes_mentioning(str(layout.containerd_socket))]
        if layout.containerd_state.exists():
            left.append(f"runtime state {layout.containerd_state}")
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
    """(reference, OCI archive) of every image the nodes get: the busybox image (sandbox and test image) and
    what hack/build-images.sh builds; it prints one `reference archive` pair a line."""
    try:
        reference, archive = busybox_image.build()
    except busybox_image.ImageError as error:
        raise NodeError(f"the busybox image: {error}") from error
    lines = [[reference, str(archive)]]
    command = ["bash", str(HACK_DIR / "build-images.sh")]
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
