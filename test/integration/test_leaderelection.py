"""Leader election on a real Lease: exactly one leader, takeover after the leader dies, fast handover on release,
and a leader that loses its lease stops at once.

The tests assert the order of events and the bounds the elector's settings state (a crashed leader's lease is
taken no sooner than a lease duration after its last renewal; a released one long before; a leader that cannot
renew steps down at its renew deadline, before its lease runs out), read from when each candidate's lease writes
began. Settings are chosen per test so that the margins they leave are far above what a loaded machine takes, and
every wait's deadline is generous: no test counts on the machine's pace."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import pytest
from prometheus_client import CollectorRegistry

from localcluster import LocalCluster
from support.proxy import TcpProxy
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import Conflict
from tfop.kube.leaderelection import LeaderElector
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import LEASES


@dataclass(frozen=True)
class Timings:
    lease: float
    renew: float
    retry: float


# Short, for the tests that wait out an expiry (the defaults' ratios, 15 / 10 / 2).
SHORT = Timings(3.0, 2.0, 0.5)
# A leader that keeps its lease through a stall of seconds: the renew deadline is 4 s past the last renewal.
STEADY = Timings(6.0, 4.5, 0.5)
# A renew deadline well inside the lease: stepping down at the deadline leaves 7 s before anyone could take over.
CUT = Timings(10.0, 3.0, 0.5)
# Far beyond every wait below (each gives the suite's DEADLINE): what happens within one was no expiry and no
# renew deadline, which the tests' assertions then check from the writes' times.
FAR = Timings(2 * DEADLINE, 1.5 * DEADLINE, 0.5)
LEASE_NAME = "tfop-test-lock"
POLL = 0.02  # how often the tests look


class WriteTimes(KubeClient):
    """A client that notes when each of its successful writes began (time.monotonic()). The elector judges a
    lease's expiry from when it saw the lease change, and its own renew deadline from when a write returned: both
    after the write that changed it began."""

    def __init__(self, configuration: Any, **kw: Any) -> None:
        super().__init__(configuration, **kw)
        self.writes: list[float] = []

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
                content_type: str = "application/json", timeout: tuple[float, float] | None = None,
                max_retries: int | None = None) -> Any:
        began = time.monotonic()
        result = super().request(method, path, query=query, body=body, content_type=content_type,
                                 timeout=timeout, max_retries=max_retries)
        if method in ("POST", "PUT"):
            self.writes.append(began)
        return result


class Candidate:
    """One elector running in its own thread, with its callbacks and its lease writes recorded."""

    def __init__(self, client: WriteTimes, namespace: str, identity: str, timings: Timings, *,
                 release_on_cancel: bool = True) -> None:
        self.client = client
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.stop = threading.Event()
        self.registry = CollectorRegistry()  # its own, so each candidate's gauge can be read
        self.elector = LeaderElector(
            client, namespace, LEASE_NAME, identity, lease_duration=timings.lease,
            renew_deadline=timings.renew, retry_period=timings.retry, on_started_leading=self._started,
            on_stopped_leading=self._stopped, release_on_cancel=release_on_cancel,
            metrics=KubeMetrics.create(self.registry))
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True, name=identity)

    def _started(self) -> None:
        self.started_at = time.monotonic()

    def _stopped(self) -> None:
        self.stopped_at = time.monotonic()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), f"{self.elector.identity}'s elector still runs {DEADLINE:g} s after stop"

    def last_write_before(self, moment: float) -> float:
        return max(began for began in self.client.writes if began < moment)


@pytest.fixture
def candidates(cluster: LocalCluster, namespace: str) -> Iterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, timings: Timings = SHORT, server: str | None = None, **kw: Any) -> Candidate:
        client = WriteTimes.from_kubeconfig(str(cluster.kubeconfig), server=server)
        assert isinstance(client, WriteTimes)
        candidate = Candidate(client, namespace, identity, timings, **kw)
        made.append(candidate)
        candidate.thread.start()
        return candidate

    yield make
    for candidate in made:
        candidate.stop.set()
    for candidate in made:
        candidate.thread.join(DEADLINE)
        candidate.client.close()


def leader_of(candidates: list[Candidate]) -> Candidate:
    leaders = [c for c in candidates if c.elector.is_leader()]
    assert len(leaders) == 1, [c.elector.identity for c in leaders]
    return leaders[0]


def test_exactly_one_of_two_leads(candidates: Callable[..., Candidate], kube_client: KubeClient,
                                  namespace: str) -> None:
    both = [candidates("a", STEADY), candidates("b", STEADY)]
    wait_for(lambda: any(c.elector.is_leader() for c in both), DEADLINE, "a leader", POLL)
    leader = leader_of(both)

    def renewed_for_two_lease_durations() -> bool:
        """Renewals keep the lease past its duration, and the other never sneaks in meanwhile."""
        assert leader_of(both) is leader
        spec = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]
        held = datetime.fromisoformat(spec["renewTime"]) - datetime.fromisoformat(spec["acquireTime"])
        return held.total_seconds() >= 2 * STEADY.lease

    wait_for(renewed_for_two_lease_durations, 2 * STEADY.lease + DEADLINE, "two lease durations of renewals", POLL)
    lease = kube_client.get(LEASES, LEASE_NAME, namespace)
    assert lease["spec"]["holderIdentity"] == leader.elector.identity
    assert lease["spec"]["leaseDurationSeconds"] == int(STEADY.lease)
    follower = next(c for c in both if c is not leader)
    assert leader.registry.get_sample_value("leader_election_master_status", {"name": LEASE_NAME}) == 1.0
    assert follower.registry.get_sample_value("leader_election_master_status", {"name": LEASE_NAME}) == 0.0
    assert follower.started_at is None and follower.elector.observed_holder == leader.elector.identity
    assert follower.client.writes == []  # it never wrote the lease: no attempt to take it


def test_the_other_takes_over_when_the_leader_dies(candidates: Callable[..., Candidate], kube_client: KubeClient,
                                                   namespace: str) -> None:
    first = candidates("first", release_on_cancel=False)
    wait_for(first.elector.is_leader, DEADLINE, "the first leader", POLL)
    second = candidates("second")
    wait_for(lambda: second.elector.observed_holder == "first", DEADLINE, "the second to see the lease", POLL)
    transitions = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"].get("leaseTransitions", 0)
    first.halt()  # stops renewing without releasing: as far as the lease shows, a crash
    assert first.stopped_at is not None and not first.elector.is_leader()
    # on_started_leading, which runs just after is_leader() turns true.
    wait_for(lambda: second.started_at is not None, SHORT.lease + DEADLINE,
             f"the takeover, due {SHORT.lease:g} s after the first's last renewal", POLL)
    assert second.elector.is_leader()
    # Not before the lease could have expired: the second saw the last renewal no sooner than that write began,
    # and took the lease (its first write) a whole lease duration after it saw it.
    assert second.client.writes[0] - first.client.writes[-1] >= SHORT.lease
    assert second.started_at is not None and first.stopped_at < second.started_at
    lease = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]
    assert lease["holderIdentity"] == "second" and lease["leaseTransitions"] == transitions + 1


def test_graceful_release_hands_over_before_the_lease_would_expire(candidates: Callable[..., Candidate],
                                                                   kube_client: KubeClient, namespace: str) -> None:
    """With a lease twice the wait's deadline, a handover within the wait can only be the release."""
    first = candidates("first", FAR)
    wait_for(first.elector.is_leader, DEADLINE, "the first leader", POLL)
    second = candidates("second", FAR)
    wait_for(lambda: second.elector.observed_holder == "first", DEADLINE, "the second to see the lease", POLL)
    released = time.monotonic()
    first.halt()
    assert first.stopped_at is not None
    wait_for(lambda: second.started_at is not None, DEADLINE,
             f"the handover at the second's next attempt (the {FAR.lease:g}-s lease released)", POLL)
    assert second.elector.is_leader()
    assert second.client.writes[0] < first.last_write_before(released) + FAR.lease
    assert second.started_at is not None and first.stopped_at < second.started_at
    assert kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]["holderIdentity"] == "second"


def test_a_leader_whose_lease_is_taken_stops_at_once(candidates: Callable[..., Candidate],
                                                     kube_client: KubeClient, namespace: str) -> None:
    """At its next renewal, not at its renew deadline: that is FAR.renew past its last renewal, beyond the wait."""
    leader = candidates("leader", FAR)
    wait_for(leader.elector.is_leader, DEADLINE, "the leader", POLL)
    while True:  # the leader renews every period, so our write may race with one of its renewals
        lease = kube_client.get(LEASES, LEASE_NAME, namespace)
        lease["spec"].update({"holderIdentity": "intruder", "leaseDurationSeconds": 60})
        try:
            kube_client.replace(LEASES, LEASE_NAME, lease, namespace)
            break
        except Conflict:
            continue
    taken = time.monotonic()
    wait_for(lambda: leader.stopped_at is not None, DEADLINE, "on_stopped_leading at the leader's next renewal", POLL)
    assert leader.stopped_at is not None
    assert leader.stopped_at < leader.last_write_before(taken) + FAR.renew  # not the deadline
    assert not leader.elector.is_leader()
    leader.thread.join(DEADLINE)
    assert not leader.thread.is_alive()  # run() returns after a loss
    assert kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]["holderIdentity"] == "intruder"  # not released


def test_a_leader_that_cannot_renew_within_the_deadline_steps_down(candidates: Callable[..., Candidate],
                                                                   cluster: Any) -> None:
    server = urlparse(cluster.server)
    proxy = TcpProxy((server.hostname or "127.0.0.1", server.port or 443))
    try:
        leader = candidates("leader", CUT, server=f"https://127.0.0.1:{proxy.port}")
        wait_for(leader.elector.is_leader, DEADLINE, "the leader", POLL)
        # Cut the leader's connection to the apiserver: every renewal now fails, as in a network partition.
        proxy.cut()
        cut = time.monotonic()
        wait_for(lambda: leader.stopped_at is not None, CUT.renew + DEADLINE,
                 f"on_stopped_leading at the {CUT.renew:g}-s renew deadline", POLL)
    finally:
        proxy.close()
    assert leader.stopped_at is not None and not leader.elector.is_leader()
    # The deadline runs from the last successful renewal: not before it, and before the lease it wrote then
    # expired, so no one else could take the lease while it still led.
    last_renewal = leader.last_write_before(cut)
    assert last_renewal + CUT.renew <= leader.stopped_at < last_renewal + CUT.lease
