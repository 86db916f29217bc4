"""Synchronous data-parallel training with MultiWorkerMirroredStrategy: every process (the chief and each worker)
holds a copy of the model, trains on its own shard of the data, and all of them add up their gradients before
each update. TF_CONFIG, written by tfop into every pod, tells each process who its peers are.

The model fits y = 3x - 2 from synthetic data, so the example needs no download and runs in seconds on a CPU.
Run by examples/mwms.yaml; prints one `tfop-example:` line saying which task it is, then the loss of every step.

For long training that must survive a lost node, set CHECKPOINT_DIR to a directory every replica mounts (a
network file system): the training state is saved there every SAVE_EVERY steps and restored at start, so a job
restarted together (tfop's restart scope Job) resumes where it was. A replica told to stop (SIGTERM: its pod
deleted, evicted or preempted) makes every replica save at the same step first (TensorFlow's
PreemptionCheckpointHandler), so nothing is lost but the pod's grace period. STEPS and STEP_SECONDS (a pause per step)
stretch the run. When a peer is lost the collective breaks; the process then exits with a retryable code, so the
operator restarts the job rather than failing it.

An Evaluator replica runs the same script as TensorFlow's side-car evaluator: it trains nothing and joins no
collective, but watches CHECKPOINT_DIR, evaluates each new checkpoint on held-out data as it appears, and after the
chief's final one (the checkpoint of step STEPS, which the chief always saves) spends FINAL_EVAL_SECONDS on a
final evaluation over more data, prints `final evaluation at step N: loss ...` and exits 0.
"""
import os
import sys
import time

import tensorflow as tf

STEPS = int(os.environ.get("STEPS", "20"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
CHECKPOINT_DIR = os.environ.get("CHECKPOINT_DIR", "")
SAVE_EVERY = int(os.environ.get("SAVE_EVERY", "5"))
FINAL_EVAL_SECONDS = float(os.environ.get("FINAL_EVAL_SECONDS", "10"))
BATCH_PER_REPLICA = 16
LEARNING_RATE = 0.1
# tfop and the Kubeflow operator restart a replica whose exit code is 128-255 and fail the job on 1-127.
RETRYABLE_EXIT = 138
PEER_LOST = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
             tf.errors.AbortedError)


def announce(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """One line that shows, from TensorFlow's own reading of TF_CONFIG, that every replica joined one cluster."""
    cluster = resolver.cluster_spec().as_dict()
    print(f"tfop-example: task={resolver.task_type}:{resolver.task_id} workers={len(cluster.get('worker', []))} "
          f"chief={len(cluster.get('chief', []))} ps={len(cluster.get('ps', []))}", flush=True)


def make_dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
    # A different seed per process: each one trains on its own shard, as with real data split across workers.
    batch = BATCH_PER_REPLICA
    x = tf.random.stateless_uniform([batch * STEPS, 1], seed=[context.input_pipeline_id, 7], minval=-1, maxval=1)
    noise = tf.random.stateless_normal([batch * STEPS, 1], seed=[context.input_pipeline_id, 8], stddev=0.05)
    return tf.data.Dataset.from_tensor_slices((x, 3.0 * x - 2.0 + noise)).batch(batch).repeat()


def preempted() -> None:
    """After the checkpoint a preemption made: exit so as to be restarted, not failed."""
    print(f"told to stop: saved the checkpoint; exiting {RETRYABLE_EXIT} to be restarted", flush=True)
    sys.exit(RETRYABLE_EXIT)


def is_chief(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> bool:
    """The task that writes the real checkpoint: the chief, or worker 0 when the job has no chief."""
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0 and "chief" not in resolver.cluster_spec().jobs)


def held_out(batches: int, seed: int) -> tf.data.Dataset:
    """Data no replica trains on (its own seed), for the evaluator."""
    x = tf.random.stateless_uniform([BATCH_PER_REPLICA * batches, 1], seed=[seed, 9], minval=-1, maxval=1)
    noise = tf.random.stateless_normal([BATCH_PER_REPLICA * batches, 1], seed=[seed, 10], stddev=0.05)
    return tf.data.Dataset.from_tensor_slices((x, 3.0 * x - 2.0 + noise)).batch(BATCH_PER_REPLICA)


def evaluate() -> int:
    """The side-car evaluator: each new checkpoint in CHECKPOINT_DIR evaluated as the training writes it, until
    the final one (step STEPS) has had its longer, final evaluation."""
    if not CHECKPOINT_DIR:
        print("the evaluator needs CHECKPOINT_DIR, where the chief saves its checkpoints", flush=True)
        return 1
    weight, bias, step = tf.Variable(0.0), tf.Variable(0.0), tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(weight=weight, bias=bias, step=step)

    def loss_on(data: tf.data.Dataset) -> float:
        losses = [float(tf.reduce_mean(tf.square(x * weight + bias - y))) for x, y in data]
        return sum(losses) / len(losses)

    seen = None
    while True:
        latest = tf.train.latest_checkpoint(CHECKPOINT_DIR)
        if latest is None or latest == seen:
            time.sleep(0.5)
            continue
        try:
            checkpoint.restore(latest).expect_partial()
        except (tf.errors.NotFoundError, tf.errors.DataLossError):  # removed (max_to_keep) as it was read
            continue
        seen, at = latest, int(step.numpy())
        print(f"evaluated checkpoint at step {at}: loss {loss_on(held_out(8, 0)):.4f}", flush=True)
        if at >= STEPS:
            break
    # The final evaluation: a larger held-out set, paced to take FINAL_EVAL_SECONDS as a real one takes a while.
    print(f"final evaluation of step {at} started", flush=True)
    rounds = max(1, int(FINAL_EVAL_SECONDS))
    losses = []
    for seed in range(1, rounds + 1):
        losses.append(loss_on(held_out(64, seed)))
        time.sleep(FINAL_EVAL_SECONDS / rounds)
    print(f"final evaluation at step {at}: loss {sum(losses) / len(losses):.4f} on "
          f"{rounds * 64 * BATCH_PER_REPLICA} held-out examples", flush=True)
    return 0


def main() -> int:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    announce(resolver)
    if resolver.task_type == "evaluator":
        return evaluate()
    # Blocks until every process of the cluster is up: the collective all-reduce needs all of them.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    global_batch = BATCH_PER_REPLICA * strategy.num_replicas_in_sync

    with strategy.scope():
        # Every replica applies the same all-reduced gradient, so the first replica's update stands for all.
        weight = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        bias = tf.Variable(0.0, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        done = tf.Variable(0, dtype=tf.int64, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    batches = iter(strategy.distribute_datasets_from_function(make_dataset))
    manager = handler = None
    if CHECKPOINT_DIR:
        checkpoint = tf.train.Checkpoint(weight=weight, bias=bias, step=done)
        # Every task takes part in a save; only the chief's lands where the next attempt restores from.
        directory = CHECKPOINT_DIR if is_chief(resolver) else os.path.join(
            CHECKPOINT_DIR, f"scratch-{resolver.task_type}-{resolver.task_id}")
        manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
        # Restores what it saved at a preemption, if anything; a later periodic save wins below.
        handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            resolver, checkpoint, os.path.join(CHECKPOINT_DIR, "preempted"),
            termination_config=tf.distribute.experimental.TerminationConfig(exit_fn=preempted))
        latest = tf.train.latest_checkpoint(CHECKPOINT_DIR)
        if latest and int(tf.train.load_variable(latest, "step/.ATTRIBUTES/VARIABLE_VALUE")) > int(done.numpy()):
            checkpoint.restore(latest)
        if int(done.numpy()):
            print(f"resumed from checkpoint at step {int(done.numpy())}", flush=True)
        else:
            print("no checkpoint yet: starting at step 0", flush=True)

    @tf.function
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            # Scaled by the global batch, so the sum over replicas below is the mean over all examples.
            loss = tf.nn.compute_average_loss(tf.square(x * weight + bias - y), global_batch_size=global_batch)
        gradients = tape.gradient(loss, [weight, bias])
        gradients = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        for variable, gradient in zip([weight, bias], gradients, strict=True):
            variable.assign_sub(LEARNING_RATE * gradient)
        return loss

    try:
        for step in range(int(done.numpy()) + 1, STEPS + 1):
            per_replica_loss = strategy.run(train_step, args=next(batches))
            loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
            done.assign(step)
            print(f"step {step} loss {float(loss):.4f}", flush=True)
            if manager and (step % SAVE_EVERY == 0 or step == STEPS):  # the last for an evaluator
                manager.save(checkpoint_number=step)
            if handler:  # at a step boundary, all together: saves and exits if any replica was told to stop
                handler.save_checkpoint_if_preempted()
            time.sleep(STEP_SECONDS)
    except PEER_LOST as error:
        print(f"a peer is gone ({type(error).__name__}); exiting {RETRYABLE_EXIT} to be restarted", flush=True)
        return RETRYABLE_EXIT
    print(f"done: y = {float(weight.numpy()):.2f}x {float(bias.numpy()):+.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
