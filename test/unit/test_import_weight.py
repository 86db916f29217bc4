"""The operator imports only the parts of the kubernetes package that run (docs/benchmarks/index.md, Memory).

Importing `kubernetes.client` (its generated API and model classes, pydantic under them) or the OAuth libraries that
kube_config names at its top (requests under them) cost 16 MB of the operator's idle RSS. Each check runs in a fresh
interpreter, since this one may have imported anything already.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What loading a kubeconfig or a service account does not need: their presence means someone imported the whole
# package again (`import kubernetes.config` or `kubernetes.client.ApiClient` anywhere in tfop does it).
HEAVY = ("kubernetes.client.api_client", "kubernetes.client.models", "kubernetes.client.api", "kubernetes.watch",
         "kubernetes.dynamic", "kubernetes.stream", "pydantic", "requests", "requests_oauthlib.oauth2_session",
         "oauthlib.oauth2.rfc6749")


def imported_packages(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_credentials_module_imports_the_kubernetes_package() -> None:
    """Whichever tfop module is imported first, the kubernetes package is reached through tfop.kube.credentials
    (by importlib, module by module): a plain `import kubernetes.config` anywhere would run the package's
    __init__, generated client and all, if that module were imported before credentials."""
    importers = sorted(str(path.relative_to(REPO)) for path in (REPO / "tfop").rglob("*.py")
                       if imported_packages(path) & {"kubernetes", "oauthlib", "requests_oauthlib", "requests"})
    assert importers == []


def run_python(code: str, tmp_path: Path) -> dict[str, object]:
    """Runs `code` in a fresh interpreter (cwd tmp_path); it prints one JSON object as its last line."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_running_the_operator_and_loading_credentials_imports_no_generated_client(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "c", "cluster": {"server": "https://198.18.0.1:6443", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "abc"}}],
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}]}))
    (tmp_path / "token").write_text("def")
    (tmp_path / "ca.crt").write_text("not read here, only required to be there")
    result = run_python(f"""
        import json, sys
        import tfop.cli
        from tfop.operator import run_operator
        from tfop.preflight import make_client
        from tfop.kube import credentials
        from tfop.kube.client import KubeClient
        from tfop.kube.metrics import KubeMetrics
        client = make_client("kubeconfig", qps=1, burst=1, metrics=KubeMetrics.create())
        in_pod = credentials.in_cluster("token", "ca.crt", {{"KUBERNETES_SERVICE_HOST": "198.18.0.1",
                                                              "KUBERNETES_SERVICE_PORT": "443"}})
        print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules], "host": client.host,
                          "headers": [client._headers("application/json").get("authorization"),
                                      credentials.bearer_token(in_pod)], "pod_host": in_pod.host}}))
        """, tmp_path)
    assert result == {"loaded": [], "host": "https://198.18.0.1:6443", "headers": ["Bearer abc", "bearer def"],
                      "pod_host": "https://198.18.0.1:443"}


def test_code_that_uses_the_whole_package_still_gets_it_after_tfop(tmp_path: Path) -> None:
    """The packages registered without their __init__ complete themselves on the first name they lack."""
    result = run_python("""
        import json, sys
        import tfop.kube.client
        from tfop.kube import credentials
        before = [m for m in ("pydantic", "requests", "kubernetes.watch") if m in sys.modules]
        import kubernetes, kubernetes.client, kubernetes.config, requests_oauthlib, oauthlib
        from kubernetes.client import CoreV1Api, V1Pod
        from kubernetes.client.api_client import ApiClient
        from requests_oauthlib.oauth2_session import OAuth2Session
        # kube_config's names for the OIDC refresh build the real objects when called.
        api_client = credentials._kube_config.ApiClient(configuration=credentials.Configuration())
        session = credentials._kube_config.OAuth2Session(client_id="x")
        print(json.dumps({
            "before": before,
            "client": [kubernetes.client.ApiClient is ApiClient, CoreV1Api.__name__, V1Pod.__name__,
                       kubernetes.client.Configuration is credentials.Configuration],
            "package": [kubernetes.__version__, kubernetes.watch.Watch.__name__,
                        callable(kubernetes.config.load_config), kubernetes.utils.parse_quantity("1Ki") == 1024],
            "oauth": [requests_oauthlib.OAuth2Session is OAuth2Session, oauthlib.__name__,
                      credentials._kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError.__name__],
            "built": [type(api_client) is ApiClient, type(session) is OAuth2Session]}))
        """, tmp_path)
    assert result == {
        "before": [],
        "client": [True, "CoreV1Api", "V1Pod", True],
        "package": [result["package"][0], "Watch", True, True],  # type: ignore[index]
        "oauth": [True, "oauthlib", "InvalidClientIdError"],
        "built": [True, True]}
