"""The shipped alerts fire in a real Prometheus on real failures of a real operator, and resolve after recovery.

A Prometheus (hack/localcluster/addons/prometheus.py) scrapes `tfop run --metrics-secure` on loopback as the chart's
ServiceMonitor says (path, job label, HTTPS with Prometheus' ServiceAccount token) and evaluates the chart's rendered
rules, with two changes so this takes a minute, not a quarter of an hour: scrapes and evaluations every second
(SCRAPE_INTERVAL; the chart ships 30s), and every alert's `for:` read in seconds instead of minutes (TFOperatorDown
5m -> 5s, TFOperatorReconcileErrors 15m -> 15s; `with_short_for`). The expressions are exactly as shipped. Each test
prints a timeline of what it did and what Prometheus said, and Prometheus' own record of the ALERTS series (run with
-rP or -s to see them)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.addons.prometheus_chart import Monitoring
from support.alert_timeline import AlertTimeline, with_short_for
from support.monitoring import Monitored, monitored_operator, scratch_namespace
from support.tfjobs import TFJOBS, condition, create_job, pods_by_name, replica
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import RESOURCE_QUOTAS

REFUSED = ("refused-0", "refused-1")
# Seconds: time enough for a few scrapes and evaluations wherever the test waits on a rule, on a 2-core machine
# running the other lanes of make test (30 s once ran out for ReconcileErrors' pending).
EVALUATIONS = 60


@pytest.fixture(scope="module")
def watched(cluster: LocalCluster, tfjob_crd: Path, chart_monitoring: Monitoring,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    monitoring = replace(chart_monitoring, groups=with_short_for(chart_monitoring.groups))
    with (scratch_namespace(cluster, "alerts") as namespace,
          monitored_operator(cluster, tmp_path_factory.mktemp("alerts"), monitoring, namespace) as monitored):
        yield monitored


def pending_for(rule: dict[str, Any]) -> float:
    return float(rule["duration"])


def active_at(alert: dict[str, Any]) -> float:
    """Prometheus writes nanoseconds; Python reads microseconds."""
    stamp = alert["activeAt"].replace("Z", "+00:00")
    whole, _, rest = stamp.partition(".")
    fraction, _, zone = rest.partition("+")
    return datetime.fromisoformat(f"{whole}.{(fraction or '0')[:6]:0<6}+{zone or '00:00'}").timestamp()


def run_pod(client: KubeClient, namespace: str, job: str) -> str:
    """The name of the job's one pod once kwok runs it."""
    running = wait_for(lambda: [name for name, pod in pods_by_name(client, namespace, job).items()
                                if pod.get("status", {}).get("phase") == "Running"], DEADLINE, f"{job}'s pod running")
    return str(running[0])


def finish_jobs(client: KubeClient, namespace: str, names: list[str], exit_code: int, outcome: str) -> None:
    for name in names:
        create_job(client, namespace, name, Worker=replica(1))
    for name in names:
        exit_pod(client, namespace, run_pod(client, namespace, name), exit_code)
    for name in names:
        wait_for(lambda name=name: condition(client, namespace, name, outcome), DEADLINE, f"{name} {outcome}")


def assert_fired_after_pending(rule: dict[str, Any]) -> None:
    """Firing no sooner than `for:` after the expression first held (activeAt)."""
    [alert] = rule["alerts"]
    assert rule["observedAt"] - active_at(alert) >= pending_for(rule), alert


def assert_recorded(timeline: AlertTimeline, alert: str, resolved: dict[str, Any]) -> None:
    """Prometheus' record says the same: one run of firing evaluations, begun `for:` after the first pending one
    (with `for:`), and ended before the test saw the alert inactive."""
    record = timeline.runs_of(alert)
    [(first_firing, last_firing, _)] = record["firing"]
    duration = pending_for(resolved)
    if duration:
        assert first_firing - record["pending"][0][0] >= duration, record
    assert last_firing < resolved["observedAt"], record


def test_failing_jobs_fire_tfjobs_failing_and_succeeding_ones_resolve_it(watched: Monitored,
                                                                         kube_client: KubeClient) -> None:
    timeline = AlertTimeline(watched.prometheus)
    namespace = watched.namespace
    try:
        timeline.wait_state("TFJobsFailing", "inactive", EVALUATIONS)
        finish_jobs(kube_client, namespace, [f"fails-{i}" for i in range(3)], 1, "Failed")
        timeline.note("3 TFJobs Failed (their worker exited 1)")
        rule = timeline.wait_state("TFJobsFailing", "firing", EVALUATIONS)
        assert [alert["labels"]["job_namespace"] for alert in rule["alerts"]] == [namespace]
        finish_jobs(kube_client, namespace, [f"succeeds-{i}" for i in range(4)], 0, "Succeeded")
        timeline.note("4 TFJobs Succeeded: 3 of 7 finished jobs failed, under half")
        resolved = timeline.wait_state("TFJobsFailing", "inactive", EVALUATIONS)
    finally:
        print(timeline.report("TFJobsFailing"))
    assert_recorded(timeline, "TFJobsFailing", resolved)


def test_refused_creates_fire_reconcile_errors_and_resolve_once_reconciles_succeed(
        watched: Monitored, kube_client: KubeClient) -> None:
    """A ResourceQuota of no pods makes every create of two jobs' pods fail (Forbidden, retried with backoff):
    the operator's own documented cause. Recovery is the quota going; the alert compares errors with all
    reconciles over 5 minutes, so it resolves once successful reconciles outnumber the errors ten to one (here a
    running job's updates, each one reconcile) rather than after the errors leave the window five minutes on."""
    timeline = AlertTimeline(watched.prometheus)
    namespace = watched.namespace
    alert = "TFOperatorReconcileErrors"
    try:
        create_job(kube_client, namespace, "steady", Worker=replica(1))
        run_pod(kube_client, namespace, "steady")
        timeline.wait_state(alert, "inactive", EVALUATIONS)
        kube_client.create(RESOURCE_QUOTAS, {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}},
                           namespace)
        # Admission enforces a quota only once the quota controller has written its status: before that the pods
        # would be made (run after the 2,000-replica job's clean-up, no create was refused for over a minute).
        wait_for(lambda: kube_client.get(RESOURCE_QUOTAS, "no-pods", namespace).get("status", {}).get("hard"),
                 180, "the quota controller to take up the quota", interval=0.5)
        for name in REFUSED:
            create_job(kube_client, namespace, name, Worker=replica(1))
        timeline.note(f"ResourceQuota no-pods (pods: 0) created, then TFJobs {', '.join(REFUSED)}: their pods' "
                      "creates are Forbidden")
        timeline.wait_state(alert, "pending", EVALUATIONS)
        fired = timeline.wait_state(alert, "firing", EVALUATIONS + pending_for(timeline.rule(alert)))
        assert_fired_after_pending(fired)
        errors = watched.prometheus.query('sum(controller_runtime_reconcile_errors_total{job="tfop"})')
        timeline.note(f"reconcile errors so far: {errors[0]['value'][1]}")

        kube_client.delete(RESOURCE_QUOTAS, "no-pods", namespace)
        timeline.note("ResourceQuota deleted")
        for name in REFUSED:
            run_pod(kube_client, namespace, name)
        timeline.note("their pods created on the operator's next retries")
        touches = 0
        deadline = time.monotonic() + DEADLINE
        while timeline.rule(alert)["state"] != "inactive":
            assert time.monotonic() < deadline, "\n".join(timeline.lines)
            for _ in range(20):
                touches += 1
                kube_client.patch(TFJOBS, "steady", {"metadata": {"annotations": {"tfop.test/touch": str(touches)}}},
                                  namespace)
                time.sleep(0.02)
            time.sleep(0.5)
        timeline.note(f"after {touches} updates of steady, each reconciled successfully")
        resolved = timeline.wait_state(alert, "inactive", 0)
    finally:
        if quota_left(kube_client, namespace):
            kube_client.delete(RESOURCE_QUOTAS, "no-pods", namespace)
        print(timeline.report(alert))
    assert_recorded(timeline, alert, resolved)


def quota_left(client: KubeClient, namespace: str) -> bool:
    items, _ = client.list(RESOURCE_QUOTAS, namespace)
    return any(item["metadata"]["name"] == "no-pods" for item in items)


def test_operator_down_fires_and_its_return_resolves(watched: Monitored) -> None:
    """Last: the operator restarts, and its counters with it."""
    timeline = AlertTimeline(watched.prometheus)
    alert = "TFOperatorDown"
    try:
        timeline.wait_state(alert, "inactive", EVALUATIONS)
        timeline.note(f"operator stopped (SIGTERM), exit code {watched.operator.terminate()}")
        timeline.wait_state(alert, "pending", EVALUATIONS)
        fired = timeline.wait_state(alert, "firing", EVALUATIONS + pending_for(timeline.rule(alert)))
        assert_fired_after_pending(fired)
        watched.operator.start()
        timeline.note("operator started again, on the same metrics port")
        watched.wait_scraped()
        timeline.note("Prometheus scraped it healthy (up == 1)")
        resolved = timeline.wait_state(alert, "inactive", EVALUATIONS)
    finally:
        print(timeline.report(alert))
    assert_recorded(timeline, alert, resolved)
