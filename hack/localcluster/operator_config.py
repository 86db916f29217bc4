"""The controller config file of an operator run on the host against the local cluster (`make run`, the e2e tests):
the settings whose real-cluster defaults do not work here.

tfImage, the default PS server's image, defaults to a registry's TensorFlow image; the real nodes pull nothing
(they hold only what `up` imported), so that PS would never start. Here it is the project's TensorFlow image,
which every real node holds. A job's TensorBoard runs on the real nodes too (their label selected, their taint
tolerated): by default it would go to a kwok node, which runs nothing. The defaults of tfop itself, for real
clusters, stay as they are.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .node_layout import NODE_LABEL

VERSIONS = Path(__file__).resolve().parents[1] / "versions.env"
FILE_NAME = "tfop-config.yaml"
TENSORBOARD_PLACEMENT = {"nodeSelector": {NODE_LABEL: "true"},
                         "tolerations": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]}


def tensorflow_image() -> str:
    """The project's TensorFlow image, as hack/versions.env pins it (`up` imports it into every real node)."""
    pinned = dict(line.split("=", 1) for line in VERSIONS.read_text().splitlines()
                  if "=" in line and not line.startswith("#"))
    return pinned["TENSORFLOW_IMAGE"]


def write(cluster_dir: Path) -> Path:
    """Writes the config into the cluster's directory (atomically: an operator may be starting beside)."""
    path = cluster_dir / FILE_NAME
    # A JSON string is a YAML string: no YAML library is needed before `make venv`.
    text = (f"# Written by hack/local_cluster.py operator-config for an operator run against this cluster.\n"
            f"tfImage: {json.dumps(tensorflow_image())}\n"
            f"tensorboard: {json.dumps(TENSORBOARD_PLACEMENT)}\n")
    cluster_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    partial.write_text(text)
    partial.replace(path)
    return path
