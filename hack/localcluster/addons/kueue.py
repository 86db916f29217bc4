"""Kueue (job queueing, built by hack/build-kueue.sh) beside a local cluster, out of cluster on loopback.

    python3 hack/local_cluster.py kueue up|down|status|build [--dir .local/cluster] [--namespace-label KEY=VALUE]
                                              [--integration kubeflow.org/tfjob ...] [--visibility]

`--dir` is any cluster directory hack/local_cluster.py made (its kubeconfig and state.json): each directory gets a
Kueue of its own, with its own ports, certificates, Configuration and log, so two clusters on one machine (a
MultiKueue manager and a worker) each run one. From Python: `Kueue(LocalCluster(dir), ...).start()`; its
`config_overrides` are merged into the Configuration (e.g. `{"multiKueue": {"gcInterval": "5s"}}`).

`up` installs Kueue's CRDs and webhook configurations from the module's own config/ (Go module cache): the
conversion webhooks its CRD kustomization enables and the webhooks (named `kueue-...-webhook-configuration` as a
release names them) all call https://127.0.0.1:<webhook port>/<path>, trusted through a CA made here. Only the
webhooks of Kueue's own kinds and of the enabled integrations are installed (one for a disabled integration would
only be a failure point for every such create); `--namespace-label` limits the integrations' webhooks to namespaces
with that label (the tests' other TFJobs never pass through Kueue). Then it starts `kueue` with a Configuration
(config.kueue.x-k8s.io/v1beta2): internal certificate management and leader election off; webhooks, health and
metrics on 127.0.0.1; the integrations on (`kubeflow.org/tfjob` by default). The on-demand visibility server (the
`visibility.kueue.x-k8s.io` API: pending Workloads and their positions) is off unless asked for (`--visibility`), since
by default it listens on every address; asked for, it listens on 127.0.0.1, its APIService is registered once it
answers, and `down` unregisters it before Kueue stops. It waits for /readyz and for a webhook answer to the
apiserver (a server-side dry run of a ResourceFlavor). `down` stops it and deletes its webhook configurations
(with failurePolicy Fail they would refuse every TFJob while Kueue is down); CRDs and Kueue's objects stay.

Without the TFJob CRD, Kueue sets its TFJob integration up once the CRD appears. State: <dir>/kueue/ (certificates,
configuration, manifests, ports), <dir>/run/kueue.pid, <dir>/logs/kueue.log.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ports import free_port

from ..api_objects import answers_ok, apiservice_available
from ..cluster import DEFAULT_DIR, LocalCluster
from ..pki import PKIError, openssl
from ..supervisor import ClusterError
from .kueue_manifests import (
    KUEUE_GROUP,
    NAMESPACE,
    VISIBILITY_API,
    VISIBILITY_CERT_DIR,
    VISIBILITY_SERVICE,
    WEBHOOK_NAMES,
    render_crds,
    render_webhooks,
    visibility_manifests,
)
from .process import AddOnProcess, describe, run_build_script, run_cli, tail

BINARY = "kueue"
TFJOB_INTEGRATION = "kubeflow.org/tfjob"
DEFAULT_INTEGRATIONS = (TFJOB_INTEGRATION,)


def log(message: str) -> None:
    print(f"[kueue] {message}", file=sys.stderr, flush=True)


def _version_args(version: str | None) -> tuple[str, ...]:
    return () if version is None else ("--version", version)


def build(version: str | None = None) -> Path:
    """The bin directory holding `kueue`, built once per version (None: KUEUE_VERSION in hack/versions.env)."""
    return run_build_script("build-kueue.sh", *_version_args(version))


def module_dir(version: str | None = None) -> Path:
    """The Kueue module's source in the Go module cache (its config/ is what gets installed)."""
    return run_build_script("build-kueue.sh", *_version_args(version), "--module-dir")


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`overrides` merged into `base`, mappings key by key, anything else replaced."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class Kueue:
    """The Kueue of one LocalCluster."""

    def __init__(self, cluster: LocalCluster, integrations: Iterable[str] = DEFAULT_INTEGRATIONS,
                 namespace_labels: Mapping[str, str] | None = None,
                 config_overrides: Mapping[str, Any] | None = None,
                 webhook_integrations: Iterable[str] | None = None, version: str | None = None,
                 visibility: bool = False) -> None:
        """`webhook_integrations`: the integrations whose webhooks are installed, by default the enabled ones. A
        release's manifests install every integration's; Kueue answers a disabled one's with a webhook that
        changes nothing. `version`: the Kueue to build and run (None: KUEUE_VERSION in hack/versions.env).
        `visibility`: run its on-demand visibility server on loopback and register its APIService (see
        VISIBILITY_API)."""
        self.cluster = cluster
        self.visibility = visibility
        self.version = version
        self.integrations = list(integrations)
        self.webhook_integrations = list(self.integrations if webhook_integrations is None else webhook_integrations)
        self.namespace_labels = dict(namespace_labels or {})
        self.config_overrides = dict(config_overrides or {})
        self.state = cluster.directory / "kueue"
        # unshare and sh exec Kueue in turn (see _spawn).
        self.process = AddOnProcess(cluster.directory, BINARY, launchers=("unshare", "sh"))

    # --- paths and ports -------------------------------------------------------------------------------------
    @property
    def log_file(self) -> Path:
        return self.process.log_file

    @property
    def certs(self) -> Path:
        return self.state / "certs"

    def ports(self) -> dict[str, int]:
        """Webhook, health, metrics and visibility ports, chosen once per cluster directory: the webhook
        configurations and the APIService in the apiserver name two of them, so a restarted Kueue must come back on
        them."""
        saved = self.state / "ports.json"
        ports = dict(json.loads(saved.read_text())) if saved.exists() else {}
        missing = {name: free_port() for name in ("webhook", "health", "metrics", "visibility") if name not in ports}
        if missing:
            ports.update(missing)
            self.state.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(ports))
        return ports

    @property
    def webhook_url(self) -> str:
        return f"https://127.0.0.1:{self.ports()['webhook']}"

    def pid(self) -> int | None:
        return self.process.pid()

    # --- set-up ----------------------------------------------------------------------------------------------
    def make_certificates(self) -> str:
        """A CA and a serving certificate for 127.0.0.1 (webhooks, metrics, visibility), made once; returns the CA,
        base64."""
        certs = self.certs
        certs.mkdir(parents=True, exist_ok=True)
        try:
            if not (certs / "ca.crt").exists():
                openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                        "-days", "3650", "-subj", "/CN=tfop-kueue-ca", cwd=certs)
            if not (certs / "tls.crt").exists():
                # The aggregator checks the visibility server's certificate for its Service's name.
                (certs / "tls.ext").write_text(f"subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:{VISIBILITY_SERVICE}."
                                               f"{NAMESPACE}.svc\nextendedKeyUsage=serverAuth\n")
                openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
                        "-subj", "/CN=kueue-webhook", cwd=certs)
                openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                        "-out", "tls.crt", "-days", "3650", "-extfile", "tls.ext", cwd=certs)
        except PKIError as error:
            raise ClusterError(str(error)) from error
        return base64.b64encode((certs / "ca.crt").read_bytes()).decode()

    def install(self, module: Path, ca_bundle: str) -> None:
        """CRDs first (Established), then the webhook configurations, then Kueue's namespace."""
        crds = render_crds(module, f"{self.webhook_url}/convert", ca_bundle)
        self._apply("crds.yaml", crds)
        self.cluster.admin.wait_established(*(crd["metadata"]["name"] for crd in crds))
        self._apply("webhooks.yaml", render_webhooks(module, self.webhook_url, ca_bundle, self.webhook_integrations,
                                                     self.namespace_labels))
        if self.cluster.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0:
            self.cluster.kubectl("create", "namespace", NAMESPACE)

    def _apply(self, file_name: str, documents: list[dict[str, Any]]) -> None:
        """Server-side apply (the CRDs are too big for client-side apply's annotation), kept on disk to read."""
        (path := self.state / file_name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
        self.cluster.apply(str(path), manager="tfop-hack-kueue")

    def write_config(self) -> None:
        ports = self.ports()
        config: dict[str, Any] = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "manageJobsWithoutQueueName": False,
            "internalCertManagement": {"enable": False},
            "leaderElection": {"leaderElect": False},
            "webhook": {"host": "127.0.0.1", "port": ports["webhook"], "certDir": str(self.certs)},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
            "metrics": {"bindAddress": f"127.0.0.1:{ports['metrics']}"},
            "clientConnection": {"qps": 50, "burst": 100},
            "integrations": {"frameworks": self.integrations},
        }
        if self.visibility:
            config["visibilityServer"] = {"bindAddress": "127.0.0.1", "bindPort": ports["visibility"]}
        else:  # it would listen on every address of the machine, at 8082
            config["featureGates"] = {"VisibilityOnDemand": False}
        (self.state / "config.yaml").write_text(yaml.safe_dump(_merge(config, self.config_overrides),
                                                               sort_keys=False))

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        """Installs Kueue's CRDs and webhooks and starts it unless it runs; waits until its webhooks answer."""
        bin_dir = build(self.version)
        module = module_dir(self.version)
        ca_bundle = self.make_certificates()
        self.install(module, ca_bundle)
        if TFJOB_INTEGRATION in self.integrations and self.cluster.kubectl("get", "crd", "tfjobs.kubeflow.org",
                                                                           check=False).returncode != 0:
            log("the TFJob CRD is not installed yet: Kueue sets its TFJob integration up once it appears")
        if self.pid() is None:
            self.write_config()
            self._spawn(bin_dir / BINARY)
        deadline = time.monotonic() + timeout
        self._wait_ready(timeout)
        if self.visibility:
            self._register_visibility(module, ca_bundle, deadline)

    def _spawn(self, binary: Path) -> None:
        """Kueue reads its metrics serving certificate from the fixed /etc/kueue/metrics/certs when internal
        certificate management is off (a release mounts a Secret there). So it runs in a mount namespace of its
        own whose /etc is an overlay holding that directory: the machine's /etc is left alone. unshare and sh exec
        in turn, so the pid written is Kueue's."""
        if shutil.which("unshare") is None:
            raise ClusterError("unshare (util-linux) is needed to give Kueue its metrics certificate directory")
        mount_point = self.state / "etc-overlay"
        mount_point.mkdir(parents=True, exist_ok=True)
        script = ('set -e; mount -t tmpfs tmpfs "$1"; mkdir -p "$1/upper/kueue/metrics/certs" "$1/work"; '
                  'cp "$2/tls.crt" "$2/tls.key" "$1/upper/kueue/metrics/certs/"; '
                  'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc; ')
        if self.visibility:
            # Its visibility server reads its certificate from the fixed /visibility: a tmpfs there in this mount
            # namespace only; the host keeps the empty directory as a mount point.
            VISIBILITY_CERT_DIR.mkdir(exist_ok=True)
            script += (f'mount -t tmpfs tmpfs {VISIBILITY_CERT_DIR}; '
                       f'cp "$2/tls.crt" "$2/tls.key" {VISIBILITY_CERT_DIR}/; ')
        script += 'shift 2; exec "$@"'
        # --kubeconfig too: the visibility server delegates authentication and authorization to the apiserver
        # through the kubeconfig that flag names (in a pod, through its ServiceAccount).
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(mount_point),
                   str(self.certs), str(binary), f"--config={self.state / 'config.yaml'}",
                   f"--kubeconfig={self.cluster.kubeconfig}"]
        self.process.spawn(command, cwd=self.state, env={**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig)})

    def _wait_ready(self, timeout: float) -> None:
        """Ready when /readyz says so (its webhook server listens) and the apiserver reaches a webhook."""
        deadline = time.monotonic() + timeout
        readyz = f"http://127.0.0.1:{self.ports()['health']}/readyz"
        probe = yaml.safe_dump({"apiVersion": f"{KUEUE_GROUP}/v1beta2", "kind": "ResourceFlavor",
                                "metadata": {"name": "tfop-hack-kueue-probe"}})
        last = "not started"
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise self.process.exited("kueue")
            if _http_status(readyz) == 200:
                result = self.cluster.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False)
                if result.returncode == 0:
                    return
                last = result.stderr.strip()
            time.sleep(0.3)
        raise ClusterError(f"kueue was not ready within {timeout:.0f}s (last webhook answer: {last}); see "
                           f"{self.log_file}:\n{tail(self.log_file)}")

    def stop(self, timeout: float = 15.0) -> None:
        """Unregisters its visibility API (an unavailable aggregated API fails discovery, and with it namespace
        deletion and the garbage collector's work), stops Kueue and removes its webhook configurations, which would
        refuse every create they see."""
        if self.cluster.kubeconfig.exists():  # whether or not this one registered it
            self.cluster.kubectl("delete", "apiservice", VISIBILITY_API, "--ignore-not-found", check=False)
        self.process.stop(timeout)
        if self.cluster.kubeconfig.exists():
            for kind, name in WEBHOOK_NAMES.items():
                self.cluster.kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)

    def status(self) -> str:
        pid = self.pid()
        visibility = (f", APIService {VISIBILITY_API} Available: "
                      f"{apiservice_available(self.cluster.api, VISIBILITY_API)}" if self.visibility else "")
        return describe(pid, f", webhooks on {self.webhook_url}{visibility}" if pid else "")

    # --- the visibility API ----------------------------------------------------------------------------------
    def _register_visibility(self, module: Path, ca_bundle: str, deadline: float) -> None:
        """Once the visibility server answers, its Service and APIService as the release's manifests have them,
        made over for a server on loopback (see visibility_manifests); returns once the apiserver reports the
        APIService Available."""
        readyz = f"https://127.0.0.1:{self.ports()['visibility']}/readyz"
        tls = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        self.process.wait_until("kueue", "its visibility server's /readyz", deadline,
                                lambda: answers_ok(readyz, tls), state=self._visibility_state)
        self._apply("visibility.yaml", visibility_manifests(module, self.ports()["visibility"], ca_bundle))
        self.process.wait_until("kueue", f"the APIService {VISIBILITY_API} to be Available", deadline,
                                lambda: apiservice_available(self.cluster.api, VISIBILITY_API) == "True",
                                state=self._visibility_state)

    def _visibility_state(self) -> str:
        return f"APIService {VISIBILITY_API}: {apiservice_available(self.cluster.api, VISIBILITY_API)}"


def _http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    parser.add_argument("--integration", action="append", dest="integrations",
                        help=f"a Kueue integration to enable; repeatable (default {TFJOB_INTEGRATION})")
    parser.add_argument("--namespace-label", metavar="KEY=VALUE",
                        help="limit the integrations' webhooks to namespaces with this label")
    parser.add_argument("--visibility", action="store_true",
                        help="run the on-demand visibility server on loopback and register its APIService "
                             "(`down` always unregisters it)")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        labels = dict([args.namespace_label.split("=", 1)]) if args.namespace_label else {}
        kueue = Kueue(LocalCluster(args.dir), args.integrations or DEFAULT_INTEGRATIONS, labels,
                      visibility=args.visibility)
        if args.command == "up":
            kueue.start()
            log(f"kueue is running (pid {kueue.pid()}); log: {kueue.log_file}")
        elif args.command == "down":
            kueue.stop()
            log("stopped")
        else:
            print(f"{'kueue':26} {kueue.status()}")

    return run_cli(command, log)

