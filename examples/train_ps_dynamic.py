"""Asynchronous parameter-server training whose workers can join and leave while it runs: for a TFJob with
`enableDynamicWorker: true`, which tfop resizes in place (the chief and the PS run on untouched).

TensorFlow 2's ParameterServerStrategy cannot do this: its coordinator fixes the set of workers when it is built
and never uses one it did not know then. So here every worker is a client of its own: it connects to the
parameter servers (tf.config.experimental_connect_to_cluster), finds the model's variables there by name, and runs
training steps against them on its own, asynchronously (between-graph replication, the TensorFlow 1 way, in eager
TensorFlow 2). A worker needs to know only the PS and itself, which is the sparse TF_CONFIG tfop writes for a
dynamic job:

  worker i  {"cluster": {"ps": [every PS], "worker": {"i": self}}, "task": {"type": "worker", "index": i}}
  PS j      {"cluster": {"ps": {"j": self}}, ...}      the chief  {"cluster": {"ps": [every PS], "chief": [self], ...}}

Roles. The PS serve the variables until they are stopped. The chief initializes the variables (or restores them
from the last checkpoint in CHECKPOINT_DIR, if set, when the PS lost them), prints the global step and how many
steps each worker has applied as they change (read from the PS: `chief: global step 57 by worker {0: 20, 2: 9}`),
saves a checkpoint every SAVE_EVERY global steps, and exits 0 once the global step reaches STEPS. A worker waits
for the chief's initialization, then trains until the global step reaches STEPS (exit 0); each step prints
`worker 2 step 9 loss 0.1234 global step 57`: the global step read back after its own update landed on the PS. A
worker told to stop (SIGTERM: its pod deleted, as a scale-down does) finishes the step it is in and exits 0,
printing `worker 2 told to stop after 9 steps`. STEP_SECONDS (a pause per worker step) stretches the run.

Each update is applied on the PS once (assign-add, scatter-add), so a worker that leaves mid-step loses at most
that step and repeats nothing. The model fits y = 3x - 2 from synthetic data, different on each worker, so nothing
is downloaded.
"""
import os
import signal
import sys
import threading
from types import FrameType

import tensorflow as tf

STEPS = int(os.environ.get("STEPS", "100"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
CHECKPOINT_DIR = os.environ.get("CHECKPOINT_DIR", "")
SAVE_EVERY = int(os.environ.get("SAVE_EVERY", "20"))
# How often the chief reads the progress off the PS.
POLL_SECONDS = float(os.environ.get("POLL_SECONDS", "0.5"))
BATCH = 32
LEARNING_RATE = 0.05
# Slots of the per-worker step counter on the PS: worker indices at or beyond it are counted in the last slot.
MAX_WORKERS = 64

stopping = threading.Event()


def announce(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
    """One line that shows, from TensorFlow's own reading of TF_CONFIG, what this task knows of the cluster."""
    cluster = resolver.cluster_spec().as_dict()
    print(f"tfop-example: task={resolver.task_type}:{resolver.task_id} workers={len(cluster.get('worker', []))} "
          f"chief={len(cluster.get('chief', []))} ps={len(cluster.get('ps', []))}", flush=True)


class Shared:
    """A variable on a PS that every client reaches by its name. TensorFlow 2's own variables cannot be shared so
    (in eager each gets a name of its own, and a Session that tells the PS about its client, as a PS that knows
    only itself needs, gets state of its own on the PS), so the variable's handle is made by name, as TensorFlow 1
    made them: every client's handle to `weight` on ps:0 is the same variable in that server's resources."""

    def __init__(self, name: str, dtype: tf.DType, shape: list[int], device: str) -> None:
        self.device, self.dtype = device, dtype
        with tf.device(device):
            self.handle = tf.raw_ops.VarHandleOp(dtype=dtype, shape=shape, container="", shared_name=name)

    def initialized(self) -> bool:
        with tf.device(self.device):
            return bool(tf.raw_ops.VarIsInitializedOp(resource=self.handle))

    def read(self) -> tf.Tensor:
        with tf.device(self.device):
            return tf.raw_ops.ReadVariableOp(resource=self.handle, dtype=self.dtype)

    def assign(self, value: tf.Tensor) -> None:
        with tf.device(self.device):
            tf.raw_ops.AssignVariableOp(resource=self.handle, value=tf.cast(value, self.dtype))

    def add(self, delta: tf.Tensor) -> None:
        """Applied on the PS, so concurrent adds from different workers all count."""
        with tf.device(self.device):
            tf.raw_ops.AssignAddVariableOp(resource=self.handle, value=tf.cast(delta, self.dtype))


class Model:
    """The variables, spread round-robin over the PS the same way by every client."""

    def __init__(self, resolver: tf.distribute.cluster_resolver.ClusterResolver) -> None:
        ps = len(resolver.cluster_spec().as_dict().get("ps", []))

        def on(slot: int) -> str:
            return f"/job:ps/replica:0/task:{slot % ps}/device:CPU:0"
        self.weight = Shared("weight", tf.float32, [], on(0))
        self.bias = Shared("bias", tf.float32, [], on(1))
        self.by_worker = Shared("steps_by_worker", tf.int64, [MAX_WORKERS], on(2))
        # Made last by the chief: once it exists, every other variable does.
        self.global_step = Shared("global_step", tf.int64, [], on(3))
        self.trained = [self.weight, self.bias, self.by_worker, self.global_step]

    def progress(self) -> tuple[int, dict[int, int]]:
        counts = self.by_worker.read().numpy()
        return int(self.global_step.read()), {index: int(count) for index, count in enumerate(counts) if count}


def chief(model: Model) -> int:
    # A copy of the variables here, for the checkpoints (a tf.train.Checkpoint tracks variables of its own).
    copies = {name: tf.Variable(tf.zeros(shape, dtype)) for name, dtype, shape in (
        ("weight", tf.float32, []), ("bias", tf.float32, []), ("steps_by_worker", tf.int64, [MAX_WORKERS]),
        ("global_step", tf.int64, []))}
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(**copies), CHECKPOINT_DIR, max_to_keep=2) \
        if CHECKPOINT_DIR else None
    # Variables the PS already hold (a restarted chief, the PS alive) are kept; only missing ones are (re)made.
    if model.global_step.initialized():
        print("chief: the PS still hold the variables; kept them", flush=True)
    else:
        if manager and manager.latest_checkpoint:
            manager.checkpoint.restore(manager.latest_checkpoint).assert_consumed()
            print(f"chief: restored {manager.latest_checkpoint}", flush=True)
        for variable, copy in zip(model.trained, copies.values(), strict=True):
            variable.assign(copy)  # the global step last: workers start once it exists
        print("chief: initialized the variables on the PS", flush=True)
    seen: tuple[int, dict[int, int]] | None = None
    saved = 0
    while True:
        now = model.progress()
        if now != seen:
            print(f"chief: global step {now[0]} by worker {now[1]}", flush=True)
            seen = now
        if manager and now[0] > saved and (now[0] // SAVE_EVERY > saved // SAVE_EVERY or now[0] >= STEPS):
            for variable, copy in zip(model.trained, copies.values(), strict=True):
                copy.assign(variable.read())
            manager.save(checkpoint_number=now[0])
            saved = now[0]
        if now[0] >= STEPS:
            weight, bias = float(model.weight.read()), float(model.bias.read())
            print(f"done: global step {now[0]} by worker {now[1]}; y = {weight:.2f}x {bias:+.2f}", flush=True)
            return 0
        if stopping.wait(POLL_SECONDS):
            print(f"chief told to stop at global step {now[0]}", flush=True)
            return 0


def worker(model: Model, index: int) -> int:
    name = f"worker {index}"
    while not model.global_step.initialized():  # the chief has not made the variables yet
        if stopping.wait(POLL_SECONDS):
            print(f"{name} told to stop before training", flush=True)
            return 0
    print(f"{name} joined at global step {int(model.global_step.read())}", flush=True)
    done = 0
    slot = tf.one_hot(min(index, MAX_WORKERS - 1), MAX_WORKERS, dtype=tf.int64)
    while not stopping.is_set():
        if int(model.global_step.read()) >= STEPS:
            print(f"{name} done: global step {int(model.global_step.read())} after {done} steps of its own",
                  flush=True)
            return 0
        # This worker's own data (a seed of its own per step), and the gradient computed here, on the worker.
        x = tf.random.stateless_uniform([BATCH, 1], seed=[index, done], minval=-1.0, maxval=1.0)
        y = 3.0 * x - 2.0 + tf.random.stateless_normal([BATCH, 1], seed=[index + 1000, done], stddev=0.05)
        weight, bias = model.weight.read(), model.bias.read()
        with tf.GradientTape() as tape:
            tape.watch([weight, bias])
            loss = tf.reduce_mean(tf.square(x * weight + bias - y))
        gradient_w, gradient_b = tape.gradient(loss, [weight, bias])
        model.weight.add(-LEARNING_RATE * gradient_w)
        model.bias.add(-LEARNING_RATE * gradient_b)
        model.by_worker.add(slot)
        model.global_step.add(1)
        done += 1
        print(f"{name} step {done} loss {float(loss):.4f} global step {int(model.global_step.read())}", flush=True)
        stopping.wait(STEP_SECONDS)
    print(f"{name} told to stop after {done} steps", flush=True)
    return 0


def stop(signum: int, frame: FrameType | None) -> None:
    # A SIGTERM is a scale-down or the job's end: finish the step in flight, then leave cleanly.
    stopping.set()


def main() -> int:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    announce(resolver)
    protocol = resolver.rpc_layer or "grpc"
    if resolver.task_type == "ps":
        server = tf.distribute.Server(resolver.cluster_spec(), job_name="ps", task_index=resolver.task_id,
                                      protocol=protocol, start=True)
        print(f"serving ps:{resolver.task_id} at {server.target}", flush=True)
        server.join()
        return 0
    signal.signal(signal.SIGTERM, stop)
    # Starts this task's server and a context on every PS, to which it hands this cluster (the PS and itself):
    # so a PS that knows only itself can still answer this client. Any other task its TF_CONFIG names (the
    # chief's may name the workers it started with) is left out: it may be gone, and a client needs none.
    own = resolver.cluster_spec().task_address(resolver.task_type, resolver.task_id)
    cluster = tf.train.ClusterSpec({"ps": resolver.cluster_spec().as_dict()["ps"],
                                    resolver.task_type: {resolver.task_id: own}})
    tf.config.experimental_connect_to_cluster(cluster, job_name=resolver.task_type, task_index=resolver.task_id,
                                              protocol=protocol)
    print(f"connected {resolver.task_type}:{resolver.task_id} to the PS", flush=True)
    model = Model(resolver)
    if resolver.task_type == "chief":
        return chief(model)
    return worker(model, resolver.task_id)


if __name__ == "__main__":
    sys.exit(main())
