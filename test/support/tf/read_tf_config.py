"""Run by the TensorFlow virtualenv's python: reads [{"pod": name, "tf_config": str | null}, ...] on stdin and
prints, for each pod, what TensorFlow makes of its TF_CONFIG: the cluster TFConfigClusterResolver sees, the task
type and index, whether multi_worker_util calls it the chief, and the number of workers (chief included) it
counts for the training cluster."""

from __future__ import annotations

import json
import os
import sys

import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util


def main() -> None:
    results = []
    for entry in json.load(sys.stdin):
        os.environ.pop("TF_CONFIG", None)
        if entry["tf_config"] is not None:
            os.environ["TF_CONFIG"] = entry["tf_config"]
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        cluster = resolver.cluster_spec().as_dict()
        result = {"pod": entry["pod"], "cluster": cluster, "task_type": resolver.task_type,
                  "task_id": resolver.task_id, "is_chief": None, "worker_count": None, "error": None}
        if cluster:
            try:
                result["is_chief"] = multi_worker_util.is_chief(resolver.cluster_spec(), resolver.task_type,
                                                                resolver.task_id)
                trainer = "worker" if "worker" in cluster else "chief"
                result["worker_count"] = multi_worker_util.worker_count(resolver.cluster_spec(), trainer)
            except ValueError as error:  # e.g. "Disallowed task type", for a cluster TF 2 refuses
                result["error"] = str(error)
        results.append(result)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
