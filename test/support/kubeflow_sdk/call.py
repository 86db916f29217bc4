"""Run by the Kubeflow SDK virtualenv's python: one call of TrainingClient(job_kind="TFJob"), asked for as JSON on
stdin, answered as JSON on stdout.

    {"kubeconfig": PATH, "namespace": NS, "method": "get_job", "kwargs": {...}}
    -> {"value": ...}                      what the method returned, as the SDK serializes its models
    -> {"error": "RuntimeError", "message": "..."}   what it raised

`train_func` names a function of train_functions.py (the SDK ships a function's source, so it must be a real
one); `expected_conditions` is a list. The method "deserialize" reads `kwargs["job"]` as the SDK reads a TFJob
from the apiserver, without asking it."""

from __future__ import annotations

import json
import sys
from typing import Any

import train_functions
from kubeflow.training import TrainingClient
from kubeflow.training.api_client import ApiClient
from kubeflow.training.utils.utils import FakeResponse


def call(request: dict[str, Any]) -> Any:
    kwargs = dict(request.get("kwargs") or {})
    if request["method"] == "deserialize":
        return ApiClient().deserialize(FakeResponse(kwargs["job"]), "KubeflowOrgV1TFJob")
    client = TrainingClient(config_file=request["kubeconfig"], namespace=request["namespace"], job_kind="TFJob")
    if "train_func" in kwargs:
        kwargs["train_func"] = getattr(train_functions, kwargs["train_func"])
    if "expected_conditions" in kwargs:
        kwargs["expected_conditions"] = set(kwargs["expected_conditions"])
    return getattr(client, request["method"])(**kwargs)


def main() -> None:
    request = json.load(sys.stdin)
    try:
        value = call(request)
    except Exception as error:  # noqa: BLE001 - every failure is the answer, named
        cause = f" (caused by {type(error.__cause__).__name__}: {error.__cause__})" if error.__cause__ else ""
        print(json.dumps({"error": type(error).__name__, "message": f"{error}{cause}"}))
        return
    print(json.dumps({"value": ApiClient().sanitize_for_serialization(value)}))


if __name__ == "__main__":
    main()
