"""Conditions of CustomResourceDefinitions on the local cluster."""

from __future__ import annotations

from local_cluster import LocalCluster

ESTABLISHED = '{.status.conditions[?(@.type=="Established")].status}'


def crd_established(cluster: LocalCluster, name: str) -> bool:
    """Whether CRD `name` is Established (before it has conditions, kubectl's jsonpath filter errors: not yet)."""
    return cluster.kubectl("get", "crd", name, "-o", f"jsonpath={ESTABLISHED}", check=False).stdout == "True"
