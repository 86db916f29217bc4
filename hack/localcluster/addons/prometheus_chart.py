"""What the Helm chart says about scraping tfop and alerting on it, read as the Prometheus Operator would read it:
its ServiceMonitor's one endpoint resolved against the Service it selects and the Deployment's container behind
that, its PrometheusRule's groups, and the rules of its metrics-reader ClusterRole (what a scraper's token must
be allowed). prometheus.py runs a Prometheus with them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfop import yamlio

from ..supervisor import ClusterError
from .process import HACK_DIR, run_build_script
from .prometheus_account import reader_rules

CHART = HACK_DIR.parent / "deploy" / "helm" / "tfop"
# The release and namespace the install docs use; they name the Service, and so the `service` target label.
RELEASE, RELEASE_NAMESPACE = "tfop", "tfop-system"
DEFAULT_SCRAPE_TIMEOUT = 10.0  # Prometheus' own default, capped at the interval
# What this reads of a ServiceMonitor endpoint; anything else stops `up` rather than being left out unsaid.
ENDPOINT_KEYS = {"port", "path", "interval", "scrapeTimeout", "scheme", "bearerTokenFile", "tlsConfig"}
# tlsConfig fields as Prometheus' tls_config spells them. A CA, certificate or key from a Secret or from a file in
# Prometheus' pod (cert-manager's, say) has nothing on this host to stand for it.
TLS_KEYS = {"insecureSkipVerify": "insecure_skip_verify", "serverName": "server_name"}


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
    return [doc for doc in yamlio.load_all(result.stdout) if doc]


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
    bearer_token: bool  # it sends Prometheus' own ServiceAccount token (bearerTokenFile)
    tls: dict[str, Any]  # its tlsConfig, as Prometheus' tls_config

    def config(self, token_file: Path | None) -> dict[str, Any]:
        """The scrape config but for where its targets come from, sending the token in `token_file` (None:
        none)."""
        interval = seconds(self.interval)
        timeout = min(seconds(self.timeout) if self.timeout else DEFAULT_SCRAPE_TIMEOUT, interval)
        config: dict[str, Any] = {"job_name": self.name, "metrics_path": self.path, "scheme": self.scheme,
                                  "scrape_interval": self.interval, "scrape_timeout": f"{int(timeout * 1000)}ms"}
        if token_file is not None:
            config["authorization"] = {"type": "Bearer", "credentials_file": str(token_file)}
        if self.tls:
            config["tls_config"] = dict(self.tls)
        return config


def scrape_job(documents: list[dict[str, Any]]) -> ScrapeJob:
    """The chart's ServiceMonitor's one endpoint, with the Service it selects and the container port behind it."""
    monitor = _one(documents, "ServiceMonitor")
    spec = monitor["spec"]
    if len(spec["endpoints"]) != 1:
        raise ClusterError(f"the ServiceMonitor has {len(spec['endpoints'])} endpoints; this reads exactly one")
    endpoint = spec["endpoints"][0]
    tls = endpoint.get("tlsConfig", {})
    unread = [*sorted(endpoint.keys() - ENDPOINT_KEYS),
              *(f"tlsConfig.{key}" for key in sorted(tls.keys() - TLS_KEYS.keys()))]
    if unread:
        raise ClusterError(f"the ServiceMonitor's endpoint sets {', '.join(unread)}, which this cannot do locally")
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
    container = containers[0][0]
    namespace = monitor["metadata"].get("namespace", RELEASE_NAMESPACE)
    job_label = spec.get("jobLabel")
    job = service["metadata"]["labels"].get(job_label) if job_label else None
    return ScrapeJob(name=f"serviceMonitor/{namespace}/{monitor['metadata']['name']}/0",
                     labels={"job": job or service["metadata"]["name"], "namespace": namespace,
                             "service": service["metadata"]["name"], "container": container,
                             "endpoint": endpoint["port"]},
                     path=endpoint.get("path", "/metrics"), scheme=endpoint.get("scheme", "http"),
                     interval=endpoint.get("interval", "30s"), timeout=endpoint.get("scrapeTimeout"),
                     bearer_token="bearerTokenFile" in endpoint,
                     tls={TLS_KEYS[key]: value for key, value in tls.items()})


def rule_groups(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rendered PrometheusRule's groups, which a Prometheus rule file holds as they are."""
    return list(_one(documents, "PrometheusRule")["spec"]["groups"])


@dataclass(frozen=True)
class Monitoring:
    """What the chart says about scraping tfop and alerting on it."""

    job: ScrapeJob
    groups: list[dict[str, Any]]
    reader_rules: list[dict[str, Any]]  # what the chart's metrics-reader ClusterRole allows, granted to Prometheus

    @classmethod
    def from_chart(cls, *values: str) -> Monitoring:
        documents = render_chart(*values)
        return cls(scrape_job(documents), rule_groups(documents), reader_rules(documents))
