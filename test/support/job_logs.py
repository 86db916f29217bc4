"""Every pod's log of one job, followed while its pods live (a deleted pod's log goes with it), with the runtime's
timestamps; and the reads the real-node tests make of those lines."""

from __future__ import annotations

import re
import subprocess
import threading

from localcluster import LocalCluster
from support.node_loss import LogLine, started_at, timestamp
from support.real_node_jobs import job_pods, story
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for


class JobLogs:
    """Every pod's tensorflow log of one job, followed (`kubectl logs -f --timestamps`) from the moment its container
    runs: a resize deletes pods, and a deleted pod's log goes with it, so it is read while the pod lives. Lines
    carry the runtime's timestamps. Stopped by close(), or used as a context manager."""

    def __init__(self, cluster: LocalCluster, namespace: str, job: str) -> None:
        self.cluster, self.namespace, self.job = cluster, namespace, job
        self.lines: dict[str, list[LogLine]] = {}
        self.followers: dict[str, subprocess.Popen[str]] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()

    def __enter__(self) -> JobLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.done.set()
        self.poller.join(timeout=DEADLINE)
        with self.lock:
            for follower in self.followers.values():
                if follower.poll() is None:
                    follower.terminate()

    def uids(self) -> list[str]:
        """The pods followed so far."""
        with self.lock:
            return list(self.lines)

    def of(self, uid: str) -> list[LogLine]:
        with self.lock:
            return list(self.lines.get(uid, []))

    def _poll(self) -> None:
        while not self.done.wait(KUBECTL_INTERVAL):
            for pod in job_pods(self.cluster, self.namespace, self.job):
                uid = pod["metadata"]["uid"]
                with self.lock:
                    if uid in self.followers and (self.followers[uid].poll() is None or self.lines.get(uid)):
                        continue  # followed now, or followed to its end
                if started_at(pod) is None:
                    continue  # `kubectl logs` of a container not started yet fails at once
                self._follow(uid, pod["metadata"]["name"])

    def _follow(self, uid: str, pod: str) -> None:
        assert self.cluster.bin_dir is not None, "bin_dir is known once the control plane is built"
        follower = subprocess.Popen(
            [str(self.cluster.bin_dir / "kubectl"), "--kubeconfig", str(self.cluster.kubeconfig), "logs", "-f",
             "--timestamps", "-n", self.namespace, pod, "-c", "tensorflow"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with self.lock:
            self.followers[uid] = follower
            self.lines[uid] = []  # from the container's start: a follower that failed early reads it all again

        def read() -> None:
            assert follower.stdout is not None
            for raw in follower.stdout:
                when, _, text = raw.rstrip("\n").partition(" ")
                with self.lock:
                    self.lines[uid].append(LogLine(timestamp(when), text))
        threading.Thread(target=read, daemon=True).start()


def first(lines: list[LogLine], pattern: re.Pattern[str]) -> tuple[LogLine, re.Match[str]] | None:
    for line in lines:
        if match := pattern.match(line.text):
            return line, match
    return None


def texts(lines: list[LogLine], tail: int = 30) -> list[str]:
    return [line.text for line in lines][-tail:]


def wait_for_line(logs: JobLogs, uid: str, pattern: re.Pattern[str], what: str,
                  timeout: float = 400) -> tuple[LogLine, re.Match[str]]:
    """The first line of the pod `uid` that matches, waited for; on a timeout, the pod's last lines and the
    namespace's events say where it stands (TensorFlow's import, a peer it waits for, the pod not started)."""
    try:
        return wait_for(lambda: first(logs.of(uid), pattern), timeout, what, interval=KUBECTL_INTERVAL)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\nits last lines: {texts(logs.of(uid))}\n"
                             f"{story(logs.cluster, logs.namespace)}") from None
