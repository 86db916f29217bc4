"""Generated TFJobs, mutated where users get them wrong, against the real apiserver with tfop running as a process.

Every job must end, within a bounded wait, in one of: refused by admission (the CRD's schema and CEL rules),
Failed with a reason, Suspended (when it asked to be), or Running/Succeeded with every child made. Never stuck
retrying (still Created or Pending, FailedCreate* events piling up), never an operator crash or restart. Meanwhile
a canary job in another namespace is scaled up and down and must follow every time: one bad job holds up no other.

The seed is printed; TFOP_FUZZ_SEED=<seed> replays a run and TFOP_FUZZ_JOBS=<n> changes how many jobs it makes.
"""

from __future__ import annotations

import copy
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.namespaces import make_namespace
from support.operator_process import OperatorProcess
from support.tfjobs import JOB_NAME_LABEL, TFJOBS, condition, events_about, pod_template
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, ApiError, Invalid
from tfop.kube.resource import PODS, SERVICES

GATEWAY_TIMEOUT = 504
SEED = int(os.environ.get("TFOP_FUZZ_SEED") or random.SystemRandom().randrange(1, 2**31))
JOBS = int(os.environ.get("TFOP_FUZZ_JOBS") or 240)
SETTLE_SECONDS = 240.0  # for every job to reach an outcome, from the last create

Job = dict[str, Any]
Mutation = Callable[[random.Random, Job], None]
SPELLINGS = {"Chief": ("Chief", "chief", "CHIEF"), "Master": ("Master", "master", "MASTER"),
             "Worker": ("Worker", "worker", "WORKER"), "PS": ("PS", "ps", "Ps"),
             "Evaluator": ("Evaluator", "evaluator", "EVALUATOR")}


# --- generation: a valid job, then mutations ----------------------------------------------------------------------

def base_job(rng: random.Random, index: int) -> Job:
    replicas: dict[str, int] = {}
    if rng.random() < 0.5:
        replicas[rng.choice(("Chief", "Master"))] = 1
    replicas["Worker"] = rng.randint(0 if replicas else 1, 3)
    if rng.random() < 0.5:
        replicas["PS"] = rng.randint(1, 2)
    if rng.random() < 0.2:
        replicas["Evaluator"] = 1
    specs = {}
    for replica_type, count in replicas.items():
        container = "server" if replica_type == "PS" and rng.random() < 0.3 else "tensorflow"
        spec: Job = {"replicas": count, "template": pod_template(container)}
        spec["template"]["spec"]["terminationGracePeriodSeconds"] = 0
        specs[rng.choice(SPELLINGS[replica_type])] = spec
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": f"f{index}"},
            "spec": {"tfReplicaSpecs": specs}}


def _replica(rng: random.Random, job: Job) -> Job:
    return rng.choice(list(job["spec"]["tfReplicaSpecs"].values()))


def _container(rng: random.Random, job: Job) -> Job:
    return _replica(rng, job)["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def _pod_spec(rng: random.Random, job: Job) -> Job:
    return _replica(rng, job)["template"]["spec"]  # type: ignore[no-any-return]


def unknown_key(rng: random.Random, job: Job) -> None:
    specs = job["spec"]["tfReplicaSpecs"]
    key = rng.choice(list(specs))
    specs[rng.choice(("Trainer", "wOrKeR", "Workers", "launcher", "cHiEf"))] = specs.pop(key)


def same_type_twice(rng: random.Random, job: Job) -> None:
    specs = job["spec"]["tfReplicaSpecs"]
    key = rng.choice(list(specs))
    others = [s for spellings in SPELLINGS.values() if key in spellings for s in spellings if s != key]
    if others:  # an earlier mutation may have renamed the key to one no type is spelt as
        specs[rng.choice(others)] = copy.deepcopy(specs[key])


def bad_count(rng: random.Random, job: Job) -> None:
    _replica(rng, job)["replicas"] = rng.choice((-1, 0, 0, 5001, "3", 2.5))


def two_chiefs(rng: random.Random, job: Job) -> None:
    job["spec"]["tfReplicaSpecs"]["Chief"] = {"replicas": rng.choice((1, 2)), "template": pod_template()}
    job["spec"]["tfReplicaSpecs"].setdefault("worker", {"replicas": 1, "template": pod_template()})


def no_replicas(rng: random.Random, job: Job) -> None:
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["replicas"] = 0


def port_on_2222_by_another_name(rng: random.Random, job: Job) -> None:
    _container(rng, job)["ports"] = [{"name": rng.choice(("grpc", "tf", "http")), "containerPort": 2222}]


def duplicate_port_numbers(rng: random.Random, job: Job) -> None:
    number = rng.choice((2222, 8080, 6006))
    _container(rng, job)["ports"] = [{"name": "a", "containerPort": number}, {"name": "b", "containerPort": number}]


def duplicate_port_names(rng: random.Random, job: Job) -> None:
    name = rng.choice(("tfjob-port", "metrics"))
    _container(rng, job)["ports"] = [{"name": name, "containerPort": 2222}, {"name": name, "containerPort": 9090}]


def bad_port(rng: random.Random, job: Job) -> None:
    _container(rng, job)["ports"] = [rng.choice((
        {"name": "tfjob-port", "containerPort": 70000}, {"name": "tfjob-port", "containerPort": 0},
        {"name": "a-port-name-far-too-long", "containerPort": 2222}, {"name": "Bad_Name", "containerPort": 2222},
        {"name": "tfjob-port", "containerPort": 2222, "protocol": "ICMP"}))]


def tfjob_port_moved(rng: random.Random, job: Job) -> None:
    _container(rng, job)["ports"] = [{"name": "tfjob-port", "containerPort": rng.choice((3333, 65535))}]


def bad_name(rng: random.Random, job: Job) -> None:
    job["metadata"]["name"] = rng.choice(("Upper" + job["metadata"]["name"], job["metadata"]["name"] + ".v2",
                                          "9" + job["metadata"]["name"], job["metadata"]["name"] + "-" + "x" * 60))


def longest_name(rng: random.Random, job: Job) -> None:
    """Long names near the 63-character limit of the children's names, either side of it."""
    name = job["metadata"]["name"]
    job["metadata"]["name"] = name + "-" + "n" * rng.randint(35, 48)


def restart_policy(rng: random.Random, job: Job) -> None:
    _replica(rng, job)["restartPolicy"] = rng.choice(("Always", "OnFailure", "Never", "ExitCode", "Sometimes",
                                                      "always"))


def run_policy(rng: random.Random, job: Job) -> None:
    job["spec"]["runPolicy"] = rng.choice((
        {"backoffLimit": -1}, {"backoffLimit": 0}, {"activeDeadlineSeconds": 0}, {"activeDeadlineSeconds": 2},
        {"cleanPodPolicy": "Sometimes"}, {"cleanPodPolicy": "None"}, {"suspend": True},
        {"ttlSecondsAfterFinished": -1}, {"schedulingPolicy": {"minResources": {"cpu": "lots"}}},
        {"schedulingPolicy": {"minAvailable": 2, "queue": "default"}}))


def success_policy(rng: random.Random, job: Job) -> None:
    job["spec"]["successPolicy"] = rng.choice(("AllWorkers", "", "AnyWorker"))


def missing_volume(rng: random.Random, job: Job) -> None:
    _container(rng, job)["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]


def bad_volume(rng: random.Random, job: Job) -> None:
    _pod_spec(rng, job)["volumes"] = rng.choice((
        [{"name": "Bad_Volume", "emptyDir": {}}],
        [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
        [{"name": "v", "hostPath": {"path": ""}}],
        [{"name": "v", "emptyDir": {}, "configMap": {"name": "c"}}]))


def bad_mount(rng: random.Random, job: Job) -> None:
    spec = _pod_spec(rng, job)
    spec["volumes"] = [{"name": "v", "emptyDir": {}}]
    spec["containers"][0]["volumeMounts"] = [rng.choice(({"name": "v", "mountPath": ""},
                                                         {"name": "v", "mountPath": "/a", "subPath": "../up"}))]


def bad_env(rng: random.Random, job: Job) -> None:
    _container(rng, job)["env"] = [rng.choice(({"name": "1=BAD", "value": "x"}, {"name": "", "value": "x"},
                                               {"name": "OK", "value": "x", "valueFrom": {"fieldRef": {
                                                   "fieldPath": "metadata.name"}}},
                                               {"name": "OK", "valueFrom": {"fieldRef": {"fieldPath": "nope"}}}))]


def bad_label(rng: random.Random, job: Job) -> None:
    template = _replica(rng, job)["template"]
    template["metadata"] = {"labels": rng.choice(({"team": "bad value!"}, {"bad key/x/y": "v"},
                                                  {"team": "x" * 64}, {"ok": "fine"}))}


def bad_resources(rng: random.Random, job: Job) -> None:
    _container(rng, job)["resources"] = rng.choice((
        {"requests": {"cpu": "lots"}},
        {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
        {"requests": {"memory": "-1Gi"}},
        {"requests": {"nvidia.com/gpu": "1"}},
        {"limits": {"nvidia.com/gpu": "1"}},
        {"requests": {"cpu": "100m", "memory": "64Mi"}}))


def bad_probe(rng: random.Random, job: Job) -> None:
    container = _container(rng, job)
    probe, value = rng.choice((
        ("livenessProbe", {}),
        ("readinessProbe", {"httpGet": {"port": 0}}),
        ("livenessProbe", {"exec": {"command": ["true"]}, "tcpSocket": {"port": 2222}}),
        ("startupProbe", {"exec": {"command": ["true"]}, "successThreshold": 2}),
        ("readinessProbe", {"exec": {"command": ["true"]}, "periodSeconds": -1}),
        ("readinessProbe", {"tcpSocket": {"port": "tfjob-port"}})))
    container[probe] = value


def bad_image(rng: random.Random, job: Job) -> None:
    _container(rng, job)["image"] = rng.choice(("", " ", "UPPER/case:tag"))


def bad_second_container(rng: random.Random, job: Job) -> None:
    _pod_spec(rng, job)["containers"].append({"name": rng.choice(("Side_Car", "tensorflow", "sidecar")),
                                              "image": "busybox"})


def oversized_pod(rng: random.Random, job: Job) -> None:
    """A template that fits in the TFJob but not, with TF_CONFIG added, in a pod: etcd stores at most 1.5 MiB, and
    on the local cluster a TFJob holds an env value of 1,572,362 bytes, a pod one of 1,572,021. 8 KB less leaves
    the job room for its status; 300 replicas add about 20 KB of TF_CONFIG, so no pod of it can be stored."""
    job["spec"]["tfReplicaSpecs"] = {"Worker": {"replicas": 300, "template": pod_template(
        env=[{"name": "BLOB", "value": "x" * 1_564_000}])}}


MUTATIONS: tuple[Mutation, ...] = (
    unknown_key, same_type_twice, bad_count, two_chiefs, no_replicas, port_on_2222_by_another_name,
    duplicate_port_numbers, duplicate_port_names, bad_port, tfjob_port_moved, bad_name, longest_name,
    restart_policy, run_policy, success_policy, missing_volume, bad_volume, bad_mount, bad_env, bad_label,
    bad_resources, bad_probe, bad_image, bad_second_container, oversized_pod,
)


def generate(seed: int, count: int) -> list[tuple[Job, list[str]]]:
    rng = random.Random(seed)
    jobs = []
    for index in range(count):
        job = base_job(rng, index)
        applied = rng.sample(MUTATIONS, rng.choice((0, 1, 1, 1, 2, 2, 3)))
        for mutation in applied:
            mutation(rng, job)
        jobs.append((job, [mutation.__name__ for mutation in applied]))
    return jobs


# --- outcomes ------------------------------------------------------------------------------------------------------

def true_condition(job: Job) -> Job | None:
    """The job's settled condition, if it has one: Failed, Succeeded, Suspended or Running."""
    conditions = {c["type"]: c for c in (job.get("status") or {}).get("conditions", []) if c.get("status") == "True"}
    for settled in ("Failed", "Succeeded", "Suspended", "Running"):
        if settled in conditions:
            return conditions[settled]  # type: ignore[no-any-return]
    return None


def expected_children(job: Job) -> int:
    replicas = [spec.get("replicas", 1) for spec in job["spec"]["tfReplicaSpecs"].values()]
    return sum(count for count in replicas if isinstance(count, int))


@dataclass
class Canary:
    """A job in its own namespace, scaled up and down while the fuzz runs: each scale must show in its pods."""

    client: KubeClient
    namespace: str
    steps: list[float] = field(default_factory=list)  # seconds each scale took to show
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def pods(self) -> list[Job]:
        items, _ = self.client.list(PODS, self.namespace, label_selector=f"{JOB_NAME_LABEL}=canary")
        return [pod for pod in items if not pod["metadata"].get("deletionTimestamp")]

    def run(self) -> None:
        workers = 1
        while not self.stop.is_set():
            workers = 3 if workers == 1 else 1
            began = time.monotonic()
            self.client.patch(TFJOBS, "canary", {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}},
                              self.namespace)
            while len(self.pods()) != workers + 1:
                # What the canary shows is that no fuzzed job blocks another job's reconcile, not how fast:
                # under CI's load a scale took over 60 s to show, so it gets the time every fuzzed job gets.
                if time.monotonic() - began > SETTLE_SECONDS:
                    self.failures.append(f"scaling to {workers} workers did not show within {SETTLE_SECONDS:.0f} s")
                    return
                time.sleep(0.2)
            self.steps.append(time.monotonic() - began)
            self.stop.wait(2)


@pytest.fixture
def canary_namespace(cluster: LocalCluster, kube_client: KubeClient, namespace: str) -> Iterator[str]:
    name = f"{namespace}-canary"
    make_namespace(kube_client, name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_fuzzed_jobs_each_reach_an_outcome_and_the_operator_survives(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, canary_namespace: str,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    began = time.monotonic()
    with capsys.disabled():
        print(f"\nfuzz: seed {SEED} (TFOP_FUZZ_SEED={SEED} replays it), {JOBS} jobs")
    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                               "--namespace", canary_namespace).start()
    pid = operator.process.pid if operator.process is not None else None
    canary = Canary(kube_client, canary_namespace)
    kube_client.create(TFJOBS, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "canary"},
                                "spec": {"tfReplicaSpecs": {"Chief": {"replicas": 1, "template": pod_template()},
                                                            "Worker": {"replicas": 1, "template": pod_template()}}}},
                       canary_namespace)
    wait_for(lambda: condition(kube_client, canary_namespace, "canary", "Running"), DEADLINE, "the canary to run")
    scaler = threading.Thread(target=canary.run, name="canary", daemon=True)
    scaler.start()

    generated = generate(SEED, JOBS)
    outcomes: dict[str, str] = {}  # job name -> outcome
    mutations_of: dict[str, list[str]] = {}

    # Eight creates at once of large fuzzed jobs: a loaded apiserver once took over the client's default 30 s to
    # answer one, and a create that timed out cannot be retried (it may have been stored).
    creator = KubeClient.from_kubeconfig(str(cluster.kubeconfig), read_timeout=300)

    def stored_now(job: Job) -> bool:
        """Whether the job is stored now, creating it if it is not; False while the apiserver still times out."""
        try:
            creator.create(TFJOBS, job, namespace)
        except AlreadyExists:
            pass
        except ApiError as error:
            if error.status != GATEWAY_TIMEOUT:
                raise
            return False
        return True

    def create(entry: tuple[Job, list[str]]) -> None:
        job, mutations = entry
        name = job["metadata"]["name"]
        mutations_of[name] = mutations
        try:
            try:
                creator.create(TFJOBS, job, namespace)
            except ApiError as error:
                # A starved apiserver answers 504 once its own 60-s request timeout passes, and the job may or may
                # not have been stored: it is then stored once, by the create or by an earlier one.
                if error.status != GATEWAY_TIMEOUT:
                    raise
                wait_for(lambda: stored_now(job), DEADLINE, f"job {name} to be stored after a 504")
        except Invalid:
            outcomes[name] = "rejected by admission"

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, generated))
    finally:
        creator.close()
    accepted = {job["metadata"]["name"]: job for job, _ in generated if job["metadata"]["name"] not in outcomes}

    def settled() -> dict[str, Job]:
        items, _ = kube_client.list(TFJOBS, namespace)
        return {item["metadata"]["name"]: item for item in items if true_condition(item) is not None}

    deadline = time.monotonic() + SETTLE_SECONDS
    stored = settled()
    while len(stored) < len(accepted) and time.monotonic() < deadline:
        assert operator.process is not None and operator.process.poll() is None, operator.log_tail()
        time.sleep(2)
        stored = settled()

    # Running and Succeeded jobs must have every child: a refused Service must not hide behind Running.
    pods: Counter[str] = Counter(p["metadata"]["labels"].get(JOB_NAME_LABEL) for p in kube_client.list(
        PODS, namespace, label_selector=JOB_NAME_LABEL)[0] if not p["metadata"].get("deletionTimestamp"))
    services: Counter[str] = Counter(s["metadata"]["labels"].get(JOB_NAME_LABEL) for s in kube_client.list(
        SERVICES, namespace, label_selector=JOB_NAME_LABEL)[0])
    stuck: list[str] = []
    for name, manifest in accepted.items():
        job = stored.get(name)
        settled_condition = true_condition(job) if job is not None else None
        if settled_condition is None:
            current = kube_client.get(TFJOBS, name, namespace)
            reasons = sorted({e["reason"] for e in events_about(kube_client, namespace, name)})
            conditions = [(c["type"], c["status"], c.get("reason"), c.get("message"))
                          for c in (current.get("status") or {}).get("conditions", [])]
            outcomes[name] = "stuck"
            stuck.append(f"{name} {mutations_of[name]}: {conditions} events {reasons}")
            continue
        kind = settled_condition["type"]
        if kind == "Running" and (pods[name], services[name]) != (expected_children(manifest),) * 2:
            # The children were listed after the job: one that has moved on since (activeDeadlineSeconds: 2 fails
            # it, and its children go) is judged by where it is now; one still Running must have them all.
            settled_condition = true_condition(kube_client.get(TFJOBS, name, namespace)) or settled_condition
            kind = settled_condition["type"]
        if kind == "Failed":
            outcomes[name] = f"Failed ({settled_condition.get('reason')})"
            continue
        outcomes[name] = kind
        if kind == "Running" and (pods[name], services[name]) != (expected_children(manifest),) * 2:
            outcomes[name] = "stuck"
            stuck.append(f"{name} {mutations_of[name]}: Running with {pods[name]} pods and {services[name]} services "
                         f"of {expected_children(manifest)}; events "
                         f"{sorted({e['reason'] for e in events_about(kube_client, namespace, name)})}")

    canary.stop.set()
    scaler.join(DEADLINE)
    # The canary finishes when its chief does.
    chief = next(p["metadata"]["name"] for p in canary.pods() if "-chief-" in p["metadata"]["name"])
    exit_pod(kube_client, canary_namespace, chief, 0)
    wait_for(lambda: condition(kube_client, canary_namespace, "canary", "Succeeded"), DEADLINE, "the canary to succeed")

    table = Counter(outcomes.values())
    by_mutation: dict[str, Counter[str]] = {}
    for name, outcome in outcomes.items():
        for mutation in mutations_of[name] or ["(none)"]:
            by_mutation.setdefault(mutation, Counter())[outcome] += 1
    summary = (f"fuzz: seed {SEED}, {JOBS} jobs, {time.monotonic() - began:.0f} s; canary scaled "
               f"{len(canary.steps)} times, slowest {max(canary.steps, default=0):.1f} s")
    lines = [summary, f"{'outcome':<32} {'jobs':>5}"]
    lines += [f"{outcome:<32} {count:>5}" for outcome, count in sorted(table.items())]
    lines += ["by mutation:"] + [f"  {mutation:<30} {dict(sorted(counter.items()))}"
                                 for mutation, counter in sorted(by_mutation.items())]
    with capsys.disabled():
        print("\n".join(lines))

    log = operator.log_path.read_text(errors="replace")
    assert operator.process is not None and operator.process.poll() is None and operator.process.pid == pid, (
        f"the operator exited:\n{operator.log_tail()}")
    assert "Traceback" not in log, "the operator logged a traceback: " + log[log.index("Traceback") - 2000:][:6000]
    assert not stuck, f"seed {SEED}: {len(stuck)} job(s) reached no outcome:\n" + "\n".join(stuck)
    assert not canary.failures, canary.failures
    assert canary.steps, "the canary was never scaled"
    operator.terminate()
