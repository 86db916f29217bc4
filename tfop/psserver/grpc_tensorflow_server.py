"""A standard TensorFlow gRPC server for the task TF_CONFIG names: tfop's default parameter server.

tfop mounts this file into a PS replica that has no `tensorflow` container (see
tfop/controller/plan/job/default_ps_server.py) and runs it with the image's `python`. It serves until the pod is
deleted; the chief or the workers place variables on it (`/job:ps/task:N`). Only TensorFlow and the standard
library are used, so any TensorFlow image runs it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def server_definition(tf_config: str) -> tuple[dict[str, list[str]], str, int]:
    """(cluster, job name, task index) from TF_CONFIG. An evaluator takes no part in training, so it is left out
    of the cluster the server joins."""
    config = json.loads(tf_config)
    cluster = {job: list(addresses) for job, addresses in config["cluster"].items() if job != "evaluator"}
    task = config["task"]
    return cluster, str(task["type"]), int(task.get("index", 0))


def main() -> int:
    tf_config = os.environ.get("TF_CONFIG")
    if not tf_config:
        print("TF_CONFIG is not set: this script runs as a PS replica of a TFJob", file=sys.stderr)
        return 2
    cluster, job_name, task_index = server_definition(tf_config)
    import tensorflow as tf  # imported late: the operator's tests read this module without TensorFlow

    server_type: Any = getattr(getattr(tf, "distribute", None), "Server", None) or tf.train.Server
    server = server_type(tf.train.ClusterSpec(cluster), job_name=job_name, task_index=task_index, protocol="grpc",
                         start=True)
    print(f"serving /job:{job_name}/task:{task_index} at {server.target}", flush=True)
    server.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
