"""Training functions the tests hand to TrainingClient.create_job(train_func=...). The SDK ships a function's
source alone into the pod, so each imports what it uses inside its body."""


def report_tf_config(parameters: dict[str, str]) -> None:
    """Has TensorFlow read the TF_CONFIG tfop wrote, and prints what this replica is, after a prefix: the
    kubernetes client the SDK reads logs with parses a log that is one JSON document and returns its Python repr,
    so a bare JSON line came back with single quotes whenever TensorFlow logged nothing else."""
    import json

    import tensorflow as tf
    from tensorflow.python.distribute import multi_worker_util

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec()
    report = {"task": [resolver.task_type, resolver.task_id], "jobs": sorted(cluster.jobs),
              "chief": multi_worker_util.is_chief(cluster, resolver.task_type, resolver.task_id),
              "greeting": parameters["greeting"]}
    print("tf_config_report", json.dumps(report), flush=True)
