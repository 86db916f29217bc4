"""How the runtime queues a key for a watched object's change: at once, or batched as the watch declares."""

from __future__ import annotations

from typing import cast

from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS, Resource
from tfop.kube.runtime import ControllerRuntime, Watch
from tfop.objects import Object

JOBS = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")


def no_key(obj: Object) -> str | None:
    return None


def test_a_batched_watch_holds_a_key_that_just_ran_and_a_plain_one_does_not() -> None:
    passes: list[str] = []
    # An hour: within this test, a key held by the batch is certainly never let go by it.
    children = Watch(PODS, no_key, batch=3600.0)
    jobs = Watch(JOBS, no_key)
    runtime = ControllerRuntime(cast(KubeClient, None), "enqueue-test", passes.append, [children, jobs],
                                threads=1)
    runtime.start_workers()
    runtime.enqueue(children, "ns/a")  # idle: passed on at once
    wait_for(lambda: passes == ["ns/a"], 60, "a's first pass")
    for _ in range(5):  # a burst of its children's changes right after its pass: held
        runtime.enqueue(children, "ns/a")
    runtime.enqueue(jobs, "ns/b")
    wait_for(lambda: "ns/b" in passes, 60, "b's pass")
    assert passes == ["ns/a", "ns/b"]
    assert len(runtime.queue) == 0
    runtime.enqueue(jobs, "ns/a")  # the job itself changed: not held by its children's batch
    wait_for(lambda: len(passes) == 3, 60, "a's pass for its own change")
    assert passes == ["ns/a", "ns/b", "ns/a"]
    runtime.stop_workers(1.0)
