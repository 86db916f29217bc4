"""One chaos run against a cluster that is up with the TFJob CRD installed: two operators with leader election in
`namespace`, the job mix, rounds of faults from the seed's schedule until `duration` is spent, convergence awaited
after each round, then every job ended and the invariants judged."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from chaos import invariants, schedule
from chaos.driver import Driver
from chaos.faults import INJECTORS, Target
from chaos.node_logs import NodeLogs
from chaos.observations import controller_uid, epoch
from chaos.observer import Observer
from chaos.operators import OperatorPair
from chaos.report import FaultRecord, Report
from fake_kubelet import finish_deletion
from localcluster import LocalCluster
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import PODS, SERVICES

END_SHARE = 0.3  # the chance each further running job is ended in a round
REAL_JOBS = 2  # real TensorFlow jobs kept running with real nodes
# How long the real TensorFlow jobs may take to end once the faults stop: a few minutes of training on 2 cores, a
# restart or two from checkpoints, and a lost node's 50 s grace.
REAL_JOB_BOUND = 1200.0
# kwok ends a deleted pod only while its grace period is above 0; a pod whose grace the apiserver had set to 0 when
# kwok's delete failed (the apiserver was down) stays Terminating for ever, where a kubelet would finish it. The
# harness plays that kubelet for pods past their deletion time by this long.
KUBELET_LATE = 30.0


def log(message: str) -> None:
    print(f"[chaos] {message}", flush=True)


def wait_until(check: Callable[[], list[str]], bound: float,
               started: float | None = None) -> tuple[float | None, list[str]]:
    """Seconds from `started` (now by default) until `check` answers no problem (None if not within `bound`), and
    its last answer."""
    started = time.monotonic() if started is None else started
    while True:
        problems = check()
        if not problems:
            return time.monotonic() - started, []
        if time.monotonic() - started > bound:
            return None, problems
        time.sleep(0.5)


class ChaosRun:
    def __init__(self, cluster: LocalCluster, namespace: str, seed: int, duration: float, log_dir: Path, *,
                 running_jobs: int = 30, real_nodes: bool = False, overlap_probability: float = 0.5,
                 judge_memory: bool = True) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.seed = seed
        self.duration = duration
        self.kinds = schedule.KWOK_KINDS + (schedule.REAL_NODE_KINDS if real_nodes else ())
        self.overlap_probability = overlap_probability
        self.judge_memory = judge_memory  # False: too short a run for any replica to live RSS_MIN_LIFE
        self.jobs_asked = running_jobs + (REAL_JOBS if real_nodes else 0)
        self.client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        self.observer = Observer(self.client, namespace)
        # One generator for every choice made at run time (targets, job shapes), seeded apart from the schedule's.
        self.driver = Driver(self.client, self.observer, namespace, random.Random(seed * 7919 + 1), running_jobs,
                             REAL_JOBS if real_nodes else 0, cluster.shared_dir)
        self.operators = OperatorPair(cluster.kubeconfig, namespace, log_dir)
        self.node_logs = NodeLogs([node.layout.root / "pod-logs" for node in cluster.nodes], namespace) \
            if real_nodes else None
        self.report = Report(seed, duration, real_nodes=len(cluster.node_names) if real_nodes else 0)
        self.began = 0.0

    def since(self) -> float:
        return round(time.monotonic() - self.began, 1)

    def ending(self) -> set[str]:
        _, ends = self.observer.snapshot()
        return {name for name, plan in self.driver.plans.items() if plan.ending and not plan.deleted
                and name not in ends}

    def finish_deletions_kwok_missed(self) -> None:
        now = time.time()
        for pod in self.observer.pods.store.list():
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and now - epoch(meta["deletionTimestamp"]) > KUBELET_LATE:
                with contextlib.suppress(ApiError):  # gone, or the apiserver is down: the next look retries
                    finish_deletion(self.client, self.namespace, meta["name"], meta["uid"])
                    self.report.deletions_finished.append(meta["name"])

    def converging(self) -> list[str]:
        """unsettled(), after playing the kubelet's part kwok missed."""
        self.finish_deletions_kwok_missed()
        return self.unsettled()

    def unsettled(self) -> list[str]:
        """What keeps the run from having converged; a job the harness created that the observer has not seen
        yet counts too, so an observer behind the apiserver (re-listing after a restart) never passes for one in
        step."""
        real = {name for name, plan in self.driver.plans.items() if plan.real}  # they end when they are trained
        views = [view for view in self.observer.views() if view.name not in real]
        seen = {view.name for view in views}
        unseen = [f"{name}: not seen yet" for name, plan in sorted(self.driver.plans.items())
                  if name not in seen and name not in real and not plan.ending and not plan.deleted]
        return unseen + invariants.unsettled(views, self.ending() - real)

    def run(self) -> Report:
        self.began = time.monotonic()
        self.observer.start()
        self.operators.start()
        if self.node_logs:
            self.node_logs.start()
        try:
            self.driver.top_up()
            took, problems = wait_until(self.converging, invariants.CONVERGENCE_BOUND)
            log(f"{len(self.driver.plans)} jobs running after {self.since()} s" if took is not None
                else f"the first jobs did not all run: {problems[:5]}")
            for each in schedule.rounds(self.seed, self.kinds, overlap_probability=self.overlap_probability):
                if time.monotonic() - self.began > self.duration:
                    break
                self.play(each)
            self.finish()
        finally:
            self.operators.sample()
            self.operators.stop()
            self.observer.stop()
            if self.node_logs:
                self.node_logs.stop()
                self.judge_tensorflow_processes(self.node_logs)
        self.report.elapsed = time.monotonic() - self.began
        return self.report

    def play(self, each: schedule.Round) -> None:
        """A round: its faults and the mix's own steps (jobs ended) at once; once all are healed, new jobs, then
        the wait for convergence, timed from the healing."""
        self.driver.claimed.clear()
        records: list[FaultRecord] = []

        def inject(fault: schedule.Fault) -> None:
            time.sleep(fault.offset)
            started = self.since()
            try:
                detail = INJECTORS[fault.kind](Target(self.cluster, self.operators, self.driver), fault)
            except Exception as error:  # noqa: BLE001 - a fault that could not be made is reported, not fatal
                # Made, but its healing went wrong (a restarted apiserver slow to be ready, say): the first line.
                detail = f"error: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            records.append(FaultRecord(each.index, fault.kind, started, self.since(),
                                       detail or "skipped: nothing fitted"))

        def steps() -> None:
            time.sleep(1.0)
            self.driver.end_some(END_SHARE)

        threads = [threading.Thread(target=inject, args=(fault,), daemon=True) for fault in each.faults]
        threads.append(threading.Thread(target=steps, daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # A job submitted once every fault is healed: convergence then means the operator in charge after the
        # faults acted, not only that nothing was left to do.
        healed = time.monotonic()
        self.driver.top_up(at_least=1)
        took, problems = wait_until(self.converging, invariants.CONVERGENCE_BOUND, healed)
        for record in records:
            record.recovered = None if took is None else round(took, 1)
            log(f"round {each.index} at {record.started:.0f} s: {record.kind}: {record.detail}")
        log(f"round {each.index}: converged in {took:.1f} s" if took is not None
            else f"round {each.index}: NOT converged within {invariants.CONVERGENCE_BOUND:.0f} s: {problems[:5]}")
        self.report.faults.extend(sorted(records, key=lambda r: r.started))
        self.operators.sample()
        self.driver.reap()

    def finish(self) -> None:
        """End every job, let every end be seen, delete them all, and judge."""
        driver = self.driver
        driver.running_jobs = driver.real_jobs = 0

        def all_ended() -> list[str]:
            driver.claimed.clear()
            driver.end_some(1.0)
            return self.converging() + sorted(self.ending())

        took, problems = wait_until(all_ended, invariants.CONVERGENCE_BOUND)
        log(f"every kwok job ended after {took:.1f} s" if took is not None else f"jobs left running: {problems[:5]}")
        _, ends = self.observer.snapshot()
        training = {name for name, plan in driver.plans.items() if plan.real and name not in ends}
        took, problems = wait_until(lambda: sorted(training - set(self.observer.snapshot()[1])), REAL_JOB_BOUND)
        if training:
            log(f"the real TensorFlow jobs ended after {took:.0f} s" if took is not None
                else f"real TensorFlow jobs still training: {problems}")
        driver.reap()
        jobs_left = wait_until(lambda: [j["metadata"]["name"] for j in self.observer.jobs.store.list()],
                               invariants.CONVERGENCE_BOUND)[1]
        children = self.children()
        orphans_left = wait_until(self.orphans_now, invariants.CONVERGENCE_BOUND)[1]
        log(f"{len(children)} children when the last job was deleted; {len(orphans_left)} left after the wait")
        lives, ends = self.observer.snapshot()
        plans = list(driver.plans.values())
        self.report.jobs = dict(sorted(Counter("/".join(plan.expected).rstrip("/") for plan in plans).items()))
        self.report.verdicts = [
            invariants.Verdict("the run made the jobs it was asked for, and every fault it played", tuple(
                invariants.as_asked(self.jobs_asked, len(plans),
                                    ((f"round {f.round} {f.kind}", f.detail) for f in self.report.faults)))),
            invariants.Verdict("every job ends as planned or fails with the documented reason",
                               tuple(invariants.outcomes(plans, ends))),
            invariants.Verdict("restarts counted as documented", tuple(invariants.restart_counts(plans, ends))),
            invariants.Verdict("no child without its job", tuple(orphans_left + [f"job {j} not deleted"
                                                                                for j in jobs_left])),
            invariants.Verdict("no child created after its job finished", tuple(invariants.created_after_finish(
                lives, {end.uid: end for end in ends.values()}))),
            invariants.Verdict("never two live pods for one task", tuple(invariants.one_live_pod_per_task(lives))),
            *([invariants.Verdict("operator RSS flat", tuple(invariants.memory_flat(self.operators.rss)))]
              if self.judge_memory else []),
            invariants.Verdict("every fault followed by convergence within the bound", tuple(invariants.converged(
                (f"round {f.round} {f.kind}", f.recovered) for f in self.report.faults))),
        ]
        self.report.rss = self.operators.rss
        self.report.operator_exits = list(self.operators.exits)

    def judge_tensorflow_processes(self, node_logs: NodeLogs) -> None:
        """The real nodes' invariant, from every container log line read on their disks through the run."""
        claims = [claim for claim in node_logs.claims() if claim.task is not None]
        self.report.tensorflow_processes = len(claims)
        self.report.verdicts.append(invariants.Verdict("never two live processes claiming one TensorFlow task",
                                                       tuple(invariants.one_process_per_task(claims))))

    def orphans_now(self) -> list[str]:
        """Every child left once every job is deleted (a pod being deleted too: its deletion finished for kwok)."""
        self.finish_deletions_kwok_missed()
        return invariants.orphans(self.children(), set())

    def children(self) -> list[tuple[str, str, str]]:
        """Every pod and service of a TFJob left in the namespace: (kind, name, its TFJob's uid)."""
        found = []
        for resource in (PODS, SERVICES):
            items, _ = self.client.list(resource, self.namespace, label_selector="training.kubeflow.org/job-name")
            found += [(resource.kind, item["metadata"]["name"], controller_uid(item)) for item in items]
        return found

