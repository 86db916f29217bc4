"""How tfop finds its credentials, against the real apiserver: kubeconfig contexts, an exec credential plugin whose
credential expires, a pod's service account token (read from its files, re-read when kubelet rotates it), and
the start-up path `tfop run` takes (make_client + check_cluster). tfop loads them with the kubernetes package's
loaders but without its generated client (tfop.kube.credentials); these tests say users see no difference.

Who a request was sent as is what the apiserver says in a SelfSubjectReview, so each check is the server's word.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import LocalCluster
from support.waiting import DEADLINE, wait_for
from tfop.kube import credentials
from tfop.kube.client import KubeClient
from tfop.kube.errors import TransportError
from tfop.kube.metrics import KubeMetrics
from tfop.preflight import check_cluster, make_client

UNREACHABLE = "https://127.0.0.1:1"  # nothing listens on port 1 of loopback
# An exec credential counts as expired 5 minutes before its expirationTimestamp (kube_config's skew guard).
EXEC_EXPIRY_SKEW = 300
# How long the exec plugin's first credential is fresh: long enough for the client to load and make its first
# requests on a loaded machine before it expires; the test then waits until the client uses the next one.
FRESH = 20


def who(client: KubeClient) -> str:
    review = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


@pytest.fixture
def tokens(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    """Tokens of two ServiceAccounts, by username, as `kubectl create token` gets them."""
    found = {}
    for account in ("first", "second"):
        cluster.kubectl("create", "serviceaccount", account, "-n", namespace)
        token = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=10m").stdout.strip()
        found[f"system:serviceaccount:{namespace}:{account}"] = token
    return found


def kubeconfig(cluster: LocalCluster, users: dict[str, dict[str, Any]], contexts: dict[str, tuple[str, str]],
               current: str) -> dict[str, Any]:
    """A kubeconfig with the cluster as `here` (its CA) and UNREACHABLE as `elsewhere`; contexts name
    (cluster, user)."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            "clusters": [{"name": "here", "cluster": {"server": cluster.server,
                                                       "certificate-authority": str(cluster.pki / "ca.crt")}},
                         {"name": "elsewhere", "cluster": {"server": UNREACHABLE,
                                                            "certificate-authority": str(cluster.pki / "ca.crt")}}],
            "users": [{"name": name, "user": user} for name, user in users.items()],
            "contexts": [{"name": name, "context": {"cluster": where, "user": user}}
                         for name, (where, user) in contexts.items()]}


def write(path: Path, config: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_the_current_context_is_used_and_a_named_context_picks_another(
        cluster: LocalCluster, tokens: dict[str, str], tmp_path: Path) -> None:
    (first, first_token), (second, second_token) = tokens.items()
    config = kubeconfig(cluster, {"a": {"token": first_token}, "b": {"token": second_token}},
                        {"first": ("here", "a"), "second": ("here", "b"), "away": ("elsewhere", "a")}, "second")
    path = write(tmp_path / "kubeconfig", config)

    assert who(KubeClient.from_kubeconfig(path)) == second
    assert who(KubeClient.from_kubeconfig(path, context="first")) == first
    away = KubeClient.from_kubeconfig(path, context="away", max_retries=0)
    assert away.host == UNREACHABLE
    with pytest.raises(TransportError):
        who(away)


@pytest.fixture
def exec_plugin(tmp_path: Path) -> tuple[Path, Path]:
    """A credential plugin (client.authentication.k8s.io/v1) that hands out the token in `token`, valid for the
    seconds in `ttl`, and appends a line to `calls` each time it runs. Returns (its directory, its script)."""
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"""import datetime, json, os, pathlib
here = pathlib.Path({str(tmp_path)!r})
with (here / "calls").open("a") as calls:
    calls.write(os.environ.get("KUBERNETES_EXEC_INFO", "") + "\\n")
expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float((here / "ttl").read_text()))
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {{"token": (here / "token").read_text().strip(),
                             "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}}}))
""")
    return tmp_path, plugin


def test_an_exec_plugin_runs_once_and_again_when_its_credential_expires(
        cluster: LocalCluster, tfjob_crd: Path, tokens: dict[str, str], exec_plugin: tuple[Path, Path],
        tmp_path: Path, namespace: str) -> None:
    (first, first_token), (second, second_token) = tokens.items()
    directory, plugin = exec_plugin
    (directory / "token").write_text(first_token)
    (directory / "ttl").write_text(str(EXEC_EXPIRY_SKEW + FRESH))
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(plugin)], "interactiveMode": "Never"}}
    path = write(tmp_path / "kubeconfig", kubeconfig(cluster, {"plugin": user}, {"here": ("here", "plugin")},
                                                     "here"))
    cluster.kubectl("create", "clusterrolebinding", f"{namespace}-reads-tfjobs", "--clusterrole=cluster-admin",
                    f"--serviceaccount={namespace}:first", f"--serviceaccount={namespace}:second")
    try:
        # What `tfop run --kubeconfig` does before its informers start.
        began = time.time()  # the plugin runs after this, so its credential expires no sooner than FRESH s after it
        client = make_client(path, qps=100, burst=100, metrics=KubeMetrics.create())
        check_cluster(client, [namespace])
        assert who(client) == first
        calls = (directory / "calls").read_text().splitlines()
        assert len(calls) == 1, "the plugin runs when the kubeconfig is loaded, not for each request"
        assert json.loads(calls[0])["kind"] == "ExecCredential"

        (directory / "token").write_text(second_token)
        (directory / "ttl").write_text("3600")
        # Still the first credential until it expires; then the plugin's next one.
        switched = wait_for(lambda: who(client) == second and time.time(), FRESH + DEADLINE,
                            "the client to run the plugin again once its credential expired", interval=1.0)
        assert switched >= began + FRESH - 1, "the credential was replaced while fresh"  # (whole seconds)
        assert who(client) == second
        assert len((directory / "calls").read_text().splitlines()) == 2, "once more when it expired, then cached"
    finally:
        cluster.kubectl("delete", "clusterrolebinding", f"{namespace}-reads-tfjobs", check=False)


def test_the_service_account_token_is_read_from_its_file_and_again_when_it_rotates(
        cluster: LocalCluster, tokens: dict[str, str], tmp_path: Path) -> None:
    """The in-cluster loader re-reads the token file once a minute (as client-go does), so this takes a minute."""
    (first, first_token), (second, second_token) = tokens.items()
    token_file = tmp_path / "token"
    token_file.write_text(first_token)
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes((cluster.pki / "ca.crt").read_bytes())
    host, port = cluster.server.removeprefix("https://").rsplit(":", 1)
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}

    client = KubeClient(credentials.in_cluster(str(token_file), str(ca_file), environ))
    assert client.host == cluster.server
    assert who(client) == first
    token_file.write_text(second_token)  # the kubelet writes the rotated token in place of the old one
    assert who(client) == first, "the token read a moment ago is still used"
    wait_for(lambda: who(client) == second, DEADLINE, "the rotated token to be used", interval=1.0)

    with pytest.raises(credentials.ConfigException):
        credentials.in_cluster(str(token_file), str(ca_file), {})  # not in a pod: no KUBERNETES_SERVICE_HOST
