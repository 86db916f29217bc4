"""Supervision of a cluster's component processes: pid files, starts that wait until a component is healthy,
stops that wait until its ports are free, and the watchdog loop that restarts what died.

A component is stopped "on purpose" (stop, kill, down) or not: a held file marks the former, and the watchdog
restarts only the latter. A lock per component keeps `up` and the watchdog from starting one twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .listeners import Address, holders

WATCHDOG = "watchdog"
WATCH_INTERVAL = 2.0


class ClusterError(RuntimeError):
    """A component could not be built, started or reached; the message says which and where its log is."""


def log(message: str) -> None:
    print(f"[local-cluster] {message}", file=sys.stderr, flush=True)


class Supervisor:
    """Process handling for LocalCluster, which provides what differs per component (the hooks below)."""

    directory: Path

    # --- hooks ---------------------------------------------------------------------------------------------------
    @property
    def components(self) -> tuple[str, ...]:
        raise NotImplementedError

    def _command(self, component: str) -> list[str]:
        raise NotImplementedError

    def _env(self, component: str) -> dict[str, str] | None:
        raise NotImplementedError

    def _binary_name(self, component: str) -> str:
        raise NotImplementedError

    def _probe(self, component: str) -> bool:
        raise NotImplementedError

    def _refresh(self) -> bool:
        """Re-reads what may have changed since the watchdog started; False once the cluster is gone."""
        raise NotImplementedError

    def _addresses(self, component: str) -> list[Address]:
        """The fixed addresses the component binds, checked free before it starts (its ports chosen free at
        creation need no check)."""
        return []

    # --- files ---------------------------------------------------------------------------------------------------
    def _pid_file(self, component: str) -> Path:
        return self.directory / "run" / f"{component}.pid"

    def _held_file(self, component: str) -> Path:
        """Present while a component was stopped on purpose (stop/kill/down): the watchdog leaves it alone."""
        return self.directory / "run" / f"{component}.held"

    def log_file(self, component: str) -> Path:
        return self.directory / "logs" / f"{component}.log"

    def pid(self, component: str) -> int | None:
        try:
            pid = int(self._pid_file(component).read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):  # exited: reap it if it is our child
            _reap(pid)
            return None
        # An empty argv0 is a child between fork and exec; another name means the pid was reused.
        argv0 = argv[0].decode()
        if not argv0:
            return pid
        if component == WATCHDOG:  # a python process: known by its arguments
            return pid if b"watch" in argv and str(self.directory).encode() in argv else None
        return pid if Path(argv0).name == self._binary_name(component) else None

    @contextmanager
    def _lock(self, component: str) -> Iterator[None]:
        """One starter at a time per component: `up` and the watchdog may both find it dead."""
        (self.directory / "run").mkdir(parents=True, exist_ok=True)
        with open(self.directory / "run" / f"{component}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def start(self, component: str) -> None:
        with self._lock(component):
            self._held_file(component).unlink(missing_ok=True)
            if self.pid(component) is None:
                self._refuse_taken_addresses(component)
                log_path = self.log_file(component)
                with log_path.open("ab") as out:
                    proc = subprocess.Popen(
                        self._command(component), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        start_new_session=True, cwd=self.directory,
                        env=self._env(component),
                    )
                self._pid_file(component).write_text(str(proc.pid))
        self._wait_healthy(component)

    def _refuse_taken_addresses(self, component: str) -> None:
        """Our component is not running, so whatever holds its address is another process: one left over by an
        earlier cluster (a socat relay, a CoreDNS) still answers the health probe, and the component started beside
        it would fail to bind while the probe passed, or work for a moment and then vanish."""
        taken = holders(self._addresses(component))
        if taken:
            raise ClusterError(f"{component} cannot start: {'; '.join(map(str, taken))}, not this cluster's "
                               f"{component} (left over by an earlier cluster?); stop it, then start again")

    def stop(self, component: str, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
        if (self.directory / "run").is_dir():
            self._held_file(component).touch()
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
        """SIGKILL, as a crash would; the watchdog leaves it dead until start() (a test restarts it itself)."""
        self.stop(component, sig=signal.SIGKILL)

    def watch(self) -> None:
        """The watchdog's loop: restart every component that died without being stopped on purpose, in start
        order (a kube-scheduler, for one, exits when it loses the apiserver and never comes back by itself)."""
        while self._refresh():
            for component in self.components:
                if self.pid(component) is None and not self._held_file(component).exists():
                    log(f"watchdog: {component} is not running; restarting it")
                    try:
                        self.start(component)
                    except ClusterError as error:
                        log(f"watchdog: restarting {component} failed: {error}")
                        break
            time.sleep(WATCH_INTERVAL)

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
