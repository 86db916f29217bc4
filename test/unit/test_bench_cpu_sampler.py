"""bench.cpu_sampler: a thread's CPU goes to the stack it runs, and a thread that only waits gets none."""

from __future__ import annotations

import threading
from collections import Counter

from bench.cpu_sampler import Sampler, Stack, read_folded, report


def burn(sampler: Sampler) -> int:
    total = 0
    for number in range(3_000_000):  # a fixed amount of work, however long the machine takes for it
        total += number % 7
    # Alive (and idle) until the sampler has looked once more: on a loaded machine it may not have looked while
    # the loop ran, and a thread's CPU is read only while it lives.
    with sampler.looked:
        looked = sampler.looks
        sampler.looked.wait_for(lambda: sampler.looks > looked + 1)
    return total


def wait(done: threading.Event) -> None:
    done.wait()


def test_cpu_goes_to_the_thread_that_spends_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sampler = Sampler(0.002)
    done = threading.Event()
    waiter = threading.Thread(target=wait, args=(done,), name="waiter-1")
    burner = threading.Thread(target=burn, args=(sampler,), name="burner-1")
    sampler.start()
    waiter.start()
    burner.start()
    burner.join()
    done.set()
    waiter.join()
    sampler.stopped.set()
    sampler.join()
    stacks = sampler.folded()
    burned = sum(ns for stack, ns in stacks.items() if any(frame.endswith("/test_bench_cpu_sampler.py:burn")
                                                           for frame in stack))
    assert burned > 0
    assert sampler.by_thread["burner"] == burned  # numbers stripped from the thread's name
    # The waiter's CPU by its thread, not by a frame named `wait`: threading's Event.wait and Condition.wait are
    # named so too, and the burner (in wait_for, above) and the main thread (in start) spend CPU under them; a
    # loop's last stretch the sampler did not see while it ran goes to the burner's stack at the next look.
    waited = sampler.by_thread["waiter"]
    assert waited < burned / 10  # its start-up and few wake-ups, if any

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
