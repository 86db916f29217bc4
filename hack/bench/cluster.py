"""The benchmark's own cluster: hack/local_cluster.py's control plane in a separate state directory, with two
changes that keep the figures about the operators rather than about the cluster around them:

- the operator under test (and the limit client) use their own client certificate, user `bench-operator`, and
  the apiserver writes an audit log of that user's requests: apiserver_request_total has no user label, so
  this is how the apiserver's own view of each contender's requests is counted (also logged: the admin's writes
  to batch Jobs and Pods, where the Job controller's requests for tfop's Jobs backend are found);
- the controller-manager and the scheduler get client QPS 1000 instead of 20 and 50, or binding 3,500 pods and
  collecting the previous run's garbage would throttle every contender the same and hide their differences;
- the scheduler has no default topology spreading: for every pod it lists the namespace's Services to find the
  pod's spreading selector, then counts the pods matching it on every node, so with N jobs in one namespace each
  bind costs O(N) and a run O(N^2) (at N=2,000, 14,000 Services and pods: 5,000 pods still unbound after 17
  minutes on this machine). Spreading pods over four fake nodes tells nothing about an operator;
- kwok starts pods with 16 workers instead of 4: at N=2,000 its 4 fell thousands of pods behind the scheduler,
  and a node's kubelet starts its pods independently of the other nodes';
- the apiserver deletes collections with 16 workers instead of 1, which only the bench's cleanup uses;
- the apiserver and the controller-manager serve their CPU profiles (`--profile`).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from bench.workload import tfjob
from localcluster import LocalCluster
from localcluster.pki import openssl
from tfop import yamlio
from tfop.api.constants import FINALIZER_REPLICA_TRACKING
from tfop.controller.children import TFJOBS
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, ApiError, NotFound
from tfop.kube.resource import CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, PODS, SERVICE_ACCOUNTS, SERVICES, Resource

OPERATOR_USER = "bench-operator"
ADMIN_USER = "tfop-admin"  # hack/localcluster/pki.py's admin certificate: the controller-manager, scheduler and kwok
TFJOB_CRD_NAME = "tfjobs.kubeflow.org"
COMPONENT_QPS = ["--kube-api-qps=1000", "--kube-api-burst=2000"]
# /debug/pprof on the secure port, for `--profile` (bench/profiles.py): off in the local cluster, where only what
# a cluster needs is served; here only the admin's certificate can read it.
PROFILING = ["--profiling=true"]
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
AUDIT_POLICY = f"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{OPERATOR_USER}"]
- level: Metadata
  users: ["{ADMIN_USER}"]
  verbs: ["create", "update", "patch", "delete"]
  resources: [{{group: "batch", resources: ["jobs", "jobs/status"]}}, {{group: "", resources: ["pods"]}}]
- level: None
"""

# With --config the scheduler ignores its client flags (--kubeconfig, --kube-api-qps): they are set here.
SCHEDULER_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: "{kubeconfig}", qps: 1000, burst: 2000}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args: {{defaultingType: List, defaultConstraints: []}}
"""

# A KwokConfiguration given this way is not defaulted: every option kwok v0.8.0 defaults is spelt out, with its
# default except podPlayStageParallelism (4).
KWOK_CONFIG = """apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  nodeLeaseDurationSeconds: 40
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
"""


def end_on_sigterm() -> None:
    """A bench run in the background ignores SIGINT; make SIGTERM end it through its clean-up (the `finally`
    blocks that stop the operator and destroy the cluster), which the default action would skip, leaving both
    running."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class BenchCluster:
    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()
        self.local = self._local_cluster()
        self._admin: KubeClient | None = None

    def _local_cluster(self) -> LocalCluster:
        return LocalCluster(self.directory, extra_args={
            "kube-apiserver": [f"--audit-policy-file={self.directory / 'audit-policy.yaml'}",
                               f"--audit-log-path={self.audit_log}", "--audit-log-maxsize=4000",
                               # Only DELETE of a whole collection uses these: the bench's cleanup between runs.
                               "--delete-collection-workers=16", *PROFILING],
            "kube-controller-manager": [*COMPONENT_QPS, *PROFILING],
            "kube-scheduler": [f"--config={self.directory / 'scheduler.yaml'}"],  # QPS set there
            "kwok": [f"--config={self.directory / 'kwok.yaml'}"],  # beside hack/localcluster/kwok-stages.yaml
        })

    @property
    def audit_log(self) -> Path:
        return self.directory / "audit.log"

    @property
    def kubeconfig(self) -> Path:
        """The admin's: the bench drives the workload with it, unaudited."""
        return self.local.kubeconfig

    @property
    def operator_kubeconfig(self) -> Path:
        return self.directory / "operator-kubeconfig"

    @property
    def bin_dir(self) -> Path:
        assert self.local.bin_dir is not None
        return self.local.bin_dir

    def up(self) -> None:
        """A fresh cluster: whatever an earlier bench left in the directory is destroyed first."""
        self.destroy()
        self.local = self._local_cluster()  # forget the old directory's ports
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "audit-policy.yaml").write_text(AUDIT_POLICY)
        (self.directory / "scheduler.yaml").write_text(SCHEDULER_CONFIG.format(kubeconfig=self.kubeconfig))
        (self.directory / "kwok.yaml").write_text(KWOK_CONFIG)
        self.local.up()
        self._make_operator_identity()

    def destroy(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None  # its address and credentials die with the cluster
        self.local.destroy()

    def admin(self) -> KubeClient:
        if self._admin is None:
            self._admin = KubeClient.from_kubeconfig(str(self.kubeconfig), qps=0, user_agent="tfop-bench")
        return self._admin

    def _make_operator_identity(self) -> None:
        pki = self.local.pki
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "operator.key", "-out", "operator.csr",
                "-subj", f"/O=system:masters/CN={OPERATOR_USER}", cwd=pki)
        openssl("x509", "-req", "-in", "operator.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "operator.crt", "-days", "30", "-extfile", "client.ext", cwd=pki)
        config: dict[str, Any] = yamlio.load(self.kubeconfig.read_text())
        for user in config["users"]:
            user["user"] = {"client-certificate": str(pki / "operator.crt"),
                            "client-key": str(pki / "operator.key")}
        self.operator_kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))

    # --- the TFJob CRD: ours or the Go operator's, one at a time under the same name ---------------------------
    def install_crd(self, path: Path, timeout: float = 120.0) -> None:
        """Replace whatever TFJob CRD is installed by the one in `path` and wait until it serves."""
        crd = next(doc for doc in yamlio.load_all(path.read_text())
                   if doc and doc.get("kind") == "CustomResourceDefinition")
        client = self.admin()
        deadline = time.monotonic() + timeout
        with contextlib.suppress(NotFound):
            client.delete(CUSTOM_RESOURCE_DEFINITIONS, TFJOB_CRD_NAME)
        while True:
            try:
                client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
                break
            except AlreadyExists:  # the old one is still being deleted (its objects go first)
                _check_deadline(deadline, f"the old {TFJOB_CRD_NAME} to go away")
                time.sleep(0.2)
        while not _condition(client.get(CUSTOM_RESOURCE_DEFINITIONS, TFJOB_CRD_NAME), "Established"):
            _check_deadline(deadline, f"{TFJOB_CRD_NAME} from {path} to become Established")
            time.sleep(0.1)
        # The first TFJob a new CRD stores takes the apiserver a second or two (it builds the storage): not
        # something the first run should be charged with.
        while True:
            try:
                client.create(TFJOBS, tfjob("warm-up"), "default")
                break
            except NotFound:  # Established, but the handler is not serving yet
                _check_deadline(deadline, f"{TFJOB_CRD_NAME} to serve")
                time.sleep(0.2)
        client.delete(TFJOBS, "warm-up", "default")

    # --- namespaces: one per run, so a run starts empty and its cleanup is one delete -------------------------
    def create_namespace(self, name: str, timeout: float = 60.0) -> None:
        client = self.admin()
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        deadline = time.monotonic() + timeout
        while True:  # the ServiceAccount admission plugin rejects pods until the default account exists
            try:
                client.get(SERVICE_ACCOUNTS, "default", name)
                return
            except NotFound:
                _check_deadline(deadline, f"the default ServiceAccount of namespace {name}")
                time.sleep(0.1)

    def delete_namespaces(self, names: list[str], timeout: float = 1800.0) -> float:
        """Empty and delete namespaces, and wait until every one is gone, so the next run starts on a quiet
        cluster; returns seconds.

        Emptied first with one DELETE per collection (pods with grace 0, so kwok need not finish each one), which
        takes half the time the namespace controller needs to find and delete them itself.
        """
        client = self.admin()
        started = time.monotonic()
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}

        def empty(name: str) -> None:
            # Services before their EndpointSlices (or the endpoint controller writes new ones) and before the
            # pods (or every pod deletion updates a slice); jobs last, so the garbage collector finds no children.
            for resource in (SERVICES, ENDPOINT_SLICES, PODS, TFJOBS):
                with contextlib.suppress(NotFound):
                    client.request("DELETE", resource.path(name), body=options, timeout=(5.0, timeout))
            _release_held_pods(client, name)  # the run's operator may be stopped by now
            with contextlib.suppress(NotFound):
                client.delete(NAMESPACES, name)

        with ThreadPoolExecutor(max(1, min(8, len(names)))) as pool:
            list(pool.map(empty, names))
        for name in names:
            while True:
                try:
                    client.get(NAMESPACES, name)
                except NotFound:
                    break
                _check_deadline(started + timeout, f"namespace {name} to be deleted")
                time.sleep(0.5)
        return time.monotonic() - started


def destroy_keeping_logs(cluster: BenchCluster, results: Path) -> None:
    """A bench's end, cut short or not: the components' logs kept under `results`, then the cluster gone."""
    copy_logs(cluster, results / "logs" / "cluster")
    cluster.destroy()


def copy_logs(cluster: BenchCluster, destination: Path) -> None:
    """Keep the components' logs next to the results: the cluster directory is destroyed at the end."""
    source = cluster.directory / "logs"
    if source.is_dir():
        shutil.copytree(source, destination, dirs_exist_ok=True)


def _condition(obj: dict[str, Any], condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def _release_held_pods(client: KubeClient, namespace: str) -> None:
    """tfop's finalizer off the pods that still hold it (docs/tfjob/reference.md, "What finished stays finished"),
    or with the operator stopped the namespace would wait on them for ever."""
    pods, _ = client.list(PODS, namespace)
    for pod in pods:
        if FINALIZER_REPLICA_TRACKING in (pod["metadata"].get("finalizers") or ()):
            with contextlib.suppress(ApiError):
                client.patch(PODS, pod["metadata"]["name"], {"metadata": {
                    "uid": pod["metadata"]["uid"],
                    "$deleteFromPrimitiveList/finalizers": [FINALIZER_REPLICA_TRACKING]}}, namespace,
                    patch_type="strategic")


def _check_deadline(deadline: float, waiting_for: str) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"timed out waiting for {waiting_for}")
