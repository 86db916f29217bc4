"""`tfop convert` on the seeds' manifests, and the webhook's ConversionReview answers (pure parts)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import yaml

from tfop.api.conversion import V1ALPHA1
from tfop.convert import convert_files
from tfop.webhook import review_response

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"


def run(*paths: Path) -> tuple[int, list[Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = convert_files([str(path) for path in paths], out, err)
    return code, list(yaml.safe_load_all(out.getvalue())), err.getvalue()


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
    seed = yaml.safe_load((SEEDS / "002-example-job.yaml").read_text())
    answer = review_response(review("kubeflow.org/v1", seed, seed))["response"]
    assert answer["uid"] == "r-1" and answer["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in answer["convertedObjects"]] == ["kubeflow.org/v1"] * 2
    back = review_response(review(V1ALPHA1, answer["convertedObjects"][0]))["response"]
    assert back["convertedObjects"][0]["spec"]["replicaSpecs"][2] == {"tfReplicaType": "PS", "replicas": 2,
                                                                       "isDefaultPS": True}


def test_the_webhook_refuses_naming_the_field() -> None:
    seed = yaml.safe_load((SEEDS / "002-example-job.yaml").read_text())
    seed["spec"]["RuntimeId"] = "76no"
    answer = review_response(review("kubeflow.org/v1", seed))["response"]
    assert answer["result"]["status"] == "Failure" and answer["convertedObjects"] == []
    assert "'example-job'" in answer["result"]["message"] and "spec.RuntimeId" in answer["result"]["message"]
    assert review_response({"kind": "nonsense"})["response"]["result"]["status"] == "Failure"
    bad_version = review_response(review("kubeflow.org/v9", seed))["response"]["result"]
    assert bad_version["status"] == "Failure" and "served versions" in bad_version["message"]
