"""The operator as a real process (`python -m tfop run`) against the local cluster, as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

from ports import free_port
from support.http import http_get
from support.waiting import DEADLINE


class OperatorProcess:
    started: ClassVar[list[OperatorProcess]] = []  # every instance started in this test session, for stop_all()

    def __init__(self, kubeconfig: Path, log_path: Path, *args: str, cgroup: Path | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.args = list(args)
        self.cgroup = cgroup  # a cgroup v1 directory the process joins before it execs Python (memory limits)
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, wait_ready: bool = True) -> OperatorProcess:
        command = [sys.executable, "-m", "tfop", "run", "--kubeconfig", str(self.kubeconfig),
                   "--metrics-addr", f"127.0.0.1:{self.metrics_port}", "--health-addr",
                   f"127.0.0.1:{self.health_port}", "--log-format", "json", "--log-level", "debug", *self.args]
        if self.cgroup is not None:
            # The shell joins the cgroup and becomes the operator (exec keeps the pid), so every byte the operator
            # ever allocates is charged there.
            command = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.cgroup / "cgroup.procs"), *command]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        OperatorProcess.started.append(self)
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = DEADLINE) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, f"operator exited:\n{self.log_tail()}"
            if self.get("/readyz")[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"operator not ready after {timeout}s:\n{self.log_tail()}")

    @property
    def secure_metrics(self) -> bool:
        return "--metrics-secure" in self.args

    def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        """(status, body) of the health port's checks, or of /metrics: over HTTPS with --metrics-secure, where
        `token` is the bearer token sent."""
        port = self.metrics_port if path == "/metrics" else self.health_port
        scheme = "https" if path == "/metrics" and self.secure_metrics else "http"
        try:
            return http_get(f"{scheme}://127.0.0.1:{port}{path}", token=token)
        except OSError:  # not listening (yet, or any more)
            return 0, ""

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def terminate(self, timeout: float = DEADLINE) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    @classmethod
    def stop_all(cls) -> None:
        """Kill what a test left running (a failed assertion skips its cleanup), so no operator outlives the
        session's cluster."""
        for process in cls.started:
            process.kill()
        cls.started.clear()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def job_story(self, namespace: str, name: str) -> str:
        """The info-and-above lines about one job (job=namespace/name), for an assertion's message."""
        key, debug = f'"job": "{namespace}/{name}"', '"level": "debug"'
        return "\n".join(line for line in self.log_path.read_text(errors="replace").splitlines()
                         if key in line and debug not in line)
