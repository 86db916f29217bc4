"""`make bench-disruptions` (`PYTHONPATH=hack python -m bench.disruptions`): tfop and the Kubeflow training
operator v1.9.3 side by side under the same disruptions of real TensorFlow, on a local cluster of its own with two
real nodes. Not part of `make test`: each scenario is minutes of TensorFlow for two jobs at once.

Both operators run at once, each watching its own namespace, on tfop's TFJob CRD (a superset of the Go operator's
schema); each scenario makes the same job in both namespaces (Keras `fit` under MultiWorkerMirroredStrategy with
BackupAndRestore: a chief on real-0, a worker on real-1; support/disruption.py) and disrupts both with one cause,
so the two rows are of one disruption:

- `drain`: `kubectl drain real-1` (the jobs annotated `tfop.kubeflow.org/disruption-budget: OneAtATime`, which the
  Go operator ignores);
- `preemption`: a higher-priority job whose pod needs both slots real-1 offers, one held by each job's worker;
- `reclaim`: the AWS handler's spot notice taint on real-1, real-1 powered off 30 s later.

Each row is read as test/e2e/test_disruption_on_real_nodes.py reads tfop's: seconds after the disruption of the
old chief's last backup, the replacements' start, the new chief's resumption (and from which epoch), and Succeeded;
the restarts the operator counted (tfop's replicaStatuses; the Go operator, which keeps no count in its status, by
its TFJobRestarting events). tfop's job is given `--window` seconds to end; the Go operator's `--go-grace` more
after that, then its row says what had not happened.

    make bench-disruptions BENCH_DISRUPTIONS_ARGS="--scenarios drain,preemption"
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.cluster import end_on_sigterm
from bench.disruption_scenarios import (
    DISRUPTED,
    HEADER,
    Row,
    Target,
    Watched,
    bring_back,
    budget_allows,
    drain,
    finish,
    higher_priority_class,
    keras_job,
    off_node,
    power_off_when_due,
    preempt,
    reclaim_notice,
    row,
    slots_on,
    start,
    uncordoned_after,
    wait_until_training,
)
from bench.operators import GoOperatorProcess, OperatorProcess, TfopProcess, build_go_operator
from bench.real_jobs import STEP_DEADLINE, wait_until
from localcluster import LocalCluster
from localcluster.busybox_image import build as busybox_image
from localcluster.operator_config import write as write_operator_config
from tfop.kube.client import KubeClient

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crd" / "kubeflow.org_tfjobs.yaml"
GO = "Go operator v1.9.3"
ONE_AT_A_TIME = {"tfop.kubeflow.org/disruption-budget": "OneAtATime"}


def log(message: str) -> None:
    print(f"[disruptions {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, cluster: LocalCluster, tfop_ns: str, go_ns: str, window: float, go_grace: float) -> None:
        self.cluster, self.tfop_ns, self.go_ns = cluster, tfop_ns, go_ns
        self.window, self.go_grace = window, go_grace

    def targets(self, job: str) -> tuple[Target, Target]:
        return Target(self.tfop_ns, job, "tfop", "keras"), Target(self.go_ns, job, GO, "keras")

    def rows(self, scenario: str, watched: list[Watched], disrupted: float) -> list[Row]:
        """tfop's job until it ends (or the window), then the Go operator's until it ends or go_grace later."""
        ours, theirs = watched
        ends = finish(self.cluster, [ours], self.window)
        ends.update(finish(self.cluster, [theirs], self.go_grace))
        return [row(self.cluster, scenario, w, ends[w.target], disrupted) for w in watched]

    def keras_pair(self, job: str, *, slot: bool = False, budget: bool = False) -> list[Watched]:
        annotations = ONE_AT_A_TIME if budget else {}
        return [start(self.cluster, target, keras_job(self.cluster, target, slot=slot, annotations=annotations))
                for target in self.targets(job)]

    def drain(self) -> list[Row]:
        watched = self.keras_pair("keras-drained", budget=True)
        try:
            wait_until_training(self.cluster, watched)
            wait_until(lambda: budget_allows(self.cluster, self.tfop_ns, "keras-drained", 1), STEP_DEADLINE,
                       "tfop's job's budget to allow one eviction")
            with uncordoned_after(self.cluster):
                return self.rows("kubectl drain", watched, drain(self.cluster))
        finally:
            close(watched)

    def preemption(self) -> list[Row]:
        with slots_on(self.cluster, 2), higher_priority_class(self.cluster) as priority:
            watched = self.keras_pair("keras-preempted", slot=True)
            try:
                wait_until_training(self.cluster, watched)
                disrupted = preempt(self.cluster, self.tfop_ns, priority, 2, busybox_image()[0])
                return self.rows("preempted by a higher-priority job", watched, disrupted)
            finally:
                close(watched)

    def reclaim(self) -> list[Row]:
        watched = self.keras_pair("keras-reclaimed")
        try:
            wait_until_training(self.cluster, watched)
            noticed = reclaim_notice(self.cluster)
            moved, off = power_off_when_due(self.cluster, noticed, lambda: off_node(self.cluster, watched[:1]))
            log(f"tfop's job off {DISRUPTED} {'never' if moved is None else f'{moved - noticed:.0f} s'} after the "
                f"notice; {DISRUPTED} powered off {off - noticed:.0f} s after it")
            return self.rows("spot reclaim: notice, power-off 30 s later", watched, noticed)
        finally:
            close(watched)
            bring_back(self.cluster)


def has_default_account(cluster: LocalCluster, namespace: str) -> bool:
    return cluster.kubectl("get", "serviceaccount", "default", "-n", namespace, check=False).returncode == 0


def close(watched: list[Watched]) -> None:
    for w in watched:
        w.logs.close()


SCENARIOS: dict[str, Callable[[Bench], list[Row]]] = {
    "drain": Bench.drain, "preemption": Bench.preemption, "reclaim": Bench.reclaim}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.disruptions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="drain,preemption,reclaim",
                        help=f"comma-separated, of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--window", type=float, default=900.0, help="seconds tfop's job is given to end")
    parser.add_argument("--go-grace", type=float, default=300.0,
                        help="seconds the Go operator's job is watched after tfop's ended")
    parser.add_argument("--dir", type=Path, help="the cluster's state directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running at the end")
    args = parser.parse_args(argv)
    scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    if unknown := [name for name in scenarios if name not in SCENARIOS]:
        parser.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    end_on_sigterm()
    built = build_go_operator()
    if isinstance(built, str):
        log(built)
        return 2
    # Short: a real node's kubelet puts unix sockets (108 bytes at most) under it.
    directory = args.dir or Path(tempfile.mkdtemp(prefix="tfop-disrupt-"))
    cluster = LocalCluster(directory, real_nodes=2)
    logs = directory / "operators"
    rows: list[Row] = []
    operators: list[OperatorProcess] = []
    try:
        cluster.up()
        logs.mkdir(exist_ok=True)
        cluster.kubectl("apply", "-f", str(CRD))
        cluster.admin.wait_established("tfjobs.kubeflow.org", timeout=STEP_DEADLINE)
        tfop_ns, go_ns = "disrupt-tfop", "disrupt-go"
        for namespace in (tfop_ns, go_ns):
            cluster.kubectl("create", "namespace", namespace)
            # Pods are refused until the controller-manager has made the namespace's default ServiceAccount.
            wait_until(partial(has_default_account, cluster, namespace), STEP_DEADLINE,
                       f"the default ServiceAccount of {namespace}")
        operators.append(TfopProcess(cluster.kubeconfig, logs / "tfop.log", [
            "--namespace", tfop_ns, "--config", str(write_operator_config(cluster.directory))]))
        operators.append(GoOperatorProcess(built[0], KubeClient.from_kubeconfig(str(cluster.kubeconfig)),
                                           cluster.kubeconfig, logs / "go-operator.log", [f"--namespace={go_ns}"]))
        for operator in operators:
            operator.start(timeout=300)
        log(f"both operators up; cluster {directory}, their logs in {logs}")
        bench = Bench(cluster, tfop_ns, go_ns, args.window, args.go_grace)
        for name in scenarios:
            log(f"scenario {name}")
            try:
                found = SCENARIOS[name](bench)
            # A wait timed out, kubectl or a node operation failed: the other scenarios' rows are still had.
            except (AssertionError, RuntimeError, subprocess.SubprocessError, OSError):
                log(f"scenario {name} failed:\n{traceback.format_exc()}")
                continue
            rows += found
            for each in found:
                log(each.line())
    finally:
        for operator in operators:
            operator.stop()
        if args.keep:
            log(f"cluster kept: python3 hack/local_cluster.py destroy --dir {directory}")
        else:
            cluster.destroy()
    print(HEADER)
    for each in rows:
        print(each.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
