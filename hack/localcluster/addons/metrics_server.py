"""metrics-server (built by hack/build-metrics-server.sh) beside a local cluster, on loopback: it serves the resource
metrics API (metrics.k8s.io) through the apiserver's aggregation layer, from each real node kubelet's
/metrics/resource. `kubectl top` and a HorizontalPodAutoscaler on CPU or memory read it.

    python3 hack/local_cluster.py metrics-server up|down|status|build [--dir .local/cluster]

It runs on the host rather than in a pod, so a few things differ from a release's manifests (manifests/base of the
module, in the Go module cache, whose RBAC and APIService are applied otherwise as written):
- the Service kube-system/metrics-server is an ExternalName Service for 127.0.0.1. With aggregator routing off the
  apiserver sends to a Service's cluster IP (nothing routes one to the host here) or to an ExternalName Service's
  name; an EndpointSlice cannot point at loopback (its validation refuses 127.0.0.0/8). See controlplane.py's
  front-proxy flags;
- the APIService trusts the cluster's CA, which signs metrics-server's serving certificate for
  metrics-server.kube-system.svc (the name the aggregator checks), instead of skipping verification, and names the
  port metrics-server listens on;
- metrics-server authenticates to the apiserver and to the kubelets with a client certificate of the cluster's CA
  whose name is the ServiceAccount's user, system:serviceaccount:kube-system:metrics-server, so the release's
  bindings apply as written: the kubelets accept client certificates only (no token webhook);
- it scrapes the real nodes only (by their label): kwok's fake nodes have no kubelet to answer.

`up` starts it unless it runs, waits until its /readyz says it holds metrics (after its second scrape of the real
nodes, so a cluster without real nodes never gets there), then registers the APIService and waits until the
apiserver reports it Available. `down` deletes the APIService first (an unavailable aggregated API fails discovery,
and with it namespace deletion and the garbage collector's work), then stops it. State: <dir>/metrics-server/ (port,
kubeconfig, manifests), <dir>/pki/metrics-server-*, <dir>/run/metrics-server.pid, <dir>/logs/metrics-server.log.
"""

from __future__ import annotations

import argparse
import base64
import ssl
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tfop import yamlio

from ..api_objects import answers_ok, apiservice_available
from ..cluster import DEFAULT_DIR, LocalCluster
from ..node_layout import NODE_LABEL
from ..pki import CLIENT_EXT, PKIError, ensure_signed, kubeconfig
from ..supervisor import ClusterError
from .process import AddOnProcess, describe, kept_port, run_build_script, run_cli

BINARY = "metrics-server"
NAMESPACE, NAME = "kube-system", "metrics-server"  # the release's Service and ServiceAccount
USER = f"system:serviceaccount:{NAMESPACE}:{NAME}"
API_SERVICE = "v1beta1.metrics.k8s.io"
# How often it scrapes the kubelets, as the release's Deployment sets it (metrics-server refuses less than 10 s); a
# CPU rate needs two scrapes, so the first pod metrics come one to two of these after a pod starts.
DEFAULT_RESOLUTION = "15s"


def log(message: str) -> None:
    print(f"[metrics-server] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding `metrics-server`, built once per version."""
    return run_build_script("build-metrics-server.sh")


def module_dir() -> Path:
    """The module's source in the Go module cache (its manifests/base holds the RBAC and the APIService)."""
    return run_build_script("build-metrics-server.sh", "--module-dir")


def release_manifests(module: Path, port: int, ca_bundle: str) -> list[dict[str, Any]]:
    """The release's RBAC and APIService, and its Service, made over for a metrics-server at 127.0.0.1:`port` (see
    the module's docstring)."""
    base = module / "manifests" / "base"
    documents = [doc for name in ("rbac.yaml", "service.yaml", "apiservice.yaml")
                 for doc in yamlio.load_all((base / name).read_text()) if doc]
    for doc in documents:
        if doc["kind"] == "Service":
            doc["spec"] = {"type": "ExternalName", "externalName": "127.0.0.1",
                           "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
        elif doc["kind"] == "APIService":
            if doc["metadata"]["name"] != API_SERVICE:
                raise ClusterError(f"{base / 'apiservice.yaml'} registers {doc['metadata']['name']}, not "
                                   f"{API_SERVICE}")
            spec = doc["spec"]
            spec.pop("insecureSkipTLSVerify", None)
            spec["caBundle"] = ca_bundle
            spec["service"] = {**spec["service"], "port": port}
    return documents


class MetricsServer:
    """The metrics-server of one LocalCluster."""

    def __init__(self, cluster: LocalCluster, resolution: str = DEFAULT_RESOLUTION) -> None:
        self.cluster = cluster
        self.resolution = resolution
        self.state = cluster.directory / "metrics-server"
        self.process = AddOnProcess(cluster.directory, BINARY)

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    def port(self) -> int:
        """Chosen once per cluster directory: the APIService names it, so a restarted metrics-server must keep it."""
        return kept_port(self.state)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port()}"

    def pid(self) -> int | None:
        return self.process.pid()

    # --- set-up ----------------------------------------------------------------------------------------------
    def make_credentials(self) -> Path:
        """Its client and serving certificates (the cluster's CA signs both) and a kubeconfig of the client one;
        returns the kubeconfig."""
        pki = self.cluster.pki
        try:
            ensure_signed(pki, "metrics-server-client", f"/CN={USER}", CLIENT_EXT)
            ensure_signed(pki, "metrics-server-serving", f"/CN={NAME}",
                          f"subjectAltName=DNS:{NAME}.{NAMESPACE}.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        except PKIError as error:
            raise ClusterError(str(error)) from error
        path = self.state / "kubeconfig"
        self.state.mkdir(parents=True, exist_ok=True)
        path.write_text(kubeconfig(self.cluster.server, pki, "metrics-server-client", user=USER))
        return path

    def command(self, binary: Path, config: Path) -> list[str]:
        pki = self.cluster.pki
        return [
            str(binary), f"--kubeconfig={config}",
            # Whom the front proxy vouches for, and whether they may: asked of the apiserver as this same user.
            f"--authentication-kubeconfig={config}", f"--authorization-kubeconfig={config}",
            "--bind-address=127.0.0.1", f"--secure-port={self.port()}",
            f"--tls-cert-file={pki / 'metrics-server-serving.crt'}",
            f"--tls-private-key-file={pki / 'metrics-server-serving.key'}",
            # The real nodes report their bridge address as InternalIP (kubelet's --node-ip) and serve on the port
            # in their status; their serving certificates are the cluster CA's, for that address.
            "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
            f"--kubelet-certificate-authority={pki / 'ca.crt'}",
            f"--node-selector={NODE_LABEL}=true",
            f"--metric-resolution={self.resolution}",
        ]

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        """Starts metrics-server unless it runs, then registers the APIService; returns once the apiserver serves
        metrics.k8s.io through it."""
        if not self.cluster.real_nodes:
            raise ClusterError("metrics-server reads the kubelets of the real nodes, and this cluster has none; "
                               "start it with real nodes (make cluster-up, or `up --real-nodes 1`)")
        bin_dir = build()
        module = module_dir()
        config = self.make_credentials()
        ca_bundle = base64.b64encode((self.cluster.pki / "ca.crt").read_bytes()).decode()
        manifests = release_manifests(module, self.port(), ca_bundle)
        # Its RBAC first: it reads the front proxy's CA from a ConfigMap as it starts, and exits if it may not.
        self._apply("rbac.yaml", [doc for doc in manifests if doc["kind"] != "APIService"])
        if self.pid() is None:
            self.process.spawn(self.command(bin_dir / BINARY, config), cwd=self.state)
        deadline = time.monotonic() + timeout
        self._wait("its /readyz to say it holds metrics", deadline, lambda: answers_ok(f"{self.url}/readyz",
                                                                                     self._tls()))
        # The APIService once it can answer, so that discovery never meets it unavailable.
        self._apply("apiservice.yaml", [doc for doc in manifests if doc["kind"] == "APIService"])
        self._wait(f"the APIService {API_SERVICE} to be Available", deadline, lambda: self.available() == "True")
        log(f"serving {API_SERVICE} on {self.url}, {timeout - (deadline - time.monotonic()):.1f}s after `up`")

    def _apply(self, file_name: str, documents: list[dict[str, Any]]) -> None:
        """Applied from a file kept in the state directory, to read what was sent."""
        (path := self.state / file_name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
        self.cluster.apply(str(path), manager="tfop-hack-metrics-server")

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cluster.pki / "ca.crt"))

    def _wait(self, what: str, deadline: float, check: Callable[[], bool]) -> None:
        self.process.wait_until("metrics-server", what, deadline, check,
                                state=lambda: f"APIService: {self.available()}", poll=0.5)

    def available(self) -> str:
        return apiservice_available(self.cluster.api, API_SERVICE)

    def stop(self, timeout: float = 15.0) -> None:
        """Unregisters the APIService, then stops metrics-server."""
        if self.cluster.kubeconfig.exists() and self.cluster.bin_dir is not None:
            self.cluster.kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found", check=False)
        self.process.stop(timeout)

    def status(self) -> str:
        pid = self.pid()
        return describe(pid, f", API on {self.url}, APIService {API_SERVICE} Available: {self.available()}"
                        if pid else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    parser.add_argument("--metric-resolution", default=DEFAULT_RESOLUTION,
                        help=f"how often it scrapes the kubelets (default {DEFAULT_RESOLUTION}; at least 10s)")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        server = MetricsServer(LocalCluster(args.dir), args.metric_resolution)
        if args.command == "up":
            server.start()
            log(f"metrics-server is running (pid {server.pid()}); log: {server.log_file}")
        elif args.command == "down":
            server.stop()
            log("stopped")
        else:
            print(f"{'metrics-server':26} {server.status()}")

    return run_cli(command, log)
