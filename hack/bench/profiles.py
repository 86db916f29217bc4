"""Where the apiserver's and the controller-manager's CPU went in a window: their own Go CPU profiles.

The CPU table says how many seconds each process spent; a profile says on what (serving watches, decoding
requests, running the CRD's rules, the garbage collector). Both servers serve /debug/pprof on their secure port
(the bench cluster turns `--profiling` on, which the local cluster keeps off); the admin's certificate may read it.
A profile covers a fixed number of seconds, so the window is covered by consecutive slices; the slice still
running when the window closes is cut off and dropped, and the rest are merged into one profile per server with
`go tool pprof`, whose `-top` is kept beside it as text.
"""

from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster import BenchCluster

SLICE_SECONDS = 5
# The components profiled, and the port name the local cluster keeps each one's secure port under.
SERVERS = {"kube-apiserver": "apiserver", "kube-controller-manager": "controller-manager"}


@dataclass
class ServerProfiles:
    """Opened at a window's start: each server profiled in consecutive slices until `close()`."""

    cluster: BenchCluster
    directory: Path
    label: str
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _slices: dict[str, list[Path]] = field(default_factory=dict)
    _running: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for component, port in SERVERS.items():
            self._slices[component] = []
            thread = threading.Thread(target=self._profile, args=(component, self.cluster.local.ports[port]),
                                      name=f"profile-{component}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _profile(self, component: str, port: int) -> None:
        kubectl = str(self.cluster.bin_dir / "kubectl")
        index = 0
        while not self._stop.is_set():
            path = self.directory / f"{self.label}-{component}-{index:03d}.pprof"
            with path.open("wb") as out:
                # The servers' certificates are the local cluster's own; the admin's client certificate authorizes.
                process = subprocess.Popen(
                    [kubectl, f"--kubeconfig={self.cluster.kubeconfig}", f"--server=https://127.0.0.1:{port}",
                     "--insecure-skip-tls-verify", "get", "--raw", f"/debug/pprof/profile?seconds={SLICE_SECONDS}"],
                    stdout=out, stderr=subprocess.PIPE)
                with self._lock:
                    self._running.append(process)
                _, error = process.communicate()
                with self._lock:
                    self._running.remove(process)
            if self._stop.is_set():  # cut off by close(): not a whole slice of the window
                path.unlink(missing_ok=True)
                return
            if process.returncode != 0:
                path.unlink(missing_ok=True)
                self._errors.append(f"profiling {component} failed: {error.decode(errors='replace').strip()}")
                return
            self._slices[component].append(path)
            index += 1

    def close(self) -> dict[str, dict[str, Any]]:
        """Stop profiling; merge each server's slices. Returns, per server, its merged profile's path and the
        share of its samples in each category (CATEGORIES); raises if a server could not be profiled (a bench
        asked to profile must not quietly measure without)."""
        if self._stop.is_set():
            return {}
        self._stop.set()
        with self._lock:
            for process in self._running:
                process.kill()
        for thread in self._threads:
            thread.join()
        if self._errors:
            raise RuntimeError("; ".join(self._errors))
        merged = {}
        for component, slices in self._slices.items():
            if not slices:
                continue
            target = self.directory / f"{self.label}-{component}.pprof"
            with target.open("wb") as out:
                subprocess.run(["go", "tool", "pprof", "-proto", *map(str, slices)], stdout=out,
                               stderr=subprocess.DEVNULL, check=True)
            top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=60", str(target)], capture_output=True,
                                 text=True, check=True).stdout
            target.with_suffix(".top.txt").write_text(top)
            for path in slices:
                path.unlink()
            seconds = categorize(component, stacks(target))
            total = sum(seconds.values()) or 1.0
            merged[component] = {"path": str(target),
                                 "shares": {name: round(value / total, 4) for name, value in seconds.items()}}
        return merged


# What a server's CPU went to, by the first rule (in this order) that names a frame of a sample's stack. The
# apiserver's by the handler that served the request (so by who sent it: the contenders create, tfop writes
# TFJob status, kwok patches pod status, the controller-manager writes EndpointSlices, the scheduler binds), the
# controller-manager's by controller.
CATEGORIES: dict[str, list[tuple[str, str]]] = {
    "kube-apiserver": [
        ("Go GC", r"^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge)"),
        ("serving watches", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.(handleWatch|\(\*WatchServer\))"),
        ("watch cache, etcd watch", (r"^k8s\.io/apiserver/pkg/storage/(cacher\.\(\*(Cacher|watchCache|cacheWatcher)\)"
                                    r"|etcd3\.\(\*watchChan\))")),
        ("TFJob status writes", r"crdHandler\)\.serveStatus"),
        ("custom resource creates", r"crdHandler\)\.serveResource\.CreateResource"),
        ("other custom resource requests", r"crdHandler\)\.serve"),
        ("creates", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.CreateResource"),
        ("bindings, other subresource creates", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.CreateNamedResource"),
        ("patches", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.(PatchResource|\(\*patcher\))"),
        ("updates", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.UpdateResource"),
        ("deletes", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.(DeleteResource|DeleteCollection)"),
        ("gets", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.GetResource"),
        ("lists", r"^k8s\.io/apiserver/pkg/endpoints/handlers\.ListResource"),
        ("audit log", r"^k8s\.io/apiserver/plugin/pkg/audit"),
        # What every request passes before its handler (and its answer after): TLS, HTTP/2, authentication,
        # authorization, flow control.
        ("request path: TLS, HTTP/2, filters", (r"^(k8s\.io/apiserver/pkg/server/filters\.\(\*timeoutHandler\)"
                                               r"|net/http\.\(\*conn\)\.serve|golang\.org/x/net/http2\."
                                               r"|crypto/tls\.)")),
        ("etcd client", r"^(go\.etcd\.io/etcd/client|google\.golang\.org/grpc)"),
    ],
    "kube-controller-manager": [
        ("Go GC", r"^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge)"),
        ("EndpointSlice controller", r"^k8s\.io/(kubernetes/pkg/controller/endpointslice\.|endpointslice/)"),
        ("Endpoints controller", r"^k8s\.io/kubernetes/pkg/controller/endpoint\."),
        ("garbage collector", r"^k8s\.io/kubernetes/pkg/controller/garbagecollector"),
        ("informers: decoding watch events", r"^k8s\.io/(client-go/tools/cache|apimachinery/pkg/watch)"),
    ],
}
OTHER = "other"


def stacks(profile: Path) -> list[tuple[float, list[str]]]:
    """Each distinct stack of a CPU profile with its seconds, from `go tool pprof -traces`."""
    text = subprocess.run(["go", "tool", "pprof", "-traces", str(profile)], capture_output=True, text=True,
                          check=True).stdout
    return parse_traces(text)


def parse_traces(text: str) -> list[tuple[float, list[str]]]:
    result: list[tuple[float, list[str]]] = []
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        if not lines:
            continue
        value, _, first = lines[0].partition(" ")
        frames = [first.strip(), *lines[1:]]
        result.append((_seconds(value), [frame.removesuffix(" (inline)") for frame in frames]))
    return result


def _seconds(value: str) -> float:
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * scale
    raise ValueError(f"not a duration: {value!r}")


def categorize(component: str, samples: list[tuple[float, list[str]]]) -> dict[str, float]:
    """Seconds per category of CATEGORIES[component] (and `other`), in the categories' order."""
    rules = [(name, re.compile(pattern)) for name, pattern in CATEGORIES[component]]
    seconds = {name: 0.0 for name, _ in rules} | {OTHER: 0.0}
    for value, frames in samples:
        name = next((name for name, rule in rules if any(rule.search(frame) for frame in frames)), OTHER)
        seconds[name] += value
    return seconds
