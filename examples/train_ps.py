"""Asynchronous training with ParameterServerStrategy: the variables live on the parameter servers (PS), the
chief is the coordinator that sends training steps to the workers, and each worker runs the steps it is sent,
reading and updating the variables on the PS. TF_CONFIG, written by tfop into every pod, names every task.

Workers and parameter servers only serve (tf.distribute.Server) until they are stopped: the job is done when the
chief is, and tfop's cleanPodPolicy then deletes them. The model fits y = 3x - 2 from synthetic data.
Run by examples/ps-strategy.yaml; prints one `tfop-example:` line saying which task it is, then the coordinator
prints the loss of every step. STEPS and STEP_SECONDS (a pause per step) stretch the run; a worker lost meanwhile
is tolerated: the coordinator sends its steps to the others and takes it back when it returns. A parameter server
out of reach ends the coordinator with a retryable exit code, so the job restarts it instead of failing.
"""
import os
import sys
import time

import tensorflow as tf

STEPS = int(os.environ.get("STEPS", "20"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
BATCH = 32
# tfop and the Kubeflow operator restart a replica whose exit code is 128-255 and fail the job on 1-127.
RETRYABLE_EXIT = 138
LEARNING_RATE = 0.1


def announce(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """One line that shows, from TensorFlow's own reading of TF_CONFIG, that every replica joined one cluster."""
    cluster = resolver.cluster_spec().as_dict()
    print(f"tfop-example: task={resolver.task_type}:{resolver.task_id} workers={len(cluster.get('worker', []))} "
          f"chief={len(cluster.get('chief', []))} ps={len(cluster.get('ps', []))}", flush=True)


def serve(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """A worker or PS: a TensorFlow server for its task, which the coordinator drives over gRPC."""
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id, protocol=resolver.rpc_layer or "grpc", start=True)
    print(f"serving {resolver.task_type}:{resolver.task_id} at {server.target}", flush=True)
    server.join()


def make_dataset() -> tf.data.Dataset:
    # Runs on each worker; the data are made there, so nothing is shipped from the coordinator.
    x = tf.random.stateless_uniform([BATCH * STEPS, 1], seed=[1, 7], minval=-1, maxval=1)
    noise = tf.random.stateless_normal([BATCH * STEPS, 1], seed=[1, 8], stddev=0.05)
    return tf.data.Dataset.from_tensor_slices((x, 3.0 * x - 2.0 + noise)).shuffle(BATCH * STEPS).batch(BATCH).repeat()


def coordinate(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        weight = tf.Variable(0.0)
        bias = tf.Variable(0.0)
    print(f"variables on {weight.device} and {bias.device}", flush=True)
    batches = iter(coordinator.create_per_worker_dataset(make_dataset))

    @tf.function
    def train_step(iterator: tf.data.Iterator) -> tf.Tensor:
        x, y = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x * weight + bias - y))
        for variable, gradient in zip([weight, bias], tape.gradient(loss, [weight, bias]), strict=True):
            variable.assign_sub(LEARNING_RATE * gradient)
        return loss

    # Each step goes to whichever worker is free; fetching its result waits for that step only.
    for step in range(1, STEPS + 1):
        loss = coordinator.schedule(train_step, args=(batches,)).fetch()
        print(f"step {step} loss {float(loss):.4f}", flush=True)
        time.sleep(STEP_SECONDS)
    coordinator.join()
    print(f"done: y = {float(weight.numpy()):.2f}x {float(bias.numpy()):+.2f}", flush=True)


def main() -> int:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    announce(resolver)
    if resolver.task_type in ("worker", "ps"):
        serve(resolver)
        return 0
    try:
        coordinate(resolver)
    except tf.errors.UnavailableError as error:
        # The coordinator is the one task the others cannot cover for: a PS it cannot reach (even for a moment, a
        # name it cannot resolve) ends it. Exiting retryably has the operator start it again, not fail the job.
        print(f"a parameter server is out of reach ({error.message[:200]}); exiting {RETRYABLE_EXIT} to be "
              "restarted", flush=True)
        return RETRYABLE_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
