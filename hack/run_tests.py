"""`make test`: the suite as two pytest processes at once, each with its own local cluster.

Most of the suite's time is waiting, not computing: the e2e tests wait for TensorFlow to train on the real nodes
and for the node lifecycle controller to mark a node lost; the integration tests wait for the apiserver and kwok.
So the e2e suite (test/e2e) runs beside the unit and integration suites instead of after them, which takes the wall
time from their sum to about the longer of the two on a 2-core machine.

Each lane's lines stream as they come, prefixed with its name; at the end each lane's summary (its failures and
its last line) is printed again unprefixed, and the exit status is the first failing lane's. With arguments
(`make test PYTEST_ARGS="-k crd"`) one plain pytest runs them, as before.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[1]
SUMMARY_START = "short test summary info"


@dataclass
class Lane:
    name: str
    args: list[str]
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    started: float = 0.0
    ended: float = 0.0

    def start(self) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-m", "pytest", *self.args], cwd=REPO, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1,
                                        start_new_session=True)  # a Ctrl-C reaches it once, from forward()

    def stream(self, lock: threading.Lock) -> None:
        assert self.process and self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            with lock:
                print(f"[{self.name}] {line}", end="", flush=True)
        self.process.wait()
        self.ended = time.monotonic()

    @property
    def returncode(self) -> int:
        assert self.process and self.process.returncode is not None
        return self.process.returncode

    def summary(self) -> list[str]:
        """From pytest's short test summary (the failures and errors) to its last line; the last line alone when
        nothing failed."""
        start = next((i for i, line in enumerate(self.lines) if SUMMARY_START in line), None)
        return self.lines[start:] if start is not None else self.lines[-1:]


# --durations: each lane names its slowest tests, where the suite's wall time goes.
LANES = (
    Lane("e2e", ["-m", "e2e", "--durations=10", "test/e2e"]),
    Lane("unit+integration", ["-m", "unit or integration", "--durations=15", "test/unit", "test/integration"]),
)


def run_lanes(lanes: tuple[Lane, ...]) -> int:
    lock = threading.Lock()
    for lane in lanes:
        lane.start()

    def forward(_signum: int, _frame: FrameType | None) -> None:
        # As SIGINT, whatever came: pytest turns it into KeyboardInterrupt and tears its cluster down, where a
        # SIGTERM would end it with the cluster's processes left running.
        for lane in lanes:
            if lane.process and lane.process.poll() is None:
                lane.process.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    readers = [threading.Thread(target=lane.stream, args=(lock,), daemon=True) for lane in lanes]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    print()
    for lane in lanes:
        print(f"==== {lane.name}: exit {lane.returncode} after {lane.ended - lane.started:.0f} s ====")
        print("\n".join(lane.summary()))
    return next((lane.returncode for lane in lanes if lane.returncode), 0)


def main(argv: list[str]) -> int:
    if argv:
        return subprocess.call([sys.executable, "-m", "pytest", *argv], cwd=REPO)
    return run_lanes(LANES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
