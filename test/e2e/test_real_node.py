"""TFJobs on the real node: kubelet runs the pods, containers exit with real codes, the kernel OOM-kills under a
real memory limit, kubelet restarts in place, `kubectl logs` reads what the containers wrote, and pods find each
other through their headless Services' DNS names. tfop runs as a process on the host (loopback)."""

from __future__ import annotations

import hashlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localcluster import LocalCluster
from localcluster.host import bridge_mac, bridge_owner, delete_bridge
from localcluster.node_layout import SLOTS
from localcluster.slots import claim_slot, release_slot
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, shell_container, tfjob, wait_for_condition
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for


def marker_volume(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A host directory the pod sees at /marker: it outlives a recreated pod, so a script can tell its first run
    from its second."""
    directory = tmp_path / "marker"
    directory.mkdir()
    return ({"name": "marker", "hostPath": {"path": str(directory), "type": "Directory"}},
            {"name": "marker", "mountPath": "/marker"})


def terminated(pod: dict[str, Any]) -> dict[str, Any]:
    [status] = [s for s in pod["status"].get("containerStatuses", []) if s["name"] == "tensorflow"]
    return status["state"].get("terminated") or {}


def host_pid(cluster: LocalCluster, container_id: str) -> int:
    """The container's main process as the host sees it (containerd's task list)."""
    for node in cluster.nodes:
        for line in node.ctr("tasks", "list").stdout.splitlines()[1:]:
            task, pid, _ = line.split()
            if task == container_id:
                return int(pid)
    raise AssertionError(f"no task {container_id} in containerd")


def running_pod(cluster: LocalCluster, namespace: str, job: str, log_line: str) -> dict[str, Any]:
    """The job's only pod, once its container runs and has written `log_line`."""
    def ready() -> dict[str, Any] | None:
        pods = [p for p in job_pods(cluster, namespace, job) if p["status"].get("phase") == "Running"]
        if len(pods) == 1 and log_line in cluster.kubectl("logs", "-n", namespace, pods[0]["metadata"]["name"],
                                                          check=False).stdout:
            return pods[0]
        return None
    return wait_for(ready, timeout=DEADLINE, message=f"a running pod of {job} that logged {log_line!r}",
                    interval=KUBECTL_INTERVAL)


def test_a_replica_exiting_1_fails_the_job_and_kubectl_logs_shows_its_output(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str) -> None:
    apply(real_node, namespace, tfjob("exit-one", {"Chief": {"restartPolicy": "ExitCode", "spec": {
        "containers": [shell_container(busybox, "echo 'step 1: loss 0.5'; echo giving up >&2; exit 1")]}}}))
    job = wait_for_condition(real_node, namespace, "exit-one", {"Failed", "Succeeded"})
    [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed["status"] == "True", job["status"]
    [pod] = job_pods(real_node, namespace, "exit-one")
    assert pod["spec"]["nodeName"] in real_node.node_names
    assert terminated(pod)["exitCode"] == 1 and pod["status"]["phase"] == "Failed"
    logs = real_node.kubectl("logs", "-n", namespace, pod["metadata"]["name"]).stdout
    # (stdout and stderr are separate streams; the log orders them by kubelet's timestamps, which may tie.)
    assert sorted(logs.splitlines()) == ["giving up", "step 1: loss 0.5"]


def test_a_sigkilled_replica_is_recreated_and_the_job_then_succeeds(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    volume, mount = marker_volume(tmp_path)
    script = ("if [ -e /marker/ran ]; then echo second run; exit 0; fi; touch /marker/ran; echo first run; "
              "exec sleep 600")
    apply(real_node, namespace, tfjob("sigkill", {"Chief": {"restartPolicy": "ExitCode", "spec": {
        "volumes": [volume], "containers": [shell_container(busybox, script, volumeMounts=[mount])]}}}))
    first = running_pod(real_node, namespace, "sigkill", "first run")
    container_id = first["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    os.kill(host_pid(real_node, container_id), signal.SIGKILL)

    job = wait_for_condition(real_node, namespace, "sigkill", {"Failed", "Succeeded"})
    assert {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"} >= {"Succeeded"}, job["status"]
    assert job["status"]["replicaStatuses"]["Chief"]["restarts"] == 1
    [pod] = job_pods(real_node, namespace, "sigkill")
    assert pod["metadata"]["uid"] != first["metadata"]["uid"], "the pod was recreated"
    assert terminated(pod)["exitCode"] == 0
    events = real_node.kubectl("get", "events", "-n", namespace, "--field-selector",
                               "involvedObject.kind=TFJob").stdout
    assert "TFJobRestarting" in events and "137" in events


def test_an_oom_killed_replica_exits_137_is_recreated_and_the_job_then_succeeds(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    volume, mount = marker_volume(tmp_path)
    # dd allocates and fills a 256 MiB buffer: far over the 32 MiB limit, so the kernel OOM-kills it at once.
    script = ("if [ -e /marker/ran ]; then echo second run; exit 0; fi; touch /marker/ran; echo allocating; "
              "exec dd if=/dev/zero of=/dev/null bs=256M count=1")
    limits = {"resources": {"limits": {"memory": "32Mi"}, "requests": {"memory": "32Mi"}}}
    apply(real_node, namespace, tfjob("oom", {"Chief": {"restartPolicy": "ExitCode", "spec": {
        "volumes": [volume], "containers": [shell_container(busybox, script, volumeMounts=[mount], **limits)]}}}))

    seen: dict[str, Any] = {}

    def oom_killed() -> bool:
        for pod in job_pods(real_node, namespace, "oom"):
            state = terminated(pod) if pod["status"].get("containerStatuses") else {}
            if state.get("reason") == "OOMKilled":
                seen.update(state)
                return True
        return "Succeeded" in {c["type"] for c in get(real_node, namespace, "tfjob", "oom")
                               .get("status", {}).get("conditions", []) if c["status"] == "True"}
    wait_for(oom_killed, timeout=DEADLINE, message="the first pod to be OOM-killed (or the job to succeed)",
             interval=KUBECTL_INTERVAL)
    job = wait_for_condition(real_node, namespace, "oom", {"Failed", "Succeeded"})
    assert {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"} >= {"Succeeded"}, job["status"]
    assert job["status"]["replicaStatuses"]["Chief"]["restarts"] == 1
    events = real_node.kubectl("get", "events", "-n", namespace, "--field-selector",
                               "involvedObject.kind=TFJob").stdout
    assert "TFJobRestarting" in events and "137" in events
    if seen:  # the first pod may be gone before a poll sees it; when seen, the kernel's verdict is exact
        assert seen["exitCode"] == 137 and seen["reason"] == "OOMKilled"


def test_onfailure_restarts_in_place_are_made_by_kubelet_and_counted(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    volume, mount = marker_volume(tmp_path)
    script = ("n=$(($(cat /marker/count 2>/dev/null || echo 0) + 1)); echo $n > /marker/count; echo run $n; "
              "[ $n -ge 3 ] && exit 0; exit 1")
    apply(real_node, namespace, tfjob("in-place", {"Chief": {"restartPolicy": "OnFailure", "spec": {
        "volumes": [volume], "containers": [shell_container(busybox, script, volumeMounts=[mount])]}}}))
    job = wait_for_condition(real_node, namespace, "in-place", {"Failed", "Succeeded"})
    assert {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"} >= {"Succeeded"}, job["status"]
    [pod] = job_pods(real_node, namespace, "in-place")
    # One pod all along: kubelet restarted its container twice, and tfop counted both restarts.
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 2
    assert job["status"]["replicaStatuses"]["Chief"]["restarts"] == 2
    # (`kubectl logs --previous` is no use here: kubelet removes a finished pod's earlier containers.)
    assert real_node.kubectl("logs", "-n", namespace, pod["metadata"]["name"]).stdout.strip() == "run 3"


def test_replicas_reach_each_other_by_their_headless_service_names(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str) -> None:
    """The chief reads the worker's address from TF_CONFIG, resolves it through CoreDNS and talks to it."""
    bridge = Path("/sys/class/net") / real_node.network.bridge
    # The gateway's (CoreDNS's) MAC was set, so pods joining the bridge do not change it under the others' ARP
    # entries (a Linux bridge left alone takes its ports' lowest; 3 is NET_ADDR_SET).
    assert ((bridge / "address").read_text().strip(), (bridge / "addr_assign_type").read_text().strip()) == (
        bridge_mac(real_node.network.bridge), "3")
    worker = "echo hello-from-worker | nc -l -p 2222; sleep 600"
    chief = (
        'host=$(echo "$TF_CONFIG" | sed -n \'s/.*"worker": *\\["\\([^":]*\\):.*/\\1/p\'); echo "worker is $host"; '
        # (busybox's nslookup takes the name as given; its resolver, like TensorFlow's, applies the search list.)
        'for i in $(seq 1 60); do nslookup "$host.cluster.local" >/dev/null 2>&1 && break; sleep 0.5; done; '
        'nslookup "$host.cluster.local"; answer=$(nc "$host" 2222 </dev/null); echo "worker said $answer"; '
        '[ "$answer" = hello-from-worker ]'
    )
    apply(real_node, namespace, tfjob("dns", {
        "Chief": {"restartPolicy": "Never", "spec": {"containers": [shell_container(busybox, chief)]}},
        "Worker": {"restartPolicy": "Never", "spec": {"containers": [shell_container(
            busybox, worker, ports=[{"name": "tfjob-port", "containerPort": 2222}])]}},
    }))
    job = wait_for_condition(real_node, namespace, "dns", {"Failed", "Succeeded"})
    [chief_pod] = [p for p in job_pods(real_node, namespace, "dns")
                   if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "chief"]
    logs = real_node.kubectl("logs", "-n", namespace, chief_pod["metadata"]["name"]).stdout
    assert {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"} >= {"Succeeded"}, logs
    assert "worker said hello-from-worker" in logs
    [worker_pod] = [p for p in job_pods(real_node, namespace, "dns") if p is not chief_pod
                    and p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker"]
    assert f"Address: {worker_pod['status']['podIP']}" in logs, logs
    assert (bridge / "address").read_text().strip() == bridge_mac(real_node.network.bridge)


def test_a_second_cluster_runs_its_own_node_beside_and_leaves_nothing_behind(
        real_node: LocalCluster, cluster_dir: Callable[[str], Path]) -> None:
    """Two clusters at once (a test session beside a developer's): another slot, so another bridge, addresses,
    cgroup roots and sockets; the watchdog restarts a killed kubelet; `down` undoes every host change."""
    other = LocalCluster(cluster_dir("c2"), real_nodes=1)
    try:
        other.up()
        assert other.slot != real_node.slot
        assert other.network.bridge != real_node.network.bridge
        assert other.status()["node real-0"] == "Ready"
        killed = other.pid("real-0-kubelet")
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        wait_for(lambda: other.pid("real-0-kubelet") not in (None, killed), timeout=DEADLINE,
                 message="the watchdog to restart the killed kubelet", interval=KUBECTL_INTERVAL)
        node = other.node("real-0")
        other.down()  # a hang here fails the test by its time limit, naming it, with every thread's stack
        assert node.leftovers() == [] and other.pods_network.leftovers() == []
        # The session's own nodes are untouched.
        assert {real_node.status()[f"node {name}"] for name in real_node.node_names} == {"Ready"}
    finally:
        other.destroy()


def test_two_clusters_starting_at_once_with_one_first_choice_take_two_slots(cluster_dir: Callable[[str], Path]) -> None:
    """Two test lanes start a cluster each at the same moment, and their directories hash to the same first slot:
    the slot is picked and its bridge claimed under one lock, so the second sees the first's bridge and moves on
    (picked apart, both took one slot, and the loser's teardown removed the winner's node cgroups)."""
    root = cluster_dir("slots")
    by_first_slot: dict[int, Path] = {}
    for index in range(SLOTS + 1):  # pigeonhole: two of 17 directories share a first choice
        directory = (root / f"c{index}").resolve()
        directory.mkdir()  # a claim names a live cluster's directory
        first = int(hashlib.sha256(str(directory).encode()).hexdigest(), 16) % SLOTS
        if first in by_first_slot:
            pair = [LocalCluster(by_first_slot[first]), LocalCluster(directory)]
            break
        by_first_slot[first] = directory
    start = threading.Barrier(len(pair))
    errors: list[BaseException] = []

    def claim(cluster: LocalCluster) -> None:
        start.wait()
        try:
            cluster.slot = claim_slot(cluster.directory, cluster.slot, True)
        except BaseException as error:  # noqa: BLE001 - reported below, with the other thread's outcome
            errors.append(error)

    threads = [threading.Thread(target=claim, args=(cluster,)) for cluster in pair]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert pair[0].slot != pair[1].slot
        assert [bridge_owner(c.network.bridge) for c in pair] == [str(c.directory) for c in pair]
    finally:
        for cluster in pair:
            if cluster.slot is not None:
                delete_bridge(cluster.network.bridge, str(cluster.directory))
                release_slot(cluster.directory, cluster.slot)
