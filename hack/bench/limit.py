"""The limit: a plain client that creates exactly the Pods and Services tfop would create for each job, as fast
as the apiserver takes them, with tfop's client concurrency and no client-side QPS limit. No operator can do the
job faster: it skips the watch, the queue and the planning, and learns of each job from its create response.

Its own process (so it has its own interpreter lock, as an operator does): it says "ready" once imported, is fed
one created TFJob per line on stdin, and at EOF waits for its creates and prints a JSON summary.

    python -m bench.limit KUBECONFIG NAMESPACE CONCURRENCY < jobs.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tfop.api.constants import REPLICA_TYPES
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
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


def main(argv: list[str]) -> int:
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
