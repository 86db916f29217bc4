#!/usr/bin/env python3
"""Generates crd/kubeflow.org_tfjobs.yaml from hack/crd-template.yaml and the apiserver's own OpenAPI v3 schemas
(PodTemplateSpec, LabelSelector, autoscaling/v2's MetricSpec and HPA behavior), turned into structural CRD schemas.
The template marks where they go:

    x-tfop-pod-template-spec: true      the whole PodTemplateSpec (v1's templates)
    x-tfop-pod-template-required: true  only its required fields, everything else kept as given (older versions)
    x-tfop-schema-of: NAME              the schema of the OpenAPI type NAME

    python hack/gen_crd.py [--openapi FILE ...] [--check]

Without --openapi it reads OPENAPI_PATHS from the local cluster (hack/local_cluster.py, started if needed); with it,
the files' schemas are merged (pass one document per API group version).
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

from tfop import yamlio

HACK_DIR = Path(__file__).resolve().parent
TEMPLATE = HACK_DIR / "crd-template.yaml"
OUTPUT = HACK_DIR.parent / "crd" / "kubeflow.org_tfjobs.yaml"
MARKER = "x-tfop-pod-template-spec"
REQUIRED_MARKER = "x-tfop-pod-template-required"
SCHEMA_MARKER = "x-tfop-schema-of"
REF_PREFIX = "#/components/schemas/"
# The apiserver serves one OpenAPI v3 document per group version: the core types, and autoscaling/v2 for the elastic
# policy's metrics and behavior (its document holds the meta types too).
OPENAPI_PATHS = ("/openapi/v3/api/v1", "/openapi/v3/apis/autoscaling/v2")

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


def structural(schema: dict[str, Any], schemas: dict[str, Any], seen: tuple[str, ...] = (),
               descriptions: bool = False) -> dict[str, Any]:
    """The CRD-compatible form of an OpenAPI v3 schema node: refs inlined, unsupported keywords removed, and
    descriptions dropped unless asked for (the pod template's would make the CRD too large for client-side
    `kubectl apply`; a small type's are kept, for `kubectl explain`)."""
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
        target = structural(schemas[name], schemas, (*seen, name), descriptions)
        for (owner, prop), bounds in BOUNDS.items():
            if owner == name:
                target["properties"][prop].update(bounds)
        if "default" in schema and schema["default"] != {}:
            target["default"] = schema["default"]
        return target
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {p: structural(s, schemas, seen, descriptions) for p, s in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = structural(value, schemas, seen, descriptions)
        elif key == "default" and value == {}:
            continue  # an empty object default would have to satisfy required fields it lacks
        elif key in KEPT_KEYWORDS or key in ALLOWED_EXTENSIONS or (descriptions and key == "description"):
            out[key] = copy.deepcopy(value)
    if "type" not in out and "anyOf" not in out and "x-kubernetes-int-or-string" not in out:
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return out


def required_only(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A structural schema that checks only the required fields of `schema` (present, and of their type) and keeps
    everything else as given; None where nothing below is required. The older versions keep templates as written,
    yet a template must hold what every v1 client needs to read it (a container's name, a volume's name...)."""
    kind = schema.get("type")
    if kind == "array":
        items = required_only(schema["items"])
        return {"type": "array", "items": items} if items is not None else None
    if kind != "object":
        return None
    if isinstance(schema.get("additionalProperties"), dict):
        values = required_only(schema["additionalProperties"])
        return {"type": "object", "additionalProperties": values} if values is not None else None
    properties = schema.get("properties", {})
    required = [name for name in schema.get("required", []) if name in properties]
    kept = {}
    for name, child in properties.items():
        below = required_only(child)
        if below is not None:
            kept[name] = below
        elif name in required:
            kept[name] = _any_of_type(child)
    if not kept:
        return None
    out: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": kept}
    if required:
        out["required"] = required
    return out


def _any_of_type(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`'s type and nothing else: a required field's value is checked no further than that."""
    if schema.get("type") == "array":
        return {"type": "array", "items": _any_of_type(schema["items"])}
    if schema.get("type") == "object":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {key: value for key, value in schema.items() if key in ("type", "anyOf", "x-kubernetes-int-or-string")}


def fill_markers(node: Any, pod_template: dict[str, Any], schemas: dict[str, Any] | None = None) -> Any:
    if isinstance(node, dict):
        if node.get(REQUIRED_MARKER) is True:
            filled = required_only(pod_template)
            assert filled is not None, "a PodTemplateSpec has required fields"
            return {**filled, "description": node["description"]} if "description" in node else filled
        if SCHEMA_MARKER in node and schemas is not None:
            filled = structural({"$ref": REF_PREFIX + node[SCHEMA_MARKER]}, schemas, descriptions=True)
            return {**filled, "description": node["description"]} if "description" in node else filled
        if node.get(MARKER) is True:
            # The marker's own description stays: it is what `kubectl explain` shows for the template field.
            filled = copy.deepcopy(pod_template)
            if "description" in node:
                filled = {"description": node["description"], **filled}
            for name, text in TEMPLATE_PART_DESCRIPTIONS.items():
                filled["properties"][name] = {"description": text, **filled["properties"][name]}
            return filled
        return {k: fill_markers(v, pod_template, schemas) for k, v in node.items()}
    if isinstance(node, list):
        return [fill_markers(v, pod_template, schemas) for v in node]
    return node


def render(openapi: dict[str, Any], source: str) -> str:
    schemas = openapi["components"]["schemas"]
    pod_template = structural({"$ref": REF_PREFIX + "io.k8s.api.core.v1.PodTemplateSpec"}, schemas)
    crd = fill_markers(yamlio.load(TEMPLATE.read_text()), pod_template, schemas)
    crd["metadata"].setdefault("annotations", {})["tfop.kubeflow.org/pod-template-schema"] = source
    header = ("# Generated by hack/gen_crd.py from hack/crd-template.yaml and the OpenAPI schemas of "
              f"{source}.\n# Do not edit: change the template and run `make crd`.\n")
    return header + yaml.safe_dump(crd, sort_keys=False, width=120)


def merged(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One document with the schemas of all: a type named in several (the meta types) is the same in each."""
    schemas: dict[str, Any] = {}
    for document in documents:
        schemas.update(document["components"]["schemas"])
    return {"components": {"schemas": schemas}}


def fetch_openapi(api: Any) -> dict[str, Any]:
    """The schemas of OPENAPI_PATHS, read with `api(method, path)` (a LocalCluster's api)."""
    return merged([api("GET", path) for path in OPENAPI_PATHS])


def load_openapi(sources: list[str] | None) -> tuple[dict[str, Any], str]:
    if sources:
        names = ", ".join(Path(source).name for source in sources)
        return merged([json.loads(Path(source).read_text()) for source in sources]), f"file {names}"
    sys.path.insert(0, str(HACK_DIR))
    from localcluster import LocalCluster

    cluster = LocalCluster()
    cluster.up()
    return fetch_openapi(cluster.api), f"kube-apiserver {cluster.version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--openapi", action="append",
                        help="an OpenAPI v3 document (file), once per group version; default: the local cluster's")
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
