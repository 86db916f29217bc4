"""The real nodes for the e2e suite: the session's cluster gets them on first request (kubelet and containerd each,
CoreDNS; built and cached by hack/build-node.sh), and the session's teardown takes them down with the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from localcluster import LocalCluster
from localcluster.busybox_image import build as busybox_image
from localcluster.operator_config import write as write_operator_config
from support.operator_process import OperatorProcess

if TYPE_CHECKING:
    from localcluster.addons.metrics_server import MetricsServer

# Two, so that node loss can be shown (a replica moves to the other node); tests that need one node use real-0.
REAL_NODES = 2


@pytest.fixture(scope="session")
def real_node(cluster: LocalCluster) -> LocalCluster:
    """The session cluster with its real nodes up. Not root, or a piece missing: the test errors, never skips."""
    cluster.real_nodes = max(cluster.real_nodes or 0, REAL_NODES)
    cluster.up()
    return cluster


@pytest.fixture(scope="session")
def metrics_server(real_node: LocalCluster) -> Iterator[MetricsServer]:
    """metrics-server (hack/localcluster/addons/metrics_server.py) serving the resource metrics API from the real
    nodes' kubelets, the metric source of HorizontalPodAutoscalers on CPU. Started once per session, on first
    request (it returns once the apiserver serves metrics.k8s.io); the APIService goes before it stops, since an
    unavailable aggregated API would hold up every later namespace deletion."""
    from localcluster.addons.metrics_server import MetricsServer

    server = MetricsServer(real_node)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def busybox() -> str:
    """The busybox image's reference (imported into the node by `up`)."""
    return busybox_image()[0]


@pytest.fixture
def operator(real_node: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """tfop as a process on the host (it reaches the apiserver on loopback), watching the test's namespace, with
    the controller config `make run` gives it (the default PS server's image is one the nodes hold)."""
    process = OperatorProcess(real_node.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace,
                              "--config", str(write_operator_config(real_node.directory))).start()
    yield process
    process.kill()
