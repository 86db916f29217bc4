"""The Helm chart's conversion webhook (webhook.enabled) against the kustomize component deploy/webhook/ it mirrors:
the same Service, Issuer, Certificate, Deployment flags and CRD conversion; the options the component has not
(another release, an issuer of yours, no cert-manager); and the values it refuses."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from integration.test_deploy import (
    CHART,
    DEPLOY,
    MONITORING_APIS,
    NETWORK_POLICY,
    SYSTEM_NAMESPACE,
    Object,
    by_kind_and_name,
    comparable,
    documents,
    helm_template,
    run_helm,
)
from localcluster import LocalCluster
from support.webhook import make_webhook_certificates

CRD = ("CustomResourceDefinition", "tfjobs.kubeflow.org")
WEBHOOK = ["--set", "webhook.enabled=true"]
KEEP = "helm.sh/resource-policy"


def rendered(helm: Path, *values: str, release: str = "tfop", namespace: str = SYSTEM_NAMESPACE) -> dict[
        tuple[str, str], Object]:
    return by_kind_and_name(documents(helm_template(helm, release, namespace, *values)))


def client_config(objects: dict[tuple[str, str], Object]) -> Object:
    return dict(objects[CRD]["spec"]["conversion"]["webhook"]["clientConfig"])


def test_helm_webhook_renders_the_kustomize_webhook_component(cluster: LocalCluster, helm: Path,
                                                               tmp_path: Path) -> None:
    deploy = os.path.relpath(DEPLOY, tmp_path)  # kustomize refuses absolute paths to other roots
    (tmp_path / "kustomization.yaml").write_text(f"resources: [{deploy}]\ncomponents: [{deploy}/webhook]\n")
    base = by_kind_and_name(documents(cluster.kubectl("kustomize", str(tmp_path)).stdout))
    del base[("Namespace", SYSTEM_NAMESPACE)]  # helm install --create-namespace
    # No --include-crds: with the webhook the CRD is a template (crds/ is skipped at install).
    ours = rendered(helm, *WEBHOOK, *MONITORING_APIS, *NETWORK_POLICY)  # the base's NetworkPolicy is on
    assert sorted(ours) == sorted(base)
    assert ours[CRD]["metadata"]["annotations"].pop(KEEP) == "keep"  # helm uninstall must not delete every TFJob
    # The chart's CRD is the release's object, labelled as such; the base's belongs to no instance.
    assert ours[CRD]["metadata"]["labels"].pop("app.kubernetes.io/instance") == "tfop"
    for key, theirs in base.items():
        if key == ("ConfigMap", "tf-job-operator-config"):
            continue  # the same settings, with comments in the base (test_deploy compares them)
        assert comparable(ours[key]) == theirs, f"{key} differs between the Helm chart and deploy/webhook/"


def test_without_the_webhook_the_chart_templates_no_crd(helm: Path) -> None:
    assert CRD not in rendered(helm)
    assert "--webhook-addr" not in str(rendered(helm)[("Deployment", "tfop")])


def test_the_crd_names_the_releases_service_and_issuer(helm: Path) -> None:
    objects = rendered(helm, *WEBHOOK, release="ml", namespace="training")
    assert client_config(objects) == {"service": {"namespace": "training", "name": "ml-tfop-webhook",
                                                  "path": "/convert", "port": 443}}
    assert objects[CRD]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "training/ml-tfop-webhook"
    assert objects[("Certificate", "ml-tfop-webhook")]["spec"]["dnsNames"] == [
        "ml-tfop-webhook.training.svc", "ml-tfop-webhook.training.svc.cluster.local"]
    assert objects[("Service", "ml-tfop-webhook")]["spec"]["ports"][0]["targetPort"] == "webhook"


def test_an_issuer_of_yours_signs_the_certificate(helm: Path) -> None:
    objects = rendered(helm, *WEBHOOK, "--set", "webhook.certManager.issuerRef.kind=ClusterIssuer",
                       "--set", "webhook.certManager.issuerRef.name=internal-ca")
    assert ("Issuer", "tfop-webhook") not in objects
    assert objects[("Certificate", "tfop-webhook")]["spec"]["issuerRef"] == {"kind": "ClusterIssuer",
                                                                             "name": "internal-ca"}


def test_without_cert_manager_the_crd_carries_the_ca_bundle_given(helm: Path) -> None:
    objects = rendered(helm, *WEBHOOK, "--set", "webhook.certManager.enabled=false", "--set",
                       "webhook.caBundle=Q0E=", "--set", "webhook.port=10443")
    assert {kind for kind, _ in objects} & {"Certificate", "Issuer"} == set()
    assert client_config(objects)["caBundle"] == "Q0E="
    assert "cert-manager.io/inject-ca-from" not in objects[CRD]["metadata"]["annotations"]
    container = objects[("Deployment", "tfop")]["spec"]["template"]["spec"]["containers"][0]
    assert "--webhook-addr=:10443" in container["args"]
    assert {"name": "webhook", "containerPort": 10443} in container["ports"]


def test_the_network_policy_lets_the_apiserver_reach_the_webhook(helm: Path) -> None:
    policy = rendered(helm, *WEBHOOK, "--set", "networkPolicy.enabled=true")[("NetworkPolicy", "tfop")]
    assert {"ports": [{"port": "webhook", "protocol": "TCP"}]} in policy["spec"]["ingress"]


def test_helm_chart_with_the_webhook_lints(helm: Path) -> None:
    result = run_helm(helm, "lint", "--strict", str(CHART), *WEBHOOK)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("values", "complaint"), [
    (["--set", "webhook.certManager.enabled=false"], "webhook.caBundle"),
    (["--set", "webhook.port=0"], "/webhook/port"),
])
def test_helm_chart_refuses_webhook_values_that_cannot_work(helm: Path, values: list[str], complaint: str) -> None:
    result = run_helm(helm, "template", "tfop", str(CHART), *WEBHOOK, *values)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


def test_helm_takes_over_the_crd_as_documented_and_keeps_it_on_uninstall(
        cluster: LocalCluster, tfjob_crd: Path, helm: Path, namespace: str, tmp_path: Path) -> None:
    """docs/install/webhook.md's steps on a cluster whose CRD came from crd/: Helm refuses to take it unasked;
    handed to Helm, it installs with --skip-crds (without cert-manager, which the local cluster lacks: a Secret
    and caBundle of ours)."""
    ca = make_webhook_certificates(tmp_path)
    cluster.kubectl("create", "secret", "tls", "tfop-webhook-cert", "-n", namespace,
                    f"--cert={tmp_path / 'tls.crt'}", f"--key={tmp_path / 'tls.key'}")
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    bundle = base64.b64encode(ca.read_bytes()).decode()
    values = [*WEBHOOK, "--set", "webhook.certManager.enabled=false", "--set", f"webhook.caBundle={bundle}"]
    refused = run_helm(helm, "install", "tfop", str(CHART), "-n", namespace, *values, *kubeconfig)
    assert refused.returncode != 0 and "cannot be imported into the current release" in refused.stderr, refused
    cluster.kubectl("label", "crd", CRD[1], "app.kubernetes.io/managed-by=Helm")
    cluster.kubectl("annotate", "crd", CRD[1], "meta.helm.sh/release-name=tfop",
                    f"meta.helm.sh/release-namespace={namespace}")
    try:
        result = run_helm(helm, "install", "tfop", str(CHART), "-n", namespace, "--skip-crds", *values, *kubeconfig)
        assert result.returncode == 0, result.stdout + result.stderr
        crd = json.loads(cluster.kubectl("get", "crd", CRD[1], "-o", "json").stdout)
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {
            "service": {"namespace": namespace, "name": "tfop-webhook", "path": "/convert", "port": 443},
            "caBundle": bundle}
        uninstalled = run_helm(helm, "uninstall", "tfop", "-n", namespace, "--wait", *kubeconfig)
        assert uninstalled.returncode == 0, uninstalled.stderr
        assert "tfjobs.kubeflow.org" in uninstalled.stdout  # "These resources were kept due to the resource policy"
        assert cluster.kubectl("get", "crd", CRD[1], check=False).returncode == 0
    finally:
        run_helm(helm, "uninstall", "tfop", "-n", namespace, *kubeconfig)
        cluster.kubectl("replace", "-f", str(tfjob_crd))  # the checked-in CRD, without Helm's marks
