"""Run by the Kubeflow SDK virtualenv's python: prints, as JSON, the path of every field of a TFJob that the SDK's
models refuse to hold as None (their setters raise "Invalid value for `x`, must not be `None`"), so the test can
check that the CRD makes each of them required or gives it a default. Paths are JSON paths through the TFJob:
`*` for a map's values, `[]` for a list's items."""

from __future__ import annotations

import json
import re
from typing import Any

from kubeflow.training import models
from kubeflow.training.configuration import Configuration

_LIST = re.compile(r"^list\[(.*)\]$")
_DICT = re.compile(r"^dict\(([^,]*), (.*)\)$")
_PRIMITIVES = {"str", "int", "float", "bool", "date", "datetime", "object"}


def required_paths(type_name: str, path: str, seen: tuple[str, ...] = ()) -> list[str]:
    if type_name in _PRIMITIVES:
        return []
    if match := _LIST.match(type_name):
        return required_paths(match.group(1), f"{path}[]", seen)
    if match := _DICT.match(type_name):
        return required_paths(match.group(2), f"{path}.*", seen)
    klass = getattr(models, type_name, None)
    if klass is None or type_name in seen:  # e.g. Quantity, which is a string in JSON
        return []
    found = []
    for attribute, attribute_type in klass.openapi_types.items():
        field_path = f"{path}.{klass.attribute_map[attribute]}".lstrip(".")
        if _refuses_none(klass, attribute):
            found.append(field_path)
        found += required_paths(attribute_type, field_path, (*seen, type_name))
    return found


def _refuses_none(klass: Any, attribute: str) -> bool:
    instance = klass.__new__(klass)
    instance.local_vars_configuration = Configuration()  # client_side_validation, as the SDK reads jobs
    try:
        setattr(instance, attribute, None)
    except ValueError:
        return True
    return False


if __name__ == "__main__":
    print(json.dumps(required_paths("KubeflowOrgV1TFJob", "")))
