"""A job's NetworkPolicy enforced on the real nodes: kube-router's firewall (hack/localcluster/addons/network_policy.py)
turns tfop's policy into iptables rules, a pod of another job is then refused by an isolated job's pods, the
isolated job's own pods still reach each other, and the same connection to a job without the annotation goes
through. Every connection is a real TCP connection over the nodes' bridge; the probes print what they saw."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.addons.firewall_state import firewall_chains, firewall_ipsets
from localcluster.addons.network_policy import NetworkPolicyEnforcer
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, job_pods, shell_container, tfjob
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

PORT = 2222
FIREWALLED = "real-0"  # the node whose pods the firewall guards
OTHER = "real-1"  # where the connecting pod of the other job runs: the blocked connection crosses nodes
# A TensorFlow server's stand-in: answers every connection to the job's port with who it is.
SERVER = (f"mkdir -p /tmp/www && echo \"$(hostname) answered\" > /tmp/www/index.html && "
          f"exec httpd -f -p {PORT} -h /tmp/www")


def probe(label: str, target: str) -> str:
    """One connection attempt as a shell snippet: prints `label: ALLOWED (answer)` or `label: BLOCKED (error)`.
    `timeout` bounds it, as busybox's own `wget -T` crashes in this build."""
    return (f"if out=$(timeout 5 wget -q -O - http://{target}:{PORT}/ 2>&1); then echo \"{label}: ALLOWED ($out)\"; "
            f"else echo \"{label}: BLOCKED (${{out:-no answer in 5 s}})\"; fi")


def pinned(job: dict[str, Any], node: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The job with every pod on `node`, and the annotations given."""
    for replica in job["spec"]["tfReplicaSpecs"].values():
        replica["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"] = node
    if annotations:
        job["metadata"]["annotations"] = annotations
    return job


def running_pods(cluster: LocalCluster, namespace: str, job: str, count: int) -> list[dict[str, Any]]:
    def ready() -> list[dict[str, Any]] | None:
        pods = [p for p in job_pods(cluster, namespace, job)
                if p["status"].get("phase") == "Running" and p["status"].get("podIP")]
        return pods if len(pods) == count else None
    return wait_for(ready, timeout=DEADLINE, message=f"{count} running pods of {job} with addresses",
                    interval=KUBECTL_INTERVAL)


def filter_table() -> str:
    return subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True, check=True).stdout


def logs(cluster: LocalCluster, namespace: str, pod: str) -> str:
    return cluster.kubectl("logs", "-n", namespace, pod, check=False).stdout


@pytest.fixture
def enforcer(real_node: LocalCluster) -> Iterator[NetworkPolicyEnforcer]:
    """kube-router's firewall for real-0, started for the test; stopped afterwards, leaving no chain or ipset."""
    firewall = NetworkPolicyEnforcer(real_node, FIREWALLED)
    firewall.start()
    try:
        yield firewall
    finally:
        firewall.stop()
    assert firewall_chains() == [] and firewall_ipsets() == [], "kube-router's firewall state outlived it"


def test_a_pod_of_another_job_is_refused_by_an_isolated_job_whose_own_pods_still_connect(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str,
        enforcer: NetworkPolicyEnforcer) -> None:
    # Job "isolated": a worker serving the job's port, and a chief that connects to it through its Service's DNS
    # name (from TF_CONFIG) every 2 s, saying when. Job "open": the same worker, without the annotation.
    worker_host = "$(echo \"$TF_CONFIG\" | sed -n 's/.*\"worker\":\\[\"\\([^:\"]*\\):.*/\\1/p')"
    chief = (f"while true; do t=$(date +%s); r=$({probe('isolated chief -> isolated worker', worker_host)}); "
             "echo \"at $t $r\"; sleep 2; done")
    apply(real_node, namespace, pinned(tfjob("isolated", {
        "Chief": {"restartPolicy": "Never", "spec": {"containers": [shell_container(busybox, chief)]}},
        "Worker": {"restartPolicy": "Never", "spec": {"containers": [shell_container(busybox, SERVER)]}},
    }), FIREWALLED, {"tfop.kubeflow.org/network-policy": "Isolated"}))
    apply(real_node, namespace, pinned(tfjob("open", {
        "Worker": {"restartPolicy": "Never", "spec": {"containers": [shell_container(busybox, SERVER)]}},
    }), FIREWALLED))
    isolated = {p["metadata"]["labels"]["training.kubeflow.org/replica-type"]: p
                for p in running_pods(real_node, namespace, "isolated", 2)}
    [open_worker] = running_pods(real_node, namespace, "open", 1)
    policies = real_node.kubectl("get", "networkpolicies", "-n", namespace, "-o", "name").stdout.split()
    assert len(policies) == 1 and policies[0].startswith("networkpolicy.networking.k8s.io/isolated-"), policies

    # The firewall guards a pod once it has a chain for it (kube-router names the pod in the jump's comment).
    wait_for(lambda: all(f"POD name:{p['metadata']['name']} " in filter_table() for p in isolated.values()),
             timeout=DEADLINE, message="kube-router's chains for the isolated job's pods", interval=KUBECTL_INTERVAL)
    covered_at = int(time.time()) + 1

    isolated_ip, open_ip = isolated["worker"]["status"]["podIP"], open_worker["status"]["podIP"]
    prober = " ; ".join([probe(f"other job on {OTHER} -> isolated worker {isolated_ip}", isolated_ip),
                         probe(f"other job on {OTHER} -> open worker {open_ip}", open_ip)])
    apply(real_node, namespace, pinned(tfjob("other", {
        "Worker": {"restartPolicy": "Never", "spec": {"containers": [shell_container(busybox, prober)]}},
    }), OTHER))

    def finished_probe() -> str | None:
        pods = [p for p in job_pods(real_node, namespace, "other") if p["status"].get("phase") == "Succeeded"]
        return logs(real_node, namespace, pods[0]["metadata"]["name"]) if pods else None
    other = wait_for(finished_probe, timeout=DEADLINE, message="the other job's probes", interval=KUBECTL_INTERVAL)

    def chief_probe_after_cover() -> str | None:
        for line in logs(real_node, namespace, isolated["chief"]["metadata"]["name"]).splitlines():
            match = re.match(r"at (\d+) (.*)", line)
            # Until its worker's Service name resolves the chief cannot try (that is DNS, not the firewall: a name
            # looked up before the Service had endpoints stays unknown for CoreDNS's 30 s cache).
            if match and int(match.group(1)) >= covered_at and "bad address" not in match.group(2):
                return match.group(2)
        return None
    own = wait_for(chief_probe_after_cover, timeout=DEADLINE, message="the isolated chief's probe under the firewall",
                   interval=KUBECTL_INTERVAL)

    attempts = [line for line in other.splitlines() if line.startswith(f"other job on {OTHER} -> ")]
    print("\n" + "\n".join([own, *attempts]))
    assert re.fullmatch(r"isolated chief -> isolated worker: ALLOWED \(\S+ answered\)", own), own
    blocked, allowed = attempts
    assert blocked.startswith(f"other job on {OTHER} -> isolated worker {isolated_ip}: BLOCKED"), other
    assert re.fullmatch(rf"other job on {OTHER} -> open worker {re.escape(open_ip)}: ALLOWED \(\S+ answered\)",
                        allowed), other
