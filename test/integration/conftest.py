from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from local_cluster import LocalCluster
    from tfop.kube.client import KubeClient


@pytest.fixture
def kube_client(cluster: LocalCluster) -> KubeClient:
    from tfop.kube.client import KubeClient

    return KubeClient.from_kubeconfig(str(cluster.kubeconfig))
