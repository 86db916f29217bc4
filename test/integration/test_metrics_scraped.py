"""tfop's metrics as a real Prometheus scrapes them (hack/localcluster/addons/prometheus.py, the chart's ServiceMonitor
settings, every second instead of the shipped 30s) after a small workload on kwok's fake nodes: jobs that succeed,
fail, restart a replica and are deleted after their TTL.

- Prometheus scrapes the secure /metrics (`tfop run --metrics-secure`) over HTTPS with its ServiceAccount's token,
  granted what the chart's metrics-reader ClusterRole allows; the same endpoint scraped with the token of a
  ServiceAccount without that grant, or with none, is a target down, with tfop's 403 or 401 as its last error.
- Every query of the chart's Grafana dashboard returns a series, with its `$namespace` variable set to an option
  Prometheus offers for it (the workload's namespace) and to its All value, and selects only metrics tfop exports.
- Metric hygiene, read from the server's metadata and series: no label value names a job, pod or uid (label values
  stay bounded), counters end in `_total`, names carry base units, every metric has help text.
- docs/operating/metrics.md's table is what the server has: every metric, its type and its labels.

Run with -rP to see the panel table."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.addons.prometheus_chart import Monitoring, seconds
from support import grafana
from support.alert_timeline import clock
from support.metric_table import Scraped, differences, documented, help_problems, naming_problems
from support.monitoring import REFUSED, SCRAPE_INTERVAL, Monitored, monitored_operator, scratch_namespace
from support.tfjobs import TFJOBS, condition, create_job, job_status, pods_by_name, replica
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient

INTERVAL = seconds(SCRAPE_INTERVAL)
# Grafana's $__rate_interval is at least 4 scrape intervals: the scrapes a dashboard's rate() needs after a change.
RATE_SCRAPES = 4
ROLE_LABEL = "training.kubeflow.org/job-role"


def scrapes_since(query: Callable[[str], list[dict[str, Any]]], since: float) -> int:
    """How many times Prometheus has scraped tfop since `since` (Unix seconds, Prometheus' clock: the same
    machine's)."""
    window = max(round((time.time() - since) * 1000), 1)  # whole milliseconds: Prometheus' durations
    found = query(f'count_over_time(up{{job="tfop"}}[{window}ms])')
    return int(float(found[0]["value"][1])) if found else 0


@dataclass
class Workload:
    monitored: Monitored
    identities: set[str] = field(default_factory=set)  # names and uids of the jobs and pods: never a label value

    @property
    def namespace(self) -> str:
        return self.monitored.namespace

    def running_pod(self, client: KubeClient, job: str) -> str:
        """The pod whose exit decides the job (the chief, else worker 0), once all the job's pods run."""
        def running() -> list[dict[str, Any]]:
            pods = list(pods_by_name(client, self.namespace, job).values())
            if not pods or any(pod.get("status", {}).get("phase") != "Running" for pod in pods):
                return []
            self.identities |= {identity for pod in pods for identity in (pod["metadata"]["name"],
                                                                          pod["metadata"]["uid"])}
            return [pod for pod in pods if pod["metadata"]["labels"].get(ROLE_LABEL) == "master"]

        [pod] = wait_for(running, DEADLINE, f"{job}'s pods running")
        return str(pod["metadata"]["name"])

    def run(self, client: KubeClient, job: str, exit_code: int, outcome: str, **specs: Any) -> None:
        created = create_job(client, self.namespace, job, **specs)
        self.identities |= {job, created["metadata"]["uid"]}
        pod = self.running_pod(client, job)
        # Its start latency is observed when tfop sees every replica run (the Running condition); an exit before
        # that ends a job tfop never saw running, and the start latency panel would have nothing to show.
        wait_for(lambda: (condition(client, self.namespace, job, "Running") or {}).get("status") == "True",
                 DEADLINE, f"{job} Running")
        exit_pod(client, self.namespace, pod, exit_code)
        if outcome == "Deleted":  # after its TTL, which may pass before a look sees it Succeeded
            wait_for(lambda: not [item for item in client.list(TFJOBS, self.namespace)[0]
                                  if item["metadata"]["name"] == job], DEADLINE, f"{job} deleted")
        elif outcome:
            wait_for(lambda: condition(client, self.namespace, job, outcome), DEADLINE, f"{job} {outcome}")


@pytest.fixture(scope="module")
def workload(cluster: LocalCluster, tfjob_crd: Path, chart_monitoring: Monitoring,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workload]:
    with (scratch_namespace(cluster, "metrics") as namespace,
          monitored_operator(cluster, tmp_path_factory.mktemp("metrics"), chart_monitoring, namespace,
                             refused=True) as monitored):
        client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        load = Workload(monitored)
        load.run(client, "wl-two-workers", 0, "Succeeded", Worker=replica(2))
        load.run(client, "wl-chief-ps", 0, "Succeeded", Chief=replica(1), PS=replica(1), Worker=replica(1))
        load.run(client, "wl-fails", 1, "Failed", Worker=replica(1))
        load.run(client, "wl-restarts", 137, "", Worker=replica(1, restart_policy="ExitCode"))
        wait_for(lambda: job_status(client, namespace, "wl-restarts").get("replicaStatuses", {}).get("Worker", {})
                 .get("restarts") == 1, DEADLINE, "wl-restarts restarted")
        exit_pod(client, namespace, load.running_pod(client, "wl-restarts"), 0)
        load.run(client, "wl-ttl", 0, "Deleted", run_policy={"ttlSecondsAfterFinished": 1}, Worker=replica(1))
        query = monitored.prometheus.query
        for expr in ('sum(training_operator_jobs_successful_total{job="tfop"}) == 4',
                     'sum(training_operator_jobs_failed_total{job="tfop"}) == 1',
                     'sum(training_operator_jobs_deleted_total{job="tfop"}) == 1',
                     'sum(tf_operator_restarts_total{job="tfop",exit_class="retryable"}) == 1'):
            wait_for(lambda expr=expr: query(expr), DEADLINE, f"Prometheus to have scraped {expr}", interval=0.5)
        # A rate over $__rate_interval (4 scrape intervals) after the last change has its samples once Prometheus
        # holds 4 scrapes of tfop taken since the counters above were seen at their final values.
        changed = time.time()
        wait_for(lambda: scrapes_since(query, changed) >= RATE_SCRAPES, DEADLINE,
                 f"{RATE_SCRAPES} scrapes of tfop after the last change", interval=0.5)
        yield load


@pytest.fixture(scope="module")
def scraped(workload: Workload) -> Scraped:
    return Scraped.read(workload.monitored.prometheus, workload.monitored.prometheus.job.labels["job"])


def finite(series: dict[str, Any]) -> list[tuple[float, str]]:
    """A series' samples that are numbers (a quantile of no observations is NaN)."""
    return [(at, value) for at, value in series.get("values") or [series["value"]] if not math.isnan(float(value))]


def test_prometheus_reads_metrics_with_its_token_and_a_token_without_the_grant_is_refused(
        workload: Workload) -> None:
    prometheus = workload.monitored.prometheus

    def scraped_targets() -> dict[str, dict[str, Any]]:
        """The active targets by job, once each has been scraped (health "unknown" until then)."""
        found = {target["labels"]["job"]: target for target in prometheus.api("targets", state="active")
                 ["activeTargets"]}
        return found if len(found) == 1 + len(REFUSED) and "unknown" not in {
            target["health"] for target in found.values()} else {}

    targets = wait_for(scraped_targets, DEADLINE, "every target scraped at least once")
    print("\n".join(f"{job:15} {target['scrapeUrl']:38} {target['health']:5} lastError={target['lastError']!r}"
                    for job, target in sorted(targets.items())))
    tfop = targets[prometheus.job.labels["job"]]
    assert (prometheus.job.scheme, prometheus.job.bearer_token) == ("https", True)
    assert tfop["scrapeUrl"].startswith("https://") and (tfop["health"], tfop["lastError"]) == ("up", "")
    for job, status in REFUSED.items():
        assert targets[job]["health"] == "down" and targets[job]["scrapeUrl"] == tfop["scrapeUrl"]
        assert targets[job]["lastError"].endswith(f"HTTP status {status}"), targets[job]


def test_every_dashboard_panel_returns_a_series(workload: Workload) -> None:
    prometheus = workload.monitored.prometheus
    dashboard = grafana.load()
    options = grafana.variable_options(prometheus, dashboard)
    assert workload.namespace in options["namespace"], options
    # The dashboard's time range as a user would zoom it to the workload: from before the operator started, so
    # every counter's first sample (0) is inside it; one step per scrape.
    start, end = workload.monitored.started, time.time()
    lines, empty = [], []
    for namespace in (workload.namespace, ".*"):  # one option, and the variable's All value
        for query in grafana.queries(dashboard):
            expr = grafana.substitute(query.expr, {"namespace": namespace}, range_seconds=end - start,
                                      step=INTERVAL, scrape_interval=INTERVAL)
            result = (prometheus.query(expr, at=end) if query.instant
                      else prometheus.query_range(expr, start, end, INTERVAL))
            answered = [finite(series) for series in result if finite(series)]
            last = ", ".join(f"{float(values[-1][1]):.4g} at {clock(float(values[-1][0]))}" for values in answered)
            lines.append(f"{query.panel[:30]:30} {query.legend[:20]:20} {namespace[:14]:14} "
                         f"{len(answered)} series; last {last[:60]}")
            if not answered:
                empty.append(f"{query.panel} ({query.legend}), $namespace={namespace}: {expr}")
    print("\n".join([f"{'panel':30} {'legend':20} {'$namespace':14} finite series; last value (UTC)", *lines]))
    assert not empty, "panels whose query returns no series:\n" + "\n".join(empty)


def test_dashboard_queries_select_only_metrics_tfop_exports(workload: Workload, scraped: Scraped) -> None:
    prometheus = workload.monitored.prometheus
    dashboard = grafana.load()
    exported = {name for family in scraped.metadata for name in scraped.names_of(family)} | {"up"}
    selectors = [selector for selector, _ in grafana.query_variables(dashboard).values()]
    exprs = [grafana.substitute(query.expr, {"namespace": ".*"}, range_seconds=3600, step=INTERVAL,
                                scrape_interval=INTERVAL) for query in grafana.queries(dashboard)]
    used: dict[str, set[str]] = {}
    for expr in [*selectors, *exprs]:
        for name in grafana.metric_names(prometheus, expr):
            used.setdefault(name, set()).add(expr)
    print("metrics the dashboard reads:", ", ".join(sorted(used)))
    assert used, "the parse found no metric names"
    foreign = {name: sorted(exprs) for name, exprs in used.items() if name not in exported}
    assert not foreign, f"the dashboard reads metrics tfop does not export: {foreign}"


def test_no_label_value_names_a_job_a_pod_or_a_uid(workload: Workload, scraped: Scraped) -> None:
    """Label values that name objects would grow without bound with the jobs run; the workload's names and uids
    must appear in none."""
    target = {*workload.monitored.prometheus.job.labels, "pod", "instance", "__name__"}
    values: dict[str, set[str]] = {}
    for series in scraped.series:
        for label, value in series.items():
            if label not in target:
                values.setdefault(label, set()).add(value)
    print("distinct values per label:", {label: len(found) for label, found in sorted(values.items())})
    leaks = {(label, value) for label, found in values.items() for value in found
             for identity in workload.identities if identity in value}
    assert len(workload.identities) > 10 and not leaks, f"labels naming objects: {sorted(leaks)}"
    assert values["job_namespace"] == {workload.namespace}


def test_counters_end_in_total_and_names_carry_base_units(scraped: Scraped) -> None:
    problems = naming_problems(scraped)
    assert scraped.metadata and not problems, "\n".join(problems)


def test_every_metric_has_help_text(scraped: Scraped) -> None:
    missing = help_problems(scraped)
    assert len(scraped.metadata) > 20 and not missing, f"metrics without help text: {missing}"


def test_the_metrics_page_lists_every_metric_prometheus_scraped(workload: Workload, scraped: Scraped) -> None:
    """The page's tables (docs/operating/metrics.md) against the server: a metric added, removed or relabelled
    fails this until the table says so; the failure prints the missing rows, ready to paste."""
    assert not scraped.unexplained(), f"series no metadata accounts for: {sorted(scraped.unexplained())}"
    target = {*workload.monitored.prometheus.job.labels, "pod", "instance"}
    metrics = scraped.metrics(target)
    print("\n".join(["as Prometheus has them (help text as the last column):",
                     *(metrics[name].row() for name in sorted(metrics))]))
    problems = differences(documented(), metrics)
    assert not problems, "docs/operating/metrics.md disagrees with Prometheus:\n" + "\n".join(problems)
