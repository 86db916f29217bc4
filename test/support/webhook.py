"""tfop's conversion webhook as a real process on loopback, and the TFJob CRD pointed at it.

The apiserver calls conversion webhooks over HTTPS only, so the tests make a CA and a serving certificate for
127.0.0.1 (openssl, as hack/local_cluster.py does for the apiserver) and put the CA into the CRD's caBundle.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from localcluster import LocalCluster
from ports import free_port
from support.waiting import DEADLINE, wait_for

CRD = "tfjobs.kubeflow.org"


def openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"openssl {' '.join(args[:2])} failed: {result.stderr}"


def make_webhook_certificates(directory: Path) -> Path:
    """tls.crt/tls.key for 127.0.0.1 signed by a CA of their own; returns the CA's certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=tfop-webhook-test-ca", cwd=directory)
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
            "-subj", "/CN=tfop-webhook", cwd=directory)
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tls.crt", "-days", "2", "-extfile", "server.ext", cwd=directory)
    return directory / "ca.crt"


class WebhookProcess:
    """`python -m tfop webhook` on 127.0.0.1."""

    def __init__(self, directory: Path) -> None:
        self.ca = make_webhook_certificates(directory / "certs")
        self.port = free_port()
        self.log_path = directory / "webhook.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tfop", "webhook", "--addr", f"127.0.0.1:{self.port}",
                 "--cert-dir", str(directory / "certs"), "--log-format", "json"],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/convert"

    def point_crd_here(self, cluster: LocalCluster) -> None:
        """Idempotent; other tests re-apply the checked-in CRD (whose clientConfig names the in-cluster Service),
        so every test that converts calls this first."""
        assert self.process.poll() is None, self.log_path.read_text()
        current = cluster.kubectl("get", "crd", CRD, "-o",
                                  "jsonpath={.spec.conversion.webhook.clientConfig.url}").stdout
        if current == self.url:
            return
        ca_bundle = base64.b64encode(self.ca.read_bytes()).decode()
        patch = {"spec": {"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                 "clientConfig": {"url": self.url, "caBundle": ca_bundle, "service": None}}}}}
        cluster.kubectl("patch", "crd", CRD, "--type=merge", "-p", json.dumps(patch))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(DEADLINE)


def apply_until_converted(cluster: LocalCluster, namespace: str, manifest: str, timeout: float = DEADLINE) -> str:
    """`kubectl apply` of an older-version manifest, retried while the apiserver has not yet picked up the CRD's
    new conversion config (it answers that it cannot reach the webhook)."""
    outcome: list[str] = []

    def attempt() -> bool:
        result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=False)
        outcome[:] = [result.stdout + result.stderr]
        if result.returncode == 0:
            return True
        assert "conversion webhook" in result.stderr or "connection refused" in result.stderr, result.stderr
        return False

    wait_for(attempt, timeout, "the apiserver to convert through the webhook", interval=0.5)
    return outcome[0]
