"""Secure /metrics against the real apiserver: `tfop run --metrics-secure` scraped over HTTPS with real
ServiceAccount tokens (TokenRequest, as `kubectl create token` gets one). A ServiceAccount bound to the shipped
ClusterRole tfop-metrics-reader reads /metrics; one without it gets 403, no token or a made-up one 401; the probes
stay plain HTTP; and scrapes after the first cost the apiserver no review for a minute."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster
from support.http import http_get
from support.metrics_readers import READER_ROLE, may_get_metrics, scraper_tokens
from support.operator_process import OperatorProcess
from tfop import yamlio

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def metrics_reader(cluster: LocalCluster, namespace: str) -> Iterator[dict[str, str]]:
    """Tokens of two ServiceAccounts: "prometheus", bound to the rules of the kustomize base's
    tfop-metrics-reader, and "stranger", bound to nothing. The role is made under a name of this test's own, so
    that the cluster-wide name stays free for test_deploy's installs (Helm refuses to adopt an object it did not
    make)."""
    rendered = yamlio.load_all(cluster.kubectl("kustomize", str(REPO / "deploy")).stdout)
    shipped = next(doc for doc in rendered if doc and doc["kind"] == "ClusterRole"
                   and doc["metadata"]["name"] == READER_ROLE)
    role = {**shipped, "metadata": {"name": f"{namespace}-{READER_ROLE}"}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(role))
    try:
        with scraper_tokens(cluster, namespace, readers=["prometheus"], others=["stranger"],
                            role=role["metadata"]["name"]) as tokens:
            yield tokens
    finally:
        cluster.kubectl("delete", "clusterrole", role["metadata"]["name"], check=False)


def review_posts(exposition: str) -> float:
    """POSTs the operator made to the apiserver that succeeded: with no TFJob about, only its reviews."""
    match = re.search(r'^rest_client_requests_total\{code="201",method="POST"\} (\S+)$', exposition, re.MULTILINE)
    return float(match[1]) if match else 0.0


def test_only_a_principal_allowed_get_on_metrics_reads_them(
        cluster: LocalCluster, tfjob_crd: Path, namespace: str, metrics_reader: dict[str, str],
        tmp_path: Path) -> None:
    assert not may_get_metrics(cluster, f"system:serviceaccount:{namespace}:stranger")
    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                               "--metrics-secure").start()
    try:
        started = time.monotonic()
        allowed = operator.get("/metrics", token=metrics_reader["prometheus"])
        first = time.monotonic() - started
        refused = {"stranger's token": operator.get("/metrics", token=metrics_reader["stranger"]),
                   "no token": operator.get("/metrics"),
                   "a made-up token": operator.get("/metrics", token="not-a-token")}
        for who, (status, body) in refused.items():
            print(f"GET https://127.0.0.1:{operator.metrics_port}/metrics with {who}: {status} {body.strip()!r}")
        print(f"with the prometheus ServiceAccount's token: {allowed[0]}, {len(allowed[1])} bytes, first scrape "
              f"{first * 1000:.0f} ms (two reviews)")
        assert allowed[0] == 200 and "# TYPE workqueue_depth gauge" in allowed[1]
        stranger = f"system:serviceaccount:{namespace}:stranger"
        assert refused["stranger's token"] == (403, f"Forbidden: {stranger} may not get /metrics\n")
        assert refused["no token"] == (401, "Unauthorized: send a bearer token the apiserver accepts\n")
        assert refused["a made-up token"][0] == 401

        # Plain HTTP on the metrics port gets nothing; the probes' port stays plain HTTP, for the kubelet.
        with pytest.raises(ConnectionResetError):  # the TLS handshake fails, the server hangs up
            http_get(f"http://127.0.0.1:{operator.metrics_port}/metrics")
        assert operator.get("/readyz") == (200, "ok\n")

        # Verdicts are cached: further scrapes of every caller cost the apiserver nothing.
        before = review_posts(operator.get("/metrics", token=metrics_reader["prometheus"])[1])
        started = time.monotonic()
        for _ in range(5):
            for token in metrics_reader.values():
                operator.get("/metrics", token=token)
        cached = (time.monotonic() - started) / 10
        after = review_posts(operator.get("/metrics", token=metrics_reader["prometheus"])[1])
        print(f"reviews POSTed: {before:g} after the first scrapes, {after:g} after 10 more; a cached scrape "
              f"{cached * 1000:.0f} ms")
        assert before >= 5 and after == before  # 2 + 2 + 1 (a made-up token needs no SubjectAccessReview)
    finally:
        operator.terminate()
    log = [json.loads(line) for line in operator.log_path.read_text().splitlines() if line.startswith("{")]
    refusals = sorted(entry["status"] for entry in log if entry.get("event") == "metrics request refused")
    assert refusals[:3] == [401, 401, 403] and {entry["level"] for entry in log
                                               if entry.get("event") == "metrics request refused"} == {"debug"}
    assert any(entry.get("event") == "made a self-signed certificate for /metrics" for entry in log)
