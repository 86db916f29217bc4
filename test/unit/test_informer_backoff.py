"""The reflector loop's backoff, turn by turn, against a source whose every list and watch outcome is written out.

Each apiserver restart breaks a watch that was serving events. The delay that follows must depend on how long the
source has been healthy, not on every outage the informer has lived through: a failure more than two minutes after
the previous backoff starts again from the first delay (client-go's rule); one sooner keeps growing, since a
source that breaks again within two minutes is still unhealthy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfop.kube.client import Page
from tfop.kube.clock import FakeClock
from tfop.kube.errors import TransportError
from tfop.kube.informer import Informer
from tfop.kube.resource import CONFIGMAPS, Resource

START = 1000.0


@dataclass(frozen=True)
class Watch:
    """What one watch request does: refused at once, or `events` events over `lasts` seconds, then a break (or,
    not `broken`, the normal end a server-side timeout gives)."""
    refused: bool = False
    events: int = 0
    lasts: float = 0.0
    broken: bool = True


REFUSED = Watch(refused=True)


class _Stream:
    def __init__(self, outcome: Watch, clock: FakeClock, first_version: int) -> None:
        self._outcome = outcome
        self._clock = clock
        self._first_version = first_version

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self._outcome.events):
            version = str(self._first_version + i)
            yield {"type": "ADDED", "object": {"metadata": {"namespace": "ns", "name": f"cm-{version}",
                                                            "resourceVersion": version}}}
        self._clock.step(self._outcome.lasts)
        if self._outcome.broken:
            raise TransportError("connection reset by peer")  # what an apiserver restart does to an open watch

    def close(self) -> None:
        pass


class ScriptedSource:
    """Lists succeed (empty); each watch does what the next scripted outcome says."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.next_watch: Watch | None = None
        self.lists = 0
        self._version = 1

    def list_pages(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int = 500) -> Iterator[Page]:
        self.lists += 1
        yield [], str(self._version)

    def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int, label_selector: str | None = None, field_selector: str | None = None,
              allow_bookmarks: bool = True) -> _Stream:
        outcome, self.next_watch = self.next_watch, None
        assert outcome is not None, "the loop watched more often than the script says"
        if outcome.refused:
            raise TransportError("connection refused")
        stream = _Stream(outcome, self.clock, self._version + 1)
        self._version += outcome.events
        return stream


# (seconds since start when the turn begins, what its watch does, the delay the loop then waits). No jitter, so
# the delays are 0.8 * 2**n capped at 30. The turn's start is the previous one's plus its watch and its delay.
ROWS: list[tuple[float, Watch, float]] = [
    (0.0, Watch(events=3, lasts=5.0), 0.8),      # first outage: the watch serving since the list breaks
    (5.8, REFUSED, 1.6),                         # the apiserver is still down: the delays grow
    (7.4, REFUSED, 3.2),
    (10.6, REFUSED, 6.4),
    (17.0, REFUSED, 12.8),
    (29.8, Watch(events=2, lasts=200.0), 0.8),   # back up, healthy 200 s, then a second restart: from the start
    (230.6, REFUSED, 1.6),
    (232.2, Watch(events=1, lasts=30.0), 3.2),   # broke again 30 s later: still within 2 min, it keeps growing
    (265.4, REFUSED, 6.4),
    (271.8, Watch(events=4, lasts=121.0), 0.8),  # 127.4 s since the last backoff: reset
    (393.6, REFUSED, 1.6),
    (395.2, Watch(events=1, lasts=2.0, broken=False), 0.0),  # a watch that ends normally resets at once
    (397.2, REFUSED, 0.8),
]


def test_each_outage_after_a_healthy_spell_backs_off_from_the_first_delay() -> None:
    clock = FakeClock(start=START)
    source = ScriptedSource(clock)
    informer = Informer(source, CONFIGMAPS, clock=clock, jitter_rng=lambda: 0.0)
    waited: list[tuple[float, float]] = []
    for at, outcome, _ in ROWS:
        clock.step(START + at - clock.now())
        source.next_watch = outcome
        waited.append((at, informer.list_and_watch_once()))
    assert waited == [(at, delay) for at, _, delay in ROWS]  # exact: doubling 0.8 without jitter rounds nothing
    assert source.lists == 1  # a broken watch resumes from its resourceVersion; no re-list
    assert len(informer.store) == 11
