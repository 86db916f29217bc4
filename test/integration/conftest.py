from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from support.operator_process import OperatorProcess

if TYPE_CHECKING:
    from local_cluster import LocalCluster
    from tfop.kube.client import KubeClient


@pytest.fixture
def kube_client(cluster: LocalCluster) -> KubeClient:
    from tfop.kube.client import KubeClient

    return KubeClient.from_kubeconfig(str(cluster.kubeconfig))


@pytest.fixture
def operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """`tfop run` as a process watching the test's namespace; its log's tail is printed afterwards."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(80)}")
