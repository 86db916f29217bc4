from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from support.builds import built
from support.operator_process import OperatorProcess

if TYPE_CHECKING:
    from localcluster import LocalCluster
    from localcluster.addons.coscheduler import CoScheduler
    from localcluster.addons.kueue import Kueue
    from localcluster.addons.prometheus_chart import Monitoring


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def helm() -> Path:
    """hack/build-helm.sh's helm (built from the Go module proxy once, then cached); fails, never skips."""
    return built("build-helm.sh", "helm")


@pytest.fixture
def operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """`tfop run` as a process watching the test's namespace; its log's tail is printed afterwards."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(80)}")


@pytest.fixture
def adapter_operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path
                     ) -> Iterator[OperatorProcess]:
    """`tfop run` watching the test's namespace with Kueue's TFJob adapter chosen (kueue.integration: kueue)."""
    from support.kueue import integration_config

    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace, "--config",
                              str(integration_config(tmp_path, "kueue"))).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(80)}")


@pytest.fixture
def operators(cluster: LocalCluster, tmp_path: Path, namespace: str) -> Iterator[Callable[..., OperatorProcess]]:
    """Makes `tfop run --namespace <the test's> ARGS...` processes, stopped when the test ends."""
    made: list[OperatorProcess] = []

    def make(*args: str) -> OperatorProcess:
        made.append(OperatorProcess(cluster.kubeconfig, tmp_path / f"operator-{len(made)}.log", "--namespace",
                                    namespace, *args))
        return made[-1]

    yield make
    for process in made:
        process.terminate()


@pytest.fixture(scope="module")
def gang_node(cluster: LocalCluster) -> Iterator[str]:
    """A kwok node with 8 GPUs that only the module's gang pods tolerate (support/gang.py)."""
    from support.gang import NODES, make_gang_node
    from tfop.kube.client import KubeClient

    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    name = make_gang_node(client)
    yield name
    client.delete(NODES, name)


@pytest.fixture(scope="module")
def coscheduler(cluster: LocalCluster) -> Iterator[CoScheduler]:
    """scheduler-plugins' scheduler beside the default one, and its PodGroup CRD."""
    from localcluster.addons.coscheduler import CoScheduler

    scheduler = CoScheduler(cluster)
    scheduler.start()
    yield scheduler
    scheduler.stop()




@pytest.fixture(scope="session")
def kueue(cluster: LocalCluster, tfjob_crd: Path) -> Iterator[Kueue]:
    """Real Kueue (hack/localcluster/addons/kueue.py), started once per session with its TFJob integration.
    Its TFJob webhooks see only namespaces labelled KUEUE_NAMESPACE_LABEL (the `kueue_namespace` fixture), so the
    other tests' TFJobs never depend on it."""
    from localcluster.addons.kueue import Kueue
    from support.kueue import KUEUE_NAMESPACE_LABEL

    instance = Kueue(cluster, namespace_labels=dict([KUEUE_NAMESPACE_LABEL]))
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def kueue_namespace(kueue: Kueue, cluster: LocalCluster, namespace: str) -> str:
    """The test's namespace, labelled for Kueue's webhooks (support/kueue.py's cover_namespace)."""
    from support.kueue import KUEUE_NAMESPACE_LABEL, cover_namespace

    cover_namespace(cluster, namespace, KUEUE_NAMESPACE_LABEL)
    return namespace


@pytest.fixture(scope="session")
def chart_monitoring() -> Monitoring:
    """The Helm chart's ServiceMonitor (resolved against its Service and Deployment) and rendered alert rules, as
    hack/localcluster/addons/prometheus.py reads them; building helm fails the tests that use it, never skips them."""
    from localcluster.addons.prometheus_chart import Monitoring

    return Monitoring.from_chart()


@pytest.fixture(params=["pods", "jobs"])
def backend(request: pytest.FixtureRequest, cluster: LocalCluster, tfjob_crd: Path, namespace: str,
            tmp_path: Path) -> Iterator[str]:
    """`tfop run --replica-backend` with each replica backend, watching the test's namespace."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--replica-backend", request.param).start()
    yield str(request.param)
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(80)}")
