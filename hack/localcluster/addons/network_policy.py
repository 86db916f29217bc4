"""NetworkPolicy enforcement on a local cluster's real nodes (hack/local_cluster.py), started on demand beside it:
kube-router (built by hack/build-kube-router.sh) with only its firewall on, the part that turns NetworkPolicies
into iptables rules and ipsets for the pods of its node. Its routing, service proxy and CNI stay off: the bridge
CNI keeps the pod network as it is (no NAT, no route off the machine), and the firewall only filters it.

    python3 hack/local_cluster.py network-policy up|down|status [--node real-0] [--dir .local/cluster]

One real node is firewalled, real-0 by default, the node tests that need one node use. Every real node of this
machine shares the host's network namespace, and so one iptables filter table: a second kube-router would treat the
first one's per-pod chains as stale and delete them at its next sync (and the first would do the same to it). So
one runs per machine, and `up` refuses a second, whichever cluster runs it. The policy of a pod on real-0 is
enforced whichever node the connecting pod runs on, as all pods share the bridge; pods on the other real nodes are
not firewalled, which `up` says.

`down`, and the cluster's own `down`/`destroy`, stop it and then remove every chain and ipset kube-router's
firewall made (kube-router leaves them in place when it stops); its own `--cleanup-config` is not used, as it also
resets IPVS and routing state that this add-on never touched.

State (pid, log) lives in the cluster's directory, next to the other components'. Its health endpoint listens on
loopback only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

from ports import free_port

from .. import host
from ..cluster import DEFAULT_DIR, LocalCluster
from ..supervisor import ClusterError
from .firewall_state import BINARY, SBIN_PATH, firewall_chains, firewall_ipsets, remove_firewall_state, stop_firewall
from .process import AddOnProcess, describe, run_build_script, run_cli, tail

# Written once the firewall has applied the cluster's policies for the first time (klog, at --v=1).
FIRST_SYNC = "sync iptables took"


def log(message: str) -> None:
    print(f"[network-policy] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding kube-router, built once per version (iptables and ipset are installed too)."""
    return run_build_script("build-kube-router.sh")


class NetworkPolicyEnforcer:
    """kube-router's firewall for one real node of one LocalCluster."""

    def __init__(self, cluster: LocalCluster, node: str = "real-0") -> None:
        self.cluster = cluster
        self.node = node
        self.process = AddOnProcess(cluster.directory, BINARY)

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    @property
    def _node_file(self) -> Path:
        return self.cluster.directory / "run" / f"{BINARY}.node"

    def running_node(self) -> str:
        """The node the running firewall guards (it may differ from the one this object was made for)."""
        try:
            return self._node_file.read_text().strip()
        except FileNotFoundError:
            return "an unknown node"

    def pid(self) -> int | None:
        return self.process.pid()

    def start(self, timeout: float = 90.0) -> None:
        """Starts the firewall unless it runs; returns once it has applied the cluster's policies once. Raises
        ClusterError saying why when it cannot start."""
        running = self.pid()
        if running is not None:
            if self.running_node() != self.node:
                raise ClusterError(f"kube-router already firewalls {self.running_node()} here (pid {running}); "
                                   "`network-policy down` first")
            return
        if os.geteuid() != 0:
            raise ClusterError("kube-router's firewall changes the host's iptables and ipsets: run as root")
        if self.node not in self.cluster.node_names or self.cluster.pid(f"{self.node}-kubelet") is None:
            raise ClusterError(f"the cluster has no real node {self.node} running (its real nodes: "
                               f"{', '.join(self.cluster.node_names) or 'none'}); start them with "
                               "`up --real-nodes N` first")
        others = host.running_binaries(BINARY)
        if others:
            raise ClusterError(f"kube-router already runs on this machine (pid {', '.join(map(str, others))}): the "
                               "real nodes of every cluster share the host's iptables, and two kube-router "
                               "firewalls delete each other's pod chains; stop that one first")
        bin_dir = build()
        for tool in ("iptables", "iptables-save", "iptables-restore", "ipset"):
            if shutil.which(tool, path=SBIN_PATH) is None:
                raise ClusterError(f"{tool} is not installed; hack/build-kube-router.sh installs it with apt-get")
        # What a killed kube-router of this cluster left behind would be taken for live state.
        remove_firewall_state()
        health_port = free_port()
        offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        self.process.spawn([
            str(bin_dir / BINARY), f"--kubeconfig={self.cluster.kubeconfig}", f"--hostname-override={self.node}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false",
            f"--service-cluster-ip-range={self.cluster.network.service_cidr}",
            "--health-addr=127.0.0.1", f"--health-port={health_port}", "--metrics-port=0", "--v=1",
        ], cwd=self.cluster.directory, env={**os.environ, "PATH": SBIN_PATH})
        self._node_file.write_text(self.node)
        self._wait_synced(offset, health_port, timeout)

    def _wait_synced(self, offset: int, health_port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise self.process.exited("kube-router's firewall")
            with self.log_file.open("rb") as log_file:
                log_file.seek(offset)
                synced = FIRST_SYNC.encode() in log_file.read()
            if synced and firewall_chains() and _healthy(health_port):
                return
            time.sleep(0.3)
        raise ClusterError(f"kube-router's firewall did not apply the cluster's NetworkPolicies within "
                           f"{timeout:.0f}s; see {self.log_file}:\n{tail(self.log_file)}")

    def stop(self, timeout: float = 15.0) -> None:
        """Stops it and removes what its firewall made, unless another kube-router runs here (then its state is
        that one's)."""
        stop_firewall(self.cluster.directory, timeout)

    def status(self) -> str:
        return describe(self.pid(), f", firewalling {self.running_node()}")


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--node", default="real-0", help="up: the real node whose pods are firewalled (real-0)")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        cluster = LocalCluster(args.dir)
        enforcer = NetworkPolicyEnforcer(cluster, args.node)
        if args.command == "up":
            enforcer.start()
            log(f"kube-router's firewall enforces NetworkPolicies for the pods of {args.node} (pid {enforcer.pid()});"
                f" log: {enforcer.log_file}")
            unguarded = [name for name in cluster.node_names if name != args.node]
            if unguarded:
                log(f"WARNING: pods on {', '.join(unguarded)} are not firewalled (one kube-router per machine); "
                    f"pin pods that must be isolated to {args.node} (kubernetes.io/hostname={args.node})")
        elif args.command == "down":
            enforcer.stop()
            log("stopped; its iptables chains and ipsets are removed")
        else:
            print(f"{BINARY:26} {enforcer.status()}")
            left = firewall_chains() + firewall_ipsets()
            print(f"{'firewall state':26} {', '.join(left) if left else 'none'}")

    return run_cli(command, log)
