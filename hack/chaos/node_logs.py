"""The real TensorFlow processes as their own log files show them: kubelet keeps each container attempt's output on
its node's disk (`pod-logs/<ns>_<pod>_<uid>/tensorflow/<attempt>.log`, each line `<time> <stream> <tag> <text>`,
timestamped by the runtime), readable while the node is cut off. The kubelet removes a deleted pod's directory, so
the run reads them every few seconds and keeps every line it has seen."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from chaos.observations import ProcessClaim, process_claim

READ_INTERVAL = 3.0


def read_attempts(roots: Iterable[Path], namespace: str) -> dict[tuple[str, str], list[str]]:
    """(pod directory, attempt file) -> its lines, for every tensorflow container of `namespace` under the nodes'
    log roots."""
    found: dict[tuple[str, str], list[str]] = {}
    for root in roots:
        for log in sorted(root.glob(f"{namespace}_*/tensorflow/*.log")):
            try:
                found[(log.parent.parent.name, log.name)] = log.read_text(errors="replace").splitlines()
            except FileNotFoundError:  # removed with its pod between the glob and the read
                continue
    return found


class NodeLogs:
    """Every line the real nodes' tensorflow containers of `namespace` wrote, as often as it is read."""

    def __init__(self, roots: list[Path], namespace: str) -> None:
        self.roots = roots
        self.namespace = namespace
        self.attempts: dict[tuple[str, str], list[str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True, name="node-logs")

    def read(self) -> None:
        for attempt, lines in read_attempts(self.roots, self.namespace).items():
            with self._lock:
                # A log file only grows (one attempt, no rotation at these sizes): the longest read is the latest.
                if len(lines) >= len(self.attempts.get(attempt, ())):
                    self.attempts[attempt] = lines

    def _follow(self) -> None:
        while not self._stop.wait(READ_INTERVAL):
            self.read()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.read()

    def claims(self) -> list[ProcessClaim]:
        with self._lock:
            return [process_claim(pod_dir, attempt, lines) for (pod_dir, attempt), lines in
                    sorted(self.attempts.items())]
