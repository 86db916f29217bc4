"""One job of thousands of replicas with the operator under the Deployment's own memory limit, enforced by a
cgroup v1 memory cgroup made for the process (the machine mounts cgroup v1; RLIMIT_AS would count the address space
Python and its threads reserve but never touch, not memory in use, which is what a pod's limit counts).

Every pod carries a TF_CONFIG listing all the replicas, so the job's pods hold replicas² bytes between them; the
operator must not: it builds pod bodies as it sends them and caches only what it plans with. Before that design, a
job of 2,000 replicas took 779 MB. Meanwhile a canary job in another namespace still runs and finishes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, create_job, pods_by_name, replica
from support.waiting import DEADLINE, wait_for
from tfop import yamlio
from tfop.kube.client import KubeClient
from tfop.kube.resource import NAMESPACES

REPO = Path(__file__).resolve().parents[2]
MEMORY_CGROUPS = Path("/sys/fs/cgroup/memory")
REPLICAS = 2000  # a Chief and 1999 workers: the code before the lazy pod bodies peaked at 738 MB here
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def deployment_memory_limit() -> int:
    """The memory limit the Helm chart gives the operator (test_deploy checks the kustomize base says the same)."""
    values = yamlio.load((REPO / "deploy" / "helm" / "tfop" / "values.yaml").read_text())
    quantity = str(values["resources"]["limits"]["memory"])
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", quantity)
    assert match, f"cannot read the memory limit {quantity!r}"
    return int(match.group(1)) * UNITS[match.group(2)]


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    """A memory cgroup limited to the Deployment's limit, removed afterwards; first proven to kill a process that
    goes over it, so the test cannot pass on a limit that is not enforced."""
    assert (MEMORY_CGROUPS / "memory.limit_in_bytes").exists(), (
        f"no cgroup v1 memory controller at {MEMORY_CGROUPS}: this test needs one (and root) to limit the operator")
    path = MEMORY_CGROUPS / f"tfop-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        limit = deployment_memory_limit()
        (path / "memory.limit_in_bytes").write_text(str(limit))
        hog = subprocess.run(["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(path / "cgroup.procs"), sys.executable,
                              "-c", f"b = b'x' * {limit * 2}"], check=False, capture_output=True)
        assert hog.returncode == -signal.SIGKILL, f"the cgroup's limit is not enforced: {hog}"
        (path / "memory.max_usage_in_bytes").write_text("0")  # forget the hog's peak
        yield path
    finally:
        for pid in (path / "cgroup.procs").read_text().split():  # only our operator can be left in it
            os.kill(int(pid), signal.SIGKILL)
        wait_for(lambda: not (path / "cgroup.procs").read_text().strip(), DEADLINE, "the cgroup to empty")
        path.rmdir()


def running_pods(cluster: LocalCluster, namespace: str) -> int:
    """Pods Running in `namespace`, counted from the apiserver's table (kubectl get), which leaves the pods' large
    specs on the server."""
    table = cluster.kubectl("get", "pods", "-n", namespace, "--no-headers", "--chunk-size=1000").stdout
    return sum(1 for line in table.splitlines() if line.split()[2:3] == ["Running"])


# 2,000 replicas: its call took 560 s in a cold make test on 2 cores, too near the integration suite's 15 minutes.
@pytest.mark.time_limit(1800)
def test_big_job_under_the_deployments_memory_limit(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, memory_cgroup: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    began = time.monotonic()
    # A short namespace of its own: every pod lists every replica's address, which names the namespace.
    big = f"big-{uuid.uuid4().hex[:6]}"
    kube_client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": big}})
    try:
        wait_for(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", big, check=False).returncode == 0,
                 DEADLINE, f"the default ServiceAccount in {big}")
        operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", big,
                                   "--namespace", namespace, cgroup=memory_cgroup).start()
        assert operator.process is not None
        create_job(kube_client, big, "big", Chief=replica(), Worker=replica(REPLICAS - 1))
        create_job(kube_client, namespace, "canary", Chief=replica(), Worker=replica())
        wait_for(lambda: condition(kube_client, namespace, "canary", "Running"), DEADLINE,
                 "the canary to run while the big job's children are being created")

        process = operator.process

        def big_job_runs() -> bool:
            assert process.poll() is None, (f"the operator exited with {process.returncode} (-9: killed at the "
                                            f"memory limit):\n{operator.log_tail()}")
            return condition(kube_client, big, "big", "Running") is not None

        wait_for(big_job_runs, 900, f"all {REPLICAS} replicas of the big job to run", interval=2)
        assert running_pods(cluster, big) == REPLICAS

        chief = next(name for name in pods_by_name(kube_client, namespace, "canary") if "-chief-" in name)
        exit_pod(kube_client, namespace, chief, 0)
        wait_for(lambda: condition(kube_client, namespace, "canary", "Succeeded"), DEADLINE, "the canary to succeed")

        peak = int((memory_cgroup / "memory.max_usage_in_bytes").read_text())
        hwm = next(int(line.split()[1]) * 1024 for line in
                   Path(f"/proc/{operator.process.pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
        limit = int((memory_cgroup / "memory.limit_in_bytes").read_text())
        with capsys.disabled():
            print(f"\nbig job: {REPLICAS} replicas running in {time.monotonic() - began:.0f} s under a "
                  f"{limit / 2**20:.0f} MiB limit; operator peak RSS {hwm / 2**20:.0f} MiB, cgroup peak "
                  f"{peak / 2**20:.0f} MiB")
        assert operator.process.poll() is None
        assert "Traceback" not in operator.log_path.read_text(errors="replace")
        operator.terminate()
        # The job's own spec, status and the canary's: nothing of the big job's was left behind in the work queue.
        assert kube_client.get(TFJOBS, "big", big)["status"]["replicaStatuses"]["Worker"]["active"] == REPLICAS - 1
    finally:
        cluster.kubectl("delete", "namespace", big, "--wait=false", check=False)
