"""The Kubeflow Training SDK (kubeflow-training, `TrainingClient(job_kind="TFJob")`) for the tests, in its own
virtualenv (hack/sdk-venv.sh): it needs a kubernetes client older than tfop's, so every call runs the SDK in a
subprocess (test/support/kubeflow_sdk/call.py) and comes back as JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.builds import built
from support.waiting import DEADLINE

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "kubeflow_sdk"
# What a wait_for_job_conditions is given: the suite's DEADLINE, in the SDK's whole seconds.
SDK_WAIT = int(DEADLINE)


class SdkError(Exception):
    """The SDK raised: `kind` is its exception's class name, the message its text."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def sdk_python() -> Path:
    """The Kubeflow SDK virtualenv's python, made on first use (seconds: pip from the package index)."""
    return built("sdk-venv.sh", "the Kubeflow SDK virtualenv", timeout=600)


class TrainingClient:
    """The SDK's TrainingClient for one namespace, method by method: `client.call("get_job", name="x")`."""

    def __init__(self, python: Path, kubeconfig: Path, namespace: str) -> None:
        self.python, self.kubeconfig, self.namespace = python, kubeconfig, namespace

    def call(self, method: str, process_timeout: float = DEADLINE + 60, **kwargs: Any) -> Any:
        """The SDK's `method` in a process of its own, given up after `process_timeout`: more than DEADLINE, so that
        a wait_for_job_conditions given that much (SDK_WAIT) fails with the SDK's own message first."""
        request = {"kubeconfig": str(self.kubeconfig), "namespace": self.namespace, "method": method,
                   "kwargs": kwargs}
        result = subprocess.run([str(self.python), str(SCRIPTS / "call.py")], input=json.dumps(request),
                                capture_output=True, text=True, check=False, timeout=process_timeout)
        assert result.returncode == 0 and result.stdout.strip(), f"the SDK process failed:\n{result.stderr}"
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        if "error" in answer:
            raise SdkError(answer["error"], answer["message"])
        return answer["value"]

    def required_fields(self) -> list[str]:
        """The path of every TFJob field the SDK's models refuse to hold as None (required_fields.py)."""
        result = subprocess.run([str(self.python), str(SCRIPTS / "required_fields.py")], capture_output=True,
                                text=True, check=True, timeout=120)
        return list(json.loads(result.stdout))


def schema_gap(schema: dict[str, Any], path: str) -> str | None:
    """Whether a TFJob the CRD schema `schema` accepts may lack the field at `path` (a required_fields.py path):
    None when the schema requires it or defaults it; "pruned" when the schema does not declare it below a node
    that drops unknown fields, so it is never stored; "metadata" for the object's own metadata, which the
    apiserver checks as it does every object's; else why it may be missing."""
    if path.startswith("metadata."):
        return "metadata"
    node = schema
    parts = path.split(".")
    for position, part in enumerate(parts):
        name = part.rstrip("[]")
        child = node.get("additionalProperties") if name == "*" else node.get("properties", {}).get(name)
        if child is None:
            return "kept as given, unchecked" if node.get("x-kubernetes-preserve-unknown-fields") else "pruned"
        if position == len(parts) - 1:
            return None if name in node.get("required", []) or "default" in child else "neither required nor defaulted"
        node = child
        for _ in range((len(part) - len(name)) // 2):
            node = node["items"]
    return None
