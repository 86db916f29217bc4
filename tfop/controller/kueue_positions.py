"""Where each pending Workload of tfop's stands in its Kueue queue (tfop's own Kueue integration), read from Kueue's
visibility API (`visibility.kueue.x-k8s.io`, served by Kueue's on-demand visibility server through the apiserver's
aggregation layer), which has no watch.

Every `every` seconds, while this process leads: one GET of `pendingworkloads` per LocalQueue that holds a pending
Workload of tfop's (its cache says so: no admission, active), asking for the first `LOOKED_AT`; a job whose position
changed is enqueued, and its pass reads the position (PlanContext.queue_position) into its Suspended message. So a
job's status is rewritten at most once per look, and a queue's jobs past the first LOOKED_AT are told "behind at
least LOOKED_AT", which does not change as the queue moves: a long queue costs one GET a look, not a write per job
per admission.

Callers may rely on: a look never raises, and an API that is not served (a Kueue without its visibility server, or
not registered), not allowed (RBAC) or failing leaves every position unknown (the messages say nothing of one), said
once in the log at info until it answers again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import structlog

from tfop.api.fields import mapping, mapping_at, text
from tfop.controller.children import made_by_tfop
from tfop.controller.plan.observed.workload import QueuePosition, observe_workload
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound
from tfop.objects import Object

log = structlog.get_logger("tfop.kueue")

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSION = "v1beta2"
# How many of a LocalQueue's pending Workloads one look asks for: positions past it are not told (see above).
LOOKED_AT = 100

WorkloadKey = tuple[str, str]  # (namespace, name)
QueueKey = tuple[str, str]  # (namespace, LocalQueue)


@dataclass(frozen=True, slots=True)
class Pending:
    """A Workload of tfop's that waits for quota: its LocalQueue, and the job whose pass tells its position."""

    workload: WorkloadKey
    queue: QueueKey
    job: str


def pending_workloads(workloads: Iterable[Object], job_of: Callable[[Object], str | None]) -> list[Pending]:
    """tfop's Workloads that wait in a LocalQueue: made by tfop, for a job, active, not admitted, not being
    deleted, not evicted while still holding quota (that one is being stopped, not queued)."""
    found = []
    for workload in workloads:
        if not made_by_tfop(workload):
            continue
        view = observe_workload(workload)
        job = job_of(workload)
        namespace = text(mapping_at(workload, "metadata").get("namespace"))
        if (job is None or namespace is None or view.queue_name is None or not view.active or view.terminating
                or view.admitted or view.quota_reserved):
            continue
        found.append(Pending((namespace, view.name), (namespace, view.queue_name), job))
    return found


def positions_in(answer: object, pending: Iterable[Pending], looked_at: int) -> dict[WorkloadKey, QueuePosition]:
    """The positions `pending` (of one LocalQueue) have in a pendingworkloads answer: Kueue counts from 0; one not
    listed is past the `looked_at` listed when the list is full, and otherwise not known to Kueue's queue yet."""
    items = [mapping(item) for item in (mapping(answer).get("items") or ()) if isinstance(item, Mapping)]
    listed = {}
    for item in items:
        name = text(mapping_at(item, "metadata").get("name"))
        local, cluster = item.get("positionInLocalQueue"), item.get("positionInClusterQueue")
        if name is not None and isinstance(local, int):
            listed[name] = QueuePosition(local + 1, cluster + 1 if isinstance(cluster, int) else None, looked_at)
    positions = {}
    for entry in pending:
        if (found := listed.get(entry.workload[1])) is not None:
            positions[entry.workload] = found
        elif len(items) >= looked_at:
            positions[entry.workload] = QueuePosition(None, None, looked_at)
    return positions


def jobs_to_tell(before: Mapping[WorkloadKey, QueuePosition], jobs_before: Mapping[WorkloadKey, str],
                 now: Mapping[WorkloadKey, QueuePosition], jobs: Mapping[WorkloadKey, str]) -> list[str]:
    """The jobs whose Workload's position changed between two looks, came or went (sorted, once each): their
    messages are out of date."""
    changed = {job for key in set(before) | set(now) if before.get(key) != now.get(key)
               if (job := jobs.get(key) or jobs_before.get(key)) is not None}
    return sorted(changed)


class QueuePositions:
    def __init__(self, client: KubeClient, workloads: Callable[[], Iterable[Object]],
                 job_of: Callable[[Object], str | None], enqueue: Callable[[str], None], *, every: float,
                 looked_at: int = LOOKED_AT) -> None:
        """`workloads`: the controller's cached Workloads; `job_of`: the key of the job that controls one;
        `enqueue`: hands a job to the work queue."""
        self.client = client
        self.workloads = workloads
        self.job_of = job_of
        self.enqueue = enqueue
        self.every = every
        self.looked_at = looked_at
        self._positions: Mapping[WorkloadKey, QueuePosition] = MappingProxyType({})
        self._jobs: dict[WorkloadKey, str] = {}  # the job of each Workload the last look found pending
        self._problem: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def of(self, namespace: str, workload: str) -> QueuePosition | None:
        return self._positions.get((namespace, workload))

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="kueue-positions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.look()
            except Exception:  # a look must never end the loop: the next one starts afresh
                log.exception("queue positions look failed")

    def look(self) -> None:
        """One look: every LocalQueue holding a pending Workload of tfop's asked once; the jobs whose position
        changed (or went: admitted, or the API stopped answering) enqueued."""
        pending = pending_workloads(self.workloads(), self.job_of)
        by_queue: dict[QueueKey, list[Pending]] = {}
        for entry in pending:
            by_queue.setdefault(entry.queue, []).append(entry)
        positions: dict[WorkloadKey, QueuePosition] = {}
        problem = None
        for (namespace, queue), entries in sorted(by_queue.items()):
            try:
                answer = self.client.request(
                    "GET", f"/apis/{VISIBILITY_GROUP}/{VISIBILITY_VERSION}/namespaces/{namespace}/localqueues/"
                           f"{queue}/pendingworkloads", query=[("limit", str(self.looked_at))])
            except NotFound as error:
                if _about_the_queue(error):  # Kueue does not know this LocalQueue (yet): its jobs say so already
                    continue
                problem = f"{VISIBILITY_GROUP}/{VISIBILITY_VERSION} is not served ({error})"
                break
            except ApiError as error:  # forbidden, or the aggregated API unavailable: the same for every queue
                problem = f"{VISIBILITY_GROUP}/{VISIBILITY_VERSION} did not answer ({error})"
                break
            positions.update(positions_in(answer, entries, self.looked_at))
        if problem is not None:
            positions = {}
        if by_queue:  # asked: what it answered is news
            self._tell(problem)
        jobs = {entry.workload: entry.job for entry in pending}
        moved = jobs_to_tell(self._positions, self._jobs, positions, jobs)
        self._positions, self._jobs = MappingProxyType(positions), jobs
        for job in moved:
            self.enqueue(job)

    def _tell(self, problem: str | None) -> None:
        """Logs when the API starts or stops answering (a problem's kind, not its words, since they vary)."""
        if _kind(problem) != _kind(self._problem):
            if problem is None:
                log.info("Kueue's visibility API answers: pending jobs tell their place in their queue")
            else:
                log.info("pending jobs do not tell their place in their Kueue queue", reason=problem,
                         hint=f"Kueue's visibility server (VisibilityOnDemand) and tfop's RBAC to get "
                              f"localqueues/pendingworkloads in {VISIBILITY_GROUP}")
        self._problem = problem


def _about_the_queue(error: NotFound) -> bool:
    """A 404 from Kueue's visibility server about the LocalQueue, not the apiserver's for an API it does not serve."""
    details = mapping(mapping(error.body).get("details"))
    return text(details.get("kind")) == "localqueue"



def _kind(problem: str | None) -> str | None:
    return None if problem is None else problem.partition(" (")[0]
