"""What kube-router's firewall leaves in the host's iptables and ipsets, and how it is removed: apart from
network_policy.py (which runs it) so that the cluster's own `down` can stop it and clean up without importing the
cluster module back."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from ..host import running_binaries
from ..supervisor import ClusterError
from .process import AddOnProcess

BINARY = "kube-router"
# What kube-router's firewall names (its netpol controller's constants): the three top-level chains jumped to from
# INPUT, FORWARD and OUTPUT, per-pod and per-policy chains, and per-policy and local-pod ipsets.
CHAIN_PREFIXES = ("KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-")
IPSET_PREFIXES = ("KUBE-SRC-", "KUBE-DST-", "kube-router-")
SBIN_PATH = "/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(args), capture_output=True, text=True, check=False, timeout=60,
                            env={**os.environ, "PATH": SBIN_PATH})
    if check and result.returncode != 0:
        raise ClusterError(f"{' '.join(args)} failed: {result.stderr.strip()}")
    return result


def _families() -> list[str]:
    """The iptables programs present: kube-router programs IPv4 only here, but a dual-stack run would use both."""
    return [tool for tool in ("iptables", "ip6tables") if shutil.which(f"{tool}-save", path=SBIN_PATH)]


def firewall_chains() -> list[str]:
    """kube-router's chains in the host's filter tables (IPv4 and IPv6), as `family:chain`."""
    found = []
    for family in _families():
        saved = _run(f"{family}-save", "-t", "filter", check=False).stdout
        found += [f"{family}:{line[1:].split()[0]}" for line in saved.splitlines()
                  if line.startswith(":") and line[1:].startswith(CHAIN_PREFIXES)]
    return found


def firewall_ipsets() -> list[str]:
    if shutil.which("ipset", path=SBIN_PATH) is None:
        return []
    names = _run("ipset", "list", "-n", check=False).stdout.split()
    return [name for name in names if name.startswith(IPSET_PREFIXES)]


def remove_firewall_state() -> None:
    """Every chain and ipset of kube-router's firewall: first the rules of other chains that jump into its chains or
    match its ipsets, then its chains (emptied, then deleted), then its ipsets, which iptables no longer references.
    Idempotent."""
    for family in _families():
        saved = _run(f"{family}-save", "-t", "filter", check=False).stdout
        ours = {line[1:].split()[0] for line in saved.splitlines()
                if line.startswith(":") and line[1:].startswith(CHAIN_PREFIXES)}
        for line in saved.splitlines():
            if not line.startswith("-A "):
                continue
            rule = shlex.split(line)
            if rule[1] not in ours and any(word in ours or word.startswith(IPSET_PREFIXES) for word in rule[2:]):
                _run(family, "-w", "-t", "filter", "-D", *rule[1:])
        for chain in sorted(ours):
            _run(family, "-w", "-t", "filter", "-F", chain)
        for chain in sorted(ours):
            _run(family, "-w", "-t", "filter", "-X", chain)
    for name in firewall_ipsets():
        _run("ipset", "destroy", name)
    left = firewall_chains() + firewall_ipsets()
    if left:
        raise ClusterError(f"kube-router's firewall state is still there after clean-up: {', '.join(left)}")


def stop_firewall(directory: Path, timeout: float = 15.0) -> None:
    """Stops the kube-router of the cluster in `directory`, if it ran, and removes what its firewall made unless
    another kube-router runs here (then that state is the other one's)."""
    process = AddOnProcess(directory, BINARY)
    if process.pid() is None and not process.pid_file.exists():
        return
    process.stop(timeout)
    (directory / "run" / f"{BINARY}.node").unlink(missing_ok=True)
    if not running_binaries(BINARY):
        remove_firewall_state()
