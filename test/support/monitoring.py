"""tfop as the chart runs it (with leader election, and /metrics secure where the chart's ServiceMonitor scrapes
HTTPS), scraped by a real Prometheus (hack/localcluster/addons/prometheus.py) the way that ServiceMonitor says, with
a real ServiceAccount token, for the tests that read tfop's metrics back through Prometheus' HTTP API."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from localcluster import LocalCluster
from localcluster.addons.prometheus import Prometheus
from localcluster.addons.prometheus_chart import Monitoring, ScrapeJob
from support.metrics_readers import scraper_tokens
from support.operator_process import OperatorProcess
from support.waiting import DEADLINE, wait_for

# The tests' scrape and evaluation interval, so they take seconds; the chart's ServiceMonitor ships 30s.
SCRAPE_INTERVAL = "1s"
POD = "tfop-0"  # the `pod` label of the one operator's series, as a Deployment's pod would have one
DISCOVERY_TIMEOUT = DEADLINE  # Prometheus passes discovered targets on at most every 5 s, then scrapes
# Scrapes of the operator that must be refused, by their `job` label: what the operator answers them.
REFUSED = {"tfop-stranger": "403 Forbidden", "tfop-anonymous": "401 Unauthorized"}


@contextmanager
def scratch_namespace(cluster: LocalCluster, base: str) -> Iterator[str]:
    """A fresh namespace for a whole test module (the `namespace` fixture is per test)."""
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    wait_for(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0,
             DEADLINE, f"the default ServiceAccount in namespace {name}")
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@dataclass
class Monitored:
    namespace: str
    operator: OperatorProcess
    prometheus: Prometheus
    started: float  # Unix time before the operator started: a range from here holds every series' first sample

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.operator.metrics_port}"

    def wait_scraped(self) -> None:
        """Until Prometheus has scraped the operator healthy (after a start or a restart)."""
        wait_for(lambda: self.prometheus.query(f'up{{instance="{self.address}"}} == 1'), DISCOVERY_TIMEOUT,
                 f"Prometheus to scrape the operator at {self.address}", interval=0.5)


def refused_scrapes(job: ScrapeJob, address: str, stranger_token: Path) -> list[dict[str, Any]]:
    """The operator at `address` scraped as `job` says but with the token of a ServiceAccount whose user may not
    get /metrics, and with none (REFUSED's jobs). Their `job` labels are their own, so no alert and no dashboard
    query (all select job="tfop") sees these targets down."""
    scrapes = []
    for name, token in zip(REFUSED, (stranger_token, None), strict=True):
        config = replace(job, name=name).config(token)
        config["static_configs"] = [{"targets": [address], "labels": {**job.labels, "job": name, "pod": POD}}]
        scrapes.append(config)
    return scrapes


@contextmanager
def monitored_operator(cluster: LocalCluster, directory: Path, monitoring: Monitoring, namespace: str,
                       refused: bool = False) -> Iterator[Monitored]:
    """`tfop run` for `namespace` with leader election (the chart's Deployment has it; its families show only
    with it) and, where `monitoring`'s scrape is HTTPS, --metrics-secure (as the chart's Deployment then passes
    it); a Prometheus in `directory` scraping it every SCRAPE_INTERVAL with `monitoring`'s rules and a token of
    its ServiceAccount in `cluster`. `refused`: the REFUSED scrapes too, with a token of a ServiceAccount made in
    `namespace` without the grant."""
    secure = ["--metrics-secure"] if monitoring.job.scheme == "https" else []
    started = time.time()
    operator = OperatorProcess(cluster.kubeconfig, directory / "operator.log", "--namespace", namespace,
                               "--leader-elect", "--leader-elect-namespace", namespace, *secure).start()
    prometheus = Prometheus(directory, monitoring, interval=SCRAPE_INTERVAL, cluster=cluster)
    monitored = Monitored(namespace, operator, prometheus, started)
    strangers: AbstractContextManager[dict[str, str]] = (
        scraper_tokens(cluster, namespace, readers=(), others=["stranger"]) if refused else nullcontext({}))
    try:
        with strangers as tokens:
            if refused:
                token_file = directory / "stranger.token"
                token_file.write_text(tokens["stranger"])
                prometheus.extra_scrape_configs = refused_scrapes(prometheus.job, monitored.address, token_file)
            prometheus.start({monitored.address: POD})
            monitored.wait_scraped()
            yield monitored
    finally:
        prometheus.stop()
        if operator.process is not None and operator.process.poll() is None:
            operator.terminate()
        print(f"--- operator log ---\n{operator.log_tail(40)}\n--- prometheus log: {prometheus.log_file}")
