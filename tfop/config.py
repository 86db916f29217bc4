"""The controller config file (the ConfigMap `tf-job-operator-config` in a cluster): settings that describe the
cluster the operator runs in rather than how one process runs (those are flags)."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

_DOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ConfigError(ValueError):
    """The config file is unreadable or holds a value we cannot use; the message names the key."""


@dataclass(frozen=True)
class OperatorConfig:
    # Suffix of replica addresses in TF_CONFIG: {pod}.{namespace}.{service_domain}:{port}. "svc" resolves
    # through the pod's DNS search path in any cluster; "svc.cluster.local" names the cluster domain explicitly.
    service_domain: str = "svc"


_KEYS = {"serviceDomain": "service_domain"}


def load_config(path: str | Path | None) -> OperatorConfig:
    if path is None:
        return OperatorConfig()
    try:
        data: Any = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping, not {type(data).__name__}")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    values = {_KEYS[key]: value for key, value in data.items()}
    domain = values.get("service_domain", OperatorConfig.service_domain)
    if not isinstance(domain, str) or not _DOMAIN.match(domain):
        raise ConfigError(f"config file {path}: serviceDomain {domain!r} is not a DNS suffix such as svc.cluster.local")
    assert set(values) <= {f.name for f in fields(OperatorConfig)}
    return OperatorConfig(**values)
