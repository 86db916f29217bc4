"""What the page reads: TFJobs, their pods and the events of both, cached by informers (tfop/kube), so that a page
view costs the apiserver no list. A pod's cached form keeps what the tables and the timeline show (its status and
node), never its spec: every pod's TF_CONFIG lists every replica, so a job's grow with replicas squared (a
replica's page gets its one pod instead). A deleted pod is remembered per job, so that the timeline still shows a
replica's earlier pods. Namespaces are cached by name only, so that the list can tell a user who may list
TFJobs in no namespace from one whose namespaces have none.

Callers may rely on: cached objects are read-only; `changes` counts every change to any of the caches, and its
waiters are woken (from the informer threads) as it moves.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import deque
from datetime import datetime
from typing import Any

from tfop.api.constants import GROUP, KIND, LABEL_JOB_NAME, PLURAL, REPLICA_TYPES, VERSION
from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer, strip_managed_fields
from tfop.kube.resource import EVENTS, NAMESPACES, PODS, Resource
from tfop.objects import Object
from tfop.ui.views.summary import metric_values

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
BY_JOB = "job"  # pods by "namespace/job-name"
BY_INVOLVED = "involved"  # events by "namespace/kind/name" of the object they are about
BY_POD_JOB = "pod-job"  # events about pods by "namespace/job-name", from the pod's name as tfop makes it
# A tfop pod's name: {job}-{type}-{index} or {job}-{type}-{runtime id}-{index} (tfop/api/runtime_id.py).
POD_NAME = re.compile(r"^(?P<job>.+)-(?:" + "|".join(name.lower() for name in REPLICA_TYPES)
                      + r")-(?:(?P<rid>[a-z2-7]{4})-)?\d+$")
# Earlier pods remembered per job (a pod replaced under its name is gone from the apiserver).
POD_HISTORY = 64
# The metrics of a job's progress reports, as this process saw them change, for its page's charts.
METRIC_HISTORY = 120


def job_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _pod_job(pod: Object) -> list[str]:
    meta = pod.get("metadata") or {}
    job = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
    return [job_key(meta.get("namespace", ""), job)] if job else []


def pod_event_job(event: Object) -> list[str]:
    """The job a pod's event is about, by the pod's name: its events outlive the pod (an hour in the apiserver)."""
    involved = event.get("involvedObject") or {}
    found = POD_NAME.match(str(involved.get("name", ""))) if involved.get("kind") == "Pod" else None
    return [job_key(str(involved.get("namespace", "")), found["job"])] if found else []


def pod_event_of_job(event: Object, job_runtime_id: str) -> bool:
    """Whether the event's pod name carries no runtime id, or this job's (not an earlier job of the same name)."""
    found = POD_NAME.match(str((event.get("involvedObject") or {}).get("name", "")))
    return found is not None and found["rid"] in (None, job_runtime_id)


def _involved(event: Object) -> list[str]:
    involved = event.get("involvedObject") or {}
    return [f"{involved.get('namespace', '')}/{involved.get('kind', '')}/{involved.get('name', '')}"]


def slim_pod(pod: Object) -> Object:
    """A pod as the tables and the timeline show it: identity, node and status."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    # The deletion's grace tells when it was asked for (the timeline's restarts together: views/happenings.py).
    kept_meta = {key: meta[key] for key in ("name", "namespace", "uid", "labels", "creationTimestamp",
                                            "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion")
                 if key in meta}
    return {"metadata": kept_meta, "spec": {"nodeName": spec.get("nodeName", "")}, "status": pod.get("status") or {}}


def slim_namespace(namespace: Object) -> Object:
    meta = namespace.get("metadata") or {}
    return {"metadata": {key: meta[key] for key in ("name", "uid", "resourceVersion") if key in meta}}


def slim_event(event: Object) -> Object:
    kept = {key: event[key] for key in ("involvedObject", "type", "reason", "message", "count", "firstTimestamp",
                                        "lastTimestamp", "eventTime", "series", "source", "reportingComponent")
            if key in event}
    meta = event.get("metadata") or {}
    kept["metadata"] = {key: meta[key] for key in ("name", "namespace", "uid", "creationTimestamp",
                                                   "resourceVersion") if key in meta}
    return kept


class ChangeFeed:
    """A counter of cache changes that asyncio tasks can wait on without polling."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.generation = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def bump(self, *_: Any) -> None:
        with self._lock:
            self.generation += 1
            waiters = list(self._waiters)
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    async def wait_past(self, generation: int, timeout: float) -> int:
        """The generation once it is past `generation`, or after `timeout` seconds, whichever comes first."""
        event = asyncio.Event()
        waiter = (asyncio.get_running_loop(), event)
        with self._lock:
            if self.generation != generation:
                return self.generation
            self._waiters.add(waiter)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.discard(waiter)
        return self.generation


class UiCache:
    def __init__(self, client: KubeClient) -> None:
        self.jobs = Informer(client, TFJOBS, transform=strip_managed_fields)
        self.pods = Informer(client, PODS, label_selector=LABEL_JOB_NAME, indexers={BY_JOB: _pod_job},
                             transform=slim_pod)
        self.events = [Informer(client, EVENTS, field_selector=f"involvedObject.kind={kind}",
                                indexers={BY_INVOLVED: _involved, BY_POD_JOB: pod_event_job}, transform=slim_event)
                       for kind in (KIND, "Pod")]
        self.namespaces = Informer(client, NAMESPACES, transform=slim_namespace)
        self.changes = ChangeFeed()
        self._history_lock = threading.Lock()
        self._history: dict[str, deque[Object]] = {}
        self._metrics: dict[str, deque[tuple[datetime, dict[str, float]]]] = {}
        for informer in self.informers:
            informer.add_event_handler(self.changes.bump, self.changes.bump, self.changes.bump)
        self.pods.add_event_handler(on_delete=self._remember_pod)
        self.jobs.add_event_handler(self._remember_metrics, lambda _old, new: self._remember_metrics(new),
                                    self._forget_job)

    @property
    def informers(self) -> list[Informer]:
        return [self.jobs, self.pods, *self.events, self.namespaces]

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def wait_for_sync(self, timeout: float) -> bool:
        return all(informer.wait_for_sync(timeout) for informer in self.informers)

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    # -- reads -------------------------------------------------------------------------------------------------

    def all_jobs(self) -> list[Object]:
        return self.jobs.store.list()

    def namespace_names(self) -> list[str]:
        return sorted(str((item.get("metadata") or {}).get("name", "")) for item in self.namespaces.store.list())

    def job(self, namespace: str, name: str) -> Object | None:
        return self.jobs.store.get_by_name(namespace, name)

    def job_pods(self, namespace: str, name: str) -> list[Object]:
        return self.pods.store.by_index(BY_JOB, job_key(namespace, name))

    def earlier_pods(self, namespace: str, name: str) -> list[Object]:
        """Pods of the job deleted since this process started, oldest first."""
        with self._history_lock:
            return list(self._history.get(job_key(namespace, name), ()))

    def pod_events_of_job(self, namespace: str, name: str) -> list[Object]:
        """Events about the job's pods, those deleted included, as long as the apiserver keeps them."""
        return [event for informer in self.events for event in informer.store.by_index(BY_POD_JOB,
                                                                                       job_key(namespace, name))]

    def metric_history(self, namespace: str, name: str) -> list[tuple[datetime, dict[str, float]]]:
        with self._history_lock:
            return list(self._metrics.get(job_key(namespace, name), ()))

    def events_of(self, namespace: str, kind: str, name: str) -> list[Object]:
        return [event for informer in self.events
                for event in informer.store.by_index(BY_INVOLVED, f"{namespace}/{kind}/{name}")]

    # -- handlers ----------------------------------------------------------------------------------------------

    def _remember_pod(self, pod: Object, _stale: bool) -> None:
        for key in _pod_job(pod):
            with self._history_lock:
                self._history.setdefault(key, deque(maxlen=POD_HISTORY)).append(pod)

    def _remember_metrics(self, job: Object) -> None:
        reported = metric_values(job)
        if reported is None or not reported[1]:
            return
        meta = job.get("metadata") or {}
        with self._history_lock:
            kept = self._metrics.setdefault(job_key(meta.get("namespace", ""), meta.get("name", "")),
                                            deque(maxlen=METRIC_HISTORY))
            if not kept or kept[-1][0] < reported[0]:
                kept.append(reported)

    def _forget_job(self, job: Object, _stale: bool) -> None:
        meta = job.get("metadata") or {}
        key = job_key(meta.get("namespace", ""), meta.get("name", ""))
        with self._history_lock:
            self._history.pop(key, None)
            self._metrics.pop(key, None)
