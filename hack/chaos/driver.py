"""The job mix's life: jobs created to keep a number running, ended by the step their plan names, and deleted
once their end was seen. Every write goes through `retrying`, so the driver carries on across an apiserver outage."""

from __future__ import annotations

import contextlib
import random
import threading
from pathlib import Path
from typing import Any

from chaos.observer import TFJOBS, Observer
from chaos.real_jobs import real_job
from chaos.retrying import retrying
from chaos.workload import END_BACKOFF, END_PERMANENT, END_SUCCESS, JobPlan, new_job
from fake_kubelet import exit_pod, restart_in_place
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, NotFound

# The exit each end step writes, and on which task: the deciding replica 0, or Worker 1 (never the deciding one).
END_STEPS = {END_SUCCESS: 0, END_PERMANENT: 1, END_BACKOFF: 137}


class Driver:
    def __init__(self, client: KubeClient, observer: Observer, namespace: str, rng: random.Random,
                 running_jobs: int, real_jobs: int = 0, shared_dir: Path | None = None) -> None:
        self.client = client
        self.observer = observer
        self.namespace = namespace
        self.rng = rng
        self.running_jobs = running_jobs
        self.real_jobs = real_jobs  # real TensorFlow jobs kept running beside the kwok ones
        self.shared_dir = shared_dir  # the real nodes' shared directory, where those jobs checkpoint
        self.plans: dict[str, JobPlan] = {}
        self.reaped: set[str] = set()
        self.lock = threading.Lock()  # the round's threads pick targets from the plans at once
        self.claimed: set[str] = set()  # jobs (and real nodes) a fault or an end step of this round has taken

    # --- what the faults pick from -----------------------------------------------------------------------------
    def running_pod(self, plan: JobPlan, kind: str, index: int) -> dict[str, Any] | None:
        for pod in self.observer.pods_of(plan.uid):
            labels = pod["metadata"].get("labels") or {}
            if (labels.get("training.kubeflow.org/replica-type") == kind.lower()
                    and labels.get("training.kubeflow.org/replica-index") == str(index)
                    and not pod["metadata"].get("deletionTimestamp")
                    and (pod.get("status") or {}).get("phase") == "Running"):
                return pod
        return None

    def claim(self, wanted: Any) -> JobPlan | None:
        """A running job, not ending and not taken this round, for which `wanted(plan)` holds; the rng picks."""
        with self.lock:
            names = {view.name for view in self.observer.views() if view.running and not view.terminal}
            candidates = [plan for name, plan in sorted(self.plans.items())
                          if name in names and name not in self.claimed and not plan.ending and not plan.deleted
                          and not plan.real and wanted(plan)]
            if not candidates:
                return None
            plan = self.rng.choice(candidates)
            self.claimed.add(plan.name)
            return plan

    def claim_node(self, names: list[str]) -> str | None:
        """A real node no other fault of this round has taken: a node stopped and partitioned at once would be
        healed by whichever fault ended first (and the other would start it again)."""
        with self.lock:
            free = [name for name in names if name not in self.claimed]
            if not free:
                return None
            name = self.rng.choice(free)
            self.claimed.add(name)
            return name

    def kill_retryably(self, plan: JobPlan) -> str | None:
        """SIGKILL one of the job's restartable replicas: recreated (ExitCode) or restarted in place (OnFailure)."""
        tasks = [task for task in plan.restartable_tasks() if self.running_pod(plan, *task)]
        if not tasks:
            return None
        kind, index = self.rng.choice(tasks)
        pod = self.running_pod(plan, kind, index)
        assert pod is not None
        name = str(pod["metadata"]["name"])
        if plan.restart_policy == "OnFailure":
            count = sum(int(s.get("restartCount") or 0) for s in pod["status"].get("containerStatuses") or [])
            retrying(lambda: restart_in_place(self.client, self.namespace, name, 137, count + 1))
        else:
            retrying(lambda: exit_pod(self.client, self.namespace, name, 137))
        plan.restarts[kind] = plan.restarts.get(kind, 0) + 1
        return name

    # --- the mix ---------------------------------------------------------------------------------------------
    def top_up(self, at_least: int = 0) -> list[str]:
        """Create jobs until `running_jobs` are neither ending nor deleted, and at least `at_least`."""
        made: list[str] = []
        _, ends = self.observer.snapshot()
        while True:
            kwok = sum(not p.ending and not p.deleted and not p.real for p in self.plans.values())
            real = sum(p.real and p.name not in ends for p in self.plans.values())
            if real < self.real_jobs and self.shared_dir is not None:
                plan = real_job(self.rng, len(self.plans), self.shared_dir)
            elif kwok < self.running_jobs or len(made) < at_least:
                plan = new_job(self.rng, len(self.plans))
            else:
                return made
            self.plans[plan.name] = plan

            body = plan.body(self.namespace)

            def create(body: dict[str, Any] = body) -> dict[str, Any]:
                try:
                    return self.client.create(TFJOBS, body, self.namespace)
                except AlreadyExists:  # the create went through before a connection broke
                    return self.client.get(TFJOBS, body["metadata"]["name"], self.namespace)

            plan.uid = retrying(create)["metadata"]["uid"]
            made.append(plan.name)

    def end(self, plan: JobPlan) -> bool:
        """Take the step that ends the job (its plan says which), if that replica's pod runs."""
        kind, index = (plan.deciding_type, 0) if plan.end == END_SUCCESS else ("Worker", 1)
        pod = self.running_pod(plan, kind, index)
        if pod is None:
            return False
        name = pod["metadata"]["name"]
        retrying(lambda: exit_pod(self.client, self.namespace, name, END_STEPS[plan.end]))
        plan.ending = True
        return True

    def end_some(self, share: float) -> list[str]:
        ended: list[str] = []
        while True:
            plan = self.claim(lambda p: True) if self.rng.random() < share else None
            if plan is None or not self.end(plan):
                return ended
            ended.append(plan.name)

    def reap(self) -> list[str]:
        """Delete the jobs whose end was seen, keeping the operator's caches to the running mix."""
        _, ends = self.observer.snapshot()
        gone = []
        for name in sorted(set(ends) - self.reaped):
            self.reaped.add(name)
            with contextlib.suppress(NotFound):
                self._delete(name)
            gone.append(name)
        return gone

    def _delete(self, name: str) -> None:
        retrying(lambda: self.client.delete(TFJOBS, name, self.namespace))
