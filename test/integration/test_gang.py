"""Gang scheduling against the real apiserver and the real co-scheduler (scheduler-plugins' Coscheduling), on a
kwok node of 8 GPUs of its own (tainted, so no other test's pods land there): two jobs that each need 6 GPUs
deadlock without gang scheduling and run one after the other with it. Volcano's scheduler is not built here, so
the test plays its part by setting the PodGroup's phase."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.addons.coscheduler import VOLCANO_CRD, CoScheduler, install_volcano_crd
from support.gang import (
    GPU,
    PLUGIN_GROUPS,
    TAINT,
    VOLCANO_GROUPS,
    bound,
    gpu_replica,
    make_priority_classes,
    pods_of,
    running,
)
from support.namespaces import exists
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, events_about, job_status, pods_by_name
from support.waiting import DEADLINE, consistently, wait_for
from tfop import yamlio
from tfop.kube.client import KubeClient
from tfop.kube.errors import Invalid
from tfop.kube.resource import EVENTS, PODS

# ---------------------------------------------------------------- helpers (gang_node, coscheduler, operators: conftest)

def six_gpu_job(name: str, node: str, run_policy: dict[str, Any] | None = None,
                by_role: bool = True) -> dict[str, Any]:
    """3 workers and 3 PS: 6 GPUs in all. `by_role`: the workers have the higher priority, as many teams set it, so
    the default scheduler places every job's workers first. Without it all six have the same priority."""
    spec: dict[str, Any] = {"tfReplicaSpecs": {
        "Worker": gpu_replica(node, 3, priority_class="tfop-gang-high" if by_role else None),
        "PS": gpu_replica(node, 3, priority_class="tfop-gang-low" if by_role else None)}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def blocker(client: KubeClient, namespace: str, node: str) -> str:
    """A pod holding all 8 GPUs, so both jobs' pods are all Pending before any is placed (of a higher priority
    than theirs, or the scheduler would preempt it for them)."""
    client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "blocker"}, "spec": {
        "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {GPU: 8}}}],
        "priorityClassName": "tfop-gang-blocker",
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}]}}, namespace)
    wait_for(lambda: client.get(PODS, "blocker", namespace).get("status", {}).get("phase") == "Running", DEADLINE,
             "the blocker pod to run")
    return "blocker"


# ---------------------------------------------------------------- the problem, and the cure

def test_without_gang_scheduling_two_six_gpu_jobs_both_start_partially_and_neither_runs(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        operators: Callable[..., OperatorProcess]) -> None:
    operators().start()
    blocker(kube_client, namespace, gang_node)
    for job in ("job-a", "job-b"):
        kube_client.create(TFJOBS, six_gpu_job(job, gang_node), namespace)
    wait_for(lambda: all(len(pods_of(kube_client, namespace, job)) == 6 for job in ("job-a", "job-b")), DEADLINE,
             "both jobs' 6 pods to exist (Pending: the blocker holds every GPU)")
    kube_client.delete(PODS, "blocker", namespace)

    def running_pods() -> list[str]:
        return [pod["metadata"]["name"] for job in ("job-a", "job-b") for pod in pods_of(kube_client, namespace, job)
                if pod.get("status", {}).get("phase") == "Running"]

    # The node can be full before it settles: PS pods placed before some workers are preempted by them (workers
    # have the higher priority), so one running pod goes and another comes. Settled is every worker running and
    # the two GPUs left to PS: from there no pending pod (a PS) outranks a running one, so nothing moves.
    def settled() -> bool:
        names = running_pods()
        return len(names) == 8 and sum("-worker-" in name for name in names) == 6

    wait_for(settled, DEADLINE, "the default scheduler to fill the node's 8 GPUs, all 6 workers first")
    consistently(lambda: len(running_pods()) == 8, 5, "8 running pods (nothing more can be placed: every GPU is taken)")
    counts = {job: running(pods_of(kube_client, namespace, job)) for job in ("job-a", "job-b")}
    preempted = [event["involvedObject"]["name"] for event in kube_client.list(EVENTS, namespace)[0]
                 if event.get("reason") == "Preempted"]
    print(f"without gang scheduling: running pods per job {counts} (each needs 6); PS preempted by workers: "
          f"{preempted}")
    assert sum(counts.values()) == 8
    assert all(0 < count < 6 for count in counts.values()), f"both jobs hold GPUs, neither runs whole: {counts}"
    # A job's first status, while it waits, is held up to 5 s (applier.STATUS_HOLD_SECONDS) in case it runs at
    # once: the message is waited for, not read once. A job one of whose PS the scheduler preempted has replaced
    # it, and Running says so (Restarting stays until every replica runs: policies/running.py) rather than waiting.
    for job in ("job-a", "job-b"):
        said = ("is waiting for", "whose pod was disrupted (PreemptionByScheduler)") \
            if any(name.startswith(f"{job}-ps-") for name in preempted) else ("is waiting for",)

        def says(job: str = job, said: tuple[str, ...] = said) -> bool:
            return any(words in running_message(kube_client, namespace, job) for words in said)

        def now(job: str = job) -> str:
            return running_message(kube_client, namespace, job)

        wait_for(says, DEADLINE, f"{job}'s Running condition to say it is waiting (or, preempted, restarting)",
                 explain=now)


def test_with_scheduler_plugins_one_job_runs_whole_then_the_other(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess]) -> None:
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    blocker(kube_client, namespace, gang_node)
    # One priority for all: with priorities by role, the waiting job's workers preempt the running job's PS (the
    # co-scheduler keeps the scheduler's default preemption, which knows no groups), and neither runs whole.
    for job in ("job-a", "job-b"):
        kube_client.create(TFJOBS, six_gpu_job(job, gang_node, by_role=False), namespace)
    wait_for(lambda: all(len(pods_of(kube_client, namespace, job)) == 6 for job in ("job-a", "job-b")), DEADLINE,
             "both jobs' 6 pods to exist")
    for job in ("job-a", "job-b"):
        group = kube_client.get(PLUGIN_GROUPS, job, namespace)
        assert group["spec"] == {"minMember": 6, "minResources": {GPU: "6"}}
        assert group["metadata"]["ownerReferences"][0]["name"] == job
        for pod in pods_of(kube_client, namespace, job):
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == job
    kube_client.delete(PODS, "blocker", namespace)

    def whole() -> str | None:
        for job in ("job-a", "job-b"):
            if running(pods_of(kube_client, namespace, job)) == 6:
                return job
        return None

    wait_for(lambda: whole() is not None, DEADLINE, "one job to run whole")
    first = whole()
    assert first is not None
    second = "job-b" if first == "job-a" else "job-a"
    # For a while (longer than the plugin's 10 s permit wait), no pod of the other job is ever bound.
    consistently(lambda: bound(pods_of(kube_client, namespace, second)) == 0, 20, f"no pod of {second} bound",
                 interval=0.5)
    counts = {first: running(pods_of(kube_client, namespace, first)),
              second: running(pods_of(kube_client, namespace, second))}
    print(f"with scheduler-plugins: running pods per job {counts}; bound pods of {second}: 0")
    assert counts == {first: 6, second: 0}
    wait_for(lambda: f"PodGroup {namespace}/{second}" in running_message(kube_client, namespace, second), DEADLINE,
             f"{second}'s Running condition to name its PodGroup")

    # The first finishes (worker 0 exits 0); its running pods and its PodGroup go, and the second runs whole.
    worker_0 = next(name for name, pod in pods_by_name(kube_client, namespace, first).items()
                    if "-worker-" in name and name.endswith("-0"))
    exit_pod(kube_client, namespace, worker_0, 0)
    wait_for(lambda: (condition(kube_client, namespace, first, "Succeeded") or {}).get("status") == "True", DEADLINE,
             f"{first} to succeed")
    wait_for(lambda: not exists(kube_client, PLUGIN_GROUPS, first, namespace), DEADLINE,
             f"{first}'s PodGroup to be deleted")
    wait_for(lambda: running(pods_of(kube_client, namespace, second)) == 6, DEADLINE, f"{second} to run whole")
    print(f"after {first} finished: {second} runs {running(pods_of(kube_client, namespace, second))} of 6")


def test_min_available_lets_a_job_start_with_that_many(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess]) -> None:
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "elastic"}, "spec": {
        "runPolicy": {"schedulingPolicy": {"minAvailable": 4, "scheduleTimeoutSeconds": 30}},
        "enableDynamicWorker": True, "tfReplicaSpecs": {"Worker": gpu_replica(gang_node, 6, gpus=2)}}}
    kube_client.create(TFJOBS, job, namespace)
    wait_for(lambda: running(pods_of(kube_client, namespace, "elastic")) == 4, DEADLINE, "4 of 6 workers to run")
    group = kube_client.get(PLUGIN_GROUPS, "elastic", namespace)
    assert group["spec"] == {"minMember": 4, "minResources": {GPU: "8"}, "scheduleTimeoutSeconds": 30}
    consistently(lambda: running(pods_of(kube_client, namespace, "elastic")) == 4, 3,
                 "4 running workers (8 GPUs: the other 2 wait)")


@pytest.mark.parametrize("backend", ["pods", "jobs"])
def test_suspend_deletes_the_pod_group_and_resume_makes_it_again(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess], backend: str) -> None:
    """With either replica backend: the Job backend's pods have the gang's scheduler and group from the Job's
    template, and a suspended job's Jobs are suspended (their pods go) and resumed."""
    operators("--gang-scheduler-name", "scheduler-plugins", "--replica-backend", backend).start()
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "pausable"}, "spec": {
        "runPolicy": {"schedulingPolicy": {"queue": "team-a"}},
        "tfReplicaSpecs": {"Worker": gpu_replica(gang_node, 2)}}}
    kube_client.create(TFJOBS, job, namespace)
    wait_for(lambda: running(pods_of(kube_client, namespace, "pausable")) == 2, DEADLINE, "both workers to run")
    for pod in pods_of(kube_client, namespace, "pausable"):
        assert pod["metadata"]["ownerReferences"][0]["kind"] == ("Job" if backend == "jobs" else "TFJob")
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "pausable"
    first_uid = kube_client.get(PLUGIN_GROUPS, "pausable", namespace)["metadata"]["uid"]

    # The queue may not change while the job runs (CEL), but may while it is suspended.
    with pytest.raises(Invalid, match=r"schedulingPolicy\.queue cannot change while the job runs"):
        kube_client.patch(TFJOBS, "pausable", {"spec": {"runPolicy": {"schedulingPolicy": {"queue": "team-b"}}}},
                          namespace)
    kube_client.patch(TFJOBS, "pausable", {"spec": {"runPolicy": {"suspend": True}}}, namespace)
    wait_for(lambda: not exists(kube_client, PLUGIN_GROUPS, "pausable", namespace), DEADLINE,
             "the PodGroup to be deleted")
    wait_for(lambda: not pods_of(kube_client, namespace, "pausable"), DEADLINE, "the pods to be deleted")
    kube_client.patch(TFJOBS, "pausable", {"spec": {"runPolicy": {"schedulingPolicy": {"queue": "team-b"}}}},
                      namespace)
    kube_client.patch(TFJOBS, "pausable", {"spec": {"runPolicy": {"suspend": False}}}, namespace)
    wait_for(lambda: exists(kube_client, PLUGIN_GROUPS, "pausable", namespace), DEADLINE, "a new PodGroup")
    group = kube_client.get(PLUGIN_GROUPS, "pausable", namespace)
    assert group["metadata"]["uid"] != first_uid
    assert kube_client.get(TFJOBS, "pausable", namespace)["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "team-b"
    wait_for(lambda: running(pods_of(kube_client, namespace, "pausable")) == 2, DEADLINE, "both workers to run again")


def gang_events(client: KubeClient, namespace: str, job: str) -> list[dict[str, Any]]:
    return [event for event in events_about(client, namespace, job) if event.get("reason") == "GangUnschedulable"]


def wide_pod_group_column(cluster: LocalCluster, namespace: str, job: str) -> str:
    """The PodGroup column of `kubectl get tfjob JOB -o wide`, as a user reads it."""
    header, row = cluster.kubectl("get", "tfjob", job, "-n", namespace, "-o", "wide").stdout.splitlines()[:2]
    print(f"kubectl get tfjob {job} -o wide:\n{header}\n{row}")
    # By the header's offsets, as kubectl aligns the cells: an empty one (no phase yet) would shift a split().
    columns = [(m.group(), m.start()) for m in re.finditer(r"\S+", header)]
    at = [name for name, _ in columns].index("PODGROUP")
    end = columns[at + 1][1] if at + 1 < len(columns) else None
    return row[columns[at][1]:end].strip()


def test_the_controller_s_phases_show_and_an_unplaceable_gang_is_warned_once(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess]) -> None:
    """scheduler-plugins' controller writes the phases; a gang that fits runs without a GangUnschedulable event,
    one that can never fit (9 GPUs on a node of 8) gets exactly one."""
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    kube_client.create(TFJOBS, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "fits"},
                                "spec": {"tfReplicaSpecs": {"Worker": gpu_replica(gang_node, 2)}}}, namespace)
    # The co-scheduler places the gang and the controller counts its running pods: two more processes' pace.
    wait_for(lambda: wide_pod_group_column(cluster, namespace, "fits") == "Running", 300,
             "kubectl get tfjob -o wide to show the PodGroup Running", interval=1.0)  # kubectl: ~45 ms of CPU
    assert f"PodGroup {namespace}/fits is Running (minMember of its pods run)" in running_message(
        kube_client, namespace, "fits")

    kube_client.create(TFJOBS, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "too-big"},
                                "spec": {"tfReplicaSpecs": {"Worker": gpu_replica(gang_node, 3, gpus=3)}}}, namespace)
    events = wait_for(lambda: gang_events(kube_client, namespace, "too-big"), DEADLINE,
                      "a GangUnschedulable event about too-big")
    print(f"event: {events[0]['type']} {events[0]['reason']}: {events[0]['message']}")
    assert events[0]["type"] == "Warning"
    assert f"PodGroup {namespace}/too-big is Scheduling" in events[0]["message"], events[0]["message"]
    assert "[Unschedulable]" in events[0]["message"]
    assert wide_pod_group_column(cluster, namespace, "too-big") == "Scheduling"
    message = running_message(kube_client, namespace, "too-big")
    print(f"Running condition: {message}")
    assert "[GangUnschedulable]: the gang cannot be placed: 3 of its pods are unschedulable" in message
    # Once: the scheduler keeps retrying (each retry rewrites the pods' conditions and wakes the job), yet the
    # event is neither repeated nor counted up; and the job that fits never got one.
    consistently(lambda: [event.get("count", 1) for event in gang_events(kube_client, namespace, "too-big")] == [1]
                 and not gang_events(kube_client, namespace, "fits"), 15,
                 "one GangUnschedulable event, about too-big only")


# ---------------------------------------------------------------- Volcano, and no CRD at all

def test_volcano_pods_wait_while_the_pod_group_is_pending_and_appear_once_it_is_inqueue(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str,
        operators: Callable[..., OperatorProcess]) -> None:
    install_volcano_crd(cluster)
    make_priority_classes(kube_client)  # its pods name them; alone, no earlier test has made them
    operators("--gang-scheduler-name", "volcano").start()
    job = six_gpu_job("volcanic", "nowhere", run_policy={"schedulingPolicy": {"queue": "research"}})
    kube_client.create(TFJOBS, job, namespace)
    wait_for(lambda: exists(kube_client, VOLCANO_GROUPS, "volcanic", namespace), DEADLINE, "the PodGroup")
    group = kube_client.get(VOLCANO_GROUPS, "volcanic", namespace)
    assert group["spec"] == {"minMember": 6, "minResources": {GPU: "6"}, "queue": "research",
                             "priorityClassName": "tfop-gang-high"}
    # The scheduler would set Pending with its reason; the pods must not exist meanwhile.
    kube_client.patch(VOLCANO_GROUPS, "volcanic", {"status": {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
         "message": "6/6 tasks in gang unschedulable: 6 Insufficient nvidia.com/gpu"}]}}, namespace)
    wait_for(lambda: "6 Insufficient nvidia.com/gpu" in
             running_message(kube_client, namespace, "volcanic"), DEADLINE,
             "the job's status to say what Volcano reports")
    events = wait_for(lambda: gang_events(kube_client, namespace, "volcanic"), DEADLINE,
                      "a GangUnschedulable event quoting Volcano's condition")
    assert "6/6 tasks in gang unschedulable" in events[0]["message"], events[0]["message"]
    consistently(lambda: not pods_of(kube_client, namespace, "volcanic"), 3, "no pod before the group is Inqueue")
    kube_client.patch(VOLCANO_GROUPS, "volcanic", {"status": {"phase": "Inqueue"}}, namespace)
    wait_for(lambda: len(pods_of(kube_client, namespace, "volcanic")) == 6, DEADLINE, "the 6 pods once Inqueue")
    wait_for(lambda: "Inqueue" in cluster.kubectl("get", "tfjob", "volcanic", "-n", namespace, "-o", "wide").stdout,
             DEADLINE, "kubectl get tfjob -o wide to show the PodGroup's phase")
    for pod in pods_of(kube_client, namespace, "volcanic"):
        assert pod["spec"]["schedulerName"] == "volcano"
        annotations = pod["metadata"]["annotations"]
        assert annotations["scheduling.k8s.io/group-name"] == "volcanic"
        assert annotations["volcano.sh/task-spec"] == pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]


def test_without_the_pod_group_crd_the_operator_says_so_once_and_jobs_wait(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str,
        operators: Callable[..., OperatorProcess]) -> None:
    cluster.kubectl("delete", "crd", "podgroups.scheduling.volcano.sh", "--ignore-not-found")
    wait_for(lambda: cluster.kubectl("get", "crd", "podgroups.scheduling.volcano.sh", check=False).returncode != 0,
             DEADLINE, "Volcano's PodGroup CRD to be gone")
    process = operators("--gang-scheduler-name", "volcano").start(wait_ready=False)
    wait_for(lambda: process.get("/readyz")[0] == 500
             and "podgroups.scheduling.volcano.sh" in process.get("/readyz")[1],
             message="/readyz to name the missing CRD")
    alive = process.get("/healthz")
    assert alive[0] == 200, alive  # alive: a restart would not install the CRD
    kube_client.create(TFJOBS, six_gpu_job("waiting", "nowhere"), namespace)
    wait_for(lambda: "podgroups.scheduling.volcano.sh is not installed" in
             running_message(kube_client, namespace, "waiting"), DEADLINE,
             "the job's status to name the missing CRD")
    consistently(lambda: not pods_of(kube_client, namespace, "waiting"), 2, "no pod while the CRD is missing")
    lines = [line for line in process.log_path.read_text().splitlines() if "podgroups.scheduling.volcano.sh" in line
             and '"level": "error"' in line]
    assert len(lines) == 1, lines  # said once, not on every reconcile
    assert "reconcile failed" not in process.log_path.read_text()


def test_volcano_crd_has_every_json_field_of_the_go_types() -> None:
    """hack/volcano-podgroup-crd.yaml against volcano.sh/apis' own types, field by field."""
    scratch = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
    listing = subprocess.run(["go", "mod", "download", "-json", "volcano.sh/apis@v1.12.1"], cwd=scratch,
                             capture_output=True, text=True, check=False)
    assert listing.returncode == 0, f"downloading volcano.sh/apis v1.12.1 failed: {listing.stderr}"
    source = (Path(re.search(r'"Dir": "([^"]+)"', listing.stdout).group(1))  # type: ignore[union-attr]
              / "pkg" / "apis" / "scheduling" / "v1beta1" / "types.go").read_text()
    schema = yamlio.load(VOLCANO_CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec, status = schema["properties"]["spec"], schema["properties"]["status"]
    expected = {"PodGroupSpec": spec, "PodGroupStatus": status, "NetworkTopologySpec": spec["properties"][
        "networkTopology"], "PodGroupCondition": status["properties"]["conditions"]["items"]}
    for struct, declared in expected.items():
        body = re.search(rf"type {struct} struct {{(.*?)\n}}", source, re.S)
        assert body is not None, f"{struct} is not in types.go"
        fields = set(re.findall(r'json:"([A-Za-z]+)[,"]', body.group(1)))
        assert fields == set(declared["properties"]), f"{struct}: Go {sorted(fields)} vs CRD {sorted(declared)}"


def running_message(client: KubeClient, namespace: str, name: str) -> str:
    """The message of the job's Running condition, True or not."""
    for entry in job_status(client, namespace, name).get("conditions", []):
        if entry["type"] == "Running":
            return str(entry.get("message", ""))
    return ""
