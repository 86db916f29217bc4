"""The Kubeflow Training SDK's own way of running Python: `create_job(train_func=...)` ships a function's source
into pods of the project's TensorFlow image on the real node, where TensorFlow reads the TF_CONFIG tfop wrote;
the SDK waits for Succeeded, reads the chief's log with get_job_logs and deletes the job. tfop runs as a process.

The SDK's create_job has no node selector, so a MutatingAdmissionPolicy puts the test namespace's pods on the real
node, as a cluster administrator pins a team's namespace to its nodes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL
from localcluster.operator_config import tensorflow_image
from support.operator_process import OperatorProcess
from support.python_sdk import TrainingClient, sdk_python
from support.real_node_jobs import job_pods
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for


@pytest.fixture
def on_real_node(real_node: LocalCluster, namespace: str) -> Iterator[str]:
    """Every pod created in the test's namespace selects the real node and tolerates its taint."""
    name = f"real-node-{namespace}"
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
              "metadata": {"name": name}, "spec": {
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE"], "resources": ["pods"]}]},
                  "failurePolicy": "Fail", "reinvocationPolicy": "Never",
                  "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": (
                      f'[JSONPatch{{op: "add", path: "/spec/nodeSelector", value: {{"{NODE_LABEL}": "true"}}}}, '
                      f'JSONPatch{{op: "add", path: "/spec/tolerations", value: [{{"key": "{NODE_LABEL}", '
                      '"operator": "Exists", "effect": "NoSchedule"}]}]')}}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "matchResources": {"namespaceSelector": {
                   "matchLabels": {"kubernetes.io/metadata.name": namespace}}}}}
    for obj in (policy, binding):
        real_node.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def pinned() -> bool:  # the apiserver applies a new policy once its informer has it
        result = real_node.kubectl("run", "probe", "-n", namespace, "--image=probe", "--dry-run=server", "-o",
                                   "jsonpath={.spec.nodeSelector}", check=False)
        return NODE_LABEL in result.stdout

    wait_for(pinned, DEADLINE, "the admission policy to pin the namespace's pods", interval=0.5)
    yield namespace
    for kind in ("mutatingadmissionpolicybinding", "mutatingadmissionpolicy"):
        real_node.kubectl("delete", kind, name, "--wait=false", check=False)


def test_a_train_func_runs_with_tensorflow_and_the_sdk_waits_reads_logs_and_deletes(
        real_node: LocalCluster, operator: OperatorProcess, on_real_node: str) -> None:
    namespace = on_real_node
    sdk = TrainingClient(sdk_python(), real_node.kubeconfig, namespace)
    sdk.call("create_job", name="sdk-train", train_func="report_tf_config", parameters={"greeting": "hello"},
             base_image=tensorflow_image(), num_chief_replicas=1, num_workers=1)
    job = sdk.call("wait_for_job_conditions", name="sdk-train", wait_timeout=600, polling_interval=2,
                   process_timeout=700)
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded", job["status"]

    logs = sdk.call("get_job_logs", name="sdk-train")  # (logs by pod, events): the chief's, job-role=master
    [(pod, log)] = logs[0].items()
    assert pod.startswith("sdk-train-chief-")
    report = json.loads(next(line.removeprefix("tf_config_report ") for line in log.splitlines()
                             if line.startswith("tf_config_report ")))
    assert report == {"task": ["chief", 0], "jobs": ["chief", "worker"], "chief": True, "greeting": "hello"}

    sdk.call("delete_job", name="sdk-train")
    wait_for(lambda: sdk.call("list_jobs") == [] and not job_pods(real_node, namespace, "sdk-train"), timeout=DEADLINE,
             message="the job and its pods gone", interval=KUBECTL_INTERVAL)
