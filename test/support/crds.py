"""CustomResourceDefinitions on the local cluster: their conditions, and replacing one in place."""

from __future__ import annotations

from pathlib import Path

from localcluster import LocalCluster
from support.waiting import wait_for

ESTABLISHED = '{.status.conditions[?(@.type=="Established")].status}'


def crd_established(cluster: LocalCluster, name: str) -> bool:
    """Whether CRD `name` is Established (before it has conditions, kubectl's jsonpath filter errors: not yet)."""
    return cluster.kubectl("get", "crd", name, "-o", f"jsonpath={ESTABLISHED}", check=False).stdout == "True"


def replace_crd(cluster: LocalCluster, path: Path) -> None:
    """What the steps of docs/install/from-go-operator.md do: the TFJob CRD replaced in place (never deleted, which
    would delete every TFJob), then Established again."""
    cluster.kubectl("replace", "-f", str(path))
    wait_for(lambda: crd_established(cluster, "tfjobs.kubeflow.org"), message=f"the CRD from {path} to be Established")
