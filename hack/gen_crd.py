#!/usr/bin/env python3
"""Generates crd/kubeflow.org_tfjobs.yaml from hack/crd-template.yaml and the apiserver's own OpenAPI v3 schema
of PodTemplateSpec, turned into a structural CRD schema.

    python hack/gen_crd.py [--openapi FILE_OR_URL] [--check]

Without --openapi it reads /openapi/v3/api/v1 from the local cluster (hack/local_cluster.py, started if needed).
--check compares with the checked-in file instead of writing it (exit 1 when stale).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

HACK_DIR = Path(__file__).resolve().parent
TEMPLATE = HACK_DIR / "crd-template.yaml"
OUTPUT = HACK_DIR.parent / "crd" / "kubeflow.org_tfjobs.yaml"
MARKER = "x-tfop-pod-template-spec"
REF_PREFIX = "#/components/schemas/"

# Extensions a CRD schema accepts; the others (patch strategies, unions, GVKs) are for built-in types only.
ALLOWED_EXTENSIONS = {
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
}
KEPT_KEYWORDS = {
    "type", "format", "properties", "additionalProperties", "items", "required", "enum", "default",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "nullable",
}
# Types whose JSON form differs from what their OpenAPI says, replaced by what a CRD must declare.
SPECIAL_TYPES: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
        "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"},  # noqa: E501 - the apiserver's own pattern, unsplit
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string", "format": "date-time"},
    # A template's metadata: what the operator copies onto pods. Unknown fields are pruned.
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
        "type": "object",
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "finalizers": {"type": "array", "items": {"type": "string"}},
        },
    },
}

# The template's two parts get a line each in `kubectl explain`; below them the pod's own fields are described by
# `kubectl explain pod.spec` (their descriptions would not fit the size limit of client-side apply).
TEMPLATE_PART_DESCRIPTIONS = {
    "metadata": "Labels and annotations for the replica's pods (tfop adds its own labels).",
    "spec": "The replica's pod spec; `kubectl explain pod.spec` describes its fields.",
}

# Bounds the apiserver enforces on pods anyway (container names are DNS-1123 labels), declared in the schema so
# CEL's cost estimate for "has a container named tensorflow" fits its budget; plus a generous cap on containers.
BOUNDS: dict[tuple[str, str], dict[str, Any]] = {
    ("io.k8s.api.core.v1.PodSpec", "containers"): {"maxItems": 64},
    ("io.k8s.api.core.v1.Container", "name"): {"maxLength": 63},
}


def structural(schema: dict[str, Any], schemas: dict[str, Any], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The CRD-compatible form of an OpenAPI v3 schema node: refs inlined, descriptions dropped (they would make
    the CRD too large for client-side `kubectl apply`), unsupported keywords removed."""
    if "allOf" in schema and len(schema["allOf"]) == 1:  # how v3 wraps a $ref that carries siblings
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        merged.update(schema["allOf"][0])
        schema = merged
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        if name in seen:
            raise ValueError(f"recursive type {name} cannot be inlined")
        if name in SPECIAL_TYPES:
            return copy.deepcopy(SPECIAL_TYPES[name])
        target = structural(schemas[name], schemas, (*seen, name))
        for (owner, prop), bounds in BOUNDS.items():
            if owner == name:
                target["properties"][prop].update(bounds)
        if "default" in schema and schema["default"] != {}:
            target["default"] = schema["default"]
        return target
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {p: structural(s, schemas, seen) for p, s in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = structural(value, schemas, seen)
        elif key == "default" and value == {}:
            continue  # an empty object default would have to satisfy required fields it lacks
        elif key in KEPT_KEYWORDS or key in ALLOWED_EXTENSIONS:
            out[key] = copy.deepcopy(value)
    if "type" not in out and "anyOf" not in out and "x-kubernetes-int-or-string" not in out:
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return out


def fill_markers(node: Any, pod_template: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if node.get(MARKER) is True:
            # The marker's own description stays: it is what `kubectl explain` shows for the template field.
            filled = copy.deepcopy(pod_template)
            if "description" in node:
                filled = {"description": node["description"], **filled}
            for name, text in TEMPLATE_PART_DESCRIPTIONS.items():
                filled["properties"][name] = {"description": text, **filled["properties"][name]}
            return filled
        return {k: fill_markers(v, pod_template) for k, v in node.items()}
    if isinstance(node, list):
        return [fill_markers(v, pod_template) for v in node]
    return node


def render(openapi: dict[str, Any], source: str) -> str:
    schemas = openapi["components"]["schemas"]
    pod_template = structural({"$ref": REF_PREFIX + "io.k8s.api.core.v1.PodTemplateSpec"}, schemas)
    crd = fill_markers(yaml.safe_load(TEMPLATE.read_text()), pod_template)
    crd["metadata"].setdefault("annotations", {})["tfop.kubeflow.org/pod-template-schema"] = source
    header = ("# Generated by hack/gen_crd.py from hack/crd-template.yaml and the PodTemplateSpec schema of "
              f"{source}.\n# Do not edit: change the template and run `make crd`.\n")
    return header + yaml.safe_dump(crd, sort_keys=False, width=120)


def load_openapi(source: str | None) -> tuple[dict[str, Any], str]:
    if source and Path(source).exists():
        return json.loads(Path(source).read_text()), f"file {Path(source).name}"
    sys.path.insert(0, str(HACK_DIR))
    from localcluster import LocalCluster

    cluster = LocalCluster()
    cluster.up()
    return cluster.api("GET", "/openapi/v3/api/v1"), f"kube-apiserver {cluster.version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--openapi", help="an OpenAPI v3 document (file); default: the local cluster's apiserver")
    parser.add_argument("--check", action="store_true", help="fail if the checked-in CRD differs")
    args = parser.parse_args()
    openapi, source = load_openapi(args.openapi)
    text = render(openapi, source)
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run `make crd`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({len(text) // 1024} KiB) from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
