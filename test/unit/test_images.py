"""The image refs pinned in hack/versions.env match the images' inputs, and the examples that run on the real node
name them. hack/build-images.sh refuses a stale ref too, but only when someone builds; this fails at once, in the
change that made the ref stale, with the command that fixes it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tfop import yamlio

REPO = Path(__file__).resolve().parents[2]
REAL_NODE_LABEL = "tfop.local/real-node"


def versions() -> dict[str, str]:
    lines = (REPO / "hack" / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def computed_refs() -> list[str]:
    result = subprocess.run(["bash", str(REPO / "hack" / "build-images.sh"), "--refs"], capture_output=True,
                            text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def real_node_examples() -> list[Path]:
    return [path for path in sorted((REPO / "examples").glob("*.yaml")) if "localhost/tfop/" in path.read_text()]


def pod_specs(manifest: Path) -> list[dict[str, Any]]:
    job = yamlio.load(manifest.read_text())
    return [replica["template"]["spec"] for replica in job["spec"]["tfReplicaSpecs"].values()]


@pytest.mark.parametrize("variable", ["TENSORFLOW_IMAGE", "PAUSE_IMAGE"])
def test_pinned_ref_matches_the_image_inputs(variable: str) -> None:
    pinned = versions()[variable]
    assert pinned in computed_refs(), f"{variable}={pinned} is stale: run `make image-refs` and commit"


def test_tensorflow_ref_and_lock_carry_the_pinned_version() -> None:
    pinned = versions()
    assert pinned["TENSORFLOW_IMAGE"].split(":")[1].startswith(pinned["TENSORFLOW_VERSION"] + "-")
    lock = (REPO / "hack" / "images" / "tensorflow" / "requirements.txt").read_text()
    assert f"tensorflow-cpu=={pinned['TENSORFLOW_VERSION']} " in lock, "run `make image-locks`"
    # tf-keras follows TensorFlow's minor version; its own requirement (on `tensorflow`) is checked when locking.
    minor = ".".join(pinned["TENSORFLOW_VERSION"].split(".")[:2])
    assert f"\ntf-keras=={minor}." in lock, "hack/images/tensorflow/requirements-no-deps.in pins another tf-keras"


def test_the_training_examples_are_there() -> None:
    assert [path.name for path in real_node_examples()] == ["keras_mwms.yaml", "mwms.yaml", "ps-dynamic.yaml",
                                                         "ps-strategy.yaml"]


@pytest.mark.parametrize("manifest", real_node_examples(), ids=lambda path: path.name)
def test_real_node_examples_use_the_pinned_image_on_the_real_node(manifest: Path) -> None:
    for spec in pod_specs(manifest):
        container = next(c for c in spec["containers"] if c["name"] == "tensorflow")
        assert container["image"] == versions()["TENSORFLOW_IMAGE"]
        # Nothing could pull it: the image exists only where hack/ imported it.
        assert container["imagePullPolicy"] in ("Never", "IfNotPresent")
        assert spec["nodeSelector"] == {REAL_NODE_LABEL: "true"}
        assert {"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true",
                "effect": "NoSchedule"} in spec["tolerations"]
