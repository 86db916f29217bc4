"""The limit: a plain client that creates exactly the Pods and Services tfop would create for each job, as fast
as the apiserver takes them, with tfop's client concurrency and no client-side QPS limit. No operator can do the
job faster: it skips the watch, the queue and the planning, and learns of each job from its create response.

Its own process (so it has its own interpreter lock, as an operator does): it says "ready" once imported, is fed
one created TFJob per line on stdin, and at EOF waits for its creates and prints a JSON summary.

    python -m bench.limit KUBECONFIG NAMESPACE CONCURRENCY < jobs.jsonl

With `--restart` first it restarts one running job together instead, as tfop's restart scope Job does with the
fewest requests: it caches the job's pods (list and watch, before it says "ready"), and once fed the job deletes
every one of them (and takes tfop's replica-tracking finalizer off those that hold it, as tfop does), waits until
all are gone, then creates them again (the Pods tfop would create for the job; its Services stay).

    python -m bench.limit --restart KUBECONFIG NAMESPACE CONCURRENCY < job.json
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tfop import logs
from tfop.api.constants import FINALIZER_REPLICA_TRACKING, LABEL_JOB_NAME, REPLICA_TYPES
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS, SERVICES, Resource


def children(job: dict[str, Any]) -> list[tuple[Resource, dict[str, Any]]]:
    """What tfop creates for the job: one Pod and one Service per replica, pods first."""
    model = parse_job(job, ControllerConfig())
    if not isinstance(model, TFJobModel):
        raise ValueError(f"the benchmark's job is invalid: {'; '.join(map(str, model.errors))}")
    desired = DesiredChildren(model)
    slots = [(replica_type, index) for replica_type in REPLICA_TYPES
             for index in range(model.spec.replicas(replica_type))]
    return ([(PODS, desired.pod(*slot)) for slot in slots]
            + [(SERVICES, desired.service(*slot)) for slot in slots])


def restart(argv: list[str]) -> int:
    kubeconfig, namespace, concurrency = argv[0], argv[1], int(argv[2])
    logs.configure("console", "warning")  # the informer logs with structlog, whose default is stdout: ours
    client = KubeClient.from_kubeconfig(kubeconfig, qps=0, user_agent="tfop-bench-limit")
    pods = Informer(client, PODS, namespace=namespace)
    pods.start()
    if not pods.wait_for_sync(300):
        raise RuntimeError(f"the pods of {namespace} were not listed")
    print("ready", flush=True)
    job = json.loads(sys.stdin.readline())
    name = job["metadata"]["name"]
    cpu_before, began = time.process_time(), time.monotonic()
    mine = [pod for pod in pods.store.list() if (pod["metadata"].get("labels") or {}).get(LABEL_JOB_NAME) == name]

    def delete(pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        try:
            client.delete(PODS, metadata["name"], namespace, uid=metadata["uid"])
            if FINALIZER_REPLICA_TRACKING in (metadata.get("finalizers") or ()):
                client.patch(PODS, metadata["name"], {"metadata": {
                    "uid": metadata["uid"], "$deleteFromPrimitiveList/finalizers": [FINALIZER_REPLICA_TRACKING]}},
                    namespace, patch_type="strategic")
        except NotFound:
            pass

    errors: list[str] = []
    with ThreadPoolExecutor(concurrency, thread_name_prefix="limit") as pool:
        list(pool.map(delete, mine))
        old = {pod["metadata"]["uid"] for pod in mine}
        while any(pod["metadata"]["uid"] in old for pod in pods.store.list()):
            time.sleep(0.02)
        gone = time.monotonic()
        bodies = [body for resource, body in children(job) if resource is PODS]
        for future in [pool.submit(client.create, PODS, body, namespace) for body in bodies]:
            try:
                future.result()
            except ApiError as error:
                errors.append(error.message)
    pods.stop()
    print(json.dumps({"deleted": len(mine), "created": len(bodies) - len(errors), "errors": errors[:5],
                      "all_gone_s": gone - began, "created_s": time.monotonic() - began,
                      "cpu_s": time.process_time() - cpu_before}), flush=True)
    return 0 if not errors else 1


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--restart":
        return restart(argv[1:])
    kubeconfig, namespace, concurrency = argv[0], argv[1], int(argv[2])
    client = KubeClient.from_kubeconfig(kubeconfig, qps=0, user_agent="tfop-bench-limit")
    print("ready", flush=True)  # imports done: the clock may start
    cpu_before = time.process_time()
    created, errors = 0, []
    with ThreadPoolExecutor(concurrency, thread_name_prefix="limit") as pool:
        futures: list[Future[dict[str, Any]]] = []
        for line in sys.stdin:
            if line.strip():
                futures += [pool.submit(client.create, resource, body, namespace)
                            for resource, body in children(json.loads(line))]
        for future in futures:
            try:
                future.result()
                created += 1
            except ApiError as error:
                errors.append(error.message)
    print(json.dumps({"created": created, "errors": errors[:5], "error_count": len(errors),
                      "cpu_s": time.process_time() - cpu_before}), flush=True)
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
