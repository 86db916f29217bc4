"""The planner alone, without a cluster: N bench jobs planned at each stage of their start, from the cache's objects.

    PYTHONPATH=hack .venv/bin/python -m bench.plan_bench [--jobs 500] [--rounds 5] [--replicas 7] [--profile OUT]

Each job is the bench's (1 Chief + 4 Workers + 2 PS; --replicas N: one Chief, one PS and N - 2 Workers instead),
and its children are the ones the planner itself asks for, built by their bodies, given a uid and a status as the
apiserver and kwok would, and slimmed by the informers' transforms, as a reconcile reads them. Four passes per
job, as a job's start makes them: no children yet (it plans the creates), all created and pending, all running (it
writes Running), and a look once the Running status is stored (nothing to do). CPU per pass is the median of the
rounds (time.process_time: one thread, nothing else in the process), and its least, which a loaded machine
moves least; --profile writes cProfile's figures of one
more round, sorted by internal time. A plan's CPU is a small part of the operator's (bench.cpu_sampler has the
rest), but it is the part with no I/O in it, so this measures it with the least noise a loaded machine allows.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.workload import tfjob
from tfop.controller.cache_transforms import slim_job, slim_metadata, slim_pod
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, PlanContext
from tfop.objects import Object

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
STAGES = ("create", "pending", "running", "steady")


def _job(index: int, replicas: int) -> Object:
    job = tfjob(f"job-{index:04d}")
    if replicas != 7:
        specs = job["spec"]["tfReplicaSpecs"]
        specs["Worker"]["replicas"] = replicas - 2
        specs["PS"]["replicas"] = 1
    job["metadata"].update({"namespace": "bench", "uid": f"00000000-0000-4000-8000-{index:012d}",
                            "resourceVersion": str(1000 + index), "generation": 1,
                            "creationTimestamp": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return job


def _stamped(body: Object, index: int, now: datetime) -> Object:
    """What the apiserver adds to a created body: uid, resourceVersion, creationTimestamp."""
    made = {**body, "metadata": {**body["metadata"], "uid": f"child-{index}", "resourceVersion": str(index),
                                  "creationTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ")}}
    return made


def _pod_status(pod: Object, running: bool, now: datetime) -> Object:
    at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict[str, Any] = {
        "phase": "Running" if running else "Pending", "hostIP": "198.18.0.2", "podIP": "198.18.1.3",
        "conditions": [{"type": kind, "status": "True", "lastTransitionTime": at}
                       for kind in ("PodScheduled", "Initialized", *(("ContainersReady", "Ready") if running else ()))],
        "containerStatuses": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "ready": running,
                               "restartCount": 0, "started": running,
                               "state": {"running": {"startedAt": at}} if running else
                               {"waiting": {"reason": "ContainerCreating"}}}]}
    return {**pod, "spec": {**pod["spec"], "nodeName": "kwok-node-0"}, "status": status}


class Job:
    """One bench job through its four stages, each stage's context made before any is timed."""

    def __init__(self, index: int, replicas: int, config: ControllerConfig) -> None:
        self.config = config
        job = slim_job(_job(index, replicas))
        first = plan(PlanContext(job, {}, NOW, config))
        assert first.desired is not None and first.status is not None, "the first pass plans the creates"
        created = job | {"status": first.status.to_json()}
        later = NOW + timedelta(seconds=2)
        bodies = [(creation.kind, _stamped(first.desired.body(creation.kind, creation.slot), n, NOW))
                  for n, creation in enumerate(first.create)]
        pending = {POD: [slim_pod(_pod_status(body, False, later)) for kind, body in bodies if kind == POD],
                   SERVICE: [slim_metadata(body) for kind, body in bodies if kind == SERVICE]}
        running = {POD: [slim_pod(_pod_status(body, True, later)) for kind, body in bodies if kind == POD],
                   SERVICE: pending[SERVICE]}
        run_plan = plan(PlanContext(created, running, later, config))
        assert run_plan.status is not None, "the pass that sees every pod running writes Running"
        steady = created | {"status": run_plan.status.to_json()}
        self.contexts = {"create": (job, {}, NOW), "pending": (created, pending, later),
                         "running": (created, running, later), "steady": (steady, running, later)}

    def context(self, stage: str) -> PlanContext:
        # A fresh context per pass, as the reconciler makes: its observed views are built once per pass.
        job, children, now = self.contexts[stage]
        return PlanContext(job, children, now, self.config)


def measure(jobs: list[Job], stage: str, plan_fn: Callable[[PlanContext], Any] = plan) -> float:
    contexts = [job.context(stage) for job in jobs]
    started = time.process_time()
    for context in contexts:
        plan_fn(context)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.plan_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--replicas", type=int, default=7, help="replicas per job (7: the bench's)")
    parser.add_argument("--profile", help="write cProfile's figures of one more round to this file")
    args = parser.parse_args()
    config = ControllerConfig()
    jobs = [Job(index, args.replicas, config) for index in range(args.jobs)]
    print(f"{args.jobs} jobs of {args.replicas} replicas, {args.rounds} rounds; CPU per pass: least and median "
          f"of the rounds")
    least = median = 0.0
    for stage in STAGES:
        spent = [measure(jobs, stage) / args.jobs for _ in range(args.rounds)]
        least, median = least + min(spent), median + statistics.median(spent)
        print(f"  {stage:<8} {1e3 * min(spent):7.3f} ms  (median {1e3 * statistics.median(spent):.3f})")
    print(f"  {'4 passes':<8} {1e3 * least:7.3f} ms a job  (median {1e3 * median:.3f})")
    if args.profile:
        profiler = cProfile.Profile()
        contexts = [job.context(stage) for stage in STAGES for job in jobs]
        profiler.enable()
        for context in contexts:
            plan(context)
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(50)
        stats.sort_stats("cumulative").print_stats(70)
        with open(args.profile, "w") as handle:
            handle.write(out.getvalue())
        print(f"cProfile of one round: {args.profile}")


if __name__ == "__main__":
    main()
