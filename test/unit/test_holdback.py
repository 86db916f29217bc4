"""HoldBack: a key's minor writes wait together for one window, which a write closes."""

from __future__ import annotations

from tfop.kube.clock import FakeClock
from tfop.kube.holdback import HoldBack


def test_the_first_held_write_opens_the_window_and_later_ones_wait_for_its_end() -> None:
    clock = FakeClock()
    held: HoldBack[str] = HoldBack(5.0, clock)
    assert held.remaining("ns/a") == 5.0
    clock.step(2.0)
    assert held.remaining("ns/a") == 3.0  # not a new window: the first write has waited 2 s already
    assert held.remaining("ns/b") == 5.0  # keys wait apart
    clock.step(3.0)
    assert held.remaining("ns/a") == 0.0  # due: write now
    assert held.remaining("ns/b") == 2.0


def test_a_write_closes_the_window_so_the_next_held_one_waits_again() -> None:
    clock = FakeClock()
    held: HoldBack[str] = HoldBack(5.0, clock)
    held.remaining("ns/a")
    clock.step(6.0)
    held.close("ns/a")
    assert len(held) == 0
    assert held.remaining("ns/a") == 5.0
    held.close("ns/unknown")  # closing a key with no window is harmless
    assert len(held) == 1
