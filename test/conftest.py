"""Fixtures shared by the integration and e2e suites: one real local control plane per test session.

The control plane is built from source (hack/build-controlplane.sh, cached per user) and started on loopback in a
temporary directory. If it cannot be built or started, every test that needs it ERRORS with the reason: these
suites never skip.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# hack/ and test/ are on sys.path through setup.cfg's pytest `pythonpath`.
from localcluster import LocalCluster
from support.crds import crd_established, replace_crd
from support.heartbeat import Heartbeat
from support.namespaces import make_namespace, release_tracked_pods
from support.operator_process import OperatorProcess
from support.tiers import is_long
from support.time_limit import TimeLimitPlugin
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import NAMESPACES

REPO = Path(__file__).resolve().parent.parent
CRD_FILE = REPO / "crd" / "kubeflow.org_tfjobs.yaml"
GO_CRD_IN_MODULE = Path("manifests/base/crds/kubeflow.org_tfjobs.yaml")
SUITES = ("unit", "integration", "e2e")  # the directories under test/ and the markers that select them
_versions: list[str] = []


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m deselection looks at the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its suite, taken from its directory, so no module can forget its marker; and `long`
    the tests support/tiers.py leaves to `make test-all`."""
    tests = REPO / "test"
    for item in items:
        suite = item.path.relative_to(tests).parts[0] if item.path.is_relative_to(tests) else ""
        if suite not in SUITES:
            raise pytest.UsageError(f"{item.nodeid}: tests live in test/{{{','.join(SUITES)}}}/, "
                                    "whose directory gives their marker")
        item.add_marker(suite)
        if is_long(f"test/{item.path.relative_to(tests).as_posix()}::{item.nodeid.partition('::')[2]}"):
            item.add_marker("long")


@pytest.fixture(scope="session")
def cluster_dir() -> Iterator[Callable[[str], Path]]:
    """Makes a local cluster's state directory. Short, because a real node's kubelet puts unix sockets (108 bytes
    at most) under it, and pytest's /tmp/pytest-of-USER/pytest-NNN/ grows by a digit every hundredth run; the
    cluster's destroy() removes its own, so only the empty parent is left to remove here."""
    root = Path(tempfile.mkdtemp(prefix="tfop-"))
    yield lambda name: Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
    with contextlib.suppress(OSError):
        root.rmdir()


@pytest.fixture(scope="session")
def cluster(cluster_dir: Callable[[str], Path], request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    local = LocalCluster(cluster_dir("cluster"))
    try:
        local.up()
        _versions.append(local.version())
        yield local
    finally:
        OperatorProcess.stop_all()
        if request.session.testsfailed:
            capture = request.config.pluginmanager.getplugin("capturemanager")
            # Shown whatever the last test's outcome: a session fixture's teardown output is otherwise kept with it.
            with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                print_component_logs(local)
        local.destroy()


# What a failed session's shared cluster leaves to read, since destroy() removes its logs: the controller-manager
# (a cold run's e2e lane once waited 45 minutes for default ServiceAccounts it never made) and the watchdog.
KEPT_LOGS = ("kube-controller-manager", "watchdog", "kube-apiserver")


def print_component_logs(local: LocalCluster, lines: int = 40) -> None:
    for component in KEPT_LOGS:
        path = local.log_file(component)
        with contextlib.suppress(OSError):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            print(f"--- the shared cluster's {component} log, its last {len(tail)} lines ({path}) ---", flush=True)
            print("\n".join(tail), flush=True)


@pytest.fixture(scope="session")
def tfjob_crd(cluster: LocalCluster) -> Path:
    """The checked-in CRD, installed the way the docs tell users to (plain client-side `kubectl apply`)."""
    cluster.kubectl("apply", "-f", str(CRD_FILE))
    wait_for(lambda: crd_established(cluster, "tfjobs.kubeflow.org"), DEADLINE, "the TFJob CRD to be Established")
    return CRD_FILE


@pytest.fixture
def kube_client(cluster: LocalCluster) -> KubeClient:
    return KubeClient.from_kubeconfig(str(cluster.kubeconfig))


@pytest.fixture(scope="session")
def training_operator() -> tuple[Path, Path]:
    """(the Go operator's binary, its TFJob CRD), built or reused by hack/build-training-operator.sh."""
    script = str(REPO / "hack" / "build-training-operator.sh")
    built = subprocess.run(["bash", script], capture_output=True, text=True, timeout=3600, check=False)
    assert built.returncode == 0, f"building the training operator failed:\n{built.stderr[-3000:]}"
    module = subprocess.run(["bash", script, "--module-dir"], capture_output=True, text=True, timeout=600,
                            check=False)
    crd = Path(module.stdout.strip()) / GO_CRD_IN_MODULE
    assert module.returncode == 0 and crd.is_file(), f"the training operator's CRD was not found:\n{module.stderr}"
    return Path(built.stdout.strip().splitlines()[-1]) / "training-operator.v1", crd


@pytest.fixture
def go_crd(cluster: LocalCluster, tfjob_crd: Path, training_operator: tuple[Path, Path]) -> Iterator[Path]:
    """The Go operator's CRD for the test; tfop's is back afterwards, whatever happened."""
    replace_crd(cluster, training_operator[1])
    try:
        yield training_operator[1]
    finally:
        replace_crd(cluster, CRD_FILE)


@pytest.fixture
def namespace(kube_client: KubeClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting for it to go)."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    # Through the API rather than kubectl: most tests take this fixture, and a kubectl process costs about 0.13 s
    # of CPU (its discovery cache read each time) on a suite that is CPU-bound.
    make_namespace(kube_client, name)
    yield name
    # It goes in the background, as `kubectl delete --wait=false`; a test may have left the apiserver down. Its
    # operator is stopped by now, so the pods still holding tfop's finalizer are released here.
    with contextlib.suppress(ApiError):
        release_tracked_pods(kube_client, name)
        kube_client.delete(NAMESPACES, name)


_heartbeat = Heartbeat()


def pytest_configure(config: pytest.Config) -> None:
    def write(line: str) -> None:
        # Looked up late (the terminal reporter registers after this conftest); capture is lifted for the line,
        # as pytest holds the test's stdout and stderr meanwhile.
        writer = config.get_terminal_writer()
        capture = config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            writer.line()
            writer.line(line)
            writer.flush()

    _heartbeat.write = write
    # Each test's call has a time limit (its suite's, or its time_limit marker's): past it, the test fails by its
    # name with every thread's stack, and the run goes on to the next test and to the cluster's teardown.
    config.pluginmanager.register(TimeLimitPlugin(announce=write), "tfop-time-limit")


def pytest_sessionfinish(session: pytest.Session) -> None:
    _heartbeat.stop()


def pytest_runtest_logstart(nodeid: str) -> None:
    _heartbeat.test_started(nodeid)


def pytest_runtest_logfinish(nodeid: str) -> None:
    _heartbeat.test_finished()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _versions:
        terminalreporter.write_line(f"integration tests ran against kube-apiserver {_versions[0]}")
