"""`tfop convert` on the seeds' manifests, and the webhook's ConversionReview answers (pure parts)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tfop import yamlio
from tfop.api.conversion import V1ALPHA1
from tfop.convert import convert_files
from tfop.webhook import review_response

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"


def run(*paths: Path, gpu_resource: str = "nvidia.com/gpu") -> tuple[int, list[Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = convert_files([str(path) for path in paths], out, err, gpu_resource)
    return code, list(yamlio.load_all(out.getvalue())), err.getvalue()


def tensorflow_limits(document: dict[str, Any]) -> dict[str, Any]:
    [replica] = document["spec"]["tfReplicaSpecs"].values()
    [container] = replica["template"]["spec"]["containers"]
    return dict(container["resources"]["limits"])


# The seeds' GPU manifests as `tfop convert` writes them: seed 002's v1alpha1 and seed 003's TfJob asked for the
# alpha resource; seed 001's v1beta1 already asked for nvidia.com/gpu.
GPU_SEEDS = [("002-tf-smoke-gpu.yaml", "nvidia.com/gpu", {"nvidia.com/gpu": 1}),
             ("003-example-tfjob.yaml", "nvidia.com/gpu", {"nvidia.com/gpu": 1}),
             ("002-tf-smoke-gpu.yaml", "amd.com/gpu", {"amd.com/gpu": 1}),
             ("001-module6-ex1-gpu.yaml", "amd.com/gpu", {"nvidia.com/gpu": 1})]


@pytest.mark.parametrize(("manifest", "gpu_resource", "limits"), GPU_SEEDS)
def test_the_legacy_gpu_resource_becomes_the_current_one(manifest: str, gpu_resource: str,
                                                         limits: dict[str, Any]) -> None:
    code, [document], warnings = run(SEEDS / manifest, gpu_resource=gpu_resource)
    assert (code, warnings) == (0, "")
    assert tensorflow_limits(document) == limits


def test_both_gpu_names_with_different_amounts_keep_the_current_and_warn(tmp_path: Path) -> None:
    manifest = yamlio.load((SEEDS / "002-tf-smoke-gpu.yaml").read_text())
    manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] = 2
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump(manifest))
    code, [document], warnings = run(path)
    assert code == 1 and tensorflow_limits(document) == {"nvidia.com/gpu": 2}
    assert warnings == (
        f"{path}: kubeflow.org/v1alpha1 TFJob tf-smoke-gpu: spec.tfReplicaSpecs.Master.template.spec.containers[0]."
        "resources.limits: asks for alpha.kubernetes.io/nvidia-gpu: 1 and nvidia.com/gpu: 2, which tfop takes as "
        "one resource; keep only nvidia.com/gpu; not carried over\n")


def test_a_gpu_resource_flag_that_is_no_resource_name_is_refused() -> None:
    # A process of its own: the flag error configures the process's logging, as it would for a user.
    result = subprocess.run([sys.executable, "-m", "tfop", "convert", "--gpu-resource", "gpu",
                             str(SEEDS / "002-tf-smoke-gpu.yaml")], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert "argument --gpu-resource: 'gpu' is not an extended resource name" in result.stderr


def test_every_seed_manifest_converts_without_a_warning() -> None:
    manifests = sorted(p for p in SEEDS.glob("*.yaml") if "status" not in p.name and "config" not in p.name)
    code, documents, warnings = run(*manifests)
    assert (code, warnings) == (0, "")
    assert [(d["apiVersion"], d["kind"]) for d in documents] == [("kubeflow.org/v1", "TFJob")] * len(manifests)
    names = [d["metadata"]["name"] for d in documents]
    assert names == ["example-tfjob", "module6-ex1-gpu", "module6-ex2-gpu", "example-job", "tf-smoke-gpu",
                     "example-tfjob"]


def test_what_v1_cannot_carry_is_a_warning_per_field_and_exit_1() -> None:
    code, [document], warnings = run(SEEDS / "002-example-job-status.yaml")
    assert code == 1
    assert warnings.count("\n") == 1 and "spec.RuntimeId" in warnings and "not carried over" in warnings
    assert "status" not in document and "uid" not in document["metadata"]


def test_other_documents_pass_through() -> None:
    code, [configmap], warnings = run(SEEDS / "003-tf-job-operator-config.yaml")
    assert (code, warnings, configmap["kind"]) == (0, "", "ConfigMap")


def review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "r-1", "desiredAPIVersion": desired, "objects": list(objects)}}


def test_the_webhook_converts_every_object_of_a_review() -> None:
    seed = yamlio.load((SEEDS / "002-example-job.yaml").read_text())
    answer = review_response(review("kubeflow.org/v1", seed, seed))["response"]
    assert answer["uid"] == "r-1" and answer["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in answer["convertedObjects"]] == ["kubeflow.org/v1"] * 2
    back = review_response(review(V1ALPHA1, answer["convertedObjects"][0]))["response"]
    assert back["convertedObjects"][0]["spec"]["replicaSpecs"][2] == {"tfReplicaType": "PS", "replicas": 2,
                                                                       "isDefaultPS": True}


@pytest.mark.parametrize("gpu_resource", ["nvidia.com/gpu", "amd.com/gpu"])
def test_the_webhook_stores_the_current_gpu_resource_and_shows_v1_as_it_is(gpu_resource: str) -> None:
    seed = yamlio.load((SEEDS / "002-tf-smoke-gpu.yaml").read_text())
    answer = review_response(review("kubeflow.org/v1", seed), gpu_resource)["response"]
    assert tensorflow_limits(answer["convertedObjects"][0]) == {gpu_resource: 1}
    # A v1 job written with the legacy name is shown in an older version as it is (the operator renames in its pods).
    v1 = answer["convertedObjects"][0]
    v1["spec"]["tfReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}
    old = review_response(review(V1ALPHA1, v1), gpu_resource)["response"]["convertedObjects"][0]
    assert old["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}


def test_the_webhook_refuses_naming_the_field() -> None:
    seed = yamlio.load((SEEDS / "002-example-job.yaml").read_text())
    seed["spec"]["RuntimeId"] = "76no"
    answer = review_response(review("kubeflow.org/v1", seed))["response"]
    assert answer["result"]["status"] == "Failure" and answer["convertedObjects"] == []
    assert "'example-job'" in answer["result"]["message"] and "spec.RuntimeId" in answer["result"]["message"]
    assert review_response({"kind": "nonsense"})["response"]["result"]["status"] == "Failure"
    bad_version = review_response(review("kubeflow.org/v9", seed))["response"]["result"]
    assert bad_version["status"] == "Failure" and "served versions" in bad_version["message"]
