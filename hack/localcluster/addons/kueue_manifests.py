"""Kueue's manifests as a local cluster installs them, read from the Kueue module's own config/ (Go module cache) and
made over for a Kueue on loopback (hack/localcluster/addons/kueue.py runs it): its CRDs with their conversion
webhooks pointed at it, its webhook configurations for its own kinds and the enabled integrations, and the Service
and APIService of its visibility API."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tfop import yamlio

from ..supervisor import ClusterError

NAMESPACE = "kueue-system"
KUEUE_GROUP = "kueue.x-k8s.io"
# The on-demand visibility server's API (pending Workloads and their positions), its Service as a release names it,
# and the fixed directory it reads its serving certificate from when Kueue's internal certificates are off.
VISIBILITY_API = "v1beta2.visibility.kueue.x-k8s.io"
VISIBILITY_SERVICE = "kueue-visibility-server"
VISIBILITY_CERT_DIR = Path("/visibility")
WEBHOOK_NAMES = {"MutatingWebhookConfiguration": "kueue-mutating-webhook-configuration",
                 "ValidatingWebhookConfiguration": "kueue-validating-webhook-configuration"}
# The kinds of Kueue's integrations that live in the core or apps group, spelt without one.
CORE_INTEGRATIONS = {"pod": ("", "pods"), "deployment": ("apps", "deployments"),
                     "statefulset": ("apps", "statefulsets")}


def integration_resource(name: str) -> tuple[str, str]:
    """(API group, resource) an integration's webhooks are registered for: `kubeflow.org/tfjob` -> tfjobs."""
    if name in CORE_INTEGRATIONS:
        return CORE_INTEGRATIONS[name]
    group, _, kind = name.rpartition("/")
    return group, f"{kind}s"


def release_integrations(module: Path) -> list[str]:
    """The integrations a Kueue release enables (integrations.frameworks in the Configuration its manifests ship),
    read from the module's own config/: what a user who installs that release runs."""
    config = yamlio.load((module / "config" / "components" / "manager" / "controller_manager_config.yaml").read_text())
    frameworks = (config.get("integrations") or {}).get("frameworks")
    if not isinstance(frameworks, list) or not frameworks:
        raise ClusterError(f"{module}'s shipped Configuration lists no integrations.frameworks")
    return [str(framework) for framework in frameworks]


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yamlio.load_all(path.read_text()) if doc]


def render_crds(module: Path, url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's CRDs as its kustomization lists them, with the conversion webhooks it enables pointed at `url`."""
    crd_dir = module / "config" / "components" / "crd"
    kustomization = yamlio.load((crd_dir / "kustomization.yaml").read_text())
    crds = {doc["metadata"]["name"]: doc for resource in kustomization["resources"]
            for doc in _documents(crd_dir / resource)}
    for patch in kustomization.get("patches") or []:
        for doc in _documents(crd_dir / patch["path"]):
            conversion = doc.get("spec", {}).get("conversion")
            if not conversion:
                continue  # a patch of something else than the conversion
            name = doc["metadata"]["name"]
            if name not in crds:
                raise ClusterError(f"{crd_dir / patch['path']} patches {name}, which the kustomization lists not")
            crds[name]["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {"conversionReviewVersions": conversion["webhook"]["conversionReviewVersions"],
                            "clientConfig": {"url": url, "caBundle": ca_bundle}}}
    return list(crds.values())


def render_webhooks(module: Path, base_url: str, ca_bundle: str, integrations: Iterable[str],
                    namespace_labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Kueue's webhook configurations, keeping the webhooks of its own kinds and of `integrations`, called at
    `base_url` + their path. `namespace_labels` (if any) select the namespaces the integrations' webhooks see."""
    wanted = {integration_resource(name): name for name in integrations}
    found: set[str] = set()
    configurations = []
    for doc in _documents(module / "config" / "components" / "webhook" / "manifests.yaml"):
        kept = []
        for original in doc["webhooks"]:
            targets = {(group, resource) for rule in original["rules"] for group in rule["apiGroups"]
                       for resource in rule["resources"]}
            own = any(group == KUEUE_GROUP for group, _ in targets)
            matched = {wanted[target] for target in targets if target in wanted}
            if not own and not matched:
                continue
            found |= matched
            webhook = copy.deepcopy(original)
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"{base_url}{path}", "caBundle": ca_bundle}
            if matched and namespace_labels:
                webhook["namespaceSelector"] = {"matchLabels": dict(namespace_labels)}
            kept.append(webhook)
        configurations.append({**doc, "metadata": {"name": WEBHOOK_NAMES[doc["kind"]]}, "webhooks": kept})
    missing = set(wanted.values()) - found
    if missing:
        raise ClusterError(f"Kueue's webhook manifests have no webhook for the integration(s) {sorted(missing)}")
    return configurations


def visibility_manifests(module: Path, port: int, ca_bundle: str) -> list[dict[str, Any]]:
    """The release's Service and APIService of the visibility API (config/components/visibility, names prefixed as
    its kustomization does), for a server at 127.0.0.1:`port`: the Service an ExternalName Service for 127.0.0.1
    (an EndpointSlice cannot point at loopback; with aggregator routing off the apiserver dials the Service's name),
    the APIService trusting Kueue's CA instead of skipping verification."""
    base = module / "config" / "components" / "visibility"
    service = yamlio.load((base / "service.yaml").read_text())
    apiservice = yamlio.load((base / "apiservice_v1beta2.yaml").read_text())
    if apiservice["metadata"]["name"] != VISIBILITY_API:
        raise ClusterError(f"{base / 'apiservice_v1beta2.yaml'} registers {apiservice['metadata']['name']}, not "
                           f"{VISIBILITY_API}")
    service["metadata"]["name"] = VISIBILITY_SERVICE
    service["spec"] = {"type": "ExternalName", "externalName": "127.0.0.1",
                       "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
    spec = {key: value for key, value in apiservice["spec"].items() if key != "insecureSkipTLSVerify"}
    spec["service"] = {"namespace": NAMESPACE, "name": VISIBILITY_SERVICE, "port": port}
    spec["caBundle"] = ca_bundle
    return [service, {**apiservice, "spec": spec}]
