"""Leader election on a coordination.k8s.io/v1 Lease, so only one replica of a controller acts at a time.

Expiry is judged by when THIS process last saw the lease record change, on its own monotonic clock, never by the
holder's timestamps: the clocks of two machines need not agree, but both measure durations well enough.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import LEASES
from tfop.kube.throttle import jittered

log = structlog.get_logger("tfop.kube.leaderelection")

# Acquire attempts are spread over [retry_period, 1.2 * retry_period] so that candidates do not poll in step.
ACQUIRE_JITTER = 0.2


def micro_time(moment: datetime) -> str:
    """A MicroTime string as the Lease API expects (RFC 3339 with microseconds, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquires and keeps one Lease; `run` blocks until leadership is lost or `stop` is set.

    Callbacks run on the thread that calls `run` and must return promptly (start or signal your own threads):
    renewals wait for them. On a graceful stop `on_stopped_leading` runs before the lease is released, so a
    callback that waits for in-flight work keeps the old and the new leader from overlapping. After a loss `run`
    returns; the caller should stop acting as leader at once (usually: exit and let the process restart).
    """

    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 on_started_leading: Callable[[], None] | None = None,
                 on_stopped_leading: Callable[[], None] | None = None, release_on_cancel: bool = True,
                 clock: Callable[[], float] = time.monotonic, metrics: KubeMetrics | None = None) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        if not lease_duration > renew_deadline > retry_period * (1 + ACQUIRE_JITTER) > 0:
            raise ValueError("need lease_duration > renew_deadline > 1.2 * retry_period > 0")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._lease: dict[str, Any] | None = None  # the last lease object read or written
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0  # clock() when the lease record was last seen to change
        self._last_renew = 0.0  # clock() when our last write of the lease succeeded
        self._leading = False
        self._log = log.bind(lease=f"{namespace}/{name}", identity=identity)
        self._master_status = (metrics or KubeMetrics.create()).leader.labels(name)
        self._master_status.set(0)

    # -- public ------------------------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while we hold the lease and renewed it within the renew deadline by our own clock."""
        return self._leading and self._clock() - self._last_renew < self.renew_deadline

    @property
    def observed_holder(self) -> str:
        """The holder in the lease as last read ("" when nobody holds it or nothing was read yet)."""
        return str((self._observed_spec or {}).get("holderIdentity") or "")

    def run(self, stop: threading.Event) -> None:
        try:
            if not self._acquire(stop):
                return
            self._set_leading(True)
            self._log.info("became leader")
            self._call(self._on_started)
            self._renew(stop)
        finally:
            if self._leading:
                self._set_leading(False)
                self._call(self._on_stopped)
                if stop.is_set() and self.release_on_cancel:
                    self._release()

    # -- the loops ---------------------------------------------------------------------------------------------

    def _acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            if self._try_acquire_or_renew(self._clock() + self.renew_deadline):
                return True
            wait = jittered(self.retry_period, ACQUIRE_JITTER, random.random())
            expiry = self._other_holder_expiry()
            if expiry is not None:  # wake when the holder's lease runs out, not up to a period later
                wait = min(wait, max(0.0, expiry - self._clock()) + 0.01)
            stop.wait(wait)
        return False

    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self.retry_period):
            deadline = self._last_renew + self.renew_deadline
            while not self._try_acquire_or_renew(deadline):
                if self._other_holder_expiry() is not None:
                    self._log.warning("lease taken over", holder=self.observed_holder)
                    return
                if self._clock() >= deadline:
                    self._log.warning("could not renew the lease within the renew deadline",
                                      renew_deadline=self.renew_deadline)
                    return
                if stop.wait(min(self.retry_period, max(0.0, deadline - self._clock()))):
                    return

    # -- one attempt -------------------------------------------------------------------------------------------

    def _try_acquire_or_renew(self, deadline: float) -> bool:
        """One read and, if the lease is ours to take or keep, one conditional write; True if we hold it now."""
        path = LEASES.path(self.namespace, self.name)
        try:
            try:
                lease = self._call_api("GET", path, None, deadline)
            except NotFound:
                lease = {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
                         "metadata": {"name": self.name, "namespace": self.namespace},
                         "spec": self._our_spec({})}
                self._observe(self._call_api("POST", LEASES.path(self.namespace), lease, deadline))
                self._last_renew = self._clock()
                return True
            self._observe(lease)
            if self._other_holder_expiry() is not None:
                return False
            lease["spec"] = self._our_spec(lease.get("spec") or {})
            self._observe(self._call_api("PUT", path, lease, deadline))
            self._last_renew = self._clock()
            return True
        except (AlreadyExists, Conflict):
            return False  # someone else wrote first; the next read shows who
        except (ApiError, TimeoutError) as exc:
            self._log.warning("lease request failed", error=str(exc))
            return False

    def _call_api(self, method: str, path: str, body: Any, deadline: float) -> dict[str, Any]:
        remaining = deadline - self._clock()
        if remaining <= 0:
            raise TimeoutError("renew deadline passed")
        result: dict[str, Any] = self.client.request(
            method, path, body=body, max_retries=0,
            timeout=(min(self.client.timeout[0], remaining), remaining))
        return result

    def _observe(self, lease: dict[str, Any]) -> None:
        self._lease = lease
        spec = dict(lease.get("spec") or {})
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = self._clock()

    def _other_holder_expiry(self) -> float | None:
        """When the lease held by someone else expires by our clock; None if it is free, ours, or expired."""
        holder = self.observed_holder
        if not holder or holder == self.identity:
            return None
        duration = (self._observed_spec or {}).get("leaseDurationSeconds") or self.lease_duration
        expiry = self._observed_at + float(duration)
        return expiry if self._clock() < expiry else None

    def _our_spec(self, current: dict[str, Any]) -> dict[str, Any]:
        now = micro_time(datetime.now(UTC))
        ours = current.get("holderIdentity") == self.identity
        transitions = int(current.get("leaseTransitions") or 0)
        spec = dict(current)  # keep fields we do not manage
        spec.update({
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": current.get("acquireTime") if ours and current.get("acquireTime") else now,
            "renewTime": now,
            "leaseTransitions": transitions if ours or not current else transitions + 1,
        })
        return spec

    def _release(self) -> None:
        """Clear the holder so a successor takes over at its next attempt instead of waiting for expiry."""
        lease = self._lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        spec = dict(lease["spec"])
        spec.pop("holderIdentity", None)
        now = micro_time(datetime.now(UTC))
        spec.update({"leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now})
        lease = {**lease, "spec": spec}
        try:
            self._observe(self._call_api("PUT", LEASES.path(self.namespace, self.name), lease,
                                         self._clock() + self.renew_deadline))
            self._log.info("released the lease")
        except (ApiError, TimeoutError) as exc:
            self._log.warning("could not release the lease", error=str(exc))

    # -- state -------------------------------------------------------------------------------------------------

    def _set_leading(self, leading: bool) -> None:
        self._leading = leading
        self._master_status.set(1 if leading else 0)

    def _call(self, callback: Callable[[], None] | None) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:  # noqa: BLE001 - a callback bug must not leave the lease half-managed
            self._log.exception("leader election callback failed")
