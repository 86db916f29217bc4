"""A job's own NetworkPolicy, for a job that asks for one: ingress to its pods only from its own pods, and from the
peers its annotation lists.

A TensorFlow server accepts any connection to its port and runs what it is sent, so in a shared namespace any pod
could talk to a job's PS or workers. With `tfop.kubeflow.org/network-policy: Isolated` tfop keeps one
NetworkPolicy per job, owned by it (the garbage collector deletes it with the job): it selects the job's pods by
their job-name and operator-name labels (those of pods from either replica backend, and of pods adopted from the
Kubeflow training operator) and lets in, on every port, the job's own pods and the NetworkPolicyPeers listed as
JSON in `tfop.kubeflow.org/network-policy-from` (a monitoring namespace, a TensorBoard pod). Only ingress: egress
(DNS, storage, the apiserver) is left alone.

The planner's part (create it, keep it in line, delete it) is in plan/network_policies.py. Whether it is enforced
is the cluster's network plugin's business: a plugin without NetworkPolicy support ignores it.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

from tfop.api.constants import (
    ANNOTATION_NETWORK_POLICY,
    ANNOTATION_NETWORK_POLICY_FROM,
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_RUNTIME_ID,
    LEGACY_OPERATOR_NAME,
    MANAGED_BY,
    NETWORK_POLICY_ISOLATED,
    NETWORK_POLICY_MODES,
    OPERATOR_NAME,
)
from tfop.api.fields import mapping, mapping_at, text
from tfop.api.runtime_id import runtime_id
from tfop.objects import Object

API_VERSION = "networking.k8s.io/v1"
KIND = "NetworkPolicy"
_PEER_KEYS = ("podSelector", "namespaceSelector", "ipBlock")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class NetworkIsolation:
    isolated: bool = False
    peers: tuple[Object, ...] = ()  # the NetworkPolicyPeers let in besides the job's own pods


def network_isolation(job: Object) -> tuple[NetworkIsolation, list[str]]:
    """What the job's annotations ask for, and what is wrong with them (each error names its annotation)."""
    annotations = mapping_at(job, "metadata", "annotations")
    switch, listed = annotations.get(ANNOTATION_NETWORK_POLICY), annotations.get(ANNOTATION_NETWORK_POLICY_FROM)
    if switch is not None and switch not in NETWORK_POLICY_MODES:
        problem = (f"metadata.annotations[{ANNOTATION_NETWORK_POLICY}]: must be one of "
                   f"{', '.join(NETWORK_POLICY_MODES)}, not {switch!r}")
        return NetworkIsolation(), [problem]
    isolated = switch == NETWORK_POLICY_ISOLATED
    if listed is None:
        return NetworkIsolation(isolated), []
    where = f"metadata.annotations[{ANNOTATION_NETWORK_POLICY_FROM}]"
    if not isolated:
        # Peers listed without the switch would leave the job open while its author believes it isolated.
        needs = f"{ANNOTATION_NETWORK_POLICY}: {NETWORK_POLICY_ISOLATED}"
        return NetworkIsolation(), [f"{where}: lists peers to let in, which needs {needs}"]
    try:
        parsed = json.loads(str(listed))
    except ValueError as error:
        return NetworkIsolation(), [f"{where}: must be a JSON list of NetworkPolicyPeers: {error}"]
    if not isinstance(parsed, list):
        kind = {dict: "an object", str: "a string", bool: "a boolean"}.get(type(parsed), "a number or null")
        return NetworkIsolation(), [f"{where}: must be a JSON list of NetworkPolicyPeers, not {kind}"]
    errors: list[str] = []
    peers = [_peer(peer, f"{where}[{index}]", errors) for index, peer in enumerate(parsed)]
    return (NetworkIsolation(), errors) if errors else (NetworkIsolation(True, tuple(peers)), [])


def _peer(peer: object, path: str, errors: list[str]) -> Object:
    """A NetworkPolicyPeer as the apiserver stores it (empty fields left out), or {} with errors added."""
    if not isinstance(peer, dict) or not peer:
        errors.append(f"{path}: must be an object with {', '.join(_PEER_KEYS[:-1])} or {_PEER_KEYS[-1]}")
        return {}
    unknown = sorted(set(map(str, peer)) - set(_PEER_KEYS))
    if unknown:
        errors.append(f"{path}: unknown key {unknown[0]!r}; a peer has {', '.join(_PEER_KEYS)}")
        return {}
    if "ipBlock" in peer and len(peer) > 1:
        errors.append(f"{path}: ipBlock cannot be combined with a selector in one peer")
        return {}
    if "ipBlock" in peer:
        return {"ipBlock": _ip_block(peer["ipBlock"], f"{path}.ipBlock", errors)}
    return {key: _selector(peer[key], f"{path}.{key}", errors) for key in _PEER_KEYS if key in peer}


def _selector(selector: object, path: str, errors: list[str]) -> Object:
    if not isinstance(selector, dict) or set(map(str, selector)) - {"matchLabels", "matchExpressions"}:
        errors.append(f"{path}: must be a label selector, with matchLabels and matchExpressions only")
        return {}
    result: Object = {}
    labels = selector.get("matchLabels")
    if labels is not None and not isinstance(labels, dict):
        errors.append(f"{path}.matchLabels: must map label keys to values")
    elif labels:
        for key, value in labels.items():
            _label_key(key, f"{path}.matchLabels", errors)
            _label_value(value, f"{path}.matchLabels[{key}]", errors)
        result["matchLabels"] = dict(labels)
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        errors.append(f"{path}.matchExpressions: must be a list")
    elif expressions:
        result["matchExpressions"] = [_expression(entry, f"{path}.matchExpressions[{index}]", errors)
                                      for index, entry in enumerate(expressions)]
    return result


def _expression(entry: object, path: str, errors: list[str]) -> Object:
    expression = mapping(entry)
    operator, values = expression.get("operator"), expression.get("values")
    if not isinstance(entry, dict) or set(map(str, expression)) - {"key", "operator", "values"}:
        errors.append(f"{path}: must have key, operator and values only")
        return {}
    _label_key(expression.get("key"), path, errors)
    if operator not in _OPERATORS:
        errors.append(f"{path}.operator: must be one of {', '.join(_OPERATORS)}, not {operator!r}")
    elif values is not None and not isinstance(values, list):
        errors.append(f"{path}.values: must be a list")
    elif operator in ("In", "NotIn") and not values:
        errors.append(f"{path}.values: must not be empty for {operator}")
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(f"{path}.values: must be empty for {operator}")
    for index, value in enumerate(values if isinstance(values, list) else []):
        _label_value(value, f"{path}.values[{index}]", errors)
    result = {"key": expression.get("key"), "operator": operator}
    return {**result, "values": list(values)} if values else result


def _label_key(key: object, path: str, errors: list[str]) -> None:
    prefix, slash, name = str(key).rpartition("/")
    good_name = isinstance(key, str) and len(name) <= 63 and _LABEL_NAME.match(name) is not None
    good_prefix = not slash or (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix) is not None)
    if not (good_name and good_prefix):
        errors.append(f"{path}: {key!r} is not a label key (a name of at most 63 letters, digits, '-', '_' or '.', "
                      "with an optional DNS subdomain prefix and '/')")


def _label_value(value: object, path: str, errors: list[str]) -> None:
    if not isinstance(value, str) or len(value) > 63 or (value and not _LABEL_NAME.match(value)):
        errors.append(f"{path}: {value!r} is not a label value (at most 63 letters, digits, '-', '_' or '.')")


def _ip_block(block: object, path: str, errors: list[str]) -> Object:
    """{cidr, except}: each a network in the canonical form the apiserver keeps (so the stored policy compares
    equal to the wanted one), the exceptions inside the cidr."""
    if not isinstance(block, dict) or set(map(str, block)) - {"cidr", "except"}:
        errors.append(f"{path}: must have cidr and except only")
        return {}
    network = _network(block.get("cidr"), f"{path}.cidr", errors)
    excepted = block.get("except")
    if excepted is not None and not isinstance(excepted, list):
        errors.append(f"{path}.except: must be a list of CIDRs")
        excepted = []
    for index, value in enumerate(excepted or []):
        inner = _network(value, f"{path}.except[{index}]", errors)
        if network is not None and inner is not None and (
                inner.version != network.version or not inner.subnet_of(network) or inner == network):  # type: ignore[arg-type]
            errors.append(f"{path}.except[{index}]: {value!r} is not inside {network}")
    result: Object = {"cidr": block.get("cidr")}
    return {**result, "except": list(excepted)} if excepted else result


def _network(value: object, path: str, errors: list[str]) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        network = ipaddress.ip_network(str(value), strict=True)
        if str(network) != value:
            raise ValueError
    except ValueError:
        errors.append(f"{path}: must be a network in CIDR notation such as 198.18.0.0/15 or fd00::/8 (its first "
                      f"address, in canonical form), not {value!r}")
        return None
    return network


def job_pods(job_name: str) -> Object:
    """The selector of the job's pods: by job name, and made by tfop or the Kubeflow training operator (other
    Kubeflow kinds' pods carry the job-name label too)."""
    return {"matchLabels": {LABEL_JOB_NAME: job_name},
            "matchExpressions": [{"key": LABEL_OPERATOR_NAME, "operator": "In",
                                  "values": [OPERATOR_NAME, LEGACY_OPERATOR_NAME]}]}


def network_policy_spec(job_name: str, peers: tuple[Object, ...]) -> Object:
    own = job_pods(job_name)
    return {"podSelector": own, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": own}, *peers]}]}


def network_policy_name(job: Object) -> str:
    """The job's name and runtime id: a job deleted and created again under its name never meets its predecessor's
    policy, which the garbage collector may not have removed yet."""
    metadata = mapping(job.get("metadata"))
    return f"{text(metadata.get('name'))}-{runtime_id(str(metadata.get('uid')))}"


def network_policy(job: Object, owner: Object) -> Object:
    """The body of the job's NetworkPolicy. `job` is defaulted and valid, and asks for isolation."""
    metadata = job["metadata"]
    isolation, _ = network_isolation(job)
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": network_policy_name(job), "namespace": metadata["namespace"],
                         "labels": {LABEL_JOB_NAME: metadata["name"], LABEL_RUNTIME_ID: runtime_id(metadata["uid"]),
                                    LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [dict(owner)]},
            "spec": network_policy_spec(metadata["name"], isolation.peers)}
