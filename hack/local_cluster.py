#!/usr/bin/env python3
"""A local Kubernetes control plane on loopback: etcd, kube-apiserver (TLS, admin client certificate),
kube-controller-manager, kube-scheduler and kwok with fake nodes.

Used by `make run` (a developer cluster) and by the test fixtures (one cluster per test session). Standard
library only, so it runs before anything is installed. Binaries come from hack/build-controlplane.sh.

    python3 hack/local_cluster.py up|down|status [--dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HACK_DIR = Path(__file__).resolve().parent
REPO_DIR = HACK_DIR.parent
DEFAULT_DIR = REPO_DIR / ".local" / "cluster"

# Start order; stopped in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
FAKE_NODES = 4
SERVICE_CIDR = "10.96.0.0/16"  # virtual IPs stored in etcd only; nothing listens on them


class ClusterError(RuntimeError):
    """A component could not be built, started or reached; the message says which and where its log is."""


def log(message: str) -> None:
    print(f"[local-cluster] {message}", file=sys.stderr, flush=True)


def build_controlplane() -> Path:
    """Builds (or reuses from the per-user cache) the pinned binaries and returns their directory."""
    result = subprocess.run(
        ["bash", str(HACK_DIR / "build-controlplane.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise ClusterError(f"building the control plane failed (exit {result.returncode}); see the output above")
    return Path(result.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args[:2])} failed: {result.stderr.strip()}")


def make_pki(pki: Path) -> None:
    """A CA, the apiserver's serving certificate, an admin client certificate and the service-account key pair."""
    if (pki / "admin.crt").exists():
        return
    if shutil.which("openssl") is None:
        raise ClusterError("openssl is needed to make the cluster's certificates; install it (apt-get install openssl)")
    pki.mkdir(parents=True, exist_ok=True)
    days = "3650"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", days, "-subj", "/CN=tfop-local-ca", cwd=pki)
    (pki / "apiserver.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "apiserver.ext"),
        ("admin", "/O=system:masters/CN=tfop-admin", "client.ext"),
    ):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", subject, cwd=pki)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", days, "-extfile", ext, cwd=pki)
    openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


@dataclass
class LocalCluster:
    """One control plane whose state (ports, pids, certificates, data, logs) lives in `directory`."""

    directory: Path = DEFAULT_DIR
    bin_dir: Path | None = None
    ports: dict[str, int] = field(default_factory=dict)
    extra_args: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.directory = Path(self.directory).resolve()
        state = self._state_file()
        if state.exists():
            saved = json.loads(state.read_text())
            self.ports = saved.get("ports", {})
            if self.bin_dir is None and saved.get("bin_dir"):
                self.bin_dir = Path(saved["bin_dir"])

    # --- paths -----------------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.directory / "pki"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    def _state_file(self) -> Path:
        return self.directory / "state.json"

    def _pid_file(self, component: str) -> Path:
        return self.directory / "run" / f"{component}.pid"

    def log_file(self, component: str) -> Path:
        return self.directory / "logs" / f"{component}.log"

    def _binary(self, name: str) -> str:
        assert self.bin_dir is not None, "bin_dir is known once the control plane is built"
        return str(self.bin_dir / name)

    # --- lifecycle -------------------------------------------------------------------------------------------
    def up(self) -> None:
        """Starts whatever is not running (idempotent) and waits until the cluster is usable."""
        started = time.monotonic()
        if self.bin_dir is None or not (self.bin_dir / "kube-apiserver").exists():
            self.bin_dir = build_controlplane()
        for sub in ("run", "logs", "data"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        make_pki(self.pki)
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"):
            if name not in self.ports:
                self.ports[name] = free_port()
        self._state_file().write_text(json.dumps({"ports": self.ports, "bin_dir": str(self.bin_dir)}, indent=2))
        self._write_kubeconfig()
        for component in COMPONENTS:
            self.start(component)
        self._ensure_nodes()
        log(f"cluster up in {time.monotonic() - started:.1f}s; kubeconfig: {self.kubeconfig}")

    def down(self) -> None:
        for component in reversed(COMPONENTS):
            self.stop(component)

    def destroy(self) -> None:
        """Stops everything and removes the state directory (etcd data included)."""
        self.down()
        shutil.rmtree(self.directory, ignore_errors=True)

    def pid(self, component: str) -> int | None:
        try:
            pid = int(self._pid_file(component).read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            return None
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):  # exited: reap it if it is our child
            _reap(pid)
            return None
        # An empty argv0 is a child between fork and exec; another name means the pid was reused.
        return pid if not argv0 or Path(argv0).name == component else None

    def start(self, component: str) -> None:
        if self.pid(component) is None:
            log_path = self.log_file(component)
            with log_path.open("ab") as out:
                proc = subprocess.Popen(
                    [self._binary(component), *self._args(component), *self.extra_args.get(component, [])],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    cwd=self.directory,
                )
            self._pid_file(component).write_text(str(proc.pid))
        self._wait_healthy(component)

    def stop(self, component: str, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
        pid = self.pid(component)
        if pid is None:
            return
        os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while self.pid(component) is not None and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if self.pid(component) is not None:
            os.kill(pid, signal.SIGKILL)
        # An exiting process loses its command line before the kernel frees its sockets: wait until it is gone
        # (or a zombie, which holds no sockets), so that start() right after can bind the same port.
        while not _exited(pid):
            time.sleep(0.02)
        self._pid_file(component).unlink(missing_ok=True)

    def kill(self, component: str) -> None:
        """SIGKILL, as a crash would."""
        self.stop(component, sig=signal.SIGKILL)

    def status(self) -> dict[str, str]:
        result = {}
        for component in COMPONENTS:
            pid = self.pid(component)
            result[component] = f"running (pid {pid})" if pid else "stopped"
        return result

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self._binary("kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=input, capture_output=True, text=True, check=False, timeout=120,
        )
        if check and result.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result

    # --- component command lines -----------------------------------------------------------------------------
    def _args(self, component: str) -> list[str]:
        p, pki, data = self.ports, self.pki, self.directory / "data"
        if component == "etcd":
            peer = f"http://127.0.0.1:{p['etcd-peer']}"
            return [
                "--name=tfop", f"--data-dir={data / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=tfop={peer}",
                # A throwaway cluster: durability is not worth an fsync on every write.
                "--unsafe-no-fsync", "--quota-backend-bytes=8589934592", "--log-level=warn",
            ]
        if component == "kube-apiserver":
            return [
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={p['apiserver']}",
                f"--cert-dir={data / 'apiserver'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=RBAC",
                # It taints new nodes not-ready until the node lifecycle controller clears it, and that controller
                # is off (see the controller-manager), so kwok's nodes would never take a pod.
                "--disable-admission-plugins=TaintNodesByCondition",
                # The `kubernetes` Service's endpoints would be a loopback address, which validation rejects.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ]
        common = [f"--kubeconfig={self.kubeconfig}", "--bind-address=127.0.0.1", "--leader-elect=false"]
        if component == "kube-controller-manager":
            return [
                *common, f"--secure-port={p['controller-manager']}", f"--cert-dir={data / 'controller-manager'}",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                # No kubelet posts node heartbeats, so node lifecycle would evict every pod after 40 s.
                "--controllers=*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-service-lb-controller,-route",
                "--profiling=false",
            ]
        if component == "kube-scheduler":
            return [
                *common, f"--secure-port={p['scheduler']}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                "--profiling=false",
            ]
        if component == "kwok":
            return [
                f"--kubeconfig={self.kubeconfig}", "--manage-all-nodes=false",
                "--manage-nodes-with-label-selector=type=kwok",
                f"--server-address=127.0.0.1:{p['kwok']}",
                f"--config={HACK_DIR / 'kwok-stages.yaml'}",
                # Fake pod IPs, never routed: a /16 so thousands of benchmark pods each get one.
                "--cidr=10.0.0.0/16", "--node-ip=10.255.0.1", "--v=WARN",
            ]
        raise ValueError(f"unknown component {component}")

    # --- health ----------------------------------------------------------------------------------------------
    def _wait_healthy(self, component: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if self.pid(component) is None:
                raise ClusterError(f"{component} exited at start; last lines of {self.log_file(component)}:\n"
                                   + _tail(self.log_file(component)))
            try:
                if self._probe(component):
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError) as error:
                last_error = str(error)
            time.sleep(0.2)
        raise ClusterError(f"{component} did not become healthy within {timeout:.0f}s ({last_error}); "
                           f"last lines of {self.log_file(component)}:\n" + _tail(self.log_file(component)))

    def _probe(self, component: str) -> bool:
        if component == "etcd":
            return _get(f"{self.etcd_url}/health", None).get("health") == "true"
        if component == "kube-apiserver":
            return _get_text(f"{self.server}/readyz", self._admin_tls()) == "ok"
        if component in ("kube-controller-manager", "kube-scheduler"):
            port = self.ports["controller-manager" if component == "kube-controller-manager" else "scheduler"]
            insecure = ssl.create_default_context()
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            return _get_text(f"https://127.0.0.1:{port}/healthz", insecure) == "ok"
        if component == "kwok":
            return _get_text(f"http://127.0.0.1:{self.ports['kwok']}/healthz", None) == "ok"
        raise ValueError(component)

    def _admin_tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def api(self, method: str, path: str, body: object = None) -> dict[str, object]:
        """A minimal admin REST call, for set-up before any Python client is installed."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.server}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self._admin_tls(), timeout=30) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def version(self) -> str:
        return str(self.api("GET", "/version")["gitVersion"])

    # --- cluster contents ------------------------------------------------------------------------------------
    def _write_kubeconfig(self) -> None:
        pki = self.pki
        self.kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: tfop-local
  cluster:
    server: {self.server}
    certificate-authority: {pki / 'ca.crt'}
users:
- name: tfop-admin
  user:
    client-certificate: {pki / 'admin.crt'}
    client-key: {pki / 'admin.key'}
contexts:
- name: tfop-local
  context: {{cluster: tfop-local, user: tfop-admin}}
current-context: tfop-local
""")

    def _ensure_nodes(self, timeout: float = 60.0) -> None:
        """Fake nodes that kwok keeps Ready; big enough for the benchmark's thousands of pods."""
        for i in range(FAKE_NODES):
            node = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": f"kwok-node-{i}",
                    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {"type": "kwok", "kubernetes.io/hostname": f"kwok-node-{i}",
                               "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                },
                "status": {
                    "allocatable": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                    "capacity": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                },
            }
            try:
                self.api("POST", "/api/v1/nodes", node)
            except urllib.error.HTTPError as error:
                if error.code != 409:
                    raise ClusterError(f"creating node {i} failed: {error.read().decode()}") from error
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = self.api("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
            ready = [n for n in nodes if any(  # type: ignore[union-attr]
                c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))]
            if len(ready) >= FAKE_NODES:
                return
            time.sleep(0.2)
        raise ClusterError(f"kwok did not make the fake nodes Ready within {timeout:.0f}s; "
                           f"see {self.log_file('kwok')}")


def _get(url: str, context: ssl.SSLContext | None) -> dict[str, object]:
    return json.loads(_get_text(url, context))  # type: ignore[no-any-return]


def _get_text(url: str, context: ssl.SSLContext | None) -> str:
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        return str(response.read().decode().strip())


def _reap(pid: int) -> None:
    """Collects the exit status of a child we started, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _exited(pid: int) -> bool:
    _reap(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "destroy", "build"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"state directory (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    if args.command == "build":
        print(build_controlplane())
        return 0
    cluster = LocalCluster(args.dir)
    try:
        if args.command == "up":
            cluster.up()
            print(f"Kubernetes {cluster.version()} is up at {cluster.server}")
            print(f"export KUBECONFIG={cluster.kubeconfig}")
            print(f"kubectl: {cluster.bin_dir}/kubectl")
        elif args.command == "down":
            cluster.down()
            log("stopped")
        elif args.command == "destroy":
            cluster.destroy()
            log(f"stopped and removed {args.dir}")
        else:
            for component, state in cluster.status().items():
                print(f"{component:26} {state}")
            print(f"kubeconfig: {cluster.kubeconfig}")
    except ClusterError as error:
        log(f"ERROR: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
