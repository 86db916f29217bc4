"""What the real node changes on the host, and how to undo it: the pod bridge, mounts, cgroups, kubelet's iptables
chains and stray processes. Each function is idempotent, so an interrupted teardown can simply run again.

Everything is found by a name or path that belongs to one cluster (its bridge, its cgroup root, its directory), so
tearing one cluster down leaves another cluster's node alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

CGROUP_MOUNT = Path("/sys/fs/cgroup")
# Held while a cluster picks a slot and creates its bridge, so two clusters starting at once cannot pick one slot
# (on tmpfs, like the bridges it guards: both are gone after a reboot).
SLOT_LOCK = Path("/run/tfop-slots.lock")
# Chains kubelet creates (pkg/kubelet/kubelet_network_linux.go) and the built-in chains that jump to them.
KUBELET_CHAINS = {
    "filter": ["KUBE-FIREWALL", "KUBE-KUBELET-CANARY"],
    "mangle": ["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"],
    "nat": ["KUBE-KUBELET-CANARY"],
}
KUBELET_JUMPS = [("filter", "INPUT", "KUBE-FIREWALL"), ("filter", "OUTPUT", "KUBE-FIREWALL")]


class HostError(RuntimeError):
    """A host change could not be made or undone; the message names the object and the command's answer."""


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HostError(f"{' '.join(args)} failed: {(result.stderr or result.stdout).strip()}")
    return result


# --- the bridge -----------------------------------------------------------------------------------------------
def bridge_owner(bridge: str) -> str | None:
    """The cluster directory recorded as the bridge's alias, or None if there is no such bridge."""
    path = Path(f"/sys/class/net/{bridge}/ifalias")
    if not Path(f"/sys/class/net/{bridge}").exists():
        return None
    return path.read_text().strip() if path.exists() else ""


@contextlib.contextmanager
def slot_lock() -> Iterator[None]:
    with SLOT_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def claim_bridge(bridge: str, owner: str) -> None:
    """Creates the bridge with `owner` as its alias, the claim on its slot, or refuses if another cluster has it.
    The caller holds slot_lock, so nobody sees the bridge before its alias is set."""
    current = bridge_owner(bridge)
    if current is not None and current != owner:
        raise HostError(f"the bridge {bridge} belongs to the cluster in {current or '(unknown)'}; stop or destroy "
                        f"that cluster first (two clusters' nodes cannot share one address slot)")
    if current is None:
        run("ip", "link", "add", bridge, "type", "bridge")
        run("ip", "link", "set", "dev", bridge, "alias", owner)


def bridge_mac(bridge: str) -> str:
    """A fixed, locally administered MAC address for the bridge, from its name."""
    return ":".join(["02", *(f"{b:02x}" for b in hashlib.sha256(bridge.encode()).digest()[:5])])


def ensure_bridge(bridge: str, owner: str, addresses: list[str]) -> None:
    """The pod bridge with the node's addresses, made before the CNI plugin runs so that the plugin (isGateway
    false) never touches addresses or IP forwarding. The alias records which cluster owns it.

    Its MAC address is set, not left to Linux: a bridge whose address was never set takes the lowest of its ports',
    so a pod's veth joining or leaving changes it, and every other pod's ARP entry for the gateway (CoreDNS, the
    apiserver relay) then points at an address nobody answers until it expires: a minute of failed DNS lookups
    ("Temporary failure in name resolution") in the middle of training."""
    with slot_lock():
        claim_bridge(bridge, owner)
    run("ip", "link", "set", "dev", bridge, "address", bridge_mac(bridge))
    for address in addresses:
        ensure_address(bridge, address)
    run("ip", "link", "set", "dev", bridge, "up")


def ensure_address(device: str, address: str) -> None:
    if f" {address} " not in run("ip", "-o", "addr", "show", "dev", device).stdout:
        run("ip", "addr", "add", address, "dev", device)


def remove_address(device: str, address: str) -> None:
    """Idempotent: the device or the address may be gone already."""
    if Path(f"/sys/class/net/{device}").exists() and f" {address} " in run(
            "ip", "-o", "addr", "show", "dev", device).stdout:
        run("ip", "addr", "del", address, "dev", device)


def delete_bridge(bridge: str, owner: str) -> None:
    """Deletes the veths still on the bridge, then the bridge, if it is ours."""
    with slot_lock():
        if bridge_owner(bridge) not in ("", owner):
            return
        lower = Path(f"/sys/class/net/{bridge}/brif")
        for port in (sorted(p.name for p in lower.iterdir()) if lower.exists() else []):
            run("ip", "link", "delete", port, check=False)
        run("ip", "link", "delete", bridge, check=False)


# --- mounts -----------------------------------------------------------------------------------------------------
def mounts_under(directory: Path) -> list[str]:
    """Mount points at or below `directory`, deepest first (so each unmount finds its children gone)."""
    prefix = str(directory.resolve())
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: p.count("/"), reverse=True)


def unmount_all(directory: Path) -> None:
    """Pod network namespaces, container root filesystems, volume tmpfs and kubelet's own bind mount of its root
    directory all live under the cluster directory; a lazy unmount takes what is still busy."""
    for _ in range(5):
        points = mounts_under(directory)
        if not points:
            return
        for point in points:
            if run("umount", point, check=False).returncode != 0:
                run("umount", "-l", point, check=False)
    left = mounts_under(directory)
    if left:
        raise HostError(f"could not unmount {left[:5]}")


# --- cgroups ----------------------------------------------------------------------------------------------------
def ensure_cgroups(root: str) -> None:
    """kubelet's cgroupRoot must exist in every hierarchy before it starts (it creates kubepods below it). A new
    cpuset cgroup on v1 starts with no CPUs or memory nodes, so it gets its parent's."""
    for hierarchy in sorted(CGROUP_MOUNT.iterdir()) if CGROUP_MOUNT.exists() else []:
        if not (hierarchy / "cgroup.procs").exists() or (hierarchy / "cgroup.controllers").exists():
            continue  # not a v1 hierarchy (the unified v2 mount of a hybrid host holds no controllers here)
        top = hierarchy / root.strip("/")
        top.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if (top / knob).exists() and not (top / knob).read_text().strip():
                (top / knob).write_text((hierarchy / knob).read_text())


def remove_cgroups(root: str, timeout: float = 10.0) -> None:
    """Removes the cgroup subtree `root` (kubelet's cgroupRoot, holding kubepods) in every hierarchy. A cgroup can
    only be removed once its processes are gone, so retry while the killed containers finish exiting."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for hierarchy in sorted(CGROUP_MOUNT.iterdir()) if CGROUP_MOUNT.exists() else []:
            top = hierarchy / root.strip("/")
            if not top.is_dir() or top.is_symlink():
                continue
            below = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
            for directory in [*below, top]:
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(str(directory))
        if not left:
            return
        if time.monotonic() > deadline:
            raise HostError(f"cgroups still busy after {timeout:.0f}s: {left[:5]}")
        time.sleep(0.2)


# --- iptables ---------------------------------------------------------------------------------------------------
def remove_kubelet_chains() -> None:
    """kubelet's chains are machine-wide (they have fixed names), so the caller removes them only when no other
    kubelet runs; a kubelet that finds its canary chain gone recreates them anyway."""
    for binary in ("iptables", "ip6tables"):
        if run("sh", "-c", f"command -v {binary}", check=False).returncode != 0:
            continue
        for table, chain, target in KUBELET_JUMPS:
            while run(binary, "-w", "-t", table, "-D", chain, "-j", target, check=False).returncode == 0:
                pass
        for table, chains in KUBELET_CHAINS.items():
            for chain in chains:
                if run(binary, "-w", "-t", table, "-L", chain, "-n", check=False).returncode == 0:
                    run(binary, "-w", "-t", table, "-F", chain, check=False)
                    run(binary, "-w", "-t", table, "-X", chain, check=False)


# --- sysctls -----------------------------------------------------------------------------------------------------
# What kubelet sets at start (setupKernelTunables: overcommit always, panic 10 s after an oops, more root keys),
# machine-wide. The first node to start records the values before any kubelet touched them; the last to stop puts
# them back, so a developer's machine does not keep kubelet's panic settings.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
SYSCTL_RECORD = Path("/run/tfop-sysctls-before-kubelet.json")


def record_sysctls() -> None:
    if SYSCTL_RECORD.exists() or running_binaries("kubelet"):
        return
    SYSCTL_RECORD.write_text(json.dumps({name: Path("/proc/sys", name).read_text().strip()
                                         for name in KUBELET_SYSCTLS}))


def restore_sysctls() -> None:
    if not SYSCTL_RECORD.exists() or running_binaries("kubelet"):
        return
    for name, value in json.loads(SYSCTL_RECORD.read_text()).items():
        try:
            Path("/proc/sys", name).write_text(value)
        except OSError as error:
            raise HostError(f"restoring the sysctl {name}={value} failed: {error}") from error
    SYSCTL_RECORD.unlink()


# --- processes --------------------------------------------------------------------------------------------------
def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` (e.g. our containerd socket, which every shim gets as -address)."""
    pids = []
    needle = text.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def kill_all(pids: list[int], timeout: float = 5.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise HostError(f"processes {pids} did not exit after SIGKILL")
        time.sleep(0.05)


def processes_in_cgroup(root: str) -> list[int]:
    """Pids in the cgroup subtree `root` (a node's cgroupRoot: every container of its pods), read from the pids
    hierarchy (or the unified one)."""
    pids: set[int] = set()
    for hierarchy in (CGROUP_MOUNT / "pids", CGROUP_MOUNT / "unified", CGROUP_MOUNT):
        top = hierarchy / root.strip("/")
        if top.is_dir():
            for procs in top.rglob("cgroup.procs"):
                with contextlib.suppress(OSError):
                    pids.update(int(line) for line in procs.read_text().split())
            break
    return sorted(pids)


def netns_mounts_under(directory: Path) -> list[str]:
    """Network namespaces bind-mounted at or below `directory` (containerd keeps its pods' there)."""
    prefix = str(directory.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point, fstype = fields[4], fields[fields.index("-") + 1]
        if fstype == "nsfs" and (point == prefix or point.startswith(prefix + "/")):
            found.append(point)
    return sorted(set(found))


def interfaces_with_index(index: int) -> list[str]:
    return [path.name for path in Path("/sys/class/net").iterdir()
            if (path / "ifindex").exists() and (path / "ifindex").read_text().strip() == str(index)]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def running_binaries(name: str) -> list[int]:
    """Pids of processes whose executable is called `name` (any cluster's)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except (OSError, UnicodeDecodeError):
                continue
            if argv0 and Path(argv0).name == name and not _zombie(int(entry.name)):
                pids.append(int(entry.name))
    return pids
