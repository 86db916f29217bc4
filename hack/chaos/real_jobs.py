"""Real TensorFlow jobs for a run with real nodes: the examples users apply (examples/), as they are but for their
name, a restart scope and a backoffLimit no node fault can reach. They train and end by themselves: each must
Succeed. Their restarts are not checked, since how many a lost node causes depends on when it was lost."""

from __future__ import annotations

import copy
import random
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from chaos.workload import END_SUCCESS, RESTART_LIMIT, SUCCEEDED, JobPlan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# ParameterServerStrategy (chief, PS, workers), and Keras MultiWorkerMirroredStrategy backing its state up each
# epoch, restarted together (restart scope Job) when one replica fails or loses its node.
REAL_EXAMPLES = {"ps-strategy.yaml": "Replica", "keras_mwms.yaml": "Job"}


@cache
def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


def real_job(rng: random.Random, serial: int) -> JobPlan:
    name = rng.choice(sorted(REAL_EXAMPLES))
    manifest = copy.deepcopy(example(name))
    job_name = f"chaos-tf-{serial:04d}"
    manifest["metadata"] = {"name": job_name,
                            "annotations": {"tfop.kubeflow.org/restart-scope": REAL_EXAMPLES[name]}}
    manifest["spec"].setdefault("runPolicy", {})["backoffLimit"] = RESTART_LIMIT
    replicas = {kind: int(spec.get("replicas", 1)) for kind, spec in manifest["spec"]["tfReplicaSpecs"].items()}
    return JobPlan(job_name, replicas, "ExitCode", END_SUCCESS, SUCCEEDED, manifest=manifest)
