"""The peers a job's NetworkPolicy lets in, as listed in `tfop.kubeflow.org/network-policy-from`: each checked as
the apiserver would check a NetworkPolicyPeer, so a mistake is a FieldError on the job rather than a policy the
apiserver refuses, and each kept in the form the apiserver stores (so the stored policy compares equal)."""

from __future__ import annotations

import ipaddress
import re

from tfop.api.errors import FieldError
from tfop.api.fields import mapping
from tfop.objects import Object

_PEER_KEYS = ("podSelector", "namespaceSelector", "ipBlock")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def network_peers(listed: list[object], path: str) -> tuple[tuple[Object, ...], list[FieldError]]:
    """The peers of a parsed JSON list, and what is wrong with them."""
    errors: list[FieldError] = []
    peers = tuple(_peer(peer, f"{path}[{index}]", errors) for index, peer in enumerate(listed))
    return peers, errors


def _peer(peer: object, path: str, errors: list[FieldError]) -> Object:
    """A NetworkPolicyPeer as the apiserver stores it (empty fields left out), or {} with errors added."""
    if not isinstance(peer, dict) or not peer:
        errors.append(FieldError(path, f"must be an object with {', '.join(_PEER_KEYS[:-1])} or {_PEER_KEYS[-1]}"))
        return {}
    unknown = sorted(set(map(str, peer)) - set(_PEER_KEYS))
    if unknown:
        errors.append(FieldError(path, f"unknown key {unknown[0]!r}; a peer has {', '.join(_PEER_KEYS)}"))
        return {}
    if "ipBlock" in peer and len(peer) > 1:
        errors.append(FieldError(path, "ipBlock cannot be combined with a selector in one peer"))
        return {}
    if "ipBlock" in peer:
        return {"ipBlock": _ip_block(peer["ipBlock"], f"{path}.ipBlock", errors)}
    return {key: _selector(peer[key], f"{path}.{key}", errors) for key in _PEER_KEYS if key in peer}


def _selector(selector: object, path: str, errors: list[FieldError]) -> Object:
    if not isinstance(selector, dict) or set(map(str, selector)) - {"matchLabels", "matchExpressions"}:
        errors.append(FieldError(path, "must be a label selector, with matchLabels and matchExpressions only"))
        return {}
    result: Object = {}
    labels = selector.get("matchLabels")
    if labels is not None and not isinstance(labels, dict):
        errors.append(FieldError(f"{path}.matchLabels", "must map label keys to values"))
    elif labels:
        for key, value in labels.items():
            _label_key(key, f"{path}.matchLabels", errors)
            _label_value(value, f"{path}.matchLabels[{key}]", errors)
        result["matchLabels"] = dict(labels)
    expressions = selector.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        errors.append(FieldError(f"{path}.matchExpressions", "must be a list"))
    elif expressions:
        result["matchExpressions"] = [_expression(entry, f"{path}.matchExpressions[{index}]", errors)
                                      for index, entry in enumerate(expressions)]
    return result


def _expression(entry: object, path: str, errors: list[FieldError]) -> Object:
    expression = mapping(entry)
    operator, values = expression.get("operator"), expression.get("values")
    if not isinstance(entry, dict) or set(map(str, expression)) - {"key", "operator", "values"}:
        errors.append(FieldError(path, "must have key, operator and values only"))
        return {}
    _label_key(expression.get("key"), path, errors)
    if operator not in _OPERATORS:
        errors.append(FieldError(f"{path}.operator", f"must be one of {', '.join(_OPERATORS)}, not {operator!r}"))
    elif values is not None and not isinstance(values, list):
        errors.append(FieldError(f"{path}.values", "must be a list"))
    elif operator in ("In", "NotIn") and not values:
        errors.append(FieldError(f"{path}.values", f"must not be empty for {operator}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(FieldError(f"{path}.values", f"must be empty for {operator}"))
    for index, value in enumerate(values if isinstance(values, list) else []):
        _label_value(value, f"{path}.values[{index}]", errors)
    result = {"key": expression.get("key"), "operator": operator}
    return {**result, "values": list(values)} if values else result


def _label_key(key: object, path: str, errors: list[FieldError]) -> None:
    prefix, slash, name = str(key).rpartition("/")
    good_name = isinstance(key, str) and len(name) <= 63 and _LABEL_NAME.match(name) is not None
    good_prefix = not slash or (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix) is not None)
    if not (good_name and good_prefix):
        errors.append(FieldError(path, f"{key!r} is not a label key (a name of at most 63 letters, digits, '-', '_' "
                                       "or '.', with an optional DNS subdomain prefix and '/')"))


def _label_value(value: object, path: str, errors: list[FieldError]) -> None:
    if not isinstance(value, str) or len(value) > 63 or (value and not _LABEL_NAME.match(value)):
        errors.append(FieldError(path, f"{value!r} is not a label value (at most 63 letters, digits, '-', '_' or '.')"))


def _ip_block(block: object, path: str, errors: list[FieldError]) -> Object:
    """{cidr, except}: each a network in the canonical form the apiserver keeps, the exceptions inside the cidr."""
    if not isinstance(block, dict) or set(map(str, block)) - {"cidr", "except"}:
        errors.append(FieldError(path, "must have cidr and except only"))
        return {}
    network = _network(block.get("cidr"), f"{path}.cidr", errors)
    excepted = block.get("except")
    if excepted is not None and not isinstance(excepted, list):
        errors.append(FieldError(f"{path}.except", "must be a list of CIDRs"))
        excepted = []
    for index, value in enumerate(excepted or []):
        inner = _network(value, f"{path}.except[{index}]", errors)
        if network is not None and inner is not None and (
                inner.version != network.version or not inner.subnet_of(network) or inner == network):  # type: ignore[arg-type]
            errors.append(FieldError(f"{path}.except[{index}]", f"{value!r} is not inside {network}"))
    result: Object = {"cidr": block.get("cidr")}
    return {**result, "except": list(excepted)} if excepted else result


def _network(value: object, path: str,
             errors: list[FieldError]) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        network = ipaddress.ip_network(str(value), strict=True)
        if str(network) != value:
            raise ValueError
    except ValueError:
        errors.append(FieldError(path, f"must be a network in CIDR notation such as 198.18.0.0/15 or fd00::/8 (its "
                                       f"first address, in canonical form), not {value!r}"))
        return None
    return network
