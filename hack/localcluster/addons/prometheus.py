"""A Prometheus server (built by hack/build-prometheus.sh) beside a local cluster, on loopback, scraping tfop the
way the Helm chart's ServiceMonitor tells the Prometheus Operator to, with the chart's alerts loaded.

    python3 hack/local_cluster.py prometheus up|down|status [--dir .local/cluster] [--target ADDRESS[=POD] ...]
                                             [--interval 5s] [--metrics-secure]

Nothing about the scrape is written here: `up` renders the chart (helm template, as the docs install it) and
reads its ServiceMonitor, the Service that selects, and the Deployment's container that Service's named port
leads to: the path, the interval, the scrape timeout, the scheme, the bearer token and TLS settings, the `job`
label (from `jobLabel`) and the target labels the Prometheus Operator adds (namespace, service, pod, container,
endpoint). The rules are the chart's rendered PrometheusRule. Where the endpoint sends `bearerTokenFile`
(Prometheus' own ServiceAccount token), the token is a real one of the cluster's (prometheus_account.py).
Out-of-cluster operators run as processes on the host, so the targets are addresses on loopback in a file_sd file
that Prometheus watches (`set_targets` rewrites it; no restart), not Kubernetes service discovery.

From the command line the default target is where `make run` serves /metrics (hack/run.sh's --metrics-addr), and
the chart is rendered with metrics.secure=false, as `make run` serves it: plain HTTP. `--metrics-secure` (for
`make run ARGS=--metrics-secure`) keeps the chart's default, HTTPS with the token of monitoring/prometheus; the
tests always scrape that way. `--interval` (tests: `Prometheus(..., interval="1s")`) overrides the
ServiceMonitor's interval for scrapes and rule evaluation alike.

The server answers its HTTP API on 127.0.0.1 (a port chosen once per directory); it has no web UI (see
hack/build-prometheus.sh). State: <dir>/prometheus/ (config, rules, targets, token, data), <dir>/run/prometheus.pid,
<dir>/logs/prometheus.log.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from ..cluster import LocalCluster
from ..supervisor import ClusterError
from .process import HACK_DIR, AddOnProcess, describe, kept_port, run_build_script, run_cli
from .prometheus_account import ACCOUNT, NAMESPACE, USER, expiry, grant, write_token
from .prometheus_chart import RELEASE, Monitoring, ScrapeJob

DEFAULT_DIR = HACK_DIR.parent / ".local" / "cluster"
BINARY = "prometheus"


def log(message: str) -> None:
    print(f"[prometheus] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding `prometheus` and `promtool`, built once per version."""
    return run_build_script("build-prometheus.sh")


class PrometheusError(ClusterError):
    """The server answered an API call with an error (a bad query, say)."""


class Prometheus:
    """The Prometheus of one cluster directory."""

    def __init__(self, directory: Path, monitoring: Monitoring | None = None, interval: str | None = None,
                 cluster: LocalCluster | None = None) -> None:
        self.directory = Path(directory).resolve()
        self.state = self.directory / "prometheus"
        self.process = AddOnProcess(self.directory, BINARY)
        self._monitoring = monitoring
        self.interval = interval
        self.cluster = cluster  # the one whose token Prometheus sends, where the ServiceMonitor says to send one
        self.extra_scrape_configs: list[dict[str, Any]] = []  # written as they are (tests: scrapes to be refused)

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

    @property
    def token_file(self) -> Path:
        return self.state / "token"

    def port(self) -> int:
        """Chosen once per directory, so `make prometheus-up` keeps its address across restarts."""
        return kept_port(self.state)

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
        # fsnotify sees a rewrite of the targets at once; the refresh is only the fallback where it cannot.
        scrape = {**job.config(self.token_file if job.bearer_token else None),
                  "file_sd_configs": [{"files": [str(self.targets_file)], "refresh_interval": "5s"}]}
        config = {"global": {"scrape_interval": job.interval, "evaluation_interval": job.interval},
                  "rule_files": [str(rules)], "scrape_configs": [scrape, *self.extra_scrape_configs]}
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
        if self.job.bearer_token:
            self.authorize()
        else:
            self.token_file.unlink(missing_ok=True)
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

    def authorize(self) -> None:
        """Grants Prometheus' ServiceAccount what the chart's metrics-reader role allows and writes a new token of
        it to `token_file`."""
        if self.cluster is None:
            raise ClusterError("the ServiceMonitor sends a bearer token: Prometheus needs the cluster that issues it")
        hint = f"is the cluster in {self.cluster.directory} up? (make cluster-up)"
        if self.cluster.bin_dir is None or not self.cluster.kubeconfig.exists():
            raise ClusterError(f"no token for Prometheus without a cluster: {hint}")
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            grant(self.cluster, self.monitoring.reader_rules)
            write_token(self.cluster, self.token_file)
        except ClusterError as error:
            raise ClusterError(f"{error}\n({hint})") from error

    def token_expiry(self) -> float | None:
        """When the token Prometheus sends expires (Unix seconds); None if it sends none."""
        return expiry(self.token_file.read_text()) if self.token_file.exists() else None

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
        expires = self.token_expiry() if pid else None
        token = f", scraping as {USER} until {_utc(expires)}" if expires else ""
        return describe(pid, f", API on {self.url}{token}" if pid else "")

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


def _utc(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when))


def make_run_address() -> str:
    """Where `make run` serves /metrics: the --metrics-addr hack/run.sh gives tfop."""
    found = re.search(r"--metrics-addr (\S+)", (HACK_DIR / "run.sh").read_text())
    if found is None:
        raise ClusterError("hack/run.sh passes no --metrics-addr; give --target")
    return found[1]


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
                             "(default: where `make run` listens)")
    parser.add_argument("--interval", help="scrape and evaluation interval instead of the ServiceMonitor's")
    parser.add_argument("--metrics-secure", action="store_true",
                        help="scrape as the chart's default ServiceMonitor says, over HTTPS with a token of the "
                             f"ServiceAccount {NAMESPACE}/{ACCOUNT} "
                             "(for `make run ARGS=--metrics-secure`); default: plain HTTP, as `make run` serves "
                             "and the chart renders with metrics.secure=false")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        if args.command == "up":
            values = () if args.metrics_secure else ("metrics.secure=false",)
            prometheus = Prometheus(args.dir, Monitoring.from_chart(*values), interval=args.interval,
                                    cluster=LocalCluster(args.dir) if args.metrics_secure else None)
            job = prometheus.job
            given = args.targets or [make_run_address()]
            targets = dict(parse_target(text, f"{RELEASE}-{index}") for index, text in enumerate(given))
            prometheus.start(targets)
            expires = prometheus.token_expiry()
            token = f" with a token of {USER} (valid until {_utc(expires)}; `up` renews it)" if expires else ""
            log(f"scraping {', '.join(targets)} every {job.interval} at {job.path} over {job.scheme}{token} as "
                f"job={job.labels['job']}, {sum(len(group['rules']) for group in prometheus.monitoring.groups)} "
                "rules loaded")
            print(prometheus.url)
            return
        prometheus = Prometheus(args.dir)
        if args.command == "down":
            prometheus.stop()
            log("stopped")
        else:
            print(f"{'prometheus':26} {prometheus.status()}")

    return run_cli(command, log)

