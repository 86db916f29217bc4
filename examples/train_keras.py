"""Multi-worker training the Keras way: a compiled tf.keras model and `model.fit` under MultiWorkerMirroredStrategy,
the shape of TensorFlow's multi-worker Keras tutorial. Every process (the chief and each worker) builds the same
model in the strategy's scope; `fit` shards the dataset between them and all-reduces the gradients every step.
TF_CONFIG, written by tfop into every pod, tells each process who its peers are.

It needs the legacy Keras 2 (the tf-keras package, in the TensorFlow image) with TF_USE_LEGACY_KERAS=1 in the
environment, as examples/keras_mwms.yaml sets it: TensorFlow 2.21's default Keras 3 cannot run `fit` under this
strategy. The data are synthetic points in 8 dimensions labelled by which of 3 fixed directions they lean to most,
so nothing is downloaded. Prints one `tfop-example:` line saying which task it is, then one line per epoch.

tf.keras.callbacks.BackupAndRestore saves the training state into BACKUP_DIR at the end of every epoch, and a
restarted run resumes from the last epoch saved there, skipping the epochs done; `fit` deletes the backup when it
completes. On a directory every replica mounts, a job restarted together resumes as one, with the same or another
number of workers (a resize by restart): the backup holds the model, not the cluster, and each worker's batch stays
BATCH_PER_WORKER while the global batch follows the new count. A SIGTERM (a pod deleted: a resize, an eviction)
ends the process at once with the retryable code, so the epoch in flight is lost and done again: the backup is per
epoch, and keeping epochs short bounds what a restart costs. (Left to TensorFlow, a SIGTERM does nothing here: the
strategy's coordination service takes the signal over as a preemption notice and training runs on until the grace
period's SIGKILL, and may even finish and delete the backup meanwhile.)
EPOCHS, STEPS_PER_EPOCH and EPOCH_SECONDS (a pause after each epoch's backup) stretch the run. When a peer is lost
the collective breaks; the process then exits with a retryable code, so the operator restarts the job rather than
failing it.
"""
import os
import signal
import sys
import time
from types import FrameType

import tensorflow as tf

EPOCHS = int(os.environ.get("EPOCHS", "3"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "20"))
EPOCH_SECONDS = float(os.environ.get("EPOCH_SECONDS", "0"))
BACKUP_DIR = os.environ.get("BACKUP_DIR", "/tmp/keras-backup")
BATCH_PER_WORKER = 32
FEATURES, CLASSES = 8, 3
# tfop and the Kubeflow operator restart a replica whose exit code is 128-255 and fail the job on 1-127.
RETRYABLE_EXIT = 138
PEER_LOST = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
             tf.errors.AbortedError)


def announce(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """One line that shows, from TensorFlow's own reading of TF_CONFIG, that every replica joined one cluster."""
    cluster = resolver.cluster_spec().as_dict()
    print(f"tfop-example: task={resolver.task_type}:{resolver.task_id} workers={len(cluster.get('worker', []))} "
          f"chief={len(cluster.get('chief', []))} ps={len(cluster.get('ps', []))}", flush=True)


def make_dataset(global_batch: int) -> tf.data.Dataset:
    # The same points in every process (fixed seeds): `fit` gives each process every n-th batch of them.
    count = global_batch * STEPS_PER_EPOCH
    x = tf.random.stateless_normal([count, FEATURES], seed=[3, 1])
    directions = tf.random.stateless_normal([FEATURES, CLASSES], seed=[3, 2])
    y = tf.argmax(tf.matmul(x, directions), axis=1)
    options = tf.data.Options()
    # In-memory data has no files to split between workers: shard by batch (the default would try files first).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(count, seed=4).batch(global_batch).repeat() \
        .with_options(options)


def build_model() -> tf.keras.Model:
    model = tf.keras.Sequential([
        tf.keras.layers.Input(shape=(FEATURES,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(CLASSES),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def told_to_stop(signum: int, frame: FrameType | None) -> None:
    print(f"told to stop: the last epoch's backup stands; exiting {RETRYABLE_EXIT} to be restarted", flush=True)
    # At once and without unwinding: `fit` ending any other way deletes the backup the restart resumes from.
    os._exit(RETRYABLE_EXIT)


class PrintEpochs(tf.keras.callbacks.Callback):
    """One plain line per epoch (Keras' progress bar is noise in a pod's log). Epochs count from 1, as Keras
    prints them; after a restore the first one printed is the one after the backup's. Before the first, where
    `fit` starts: `resumed from the backup at epoch 2` (two epochs were done, the next printed is epoch 3), or
    `no backup: starting at epoch 0`."""

    def __init__(self) -> None:
        super().__init__()
        self.started = False

    def on_epoch_begin(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        # BackupAndRestore, listed first, has restored the state and `fit` skipped the epochs it held.
        if not self.started:
            self.started = True
            print(f"resumed from the backup at epoch {epoch}" if epoch else "no backup: starting at epoch 0",
                  flush=True)

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        logs = logs or {}
        print(f"epoch {epoch + 1} loss {logs.get('loss', float('nan')):.4f} "
              f"accuracy {logs.get('accuracy', float('nan')):.4f}", flush=True)
        time.sleep(EPOCH_SECONDS)


def main() -> int:
    if not tf.keras.__name__.startswith("tf_keras"):
        # Keras 3's fit fails under this strategy much later, with an error that does not say why.
        print(f"tf.keras is {tf.keras.__name__} (Keras 3): set TF_USE_LEGACY_KERAS=1 to use tf-keras", flush=True)
        return 1
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    announce(resolver)
    # Blocks until every process of the cluster is up: the collective all-reduce needs all of them.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    # Known only now, and different after a resize: the global batch grows with it, each worker's stays the same.
    print(f"num_replicas_in_sync={strategy.num_replicas_in_sync}", flush=True)
    global_batch = BATCH_PER_WORKER * strategy.num_replicas_in_sync
    # Installed after the strategy, whose coordination service took SIGTERM over (to notice preemptions): ours
    # replaces it, so a stopped replica really stops, leaving the last epoch's backup as it is.
    signal.signal(signal.SIGTERM, told_to_stop)
    with strategy.scope():
        model = build_model()
    callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=BACKUP_DIR), PrintEpochs()]
    try:
        history = model.fit(make_dataset(global_batch), epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH,
                            callbacks=callbacks, verbose=0)
    except PEER_LOST as error:
        print(f"a peer is gone ({type(error).__name__}); exiting {RETRYABLE_EXIT} to be restarted", flush=True)
        return RETRYABLE_EXIT
    accuracy = history.history.get("accuracy") or [float("nan")]  # empty when the backup had every epoch
    print(f"done: accuracy {accuracy[-1]:.4f} after {EPOCHS} epochs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
