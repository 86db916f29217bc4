"""What the add-ons started beside a local cluster (coscheduler.py, kueue.py) share: the answer of the
script that builds them, one process each (a pid file in the cluster's run/, a log in its logs/), and the
command-line ending that turns a ClusterError into a message and exit code 1."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ports import free_port

from ..supervisor import ClusterError

HACK_DIR = Path(__file__).resolve().parents[2]


def run_build_script(script: str, *args: str) -> Path:
    """Runs hack/<script> (its progress goes to our stderr) and returns the path it prints last."""
    result = subprocess.run(["bash", str(HACK_DIR / script), *args], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise ClusterError(f"hack/{script} {' '.join(args)} failed (exit {result.returncode}); its messages above "
                           "name the module and version")
    return Path(result.stdout.strip().splitlines()[-1])


def kept_port(state: Path) -> int:
    """A free loopback port chosen once and kept in `state`/port: what names it (an APIService, a CRD's webhook
    URL, a user's notes) must stay right across restarts, and two clusters' add-ons must not share it."""
    saved = state / "port"
    if not saved.exists():
        state.mkdir(parents=True, exist_ok=True)
        saved.write_text(f"{free_port()}\n")
    return int(saved.read_text())


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


class AddOnProcess:
    """The process of one add-on in one cluster directory, named by its binary. `launchers` are the programs that
    may stand at the start of its command line while they exec it (their pid becomes the add-on's)."""

    def __init__(self, directory: Path, binary: str, launchers: tuple[str, ...] = ()) -> None:
        self.directory = directory
        self.binary = binary
        self.names = (binary, *launchers)

    @property
    def pid_file(self) -> Path:
        return self.directory / "run" / f"{self.binary}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / "logs" / f"{self.binary}.log"

    def pid(self) -> int | None:
        """The running process, or None: not started, exited (a zombie child is reaped), or the pid reused."""
        try:
            pid = int(self.pid_file.read_text())
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError):
            return None
        if state in ("Z", "X"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return None
        # Mid-exec the command line reads empty.
        return pid if not argv0 or Path(argv0).name in self.names else None

    def spawn(self, command: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> int:
        """Starts `command` in a session of its own, appending to the log, and records its pid."""
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, cwd=cwd, env=None if env is None else dict(env))
        self.pid_file.write_text(str(process.pid))
        return process.pid

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if it is still there after `timeout` seconds."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self.pid() is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.pid() is not None:
                os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)

    def exited(self, what: str) -> ClusterError:
        return ClusterError(f"{what} exited; see {self.log_file}:\n{tail(self.log_file)}")

    def wait_until(self, what: str, waited_for: str, deadline: float, check: Callable[[], bool], *,
                   state: Callable[[], str], poll: float = 0.3) -> None:
        """Returns once `check()` holds; raises if the process exits first, or at `deadline` (time.monotonic()),
        saying `state()` and the tail of its log."""
        while not check():
            if self.pid() is None:
                raise self.exited(what)
            if time.monotonic() > deadline:
                raise ClusterError(f"{what}: gave up waiting for {waited_for} ({state()}); see {self.log_file}:\n"
                                   f"{tail(self.log_file)}")
            time.sleep(poll)


def run_cli(action: Callable[[], None], log: Callable[[str], None]) -> int:
    """A command's exit code: 0, or 1 with the error logged if the cluster or an add-on failed it."""
    try:
        action()
    except ClusterError as error:
        log(f"ERROR: {error}")
        return 1
    return 0


def describe(pid: int | None, detail: str = "") -> str:
    return f"running (pid {pid}{detail})" if pid else "stopped"

