"""`tfop convert`: legacy TFJob manifests (files or stdin) to kubeflow.org/v1 YAML.

This is the way for seed 003's `tensorflow.org/v1alpha1` TfJob, a group no conversion webhook of ours can serve,
and for any v1alpha1/v1beta1 manifest one would rather keep in v1. Unlike the webhook it does not refuse: it
writes what v1 can carry and warns, on stderr, about each field it could not.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TextIO

import yaml

from tfop import yamlio
from tfop.api.constants import API_VERSION, KIND
from tfop.api.conversion import TF_GROUP_KIND, TF_GROUP_V1ALPHA1, V1ALPHA1, V1BETA1, ConversionError, to_v1
from tfop.controller.plan.controller_config import DEFAULT_GPU_RESOURCE
from tfop.controller.plan.job.legacy_gpu import rewrite_legacy_gpu

LEGACY = {(V1ALPHA1, KIND), (V1BETA1, KIND), (TF_GROUP_V1ALPHA1, TF_GROUP_KIND), (TF_GROUP_V1ALPHA1, KIND)}
# What only the apiserver writes: meaningless in a manifest to apply.
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "selfLink", "clusterName",
                 "managedFields")


def convert_documents(documents: Iterable[Any], source: str, warn: TextIO,
                      gpu_resource: str = DEFAULT_GPU_RESOURCE) -> tuple[list[Any], int]:
    """(documents converted, number of warnings). Requests for the legacy GPU resource become `gpu_resource`."""
    out, warnings = [], 0
    for position, document in enumerate(documents):
        if not isinstance(document, dict) or (document.get("apiVersion"), document.get("kind")) not in LEGACY:
            out.append(document)
            continue
        name = (document.get("metadata") or {}).get("name", f"document {position + 1}")
        try:
            converted = to_v1(document)
        except ConversionError as error:
            print(f"{source}: {name}: {error}", file=warn)
            warnings += 1
            out.append(document)
            continue
        gpu = rewrite_legacy_gpu(converted.obj, gpu_resource)
        problems = [*map(str, converted.problems), *map(str, gpu.problems)]
        for problem in problems:
            print(f"{source}: {document['apiVersion']} {document['kind']} {name}: {problem}; not carried over",
                  file=warn)
        warnings += len(problems)
        obj = gpu.job
        metadata = obj.get("metadata") or {}
        for key in SERVER_FIELDS:
            metadata.pop(key, None)
        obj.pop("status", None)
        obj["apiVersion"], obj["kind"] = API_VERSION, KIND
        out.append(obj)
    return out, warnings


def convert_files(paths: list[str], stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr,
                  gpu_resource: str = DEFAULT_GPU_RESOURCE) -> int:
    documents_out: list[Any] = []
    warnings = 0
    for path in paths or ["-"]:
        try:
            text = sys.stdin.read() if path == "-" else open(path).read()  # noqa: SIM115 - read at once
            documents = yamlio.load_all(text)
        except (OSError, yaml.YAMLError) as error:
            print(f"{path}: {error}", file=stderr)
            return 2
        converted, count = convert_documents(documents, "stdin" if path == "-" else path, stderr, gpu_resource)
        documents_out.extend(converted)
        warnings += count
    stdout.write(yaml.safe_dump_all(documents_out, sort_keys=False, explicit_start=len(documents_out) > 1))
    return 1 if warnings else 0
