"""Before the informers start: can we reach the cluster, does it trust us, and is the TFJob CRD there?

Informers retry every failure forever, which is right once the operator runs (an apiserver restart must not kill
it) and wrong at start: a wrong server address, a certificate that does not verify or a missing CRD would show as
an endless "list/watch failed" loop. One request each says which it is, and the operator exits 1 with the fix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tfop.api.constants import GROUP, PLURAL, VERSION
from tfop.controller.children import TFJOBS, pod_group_resource
from tfop.controller.plan.gang_schedulers import GangScheduler
from tfop.kube import credentials
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound, TLSVerificationError, TransportError
from tfop.kube.metrics import KubeMetrics
from tfop.startup import EXIT_UNREACHABLE, EXIT_USAGE, StartupError

CRD_NAME = f"{PLURAL}.{GROUP}"
CRD_INSTALL = "kubectl apply -f crd/kubeflow.org_tfjobs.yaml (from the tfop repository), or kubectl apply -k deploy/"
PREFLIGHT_RETRIES = 2  # a refused connection is tried three times (about a second) before we give up


def make_client(kubeconfig: str | None, *, qps: float, burst: int, metrics: KubeMetrics) -> KubeClient:
    """The client, or a StartupError (exit 2) saying what is wrong with the kubeconfig."""
    if kubeconfig and not Path(kubeconfig).is_file():
        where = "--kubeconfig" if os.environ.get("KUBECONFIG") != kubeconfig else "$KUBECONFIG"
        raise StartupError(EXIT_USAGE, "invalid kubeconfig", f"{where} {kubeconfig}: no such file",
                           "give the path of a kubeconfig file (kubectl config view --flatten writes one)")
    try:
        return KubeClient.auto(kubeconfig, qps=qps, burst=burst, metrics=metrics)
    except credentials.ConfigException as error:
        source = kubeconfig or "~/.kube/config (no --kubeconfig, no $KUBECONFIG, not in a pod)"
        raise StartupError(EXIT_USAGE, "invalid kubeconfig", f"cannot use kubeconfig {source}: {error}",
                           "pass --kubeconfig FILE or set $KUBECONFIG") from None


def check_cluster(client: KubeClient, namespaces: Sequence[str]) -> None:
    """Raises StartupError (exit 1) unless the apiserver answers, verifies, accepts our credentials, serves
    TFJobs and lets us list them where we will watch."""
    server = client.host
    try:
        group = client.request("GET", f"/apis/{GROUP}/{VERSION}", max_retries=PREFLIGHT_RETRIES)
        if not any(r.get("name") == PLURAL for r in (group or {}).get("resources") or ()):
            raise NotFound(404, "NotFound", f"{GROUP}/{VERSION} serves no {PLURAL}")
        scopes: list[str | None] = [*namespaces] or [None]
        for namespace in scopes:
            client.request("GET", TFJOBS.path(namespace), query=[("limit", "1")], max_retries=PREFLIGHT_RETRIES)
    except TLSVerificationError as error:
        raise StartupError(EXIT_UNREACHABLE, "cluster unreachable",
                           f"the apiserver at {server} has a certificate that does not verify: {error.message}",
                           "check the server address and certificate-authority(-data) in the kubeconfig") from None
    except TransportError as error:
        raise StartupError(EXIT_UNREACHABLE, "cluster unreachable", f"cannot reach the apiserver at {server}: "
                           f"{error.message}", "is the cluster running, and is the kubeconfig's server right? "
                           "(for the local cluster: make cluster-status)") from None
    except NotFound:
        raise StartupError(EXIT_UNREACHABLE, "TFJob CRD missing",
                           f"the cluster at {server} has no TFJob CRD ({CRD_NAME})", f"install it: {CRD_INSTALL}",
                           ) from None
    except ApiError as error:
        if error.status == 401:
            problem, fix = "rejected our credentials (401 Unauthorized)", "check the kubeconfig's user and token"
        elif error.status == 403:
            problem = f"does not let us list TFJobs: {error.message}"
            fix = ("grant the operator's RBAC (deploy/manifests/rbac.yaml), or pass --namespace for namespaces "
                   "it may read")
        else:
            problem, fix = f"answered {error}", "check the apiserver's health (kubectl get --raw /readyz)"
        raise StartupError(EXIT_UNREACHABLE, "cluster not ready", f"the apiserver at {server} {problem}", fix) from None


def gang_scheduler_problem(client: KubeClient, gang: GangScheduler | None) -> str | None:
    """Whether the apiserver serves the gang scheduler's PodGroups (its CRD is installed), asked once at start by
    discovery: an informer on a missing resource would only ever get 404s. None when it does (or none is set)."""
    if gang is None:
        return None
    resource = pod_group_resource(gang)
    try:
        served = client.request("GET", f"/apis/{resource.group}/{resource.version}")
    except NotFound:
        served = {}
    if any(isinstance(entry, dict) and entry.get("name") == resource.plural for entry in served.get("resources", ())):
        return None
    return (f"gang scheduler {gang.name} is configured but the apiserver does not serve {resource.kind} "
            f"{resource.api_version} ({gang.missing}): jobs wait until it does and the operator is restarted")
