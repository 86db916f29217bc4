"""Leader election on a real Lease: exactly one leader, takeover after the leader dies, fast handover on release,
and a leader that loses its lease stops at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import pytest
from prometheus_client import CollectorRegistry

from support.proxy import TcpProxy
from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import Conflict
from tfop.kube.leaderelection import LeaderElector
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import LEASES

# Short timings keep the tests quick; the ratios are those of the defaults (15 / 10 / 2).
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
LEASE_NAME = "tfop-test-lock"
POLL = 0.02  # how often the tests look: fine enough for the timing bounds they assert


class Candidate:
    """One elector running in its own thread, with its callbacks recorded."""

    def __init__(self, client: KubeClient, namespace: str, identity: str, *, release_on_cancel: bool = True) -> None:
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.stop = threading.Event()
        self.registry = CollectorRegistry()  # its own, so each candidate's gauge can be read
        self.elector = LeaderElector(
            client, namespace, LEASE_NAME, identity, lease_duration=LEASE, renew_deadline=RENEW,
            retry_period=RETRY, on_started_leading=self._started, on_stopped_leading=self._stopped,
            release_on_cancel=release_on_cancel, metrics=KubeMetrics.create(self.registry))
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True, name=identity)

    def _started(self) -> None:
        self.started_at = time.monotonic()

    def _stopped(self) -> None:
        self.stopped_at = time.monotonic()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def candidates(kube_client: KubeClient, namespace: str) -> Iterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, client: KubeClient | None = None, **kw: Any) -> Candidate:
        candidate = Candidate(client or kube_client, namespace, identity, **kw)
        made.append(candidate)
        candidate.thread.start()
        return candidate

    yield make
    for candidate in made:
        candidate.stop.set()
    for candidate in made:
        candidate.thread.join(10)


def leader_of(candidates: list[Candidate]) -> Candidate:
    leaders = [c for c in candidates if c.elector.is_leader()]
    assert len(leaders) == 1, [c.elector.identity for c in leaders]
    return leaders[0]


def test_exactly_one_of_two_leads(candidates: Callable[..., Candidate], kube_client: KubeClient,
                                  namespace: str) -> None:
    both = [candidates("a"), candidates("b")]
    wait_for(lambda: any(c.elector.is_leader() for c in both), 15, "a leader", POLL)
    leader = leader_of(both)

    def renewed_for_three_lease_durations() -> bool:
        """Renewals keep the lease for several lease durations, and the other never sneaks in meanwhile."""
        assert leader_of(both) is leader
        spec = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]
        held = datetime.fromisoformat(spec["renewTime"]) - datetime.fromisoformat(spec["acquireTime"])
        return held.total_seconds() >= 3 * LEASE

    wait_for(renewed_for_three_lease_durations, 6 * LEASE, "three lease durations of renewals")
    lease = kube_client.get(LEASES, LEASE_NAME, namespace)
    assert lease["spec"]["holderIdentity"] == leader.elector.identity
    assert lease["spec"]["leaseDurationSeconds"] == int(LEASE)
    follower = next(c for c in both if c is not leader)
    assert leader.registry.get_sample_value("leader_election_master_status", {"name": LEASE_NAME}) == 1.0
    assert follower.registry.get_sample_value("leader_election_master_status", {"name": LEASE_NAME}) == 0.0
    assert follower.started_at is None and follower.elector.observed_holder == leader.elector.identity


def test_the_other_takes_over_when_the_leader_dies(candidates: Callable[..., Candidate], kube_client: KubeClient,
                                                   namespace: str) -> None:
    first = candidates("first", release_on_cancel=False)
    wait_for(first.elector.is_leader, 15, "the first leader", POLL)
    second = candidates("second")
    wait_for(lambda: second.elector.observed_holder == "first", 10, "the second to see the lease", POLL)
    transitions = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"].get("leaseTransitions", 0)
    died = time.monotonic()
    first.halt()  # stops renewing without releasing: as far as the lease shows, a crash
    assert first.stopped_at is not None and not first.elector.is_leader()
    wait_for(second.elector.is_leader, 3 * LEASE, "the takeover", POLL)
    took_over = time.monotonic() - died
    # Not before the lease could have expired (the last renewal was at most one period before the death) ...
    assert took_over > LEASE - RETRY - 0.3
    # ... and within a lease duration plus one (jittered) retry period, with some slack for a busy machine.
    assert took_over < LEASE + RETRY * 1.2 + 1.0
    lease = kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]
    assert lease["holderIdentity"] == "second" and lease["leaseTransitions"] == transitions + 1


def test_graceful_release_hands_over_in_about_one_retry_period(candidates: Callable[..., Candidate],
                                                               kube_client: KubeClient, namespace: str) -> None:
    first = candidates("first")
    wait_for(first.elector.is_leader, 15, "the first leader", POLL)
    second = candidates("second")
    wait_for(lambda: second.elector.observed_holder == "first", 10, "the second to see the lease", POLL)
    released = time.monotonic()
    first.halt()
    wait_for(second.elector.is_leader, 3 * LEASE, "the handover", POLL)
    took_over = time.monotonic() - released
    assert took_over < RETRY * 1.2 + 0.7  # far below the lease duration a crash would cost
    assert first.stopped_at is not None


def test_a_leader_whose_lease_is_taken_stops_at_once(candidates: Callable[..., Candidate],
                                                     kube_client: KubeClient, namespace: str) -> None:
    leader = candidates("leader")
    wait_for(leader.elector.is_leader, 15, "the leader", POLL)
    while True:  # the leader renews every period, so our write may race with one of its renewals
        lease = kube_client.get(LEASES, LEASE_NAME, namespace)
        lease["spec"].update({"holderIdentity": "intruder", "leaseDurationSeconds": 60})
        try:
            kube_client.replace(LEASES, LEASE_NAME, lease, namespace)
            break
        except Conflict:
            continue
    taken = time.monotonic()
    wait_for(lambda: leader.stopped_at is not None, 5, "on_stopped_leading", POLL)
    assert leader.stopped_at is not None and leader.stopped_at - taken < RETRY * 2 + 0.5
    assert not leader.elector.is_leader()
    leader.thread.join(5)
    assert not leader.thread.is_alive()  # run() returns after a loss
    assert kube_client.get(LEASES, LEASE_NAME, namespace)["spec"]["holderIdentity"] == "intruder"  # not released


def test_a_leader_that_cannot_renew_within_the_deadline_steps_down(candidates: Callable[..., Candidate],
                                                                   cluster: Any) -> None:
    server = urlparse(cluster.server)
    proxy = TcpProxy((server.hostname or "127.0.0.1", server.port or 443))
    try:
        through_proxy = KubeClient.from_kubeconfig(str(cluster.kubeconfig),
                                                   server=f"https://127.0.0.1:{proxy.port}")
        leader = candidates("leader", client=through_proxy)
        wait_for(leader.elector.is_leader, 15, "the leader", POLL)
        # Cut the leader's connection to the apiserver: every renewal now fails, as in a network partition.
        proxy.cut()
        cut = time.monotonic()
        wait_for(lambda: leader.stopped_at is not None, 3 * LEASE, "on_stopped_leading", POLL)
    finally:
        proxy.close()
    assert leader.stopped_at is not None
    # The deadline runs from the last successful renewal, which was at most one period before the cut.
    assert RENEW - RETRY - 0.2 < leader.stopped_at - cut < RENEW + RETRY + 0.5
    assert leader.stopped_at - cut < LEASE  # stepped down before anyone else could take the lease
