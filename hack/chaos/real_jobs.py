"""Real TensorFlow jobs for a run with real nodes: the examples users apply (examples/), as they are but for their
name, a restart scope and a backoffLimit no node fault can reach; the MultiWorkerMirroredStrategy one also saves
checkpoints in the directory every real node shares and has an Evaluator watching them. They train and end by
themselves: each must Succeed. Their restarts are not checked, since how many a lost node causes depends on when it
was lost."""

from __future__ import annotations

import copy
import random
from functools import cache
from pathlib import Path
from typing import Any

from chaos.workload import END_SUCCESS, RESTART_LIMIT, SUCCEEDED, JobPlan
from tfop import yamlio

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PS, MWMS = "ps-strategy.yaml", "mwms.yaml"
# ParameterServerStrategy (chief, PS, workers), a replica replaced alone; MultiWorkerMirroredStrategy (chief,
# workers), restarted together (restart scope Job) when one replica fails or loses its node, resuming from its
# checkpoint.
REAL_EXAMPLES = {PS: "Replica", MWMS: "Job"}
SHARED_MOUNT = "/shared"
# The MWMS job's training, long enough for a node fault to land mid-way: a step a second, a checkpoint every 5.
MWMS_ENV = {"STEPS": "30", "STEP_SECONDS": "1", "SAVE_EVERY": "5"}


@cache
def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yamlio.load((EXAMPLES / name).read_text())
    return loaded


def with_checkpoints_and_evaluator(manifest: dict[str, Any], shared_dir: Path, job_name: str) -> None:
    """Every replica mounts the shared directory and checkpoints in a directory of the job's own there; an
    Evaluator replica (the same script, as TensorFlow's side-car evaluator) evaluates each checkpoint."""
    (shared_dir / job_name).mkdir(parents=True, exist_ok=True)
    specs = manifest["spec"]["tfReplicaSpecs"]
    specs["Evaluator"] = copy.deepcopy(specs["Chief"])
    for spec in specs.values():
        pod = spec["template"]["spec"]
        pod["volumes"] = [{"name": "shared", "hostPath": {"path": str(shared_dir), "type": "Directory"}}]
        [container] = pod["containers"]
        container["volumeMounts"] = [{"name": "shared", "mountPath": SHARED_MOUNT}]
        env = {**MWMS_ENV, "CHECKPOINT_DIR": f"{SHARED_MOUNT}/{job_name}"}
        container["env"] = [{"name": key, "value": value} for key, value in env.items()]


def real_job(rng: random.Random, serial: int, shared_dir: Path) -> JobPlan:
    name = rng.choice(sorted(REAL_EXAMPLES))
    manifest = copy.deepcopy(example(name))
    job_name = f"chaos-tf-{serial:04d}"
    manifest["metadata"] = {"name": job_name,
                            "annotations": {"tfop.kubeflow.org/restart-scope": REAL_EXAMPLES[name]}}
    manifest["spec"].setdefault("runPolicy", {})["backoffLimit"] = RESTART_LIMIT
    if name == MWMS:
        with_checkpoints_and_evaluator(manifest, shared_dir, job_name)
    replicas = {kind: int(spec.get("replicas", 1)) for kind, spec in manifest["spec"]["tfReplicaSpecs"].items()}
    return JobPlan(job_name, replicas, "ExitCode", END_SUCCESS, SUCCEEDED, manifest=manifest)
