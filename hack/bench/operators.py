"""The operators under test as processes: started with the operator identity's kubeconfig, probed until ready,
measured from /proc and their own /metrics, stopped with SIGTERM."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ports import free_port
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, NotFound
from tfop.kube.resource import NAMESPACES, Resource

GO_CRD = Path("manifests/base/crds/kubeflow.org_tfjobs.yaml")  # in the Go operator's module
SECRETS = Resource("", "v1", "secrets", "Secret")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of all a process's threads so far (OSError once it is gone)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class OperatorProcess:
    """One operator process; subclasses give the command line and what "ready" means."""

    def __init__(self, kubeconfig: Path, log_path: Path, args: list[str], *, cwd: Path | None = None) -> None:
        self.cwd = cwd
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.args = args
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.wrap: Callable[[list[str]], list[str]] = list  # e.g. bench.pinning's taskset

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def start(self, timeout: float = 120.0) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.wrap(self.command()), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.environment(), cwd=self.cwd)
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None:
                # The log's end goes into the error: a test run's temp directories do not outlive many runs.
                last = self.log_path.read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(f"{self.command()[0]} exited with {self.process.returncode}; "
                                   f"see {self.log_path}, which ends:\n" + "\n".join(last))
            if time.monotonic() > deadline:
                raise TimeoutError(f"operator not ready after {timeout:.0f}s; see {self.log_path}")
            time.sleep(0.1)

    def ready(self) -> bool:
        return self.get(self.health_port, "/readyz")[0] == 200

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    # --- measurements ----------------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def cpu_seconds(self) -> float:
        """User + system CPU of all its threads so far."""
        return process_cpu_seconds(self.pid)

    def memory(self) -> dict[str, int]:
        """VmRSS (now) and VmHWM (peak) in bytes."""
        values = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
        return values

    def metric_sum(self, name: str, **labels: str) -> float:
        """The sum of one metric's samples whose labels include `labels` (0 if absent)."""
        total = 0.0
        for line in self.get(self.metrics_port, "/metrics")[1].splitlines():
            if not line.startswith(name) or line[len(name):len(name) + 1] not in ("{", " "):
                continue
            if all(f'{key}="{value}"' in line for key, value in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total

    @staticmethod
    def get(port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, ""
        except OSError:
            return 0, ""


class TfopProcess(OperatorProcess):
    """`python -m tfop run`: this checkout's tfop, or with `code` another checkout's (run from there, on its own
    import path, with this virtualenv's dependencies)."""

    def __init__(self, kubeconfig: Path, log_path: Path, args: list[str], *, code: Path | None = None,
                 cpu_profile: Path | None = None) -> None:
        super().__init__(kubeconfig, log_path, args, cwd=code)
        self.code = code
        self.cpu_profile = cpu_profile  # run under bench.cpu_sampler, its report written there at exit

    def command(self) -> list[str]:
        sampler = [] if self.cpu_profile is None else ["-m", "bench.cpu_sampler", str(self.cpu_profile)]
        return [sys.executable, *sampler, "-m", "tfop", "run", "--kubeconfig", str(self.kubeconfig),
                "--metrics-addr", f"127.0.0.1:{self.metrics_port}", "--health-addr", f"127.0.0.1:{self.health_port}",
                "--log-format", "json", *self.args]

    def environment(self) -> dict[str, str]:
        # With -P (no working directory on sys.path) the checkout in PYTHONPATH comes before this one's install.
        paths = [str(self.code)] if self.code else []
        if self.cpu_profile is not None:
            paths.append(str(Path(__file__).resolve().parent.parent))  # bench.cpu_sampler, after the code run
        code = {"PYTHONPATH": os.pathsep.join(paths)} if paths else {}
        safe = {"PYTHONSAFEPATH": "1"} if self.code else {}
        return {**super().environment(), "PYTHONUNBUFFERED": "1", **code, **safe}


class GoOperatorProcess(OperatorProcess):
    """cmd/training-operator.v1 out of cluster.

    It cannot start without webhook serving certificates: its cert rotator writes them into a Secret in
    $MY_POD_NAMESPACE and then waits for them to appear in a fixed directory, where a pod would mount that
    Secret. So we create the (empty) Secret, and once the rotator has filled it we write its tls.crt and tls.key
    into that directory, as the kubelet would. No ValidatingWebhookConfiguration is installed, so the apiserver
    never calls its webhook (the rotator logs that it found none, and carries on).
    Only TFJob is enabled (--enable-scheme=tfjob): the other schemes' CRDs are not installed here.
    """

    CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # fixed in its pkg/cert
    NAMESPACE = "tfop-bench-training-operator"
    SECRET = "training-operator-webhook-cert"  # its --webhook-secret-name default

    def __init__(self, binary: Path, admin: KubeClient, kubeconfig: Path, log_path: Path, args: list[str]) -> None:
        super().__init__(kubeconfig, log_path, args)
        self.binary = binary
        self.admin = admin
        self.webhook_port = free_port()
        self._mounted = False

    def command(self) -> list[str]:
        return [str(self.binary), "--enable-scheme=tfjob",
                f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
                f"--webhook-server-port={self.webhook_port}", *self.args]

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "MY_POD_NAMESPACE": self.NAMESPACE}

    def start(self, timeout: float = 120.0) -> None:
        # CERT_DIR is one directory for every Go operator on the machine (make test runs two suites at once, each
        # with its own cluster): one at a time gets its certificates there and starts; once running it has read them.
        self.CERT_DIR.mkdir(parents=True, exist_ok=True)
        with (self.CERT_DIR.parent / ".start.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._start(timeout)

    def _start(self, timeout: float) -> None:
        for resource, body, namespace in (
                (NAMESPACES, {"metadata": {"name": self.NAMESPACE}}, None),
                (SECRETS, {"metadata": {"name": self.SECRET}}, self.NAMESPACE)):
            with contextlib.suppress(AlreadyExists):
                self.admin.create(resource, {"apiVersion": "v1", "kind": resource.kind, **body}, namespace)
        # A Secret filled by an earlier run is mounted before it looks; an empty one means a new cluster, whose
        # certificates the files of an older one must not pass for.
        self._mounted = self._mount_certs()
        if not self._mounted:
            for stale in self.CERT_DIR.glob("tls.*"):
                stale.unlink()
        super().start(timeout)

    def ready(self) -> bool:
        if not self._mounted:
            self._mounted = self._mount_certs()
            return False
        if self.get(self.health_port, "/readyz")[0] != 200:
            return False
        # Its controllers are set up after /readyz can pass; workers start once their caches synced.
        return _workers_started(self.log_path.read_text(errors="replace"))

    def _mount_certs(self) -> bool:
        try:
            data = self.admin.get(SECRETS, self.SECRET, self.NAMESPACE).get("data") or {}
        except NotFound:
            return False
        if not data.get("tls.crt") or not data.get("tls.key"):
            return False
        self.CERT_DIR.mkdir(parents=True, exist_ok=True)
        # Its rotator takes the certificates as mounted once tls.crt exists, and its webhook server then reads
        # both files: so the key goes first and each file appears whole (renamed into place, as a kubelet's
        # mount swaps a directory), or a look between the writes finds no key or half a key and it exits 1.
        for key in ("tls.key", "tls.crt"):
            partial = self.CERT_DIR / f".{key}.partial"
            partial.write_bytes(base64.b64decode(data[key]))
            partial.replace(self.CERT_DIR / key)
        return True


def _workers_started(log: str) -> bool:
    """Whether the last start in this (appended) log got to starting the TFJob controller's workers."""
    last_start = log.rfind("starting manager")
    return any("Starting workers" in line and "tfjob-controller" in line
               for line in log[max(0, last_start):].splitlines())


def build_go_operator() -> tuple[Path, Path] | str:
    """(binary, its TFJob CRD in the module cache), or why it cannot be had."""
    script = Path(__file__).resolve().parent.parent / "build-training-operator.sh"
    built = subprocess.run(["bash", str(script)], stdout=subprocess.PIPE, text=True, check=False)
    if built.returncode != 0:
        return f"hack/build-training-operator.sh failed with exit {built.returncode} (its output is above)"
    module = subprocess.run(["bash", str(script), "--module-dir"], stdout=subprocess.PIPE, text=True, check=False)
    crd = Path(module.stdout.strip()) / GO_CRD
    if module.returncode != 0 or not crd.is_file():
        return f"the training operator's CRD was not found in the Go module cache ({crd})"
    return Path(built.stdout.strip().splitlines()[-1]) / "training-operator.v1", crd
