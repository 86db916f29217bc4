"""Run by the TensorFlow virtualenv's python as the chief of a cluster (TF_CONFIG) whose PS runs tfop's default
server: places a variable on /job:ps/task:0, changes it there and prints what it reads back, with its device."""

from __future__ import annotations

import json
import os

import tensorflow as tf


def main() -> None:
    config = json.loads(os.environ["TF_CONFIG"])
    cluster = tf.train.ClusterSpec(config["cluster"])
    tf.config.experimental_connect_to_cluster(cluster, job_name=config["task"]["type"],
                                              task_index=config["task"]["index"], protocol="grpc")
    with tf.device("/job:ps/task:0"):
        variable = tf.Variable(40.0)
    variable.assign_add(2.0)
    print(json.dumps({"value": float(variable.numpy()), "device": variable.device}), flush=True)


if __name__ == "__main__":
    main()
