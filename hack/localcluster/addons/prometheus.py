"""A Prometheus server (built by hack/build-prometheus.sh) beside a local cluster, on loopback, scraping tfop the
way the Helm chart's ServiceMonitor tells the Prometheus Operator to, with the chart's alerts loaded.

    python3 hack/local_cluster.py prometheus up|down|status [--dir .local/cluster] [--target ADDRESS[=POD] ...]
                                             [--interval 5s]

Nothing about the scrape is written here: `up` renders the chart (helm template, as the docs install it) and
reads its ServiceMonitor, the Service that selects, and the Deployment's container port that Service's named
port leads to: the path, the interval, the scrape timeout, the scheme, the `job` label (from `jobLabel`) and the
target labels the Prometheus Operator adds (namespace, service, pod, container, endpoint). The rules are the
chart's rendered PrometheusRule. Out-of-cluster operators run as processes on the host, so the targets are
addresses on loopback in a file_sd file that Prometheus watches (`set_targets` rewrites it; no restart), not
Kubernetes service discovery. The default target is 127.0.0.1 on the container's metrics port, where `make run`
serves /metrics. `--interval` (tests: `Prometheus(..., interval="1s")`) overrides the ServiceMonitor's interval
for scrapes and rule evaluation alike.

The server answers its HTTP API on 127.0.0.1 (a port chosen once per directory); it has no web UI (see
hack/build-prometheus.sh). State: <dir>/prometheus/ (config, rules, targets, data), <dir>/run/prometheus.pid,
<dir>/logs/prometheus.log.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ports import free_port

from ..supervisor import ClusterError
from .process import AddOnProcess, describe, run_build_script, run_cli

HACK_DIR = Path(__file__).resolve().parents[2]
CHART = HACK_DIR.parent / "deploy" / "helm" / "tfop"
DEFAULT_DIR = HACK_DIR.parent / ".local" / "cluster"
# The release and namespace the install docs use; they name the Service, and so the `service` target label.
RELEASE, RELEASE_NAMESPACE = "tfop", "tfop-system"
BINARY = "prometheus"
DEFAULT_SCRAPE_TIMEOUT = 10.0  # Prometheus' own default, capped at the interval


def log(message: str) -> None:
    print(f"[prometheus] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding `prometheus` and `promtool`, built once per version."""
    return run_build_script("build-prometheus.sh")


def seconds(duration: str) -> float:
    """A Prometheus duration (`30s`, `1m30s`, `500ms`) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"(\d+)(ms|[smhdwy])", duration)
    if not parts or "".join(number + unit for number, unit in parts) != duration:
        raise ClusterError(f"{duration!r} is not a Prometheus duration")
    return sum(int(number) * units[unit] for number, unit in parts)


def render_chart(*values: str) -> list[dict[str, Any]]:
    """The chart's documents for RELEASE in RELEASE_NAMESPACE, its ServiceMonitor and PrometheusRule rendered
    whether or not a cluster serves their CRDs (`values` are more `--set`s)."""
    helm = run_build_script("build-helm.sh")
    command = [str(helm), "template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE,
               "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"]
    for value in values:
        command += ["--set", value]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        raise ClusterError(f"helm template {CHART} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in documents if doc["kind"] == kind]
    if len(found) != 1:
        raise ClusterError(f"the chart renders {len(found)} {kind}s; this reads exactly one")
    return found[0]


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


@dataclass(frozen=True)
class ScrapeJob:
    """One ServiceMonitor endpoint resolved against what it selects, as the Prometheus Operator resolves it."""

    name: str  # the scrape config's job_name, as the operator spells it: serviceMonitor/<ns>/<name>/<index>
    labels: dict[str, str]  # the target labels every target gets (job, namespace, service, container, endpoint)
    path: str
    scheme: str
    interval: str
    timeout: str | None  # the endpoint's scrapeTimeout, if it sets one
    port: int  # the container port the Service's named port leads to

    def config(self, targets_file: Path) -> dict[str, Any]:
        interval = seconds(self.interval)
        timeout = min(seconds(self.timeout) if self.timeout else DEFAULT_SCRAPE_TIMEOUT, interval)
        return {"job_name": self.name, "metrics_path": self.path, "scheme": self.scheme,
                "scrape_interval": self.interval, "scrape_timeout": f"{int(timeout * 1000)}ms",
                # fsnotify sees a rewrite at once; the refresh is only the fallback where it cannot.
                "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "5s"}]}


def scrape_job(documents: list[dict[str, Any]]) -> ScrapeJob:
    """The chart's ServiceMonitor's one endpoint, with the Service it selects and the container port behind it."""
    monitor = _one(documents, "ServiceMonitor")
    spec = monitor["spec"]
    if len(spec["endpoints"]) != 1:
        raise ClusterError(f"the ServiceMonitor has {len(spec['endpoints'])} endpoints; this reads exactly one")
    endpoint = spec["endpoints"][0]
    services = [doc for doc in documents if doc["kind"] == "Service"
                and _selects(spec["selector"]["matchLabels"], doc["metadata"].get("labels", {}))]
    if len(services) != 1:
        raise ClusterError(f"the ServiceMonitor's selector matches {len(services)} Services, not one")
    service = services[0]
    [service_port] = [port for port in service["spec"]["ports"] if port.get("name") == endpoint["port"]]
    deployment = _one(documents, "Deployment")
    if not _selects(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"]):
        raise ClusterError(f"Service {service['metadata']['name']} does not select the Deployment's pods")
    target = service_port.get("targetPort", service_port["port"])
    containers = [(container["name"], port["containerPort"])
                  for container in deployment["spec"]["template"]["spec"]["containers"]
                  for port in container.get("ports", ()) if target in (port.get("name"), port["containerPort"])]
    if len(containers) != 1:
        raise ClusterError(f"the Service's port {endpoint['port']} leads to {len(containers)} container ports")
    container, port = containers[0]
    namespace = monitor["metadata"].get("namespace", RELEASE_NAMESPACE)
    job_label = spec.get("jobLabel")
    job = service["metadata"]["labels"].get(job_label) if job_label else None
    return ScrapeJob(name=f"serviceMonitor/{namespace}/{monitor['metadata']['name']}/0",
                     labels={"job": job or service["metadata"]["name"], "namespace": namespace,
                             "service": service["metadata"]["name"], "container": container,
                             "endpoint": endpoint["port"]},
                     path=endpoint.get("path", "/metrics"), scheme=endpoint.get("scheme", "http"),
                     interval=endpoint.get("interval", "30s"), timeout=endpoint.get("scrapeTimeout"), port=port)


def rule_groups(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rendered PrometheusRule's groups, which a Prometheus rule file holds as they are."""
    return list(_one(documents, "PrometheusRule")["spec"]["groups"])


@dataclass(frozen=True)
class Monitoring:
    """What the chart says about scraping tfop and alerting on it."""

    job: ScrapeJob
    groups: list[dict[str, Any]]

    @classmethod
    def from_chart(cls, *values: str) -> Monitoring:
        documents = render_chart(*values)
        return cls(scrape_job(documents), rule_groups(documents))


class PrometheusError(ClusterError):
    """The server answered an API call with an error (a bad query, say)."""


class Prometheus:
    """The Prometheus of one cluster directory."""

    def __init__(self, directory: Path, monitoring: Monitoring | None = None, interval: str | None = None) -> None:
        self.directory = Path(directory).resolve()
        self.state = self.directory / "prometheus"
        self.process = AddOnProcess(self.directory, BINARY)
        self._monitoring = monitoring
        self.interval = interval

    @property
    def monitoring(self) -> Monitoring:
        if self._monitoring is None:
            self._monitoring = Monitoring.from_chart()
        return self._monitoring

    @property
    def job(self) -> ScrapeJob:
        job = self.monitoring.job
        return replace(job, interval=self.interval) if self.interval else job

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    @property
    def targets_file(self) -> Path:
        return self.state / "targets.json"

    def port(self) -> int:
        """Chosen once per directory, so `make prometheus-up` keeps its address across restarts."""
        saved = self.state / "port"
        if not saved.exists():
            self.state.mkdir(parents=True, exist_ok=True)
            saved.write_text(str(free_port()))
        return int(saved.read_text())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port()}"

    def pid(self) -> int | None:
        return self.process.pid()

    # --- configuration ---------------------------------------------------------------------------------------
    def write_config(self) -> None:
        job = self.job
        self.state.mkdir(parents=True, exist_ok=True)
        rules = self.state / "rules.yaml"
        rules.write_text(yaml.safe_dump({"groups": self.monitoring.groups}, sort_keys=False))
        config = {"global": {"scrape_interval": job.interval, "evaluation_interval": job.interval},
                  "rule_files": [str(rules)], "scrape_configs": [job.config(self.targets_file)]}
        (self.state / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        if not self.targets_file.exists():
            self.set_targets({})

    def set_targets(self, targets: Mapping[str, str]) -> None:
        """Scrape exactly `targets`: address (host:port) -> the `pod` label its series get. Written whole and
        renamed into place, so Prometheus never reads half a file."""
        groups = [{"targets": [address], "labels": {**self.job.labels, "pod": pod}}
                  for address, pod in sorted(targets.items())]
        self.state.mkdir(parents=True, exist_ok=True)
        partial = self.targets_file.with_suffix(".partial")
        partial.write_text(json.dumps(groups, indent=1))
        partial.replace(self.targets_file)

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self, targets: Mapping[str, str] | None = None, timeout: float = 60.0) -> None:
        """Writes the configuration and starts the server, or has a running one reload it."""
        binary = build() / BINARY
        self.write_config()
        if targets is not None:
            self.set_targets(targets)
        if self.pid() is not None:
            self._reload()
            return
        # The lifecycle API is for /-/reload, which answers once a reload is done or says why it failed (a SIGHUP
        # says nothing); like the rest of the server it listens on loopback only.
        self.process.spawn([str(binary), f"--config.file={self.state / 'prometheus.yml'}",
                            f"--storage.tsdb.path={self.state / 'data'}", "--web.enable-lifecycle",
                            f"--web.listen-address=127.0.0.1:{self.port()}"], cwd=self.state)
        deadline = time.monotonic() + timeout
        while not _ready(self.url):
            if self.pid() is None:
                raise self.process.exited("prometheus")
            if time.monotonic() > deadline:
                raise ClusterError(f"prometheus not ready after {timeout:.0f}s; see {self.log_file}")
            time.sleep(0.2)

    def _reload(self) -> None:
        """/-/reload answers once the configuration and rules are loaded, or with why they are not."""
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        try:
            urllib.request.urlopen(request, timeout=60).close()
        except urllib.error.HTTPError as error:
            raise ClusterError(f"prometheus refused its new configuration: {error.read().decode()}") from error

    def stop(self, timeout: float = 15.0) -> None:
        self.process.stop(timeout)

    def status(self) -> str:
        pid = self.pid()
        return describe(pid, f", API on {self.url}" if pid else "")

    # --- the HTTP API ----------------------------------------------------------------------------------------
    def api(self, path: str, **params: str | list[str]) -> Any:
        """GET /api/v1/<path>; the answer's `data`. A list value repeats the parameter (`match[]`)."""
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=30) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's series (a vector's samples), at `at` (Unix seconds) or now."""
        params = {"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"}
        return list(self.api("query", **params)["result"])

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        return list(self.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                             step=f"{step}")["result"])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


def parse_target(text: str, default_pod: str) -> tuple[str, str]:
    address, _, pod = text.partition("=")
    return address, pod or default_pod


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    parser.add_argument("--target", action="append", dest="targets", metavar="ADDRESS[=POD]",
                        help="a /metrics address to scrape, with the pod label its series get; repeatable "
                             "(default 127.0.0.1 on the chart's metrics port, where `make run` listens)")
    parser.add_argument("--interval", help="scrape and evaluation interval instead of the ServiceMonitor's")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        prometheus = Prometheus(args.dir, interval=args.interval)
        if args.command == "up":
            job = prometheus.job
            given = args.targets or [f"127.0.0.1:{job.port}"]
            targets = dict(parse_target(text, f"{RELEASE}-{index}") for index, text in enumerate(given))
            prometheus.start(targets)
            log(f"scraping {', '.join(targets)} every {job.interval} at {job.path} as job={job.labels['job']}, "
                f"{sum(len(group['rules']) for group in prometheus.monitoring.groups)} rules loaded")
            print(prometheus.url)
        elif args.command == "down":
            prometheus.stop()
            log("stopped")
        else:
            print(f"{'prometheus':26} {prometheus.status()}")

    return run_cli(command, log)

