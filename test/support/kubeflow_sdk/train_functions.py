"""Training functions the tests hand to TrainingClient.create_job(train_func=...). The SDK ships a function's
source alone into the pod, so each imports what it uses inside its body."""


def report_tf_config(parameters: dict[str, str]) -> None:
    """Has TensorFlow read the TF_CONFIG tfop wrote, and prints what this replica is."""
    import json

    import tensorflow as tf
    from tensorflow.python.distribute import multi_worker_util

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec()
    print(json.dumps({"task": [resolver.task_type, resolver.task_id], "jobs": sorted(cluster.jobs),
                      "chief": multi_worker_util.is_chief(cluster, resolver.task_type, resolver.task_id),
                      "greeting": parameters["greeting"]}), flush=True)
