"""The progress endpoint against the real apiserver, with the operator as a process and the Kubeflow SDK's own
reporter (kubeflow.trainer.update_trainjob_status, PyPI kubeflow 0.5.0) posting with the environment tfop gives a
pod and a token the apiserver bound to that pod (the TokenRequest the kubelet makes for the projected volume; the
pods are kwok's, so nothing runs in them: test/e2e/test_progress_on_real_nodes.py posts from inside real pods).
A pod of the job updates its status; a pod of another job, a pod of no job and a forged token are refused."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from ports import free_port
from support.operator_process import OperatorProcess
from support.progress import (
    STATUS_PATH,
    audience,
    endpoint_ca,
    forged_token,
    pod_token,
    progress_config,
    report,
    trainer_sdk_python,
)
from support.tfjobs import children, create_job, job_status, replica
from support.waiting import wait_for, wait_for_count
from tfop.kube.client import KubeClient
from tfop.kube.resource import CONFIGMAPS, PODS

JOB = "trained"


@pytest.fixture(scope="module")
def sdk() -> Path:
    return trainer_sdk_python()


@dataclass(frozen=True)
class Endpoint:
    url: str  # the job JOB's status URL
    ca: Path
    pod: dict[str, Any]  # JOB's one pod
    operator: OperatorProcess


@pytest.fixture
def endpoint(request: pytest.FixtureRequest, cluster: LocalCluster, tfjob_crd: Path, namespace: str,
             kube_client: KubeClient, tmp_path: Path) -> Iterator[Endpoint]:
    """An operator serving the endpoint on loopback (with the config lines a test's `progress_config` marker
    adds), and the job JOB with its pod made (its namespace then has the endpoint's CA)."""
    port = free_port()
    marker = request.node.get_closest_marker("progress_config")
    config = progress_config(tmp_path / "config.yaml", port, extra=marker.args[0] if marker else "")
    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                               "--config", str(config)).start()
    create_job(kube_client, namespace, JOB, Worker=replica())
    [pod] = wait_for_count(lambda: children(kube_client, PODS, namespace, JOB), 1, message=f"the pod of {JOB}")
    url = f"https://127.0.0.1:{port}" + STATUS_PATH.format(namespace=namespace, name=JOB)
    yield Endpoint(url, endpoint_ca(kube_client, namespace, tmp_path), pod, operator)
    operator.kill()


def test_the_pods_are_given_kubeflows_environment_and_a_token_for_their_job(endpoint: Endpoint,
                                                                              namespace: str) -> None:
    [container] = endpoint.pod["spec"]["containers"]
    env = {variable["name"]: variable.get("value") for variable in container["env"]}
    assert {name: env.get(name) for name in ("KUBEFLOW_TRAINER_SERVER_URL", "KUBEFLOW_TRAINER_SERVER_CA_CERT",
                                             "KUBEFLOW_TRAINER_SERVER_TOKEN")} == {
        "KUBEFLOW_TRAINER_SERVER_URL": endpoint.url,
        "KUBEFLOW_TRAINER_SERVER_CA_CERT": "/var/run/secrets/tfop.kubeflow.org/progress/ca.crt",
        "KUBEFLOW_TRAINER_SERVER_TOKEN": "/var/run/secrets/tfop.kubeflow.org/progress/token"}
    [volume] = [v for v in endpoint.pod["spec"]["volumes"] if v["name"] == "tfop-progress"]
    token, files = volume["projected"]["sources"]
    assert token["serviceAccountToken"]["audience"] == audience(namespace, JOB)
    assert files["configMap"]["name"] == "tfop-progress"


def test_the_kubeflow_sdks_reporter_updates_the_jobs_status(endpoint: Endpoint, sdk: Path, cluster: LocalCluster,
                                                            kube_client: KubeClient, namespace: str,
                                                            tmp_path: Path) -> None:
    token = pod_token(kube_client, namespace, endpoint.pod, audience(namespace, JOB))
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, progress_percent=45,
                  estimated_remaining_seconds=600, metrics={"loss": 0.25, "currentEpoch": 2, "totalEpochs": 5})
    assert sent.returned is True, sent.log
    progress = wait_for(lambda: job_status(kube_client, namespace, JOB).get("trainerStatus"),
                        message="status.trainerStatus")
    assert {key: value for key, value in progress.items() if key not in ("lastUpdatedTime",
                                                                         "estimatedCompletionTime")} == {
        "progressPercentage": 45, "estimatedRemainingSeconds": 600, "currentEpoch": 2, "totalEpochs": 5,
        "metrics": [{"name": "loss", "value": "0.25"}, {"name": "currentEpoch", "value": "2"},
                    {"name": "totalEpochs", "value": "5"}],
        "reportedBy": endpoint.pod["metadata"]["name"]}
    columns = cluster.kubectl("get", "tfjobs", JOB, "-n", namespace).stdout.splitlines()
    header, row = columns[0].split(), columns[1].split()
    assert (row[header.index("PROGRESS")], row[header.index("ETA")]) == ("45", progress["estimatedCompletionTime"])


def test_tfops_shipped_reporter_sends_the_request_the_sdk_does(endpoint: Endpoint, sdk: Path,
                                                               kube_client: KubeClient, namespace: str,
                                                               tmp_path: Path) -> None:
    """The module the ConfigMap ships into the pods, run as a pod would (no TensorFlow here: the reporter alone)."""
    module = kube_client.get(CONFIGMAPS, "tfop-progress", namespace)["data"]["tfop_progress.py"]
    (tmp_path / "tfop_progress.py").write_text(module)
    token = pod_token(kube_client, namespace, endpoint.pod, audience(namespace, JOB))
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, reporter="tfop", progress_percent=70,
                  metrics={"currentStep": 700, "totalSteps": 1000})
    assert sent.returned is True, sent.log
    progress = wait_for(lambda: (job_status(kube_client, namespace, JOB).get("trainerStatus") or {}).get(
        "currentStep") == 700 and job_status(kube_client, namespace, JOB)["trainerStatus"],
        message="the shipped reporter's step in the status")
    assert (progress["progressPercentage"], progress["totalSteps"]) == (70, 1000)


def test_a_checkpoint_the_sdk_reports_is_in_the_status_and_on_the_pods(endpoint: Endpoint, sdk: Path,
                                                                       kube_client: KubeClient, namespace: str,
                                                                       tmp_path: Path) -> None:
    """The Kubeflow SDK's reporter unchanged, the time as time.time() gives it: a metric like any other."""
    token = pod_token(kube_client, namespace, endpoint.pod, audience(namespace, JOB))
    name = endpoint.pod["metadata"]["name"]
    first = int(time.time()) - 120
    for saved in (first, first + 60):  # 60 s apart: the second is written on the pod at once too
        sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, progress_percent=50,
                      metrics={"loss": 0.3, "lastCheckpointTime": saved + 0.25})
        assert sent.returned is True, sent.log
        said = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(saved))
        wait_for(lambda said=said: job_status(kube_client, namespace, JOB).get("lastCheckpointTime") == said,
                 message=f"status.lastCheckpointTime {said}")
        wait_for(lambda said=said: (kube_client.get(PODS, name, namespace)["metadata"].get("annotations") or {}).get(
            "volcano.sh/last-checkpoint-time") == said, message=f"the pod's volcano.sh/last-checkpoint-time {said}")
    # A time that is none is refused, and says why; the status keeps the last.
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, metrics={"lastCheckpointTime": "just now"})
    assert sent.returned is False and refused(sent.log, 422), sent.log
    assert job_status(kube_client, namespace, JOB)["lastCheckpointTime"] == said


def refused(sent_log: str, code: int) -> bool:
    return f"Status update failed: HTTP {code}" in sent_log


def test_a_pod_of_another_job_is_refused(endpoint: Endpoint, sdk: Path, kube_client: KubeClient, namespace: str,
                                         tmp_path: Path) -> None:
    create_job(kube_client, namespace, "other", Worker=replica())
    [other] = wait_for_count(lambda: children(kube_client, PODS, namespace, "other"), 1, message="other's pod")
    # A pod may ask for a token of any audience: the other job's pod with one for JOB's is still not JOB's.
    token = pod_token(kube_client, namespace, other, audience(namespace, JOB))
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, progress_percent=99)
    assert sent.returned is False and refused(sent.log, 403), sent.log
    # Its own token (its job's audience) is refused for JOB as well, by the audience.
    own = pod_token(kube_client, namespace, other, audience(namespace, "other"))
    sent = report(sdk, endpoint.url, endpoint.ca, own, tmp_path, progress_percent=99)
    assert sent.returned is False and refused(sent.log, 401), sent.log
    assert "trainerStatus" not in job_status(kube_client, namespace, JOB)
    # The operator says why, naming the pod and the job it belongs to.
    assert f"belongs to TFJob {namespace}/other" in endpoint.operator.log_path.read_text()


def test_a_pod_of_no_job_is_refused(endpoint: Endpoint, sdk: Path, kube_client: KubeClient, namespace: str,
                                    tmp_path: Path) -> None:
    # Labelled as the job's pods are: labels are anyone's to write, its controller is not.
    labels = dict(endpoint.pod["metadata"]["labels"])
    bare = kube_client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "labels": labels},
                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, namespace)
    token = pod_token(kube_client, namespace, bare, audience(namespace, JOB))
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, progress_percent=99)
    assert sent.returned is False and refused(sent.log, 403), sent.log
    assert "trainerStatus" not in job_status(kube_client, namespace, JOB)


def test_a_forged_token_is_refused(endpoint: Endpoint, sdk: Path, kube_client: KubeClient, namespace: str,
                                   tmp_path: Path) -> None:
    token = forged_token(namespace, endpoint.pod, audience(namespace, JOB))
    sent = report(sdk, endpoint.url, endpoint.ca, token, tmp_path, progress_percent=99)
    assert sent.returned is False and refused(sent.log, 401), sent.log
    assert "trainerStatus" not in job_status(kube_client, namespace, JOB)


def post(url: str, ca: Path, token: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """One POST as any HTTPS client sends it; (status, the JSON answer)."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30, context=ssl.create_default_context(cafile=str(ca))) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.progress_config("  reportsPerSecond: 0.001\n  burst: 2\n")
def test_a_job_past_its_rate_and_a_body_past_its_bound_are_refused(endpoint: Endpoint, kube_client: KubeClient,
                                                                    namespace: str) -> None:
    token = pod_token(kube_client, namespace, endpoint.pod, audience(namespace, JOB))
    big = json.dumps({"trainerStatus": {"metrics": [{"name": "m", "value": "x" * 64}] * 1200}}).encode()
    assert post(endpoint.url, endpoint.ca, token, big)[0] == 413  # refused unparsed, before the rate counts it
    report_of = json.dumps({"trainerStatus": {"progressPercentage": 10}}).encode()
    codes = [post(endpoint.url, endpoint.ca, token, report_of)[0] for _ in range(3)]
    code, answer = post(endpoint.url, endpoint.ca, token, report_of)
    assert (codes, code, answer["reason"]) == ([200, 200, 429], 429, "TooManyRequests")
    over = json.dumps({"trainerStatus": {"progressPercentage": 101}}).encode()
    # The rate is counted before the body is read: a flood of bad reports costs no parse.
    assert post(endpoint.url, endpoint.ca, token, over)[0] == 429
