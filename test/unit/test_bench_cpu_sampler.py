"""bench.cpu_sampler: a thread's CPU goes to the stack it runs, and a thread that only waits gets none."""

from __future__ import annotations

import threading
from collections import Counter

from bench.cpu_sampler import Sampler, Stack, read_folded, report


def looks(sampler: Sampler) -> None:
    """Until a look begun after the call has ended: two more ends, as the one under way may have listed the threads
    before."""
    with sampler.looked:
        looked = sampler.looks
        sampler.looked.wait_for(lambda: sampler.looks > looked + 1)


def burn(sampler: Sampler, burnt: threading.Event, done: threading.Event) -> int:
    looks(sampler)  # seen before it burns: a thread's CPU counts from the first look at it
    total = 0
    for number in range(3_000_000):  # a fixed amount of work, however long the machine takes for it
        total += number % 7
    # Alive until looked at once more (on a loaded machine the sampler may not have looked while the loop ran, and
    # a thread's CPU is read only while it lives), then in this function until the sampler stops: a look after it
    # returned would give its last stretch to a stack without `burn`.
    looks(sampler)
    burnt.set()
    done.wait()
    return total


def wait(done: threading.Event) -> None:
    done.wait()


def test_cpu_goes_to_the_thread_that_spends_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sampler = Sampler(0.002)
    burnt, done = threading.Event(), threading.Event()
    waiter = threading.Thread(target=wait, args=(done,), name="waiter-1")
    burner = threading.Thread(target=burn, args=(sampler, burnt, done), name="burner-1")
    sampler.start()
    waiter.start()
    burner.start()
    try:
        assert burnt.wait(timeout=120)
    finally:
        sampler.stopped.set()
        sampler.join()
        done.set()  # the waiter's and burner's wake-ups, after the last look: not counted
        burner.join()
        waiter.join()
    stacks = sampler.folded()
    burned = sum(ns for stack, ns in stacks.items() if any(frame.endswith("/test_bench_cpu_sampler.py:burn")
                                                           for frame in stack))
    assert burned > 0
    assert sampler.by_thread["burner"] == burned  # numbers stripped from the thread's name
    # The waiter's CPU by its thread, not by a frame named `wait`: threading's Event.wait and Condition.wait are
    # named so too, and the burner (in wait_for, above) and the main thread (in start) spend CPU under them; a
    # loop's last stretch the sampler did not see while it ran goes to the burner's stack at the next look.
    waited = sampler.by_thread["waiter"]
    assert waited < burned / 10  # the end of its start-up, after the first look (before it: in no stack)
    assert sampler.before_first_look["waiter"] > 0

    folded = tmp_path / "out.folded"
    folded.write_text("".join(f"{';'.join(stack)} {ns}\n" for stack, ns in stacks.items()))
    assert read_folded(folded) == stacks
    assert "test_bench_cpu_sampler.py:burn" in report(stacks)


def test_the_components_overlap_and_the_modules_add_up() -> None:
    stacks: Counter[Stack] = Counter({
        ("tfop/controller/reconciler.py:reconcile", "tfop/controller/plan/planner.py:plan",
         "tfop/controller/plan/observed/pod.py:of"): 3_000_000_000,
        ("tfop/kube/informer.py:_watch", "tfop/kube/streams.py:__iter__", "json/__init__.py:loads",
         "json/decoder.py:decode"): 1_000_000_000,
        ("tfop/kube/client.py:_send", "urllib3/connectionpool.py:urlopen", "http/client.py:begin",
         "email/parser.py:parsestr"): 500_000_000,
        ("tfop/kube/events.py:_emit", "structlog/_native.py:info", "logging/__init__.py:handle"): 250_000_000,
        ("tfop/kube/client.py:_observe", "prometheus_client/metrics.py:inc"): 250_000_000})
    text = report(stacks)
    assert "CPU sampled: 5.00 s" in text
    assert "    3.00 s  60.0%  reconcile (all of a pass)" in text
    assert "    3.00 s  60.0%      observed views" in text
    assert "    1.00 s  20.0%  json decode" in text
    assert "    0.75 s  15.0%  HTTP requests (client.py)" in text
    assert "    0.50 s  10.0%    urllib3" in text
    assert "    0.50 s  10.0%      http.client and its email header parser" in text
    assert "    0.25 s   5.0%  logging (structlog, logging)" in text
    assert "    0.25 s   5.0%  metrics (prometheus_client)" in text
    assert "    3.00 s  60.0%  tfop/controller/plan/observed/pod.py" in text


def test_a_thread_counts_from_the_first_look_at_it() -> None:
    # A thread the sampler finds for the first time had spent CPU since it was born (its start-up, the part of a
    # loop the sampler was late for) that the stack it is found in did not spend: that goes to no stack, only to
    # the thread's line of what was spent before a first look. Made-up readings, so the numbers are exact.
    done = threading.Event()
    late = threading.Thread(target=wait, args=(done,), name="late-1")
    late.start()
    try:
        assert late.native_id is not None
        readings = {late.native_id: 40_000_000}  # no other thread is read (None: as if it had ended)
        sampler = Sampler(1.0, readings.get)  # not started: the test makes its looks
        sampler.sample()
        readings[late.native_id] = 43_000_000
        sampler.sample()
    finally:
        done.set()
        late.join()
    assert sum(sampler.stacks.values()) == 3_000_000
    assert sampler.by_thread == Counter({"late": 3_000_000})
    assert sampler.before_first_look == Counter({"late": 40_000_000})
    text = report(sampler.folded(), sampler.by_thread, (), sampler.before_first_look)
    assert "CPU sampled: 0.00 s" in text
    assert "not in it: 0.04 s a thread spent before the sampler's first look at it" in text
    assert "\n      0.04 s  late\n" in text
