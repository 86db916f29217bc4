"""`make run` on the local cluster: the CRD installed as hack/run.sh installs it (hack/localcluster/addons/webhook.py)
and `tfop run --webhook-addr` serving the conversion, so the seeds' v1alpha1 and v1beta1 manifests apply as
written and read back as v1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster
from localcluster.addons.webhook import CRD_NAME, install_crd
from support.operator_process import OperatorProcess
from support.webhook import apply_until_converted
from tfop import yamlio

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
V1_TYPES = {"MASTER": "Master", "WORKER": "Worker", "PS": "PS"}
HACK = Path(__file__).resolve().parents[2] / "hack"


@pytest.fixture
def run_crd(cluster: LocalCluster, tfjob_crd: Path) -> Iterator[tuple[str, Path]]:
    """The CRD as `make run` installs it on its own cluster; afterwards the checked-in one back, as other tests
    expect it (replace: an apply would keep the url beside the Service)."""
    yield install_crd(cluster)
    cluster.kubectl("replace", "-f", str(tfjob_crd))


@pytest.fixture
def run_operator(cluster: LocalCluster, run_crd: tuple[str, Path], namespace: str,
                 tmp_path: Path) -> Iterator[OperatorProcess]:
    addr, cert_dir = run_crd
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--webhook-addr", addr, "--webhook-cert-dir", str(cert_dir)).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(30)}")


@pytest.mark.parametrize("manifest", ["002-example-job.yaml", "001-example-tfjob.yaml"])
def test_a_seed_applies_as_written_and_reads_back_as_v1(cluster: LocalCluster, namespace: str,
                                                        run_operator: OperatorProcess, manifest: str) -> None:
    written = yamlio.load((SEEDS / manifest).read_text())
    name = written["metadata"]["name"]
    output = apply_until_converted(cluster, namespace, (SEEDS / manifest).read_text())
    print(f"$ kubectl apply -f {manifest}   # {written['apiVersion']}\n{output}")
    assert f"tfjob.kubeflow.org/{name}" in output
    v1 = json.loads(cluster.kubectl("get", "tfjobs.v1.kubeflow.org", name, "-n", namespace, "-o", "json").stdout)
    print(f"$ kubectl get tfjobs.v1.kubeflow.org {name} -o json   # apiVersion, tfReplicaSpecs' keys:\n"
          f"{v1['apiVersion']} {sorted(v1['spec']['tfReplicaSpecs'])}")
    assert v1["apiVersion"] == "kubeflow.org/v1"
    if written["apiVersion"] == "kubeflow.org/v1alpha1":
        types = {V1_TYPES[spec.get("tfReplicaType", "MASTER")] for spec in written["spec"]["replicaSpecs"]}
    else:
        types = set(written["spec"]["tfReplicaSpecs"])
    assert set(v1["spec"]["tfReplicaSpecs"]) == types


def test_the_certificates_and_port_are_kept_across_runs(cluster: LocalCluster, run_crd: tuple[str, Path]) -> None:
    """A second `make run` finds the CRD pointed where the first left it: same URL, same CA."""
    addr, cert_dir = run_crd
    ca, cert = (cert_dir / "ca.crt").read_bytes(), (cert_dir / "tls.crt").read_bytes()
    again = subprocess.run([sys.executable, str(HACK / "local_cluster.py"), "webhook", "crd",
                            "--dir", str(cluster.directory)], capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == [addr, str(cert_dir)]
    assert ((cert_dir / "ca.crt").read_bytes(), (cert_dir / "tls.crt").read_bytes()) == (ca, cert)
    client_config = json.loads(cluster.kubectl("get", "crd", CRD_NAME, "-o",
                                               "jsonpath={.spec.conversion.webhook.clientConfig}").stdout)
    assert client_config["url"] == f"https://{addr}/convert"
    assert "service" not in client_config
