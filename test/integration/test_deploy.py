"""deploy/ for real: the kustomize base and the Helm chart dry-run and apply on the local cluster, their RBAC is
minimal (`kubectl auth can-i`) and sufficient (the operator runs as the ServiceAccount and takes a distributed
job to success), the shipped config loads, and the dashboard and alerts use metrics the operator exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.crds import crd_established
from support.metrics_readers import may_get_metrics, scraper_tokens
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, events_about, replica, tfjob
from support.waiting import DEADLINE, wait_for, wait_for_count
from tfop import __version__, yamlio
from tfop.cli import build_parser
from tfop.config import load_config, parse_config
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import LEASES, PODS
from tfop.metrics_serving import metrics_serving
from tfop.startup import parse_listen_address

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART = DEPLOY / "helm" / "tfop"
SYSTEM_NAMESPACE = "tfop-system"
OPERATOR_SA = f"system:serviceaccount:{SYSTEM_NAMESPACE}:tfop"
LEASE = "tfop-leader"
CONFIG_KEY = "controller_config_file.yaml"
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}
Object = dict[str, Any]


MONITORING_APIS = ["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                   "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"]
NETWORK_POLICY = ["--set", "networkPolicy.enabled=true"]
# The restricted Pod Security Standard's container rules (the pod's runAsNonRoot and seccomp are checked apart).
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]}}


# --- fixtures and helpers (the helm fixture is conftest.py's) ----------------------------------------------------
def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, check=False, timeout=120)


def helm_template(helm: Path, release: str, namespace: str, *args: str) -> str:
    result = run_helm(helm, "template", release, str(CHART), "--namespace", namespace, *args)
    assert result.returncode == 0, f"helm template {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def documents(text: str) -> list[Object]:
    return [doc for doc in yamlio.load_all(text) if doc]


def by_kind_and_name(objects: list[Object]) -> dict[tuple[str, str], Object]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def found(get: Callable[[], Object]) -> Object | None:
    try:
        return get()
    except NotFound:
        return None


def kustomize(cluster: LocalCluster) -> str:
    return str(cluster.kubectl("kustomize", str(DEPLOY)).stdout)


@pytest.fixture(scope="session")
def monitoring_crds(cluster: LocalCluster) -> None:
    """Just enough of the Prometheus Operator's CRDs for ServiceMonitors and PrometheusRules to be stored."""
    for kind in ("ServiceMonitor", "PrometheusRule"):
        name = f"{kind.lower()}s.monitoring.coreos.com"
        cluster.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced", "names": {
                "kind": kind, "listKind": f"{kind}List", "plural": f"{kind.lower()}s", "singular": kind.lower()},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}))
        wait_for(lambda name=name: crd_established(cluster, name), message=f"CRD {name} Established")


def dry_run_and_apply(cluster: LocalCluster, manifests: str) -> None:
    """A server-side dry run first (which must pass the Pod Security warnings too), then the real apply."""
    dry_run = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=manifests, check=False)
    assert dry_run.returncode == 0, f"server-side dry run failed:\n{dry_run.stderr}"
    assert "would violate PodSecurity" not in dry_run.stderr, dry_run.stderr
    applied = cluster.kubectl("apply", "-f", "-", input=manifests, check=False)
    assert applied.returncode == 0, f"apply failed:\n{applied.stderr}"


def restrict_pods(cluster: LocalCluster, namespace: str) -> None:
    """The restricted Pod Security Standard, enforced, as the kustomize base's own namespace has it."""
    cluster.kubectl("label", "--overwrite", "namespace", namespace,
                    "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")


def assert_restricted(pod: Object) -> None:
    """What the restricted Pod Security Standard asks of a pod spec, and a root filesystem it cannot write to:
    every path it writes is an emptyDir."""
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    writable = {volume["name"] for volume in pod["volumes"] if "emptyDir" in volume}
    for container in pod["containers"]:
        assert container["securityContext"] == RESTRICTED_CONTAINER, container["name"]
        assert {mount["name"] for mount in container["volumeMounts"] if not mount.get("readOnly")} <= writable


def wait_available(cluster: LocalCluster, namespace: str, deployment: str, replicas: int) -> None:
    """kwok runs the pods, so the Deployment becomes available once its pods are admitted and scheduled."""
    wait_for(lambda: cluster.kubectl("get", "deployment", deployment, "-n", namespace, "-o",
                                     "jsonpath={.status.availableReplicas}", check=False).stdout == str(replicas),
             timeout=DEADLINE, message=f"deployment {namespace}/{deployment} available")


@pytest.fixture(scope="module")
def kustomize_base(cluster: LocalCluster, tfjob_crd: Path, monitoring_crds: None) -> Iterator[list[Object]]:
    """The kustomize base, rendered, dry-run and applied (its Namespace first: the rest lives in it); removed after
    this module but for its CRD (the session's), so later tests install the chart on a cluster without it, as the
    docs assume: a ClusterRole left named tfop would refuse the release."""
    rendered = kustomize(cluster)
    objects = documents(rendered)
    [namespace] = [o for o in objects if o["kind"] == "Namespace"]
    cluster.kubectl("apply", "-f", "-", input=json.dumps(namespace))
    dry_run_and_apply(cluster, rendered)
    yield objects
    ours = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    cluster.kubectl("delete", "--wait=true", f"--timeout={DEADLINE:.0f}s", "-f", "-",
                    input="\n---\n".join(json.dumps(o) for o in ours), timeout=DEADLINE + 60)


def served(cluster: LocalCluster, api: str) -> bool:
    """Whether the cluster serves `group/version` (what Helm's .Capabilities.APIVersions sees)."""
    return cluster.kubectl("get", "--raw", f"/apis/{api}", check=False).returncode == 0


# First in the module, so that in a full run it meets a cluster without the Prometheus Operator's CRDs (the
# monitoring_crds fixture of later tests installs them), as a bare cluster is.
def test_helm_install_with_default_values_works_under_restricted_pod_security(
        cluster: LocalCluster, tfjob_crd: Path, helm: Path, namespace: str) -> None:
    """Into a namespace that enforces the restricted Pod Security Standard: the ReplicaSet's pods are admitted
    only if the chart's pod meets it, so the Deployment becoming available proves it does."""
    restrict_pods(cluster, namespace)
    monitoring = served(cluster, "monitoring.coreos.com/v1")
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    result = run_helm(helm, "install", "tfop", str(CHART), "--namespace", namespace, "--wait", "--timeout", "90s",
                      *kubeconfig)
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        manifest = by_kind_and_name(documents(run_helm(helm, "get", "manifest", "tfop", "-n", namespace,
                                                       *kubeconfig).stdout))
        print(f"helm install with defaults: {sorted(kind for kind, _ in manifest)}; "
              f"monitoring.coreos.com/v1 served: {monitoring}")
        assert (("ServiceMonitor", "tfop") in manifest) is monitoring
        assert (("PrometheusRule", "tfop") in manifest) is monitoring
        assert ("NetworkPolicy", "tfop") not in manifest
        assert "would violate PodSecurity" not in result.stderr, result.stderr
        assert_restricted(manifest[("Deployment", "tfop")]["spec"]["template"]["spec"])
        wait_available(cluster, namespace, "tfop", 2)
    finally:
        run_helm(helm, "uninstall", "tfop", "--namespace", namespace, "--wait", *kubeconfig)


def test_helm_renders_monitoring_objects_where_their_api_exists_or_when_asked(helm: Path) -> None:
    def kinds(*args: str) -> set[str]:
        return {o["kind"] for o in documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, *args))}

    assert not kinds() & {"ServiceMonitor", "PrometheusRule"}  # helm template knows no CRDs: a bare cluster
    assert kinds(*MONITORING_APIS) >= {"ServiceMonitor", "PrometheusRule"}
    assert kinds("--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true") >= {
        "ServiceMonitor", "PrometheusRule"}
    assert not kinds(*MONITORING_APIS, "--set", "metrics.serviceMonitor.enabled=false", "--set",
                     "metrics.prometheusRule.enabled=false") & {"ServiceMonitor", "PrometheusRule"}


def test_helm_network_policy_and_an_ipv6_metrics_address_apply(cluster: LocalCluster, tfjob_crd: Path, helm: Path,
                                                               namespace: str) -> None:
    rendered = helm_template(helm, "tfop-np", namespace, "--set", "networkPolicy.enabled=true", "--set",
                             "metrics.bindAddress=::", "--set-json",
                             'networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"team":"monitoring"}}}]')
    objects = by_kind_and_name(documents(rendered))
    policy = objects[("NetworkPolicy", "tfop-np")]
    metrics_rule, health_rule = policy["spec"]["ingress"]
    assert metrics_rule == {"ports": [{"port": "metrics", "protocol": "TCP"}],
                            "from": [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}]}
    assert health_rule == {"ports": [{"port": "health", "protocol": "TCP"}]}
    assert policy["spec"]["egress"] == [{"ports": [{"port": 443, "protocol": "TCP"},
                                                   {"port": 6443, "protocol": "TCP"}]}]
    narrowed = by_kind_and_name(documents(helm_template(
        helm, "tfop-np", namespace, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.dns=true",
        "--set-json", 'networkPolicy.apiServer={"ports":[8443],"cidrs":["192.0.2.10/32"]}')))
    assert narrowed[("NetworkPolicy", "tfop-np")]["spec"]["egress"] == [
        {"ports": [{"port": 8443, "protocol": "TCP"}], "to": [{"ipBlock": {"cidr": "192.0.2.10/32"}}]},
        {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]
    [container] = objects[("Deployment", "tfop-np")]["spec"]["template"]["spec"]["containers"]
    assert "--metrics-addr=[::]:8443" in container["args"]
    dry_run = cluster.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", input=rendered, check=False)
    assert dry_run.returncode == 0, dry_run.stderr


SCRAPE_RENDERINGS = {
    "kustomize": None,
    "helm": [],
    "helm-cert-manager": ["--set", "metrics.certManager.enabled=true", "--set-json",
                          'metrics.readerSubjects=[{"kind":"ServiceAccount","name":"prom","namespace":"monitoring"}]'],
    "helm-plain": ["--set", "metrics.secure=false", "--set", "metrics.port=8080"],
}


@pytest.mark.parametrize("source", SCRAPE_RENDERINGS)
def test_the_service_monitor_scrapes_metrics_as_the_operator_serves_them(
        cluster: LocalCluster, helm: Path, source: str) -> None:
    """Secure by default, as kube-prometheus scrapes such endpoints: HTTPS with Prometheus' own ServiceAccount
    token, and the port, scheme and certificate the operator's flags give."""
    values = SCRAPE_RENDERINGS[source]
    rendered = kustomize(cluster) if values is None else helm_template(helm, "tfop", SYSTEM_NAMESPACE,
                                                                       *MONITORING_APIS, *values)
    objects = by_kind_and_name(documents(rendered))
    [endpoint] = objects[("ServiceMonitor", "tfop")]["spec"]["endpoints"]
    service = objects[("Service", "tfop-metrics")]
    [port] = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    pod = objects[("Deployment", "tfop")]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [container_port] = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    flags = build_parser().parse_args(["run", *container["args"]])
    serving = metrics_serving(flags.metrics_addr, flags.metrics_secure, flags.metrics_cert_dir, in_pod=True,
                              health=parse_listen_address(flags.health_addr, "--health-addr"))
    assert serving.address.port == container_port["containerPort"] == port["port"]
    assert serving.secure is (source != "helm-plain")
    if not serving.secure:
        assert "--no-metrics-secure" in container["args"] and "scheme" not in endpoint
        assert not {("ClusterRole", "tfop-metrics-auth"), ("ClusterRole", "tfop-metrics-reader")} & set(objects)
        return
    assert "--metrics-secure" in container["args"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert objects[("ClusterRole", "tfop-metrics-reader")]["rules"] == [{"nonResourceURLs": ["/metrics"],
                                                                         "verbs": ["get"]}]
    assert objects[("ClusterRoleBinding", "tfop-metrics-auth")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "tfop", "namespace": SYSTEM_NAMESPACE}]
    if source != "helm-cert-manager":
        assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}  # self-signed, made at start
        assert serving.cert_dir is None and ("ClusterRoleBinding", "tfop-metrics-reader") not in objects
        return
    # cert-manager's certificate: mounted where --metrics-cert-dir looks, verified by Prometheus with its CA.
    certificate = objects[("Certificate", "tfop-metrics")]["spec"]
    secret = certificate["secretName"]
    assert endpoint["tlsConfig"] == {"ca": {"secret": {"name": secret, "key": "ca.crt"}},
                                     "serverName": f"tfop-metrics.{SYSTEM_NAMESPACE}.svc"}
    assert endpoint["tlsConfig"]["serverName"] in certificate["dnsNames"]
    [volume] = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == secret]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["mountPath"] == serving.cert_dir
    assert certificate["issuerRef"] == {"kind": "Issuer", "name": "tfop-metrics"}
    assert ("Issuer", "tfop-metrics") in objects
    assert objects[("ClusterRoleBinding", "tfop-metrics-reader")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "prom", "namespace": "monitoring"}]


def test_runbook_links_become_urls_with_a_base(helm: Path) -> None:
    base = "https://docs.example.com/tfop/operating/runbook/"
    rendered = helm_template(helm, "tfop", SYSTEM_NAMESPACE, "--set", "metrics.prometheusRule.enabled=true",
                             "--set", f"metrics.prometheusRule.runbookBaseURL={base}")
    [rule] = [o for o in documents(rendered) if o["kind"] == "PrometheusRule"]
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert urls and all(url.startswith(base + "#tf") for url in urls), urls


def can_i(cluster: LocalCluster, user: str, verb: str, target: str, namespace: str | None) -> bool:
    """`target` as kubectl takes it: `resource`, `resource/name`, or `resource:subresource` (ours)."""
    resource, _, subresource = target.partition(":")
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    flags = [f"--subresource={subresource}"] if subresource else []
    result = cluster.kubectl("auth", "can-i", verb, resource, *flags, "--as", user, *scope, check=False)
    assert result.stdout.strip() in ("yes", "no"), result.stderr
    return bool(result.stdout.strip() == "yes")


def granted(cluster: LocalCluster, user: str, namespace: str) -> set[tuple[str, str, str]]:
    """Every (resource, resource name, verb) `user` may use in `namespace`, from `kubectl auth can-i --list`,
    less what a ServiceAccount no binding names may: every account may do that (the self-reviews; from Kubernetes
    1.37 also reading ClusterTrustBundles), so it is not the operator's grant."""
    nobody = f"system:serviceaccount:{namespace}:tfop-test-nobody"
    return can_i_list(cluster, user, namespace) - can_i_list(cluster, nobody, namespace)


def can_i_list(cluster: LocalCluster, user: str, namespace: str) -> set[tuple[str, str, str]]:
    table = cluster.kubectl("auth", "can-i", "--list", "--as", user, "-n", namespace).stdout.splitlines()[1:]
    rules = set()
    for line in table:
        match = re.match(r"^(\S+)\s+\[(.*?)\]\s+\[(.*?)\]\s+\[(.*?)\]\s*$", line)
        if match:
            for verb in match[4].split():
                rules.add((match[1], match[3], verb))
    return rules


OPERATOR_RULES = {(resource, "", verb) for resource, verbs in [
    ("tfjobs.kubeflow.org", "get list watch delete create"), ("tfjobs.kubeflow.org/status", "update patch"),
    ("tfjobs.kubeflow.org/finalizers", "update"), ("pods", "list watch create patch delete"),
    ("services", "list watch create patch delete"), ("jobs.batch", "list watch create patch delete"),
    ("networkpolicies.networking.k8s.io", "list watch create patch delete"),
    ("horizontalpodautoscalers.autoscaling", "list watch create patch delete"),
    ("poddisruptionbudgets.policy", "list watch create patch delete"),
    ("deployments.apps", "list watch create patch delete"),
    ("persistentvolumeclaims", "list watch"),
    ("workloads.kueue.x-k8s.io", "list watch create patch delete"), ("workloads.kueue.x-k8s.io/status", "patch"),
    ("resourceflavors.kueue.x-k8s.io", "list watch"), ("workloadpriorityclasses.kueue.x-k8s.io", "list watch"),
    ("priorityclasses.scheduling.k8s.io", "list watch"),
    ("localqueues.visibility.kueue.x-k8s.io/pendingworkloads", "get"),
    ("events", "create patch"), ("configmaps", "create")]
    for verb in verbs.split()} | {("configmaps", "tfop-grpc-server", verb) for verb in ("get", "update")}


# Node loss: the nodes the jobs' pods are on, read only (cluster-wide, so listed in every namespace).
NODE_RULES = {("nodes", "", verb) for verb in ("get", "list", "watch")}
# Secure /metrics: who a scraper is and whether it may get /metrics (cluster-wide too).
METRICS_AUTH_RULES = {("tokenreviews.authentication.k8s.io", "", "create"),
                      ("subjectaccessreviews.authorization.k8s.io", "", "create")}


def leader_election_rules(lease: str) -> set[tuple[str, str, str]]:
    return {("leases.coordination.k8s.io", "", "create"), ("leases.coordination.k8s.io", lease, "get"),
            ("leases.coordination.k8s.io", lease, "update")}


# --- the kustomize base ------------------------------------------------------------------------------------------
def test_kustomize_base_applies_and_its_deployment_runs_under_restricted_pod_security(
        cluster: LocalCluster, kustomize_base: list[Object]) -> None:
    kinds = sorted(o["kind"] for o in kustomize_base)
    assert kinds == sorted(["CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRole",
                            "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding",
                            "ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "ConfigMap",
                            "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy", "ServiceMonitor",
                            "PrometheusRule"])
    assert all(o["metadata"].get("namespace") == SYSTEM_NAMESPACE for o in kustomize_base
               if o["kind"] not in ("CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterRoleBinding"))
    namespace = json.loads(cluster.kubectl("get", "namespace", SYSTEM_NAMESPACE, "-o", "json").stdout)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    wait_available(cluster, SYSTEM_NAMESPACE, "tfop", 2)

    deployment = by_kind_and_name(kustomize_base)[("Deployment", "tfop")]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    args = container["args"]
    assert "--leader-elect" in args and f"--leader-elect-id={LEASE}" in args
    assert re.fullmatch(r"tfop@sha256:[0-9a-f]{64}", container["image"]), container["image"]
    assert_restricted(pod)
    policy = by_kind_and_name(kustomize_base)[("NetworkPolicy", "tfop")]["spec"]
    assert policy["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    # Ingress only to the ports the container serves, by their names; egress only to the apiserver's ports.
    assert [rule["ports"] for rule in policy["ingress"]] == [[{"port": "metrics", "protocol": "TCP"}],
                                                            [{"port": "health", "protocol": "TCP"}]]
    assert {port["name"] for port in container["ports"]} == {"metrics", "health"}
    assert all("from" not in rule for rule in policy["ingress"])
    assert policy["egress"] == [{"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}]
    drain = float(next(a for a in args if a.startswith("--drain-seconds=")).split("=")[1])
    assert pod["terminationGracePeriodSeconds"] > drain
    config_path = next(a for a in args if a.startswith("--config=")).split("=")[1]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "config"]
    assert config_path == f"{mount['mountPath']}/{CONFIG_KEY}"
    assert {p["path"] for p in (container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"])} == {
        "/healthz", "/readyz"}


def test_operator_service_account_is_denied_everything_it_does_not_use(
        cluster: LocalCluster, kustomize_base: list[Object], namespace: str) -> None:
    for verb, resource in [("get", "secrets"), ("list", "secrets"), ("watch", "secrets"), ("list", "configmaps"),
                           ("update", "configmaps"), ("get", "configmaps/tf-job-operator-config"),
                           ("patch", "configmaps"), ("delete", "configmaps"),
                           ("create", "statefulsets.apps"), ("update", "deployments.apps"), ("update", "nodes"),
                           ("patch", "nodes"), ("delete", "nodes"), ("update", "tfjobs.kubeflow.org"),
                           ("update", "pods"), ("create", "pods:exec"),
                           ("create", "serviceaccounts:token"), ("delete", "leases.coordination.k8s.io")]:
        for scope in (namespace, SYSTEM_NAMESPACE, None):
            assert not can_i(cluster, OPERATOR_SA, verb, resource, scope), f"may {verb} {resource} in {scope}"
    # The Lease: only its own, only in its own namespace.
    assert not can_i(cluster, OPERATOR_SA, "update", "leases.coordination.k8s.io/another", SYSTEM_NAMESPACE)
    # It reviews scrapers of its /metrics, but reads no one's /metrics itself.
    assert not may_get_metrics(cluster, OPERATOR_SA)
    assert not can_i(cluster, OPERATOR_SA, "create", "leases.coordination.k8s.io", namespace)


def test_operator_service_account_may_do_exactly_what_the_operator_does(
        cluster: LocalCluster, kustomize_base: list[Object], namespace: str) -> None:
    assert granted(cluster, OPERATOR_SA, namespace) == OPERATOR_RULES | NODE_RULES | METRICS_AUTH_RULES
    assert granted(cluster, OPERATOR_SA, SYSTEM_NAMESPACE) == (OPERATOR_RULES | NODE_RULES | METRICS_AUTH_RULES
                                                               | leader_election_rules(LEASE))
    assert can_i(cluster, OPERATOR_SA, "watch", "tfjobs.kubeflow.org", None)  # all namespaces at once


@pytest.fixture
def service_account_kubeconfig(cluster: LocalCluster, kustomize_base: list[Object], tmp_path: Path) -> Path:
    """The cluster's kubeconfig with the operator ServiceAccount's token instead of the admin certificate.

    (Not an `as:` impersonation entry: the Python kubernetes client ignores it and would stay admin.)"""
    token = cluster.kubectl("create", "token", "tfop", "-n", SYSTEM_NAMESPACE, "--duration=1h").stdout.strip()
    config = yamlio.load(cluster.kubeconfig.read_text())
    for entry in config["users"]:
        entry["user"] = {"token": token}
    path = tmp_path / "tfop-sa.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    review = KubeClient.from_kubeconfig(str(path)).request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == OPERATOR_SA
    return path


def test_operator_runs_a_distributed_job_to_success_as_its_service_account(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, service_account_kubeconfig: Path,
        tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    operator = OperatorProcess(service_account_kubeconfig, log, "--leader-elect", "--leader-elect-namespace",
                               SYSTEM_NAMESPACE, "--leader-elect-id", LEASE, "--metrics-secure").start()
    try:
        wait_for(lambda: (found(lambda: kube_client.get(LEASES, LEASE, SYSTEM_NAMESPACE)) or {}).get("spec", {})
                 .get("holderIdentity"), message="the operator to take the lease")
        # Its ServiceAccount may review the tokens of those who scrape its secure /metrics.
        with scraper_tokens(cluster, namespace, readers=["prometheus"]) as tokens:
            status, exposition = operator.get("/metrics", token=tokens["prometheus"])
        assert status == 200 and "tf_operator_is_leader 1.0" in exposition
        image = "tensorflow/tensorflow"
        kube_client.create(TFJOBS, tfjob("dist", {"ttlSecondsAfterFinished": 5}, Chief=replica(1, image=image),
                                         Worker=replica(2, image=image), PS=replica(1, image=image)), namespace)
        selector = "training.kubeflow.org/job-name=dist"
        pods = wait_for_count(lambda: kube_client.list(PODS, namespace, label_selector=selector)[0], 4,
                              message="pods")
        wait_for(lambda: all(p.get("status", {}).get("phase") == "Running" for p in
                             kube_client.list(PODS, namespace, label_selector=selector)[0]), message="pods running")
        # The chief decides; the still running pods are then cleaned up (so they are not exited one by one).
        [chief] = [p for p in pods if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "chief"]
        exit_pod(kube_client, namespace, chief["metadata"]["name"], 0)
        # ttlSecondsAfterFinished: the operator deletes the finished job itself.
        wait_for(lambda: not found(lambda: kube_client.get(TFJOBS, "dist", namespace)), timeout=DEADLINE,
                 message="the job deleted after its TTL")
        reasons = {e["reason"] for e in events_about(kube_client, namespace, "dist")}
        assert {"SuccessfulCreate", "TFJobSucceeded", "SuccessfulDelete"} <= reasons
        assert operator.terminate() == 0
        # A graceful stop releases the lease (an update), so a successor need not wait for it to expire.
        assert kube_client.get(LEASES, LEASE, SYSTEM_NAMESPACE)["spec"]["leaseDurationSeconds"] == 1
    finally:
        operator.kill()
        print(f"--- operator log ---\n{operator.log_tail(60)}")
    assert "forbidden" not in log.read_text().lower()


# --- the Helm chart ----------------------------------------------------------------------------------------------
def comparable(value: Any) -> Any:
    """An object without what only Helm adds: its own labels and the config checksum that rolls the pods."""
    if isinstance(value, dict):
        kept = {k: comparable(v) for k, v in value.items() if k not in HELM_ONLY_LABELS and k != "checksum/config"}
        return {k: v for k, v in kept.items() if not (k == "annotations" and v == {})}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def test_helm_chart_with_default_values_renders_the_kustomize_base(cluster: LocalCluster, helm: Path) -> None:
    """The chart's defaults but one: its NetworkPolicy is opt-in (values.yaml says why), the base's is not."""
    base = by_kind_and_name(documents(kustomize(cluster)))
    del base[("Namespace", SYSTEM_NAMESPACE)]  # helm install --create-namespace
    # On a cluster with the Prometheus Operator, as the kustomize base assumes.
    rendered = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, "--include-crds",
                                                       *MONITORING_APIS, *NETWORK_POLICY)))
    assert sorted(rendered) == sorted(base)
    for key, ours in base.items():
        expected, theirs = ours, comparable(rendered[key])
        if key == ("ConfigMap", "tf-job-operator-config"):  # the same settings; the base's file has comments
            expected = {**ours, "data": {CONFIG_KEY: yamlio.load(ours["data"][CONFIG_KEY])}}
            theirs = {**theirs, "data": {CONFIG_KEY: yamlio.load(theirs["data"][CONFIG_KEY])}}
        assert theirs == expected, f"{key} differs between the Helm chart and the kustomize base"


def test_helm_chart_lints_and_is_the_pinned_version(helm: Path) -> None:
    versions = dict(line.split("=", 1) for line in (REPO / "hack" / "versions.env").read_text().splitlines()
                    if re.match(r"^[A-Z_]+=", line))
    assert run_helm(helm, "version", "--short").stdout.startswith(versions["HELM_VERSION"])
    for values in ([], ["--set", "cloud=azure", "--set", "watchNamespaces={team-a,team-b}"]):
        result = run_helm(helm, "lint", "--strict", str(CHART), *values)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("values", "complaint"), [
    (["--set", "leaderElection.enabled=false"], "leaderElection"),
    (["--set", "terminationGracePeriodSeconds=20"], "drainSeconds"),
    (["--set", "cloud=ibm"], "cloud"),
    (["--set", "watchNamespaces={Team_A}"], "watchNamespaces"),
    (["--set", "metrics.secure=false", "--set", "metrics.certManager.enabled=true"], "metrics.secure"),
    (["--set", "gpuResource=gpu"], "gpuResource"),
    (["--set", "image.digest=sha256:0.1.0"], "/image/digest"),
    (["--set", "networkPolicy.enabled=true", "--set-json", "networkPolicy.apiServer.ports=[]"],
     "/networkPolicy/apiServer/ports"),
])
def test_helm_chart_refuses_values_that_cannot_work(helm: Path, values: list[str], complaint: str) -> None:
    result = run_helm(helm, "template", "tfop", str(CHART), *values)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


@pytest.mark.parametrize(("values", "gpu_resource"), [([], "nvidia.com/gpu"),
                                                      (["--set", "gpuResource=amd.com/gpu"], "amd.com/gpu")])
def test_helm_gpu_resource_reaches_the_controller_config(helm: Path, values: list[str], gpu_resource: str) -> None:
    rendered = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, *values)))
    config = parse_config(yamlio.load(rendered[("ConfigMap", "tf-job-operator-config")]["data"][CONFIG_KEY]))
    assert config.gpu_resource == gpu_resource


def test_chart_follows_the_package_version_and_both_pin_one_image_digest() -> None:
    chart = yamlio.load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__
    [image] = yamlio.load((DEPLOY / "kustomization.yaml").read_text())["images"]
    values = yamlio.load((CHART / "values.yaml").read_text())["image"]
    assert image == {"name": "tfop", "digest": values["digest"]}
    [ui_image] = yamlio.load((DEPLOY / "components" / "ui" / "kustomization.yaml").read_text())["images"]
    assert ui_image == image
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", values["digest"]), values["digest"]


def pod_images(value: Any) -> list[str]:
    """Every container image of every pod spec in `value` (a rendering's objects), wherever it is nested."""
    if isinstance(value, list):
        return [image for entry in value for image in pod_images(entry)]
    if not isinstance(value, dict):
        return []
    if value.get("kind") == "CustomResourceDefinition":
        return []  # its schema's `image` fields describe TFJob pods, which are the users'
    found = [str(container["image"]) for key in ("containers", "initContainers", "ephemeralContainers")
             for container in value.get(key) or [] if isinstance(container, dict) and "image" in container]
    return found + [image for key, entry in value.items() if key not in ("containers", "initContainers",
                                                                         "ephemeralContainers")
                    for image in pod_images(entry)]


def test_every_image_the_released_manifests_run_is_by_digest(cluster: LocalCluster, helm: Path,
                                                            tmp_path: Path) -> None:
    """A tag can be moved to other content; the kustomize base (with each component) and the chart (with the
    values that add pods or containers) name every image they run by digest."""
    overlay = tmp_path / "components"
    overlay.mkdir()
    deploy = os.path.relpath(DEPLOY, overlay)
    components = [f"{deploy}/webhook", *(f"{deploy}/components/{c.name}" for c in (DEPLOY / "components").iterdir())]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({"resources": [deploy], "components": components}))
    renderings = {
        "kustomize": kustomize(cluster),
        "kustomize with every component": str(cluster.kubectl("kustomize", str(overlay)).stdout),
        "helm": helm_template(helm, "tfop", SYSTEM_NAMESPACE),
        "helm with everything on": helm_template(
            helm, "tfop", SYSTEM_NAMESPACE, *MONITORING_APIS, *NETWORK_POLICY, "--set", "webhook.enabled=true",
            "--set", "metrics.certManager.enabled=true", "--set", "gangScheduler=volcano", "--set", "cloud=azure",
            "--set", "ui.enabled=true"),
    }
    for name, rendered in renderings.items():
        images = pod_images(documents(rendered))
        assert images, f"{name}: no image found"
        assert all(re.fullmatch(r"[^@:]+(:[^@]+)?@sha256:[0-9a-f]{64}", image) for image in images), (name, images)


@pytest.fixture
def watched_namespaces(cluster: LocalCluster, namespace: str) -> Iterator[list[str]]:
    names = [f"{namespace}-a", f"{namespace}-b"]
    for name in names:
        cluster.kubectl("create", "namespace", name)
    yield names
    for name in names:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_helm_chart_for_all_namespaces_applies_with_a_cluster_role(
        cluster: LocalCluster, tfjob_crd: Path, monitoring_crds: None, helm: Path, namespace: str) -> None:
    restrict_pods(cluster, namespace)
    rendered = helm_template(helm, "tfop-all", namespace, "--include-crds")
    dry_run_and_apply(cluster, rendered)
    wait_available(cluster, namespace, "tfop-all", 2)
    account = f"system:serviceaccount:{namespace}:tfop-all"
    assert granted(cluster, account, namespace) == OPERATOR_RULES | NODE_RULES | METRICS_AUTH_RULES | (
        leader_election_rules("tfop-all-leader"))
    assert can_i(cluster, account, "watch", "pods", None)
    assert ("CustomResourceDefinition", "tfjobs.kubeflow.org") in by_kind_and_name(documents(rendered))


def test_helm_chart_for_a_namespace_list_on_azure_applies_with_roles_in_those_namespaces(
        cluster: LocalCluster, tfjob_crd: Path, monitoring_crds: None, helm: Path, namespace: str,
        watched_namespaces: list[str]) -> None:
    restrict_pods(cluster, namespace)
    rendered = helm_template(helm, "tfop-some", namespace, "--include-crds", "--set", "cloud=azure",
                             "--set", f"watchNamespaces={{{','.join(watched_namespaces)}}}")
    dry_run_and_apply(cluster, rendered)
    wait_available(cluster, namespace, "tfop-some", 2)
    objects = by_kind_and_name(documents(rendered))

    account = f"system:serviceaccount:{namespace}:tfop-some"
    for watched in watched_namespaces:
        assert granted(cluster, account, watched) == OPERATOR_RULES | NODE_RULES | METRICS_AUTH_RULES
    assert granted(cluster, account, namespace) == (leader_election_rules("tfop-some-leader") | NODE_RULES
                                                    | METRICS_AUTH_RULES)
    assert not can_i(cluster, account, "list", "pods", None)
    assert ("ClusterRoleBinding", "tfop-some") not in objects
    [container] = objects[("Deployment", "tfop-some")]["spec"]["template"]["spec"]["containers"]
    assert [a for a in container["args"] if a.startswith("--namespace")] == [
        f"--namespace={name}" for name in watched_namespaces]

    config = yamlio.load(objects[("ConfigMap", "tf-job-operator-config")]["data"][CONFIG_KEY])
    gpu = config["accelerators"]["nvidia.com/gpu"]  # the seeds' Azure preset
    assert gpu["envVars"] == [{"name": "LD_LIBRARY_PATH", "value": "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"}]
    assert {v["hostPath"]: v["mountPath"] for v in gpu["volumes"]} == {
        "/usr/lib/nvidia-384": "/usr/lib/nvidia", "/usr/lib/nvidia-384/bin": "/usr/local/nvidia/bin",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}


# --- what the objects carry: the config, the alerts, the dashboard -----------------------------------------------
@pytest.mark.parametrize(("source", "accelerators"), [
    ("kustomize", set()), ("helm", set()), ("helm-azure", {"nvidia.com/gpu"}), ("helm-gke", {"nvidia.com/gpu"}),
    ("helm-aws", set())])
def test_shipped_controller_config_loads_in_the_operator(cluster: LocalCluster, helm: Path, tmp_path: Path,
                                                         source: str, accelerators: set[str]) -> None:
    if source == "kustomize":
        rendered = kustomize(cluster)
    else:
        cloud = source.partition("-")[2]
        rendered = helm_template(helm, "tfop", SYSTEM_NAMESPACE, *(["--set", f"cloud={cloud}"] if cloud else []))
    config_map = by_kind_and_name(documents(rendered))[("ConfigMap", "tf-job-operator-config")]
    path = tmp_path / CONFIG_KEY
    path.write_text(config_map["data"][CONFIG_KEY])
    config = load_config(path)
    assert config.service_domain == "svc" and set(config.accelerators) == accelerators


def promql_expressions() -> dict[str, str]:
    """Every PromQL expression shipped, by where it is: the alerts' and the dashboard's."""
    rule = yamlio.load((CHART / "files" / "prometheusrule.yaml").read_text())
    expressions = {f"alert {r['alert']}": r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}
    dashboard = json.loads((CHART / "files" / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expressions[f"panel {panel['title']!r} {target['refId']}"] = target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            expressions[f"variable {variable['name']}"] = variable["query"]["query"]
    return expressions


def test_dashboard_and_alerts_select_metrics_the_operator_exports(
        cluster: LocalCluster, tfjob_crd: Path, kustomize_base: list[Object], namespace: str,
        tmp_path: Path) -> None:
    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                               "--leader-elect", "--leader-elect-namespace", namespace).start()
    try:
        status, exposition = operator.get("/metrics")
    finally:
        operator.terminate()
    assert status == 200
    families = set(re.findall(r"^# TYPE (\S+) ", exposition, re.MULTILINE))
    exported = families | {family + suffix for family in families for suffix in ("_bucket", "_count", "_sum")}
    exported.add("up")  # Prometheus' own, per scrape target
    missing: dict[str, list[str]] = {}
    for where, expression in promql_expressions().items():
        selectors = re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", expression)
        assert selectors, f"{where}: no metric selector in {expression!r}"
        for metric, labels in selectors:
            assert 'job="tfop"' in labels, f"{where}: {metric} is not limited to job=\"tfop\""
            if metric not in exported:
                missing.setdefault(metric, []).append(where)
    assert not missing, f"metrics the operator does not export: {json.dumps(missing, indent=1)}"

    # job="tfop" holds because the ServiceMonitor names the job after a label the Service has.
    objects = by_kind_and_name(kustomize_base)
    job_label = objects[("ServiceMonitor", "tfop")]["spec"]["jobLabel"]
    assert objects[("Service", "tfop-metrics")]["metadata"]["labels"][job_label] == "tfop"


def test_dashboard_is_laid_out_on_grafanas_grid_with_a_datasource_variable() -> None:
    dashboard = json.loads((CHART / "files" / "grafana-dashboard.json").read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert any(v["name"] == "datasource" and v["type"] == "datasource" for v in dashboard["templating"]["list"])
    occupied: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                 for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]


def test_dockerfile_runs_tfop_as_the_user_the_deployment_expects() -> None:
    """No Docker engine here to build it; this keeps it in step with the manifests and the package."""
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11\.\d+-slim-\w+$", dockerfile, re.MULTILINE), "pinned base"
    assert re.search(r'^ENTRYPOINT \["tfop", "run"\]$', dockerfile, re.MULTILINE)
    assert "tfop = tfop.cli:main" in (REPO / "setup.cfg").read_text()
    [user] = re.findall(r"^USER (\d+):(\d+)$", dockerfile, re.MULTILINE)
    pod = yamlio.load((DEPLOY / "manifests" / "deployment.yaml").read_text().split("\n---\n")[0])
    context = pod["spec"]["template"]["spec"]["securityContext"]
    assert (str(context["runAsUser"]), str(context["runAsGroup"])) == user and context["runAsNonRoot"]
    # .dockerignore lets in only what it names; every COPY from the context must be among it.
    allowed = {line[1:].rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.MULTILINE):
        for source in line.split()[:-1]:
            assert source in allowed and (REPO / source).exists(), f"COPY {source}"


@pytest.mark.parametrize(("gang", "group"), [("scheduler-plugins", "scheduling.x-k8s.io"),
                                             ("volcano", "scheduling.volcano.sh"), ("kubernetes", "scheduling.k8s.io")])
def test_a_gang_scheduler_adds_exactly_its_pod_group_rule_in_helm_and_the_kustomize_component(
        cluster: LocalCluster, helm: Path, tmp_path: Path, gang: str, group: str) -> None:
    rule = {"apiGroups": [group], "resources": ["podgroups"], "verbs": ["list", "watch", "create", "patch", "delete"]}
    rendered = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, "--set",
                                                        f"gangScheduler={gang}")))
    helm_rules = rendered[("ClusterRole", "tfop")]["rules"]
    assert helm_rules[-1] == rule
    config = parse_config(yamlio.load(rendered[("ConfigMap", "tf-job-operator-config")]["data"][CONFIG_KEY]))
    assert config.gang_scheduler == gang
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(DEPLOY, overlay)],
        "components": [os.path.relpath(DEPLOY / "components" / f"gang-{gang}", overlay)]}))
    base = by_kind_and_name(documents(cluster.kubectl("kustomize", str(overlay)).stdout))
    assert base[("ClusterRole", "tfop")]["rules"] == helm_rules
    args = base[("Deployment", "tfop")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1] == f"--gang-scheduler-name={gang}"
    assert build_parser().parse_args(["run", *args]).gang_scheduler_name == gang


def test_capacity_scaling_adds_its_config_and_exactly_its_rules_in_helm_and_the_kustomize_component(
        cluster: LocalCluster, helm: Path, tmp_path: Path) -> None:
    """Enabled, the auto-scaler patches TFJobs and lists and watches every namespace's Pods, also when the chart
    grants the operator only some namespaces; off (the default), none of it is rendered."""
    patch = {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["patch"]}
    pods = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    enabled = ["--set", "capacityScaling.enabled=true", "--set", "capacityScaling.growAfterSeconds=90"]
    cluster_wide = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, *enabled)))
    helm_rules = cluster_wide[("ClusterRole", "tfop")]["rules"]
    assert helm_rules[1] == patch
    assert cluster_wide[("ClusterRole", "tfop-capacity")]["rules"] == pods
    config = parse_config(yamlio.load(cluster_wide[("ConfigMap", "tf-job-operator-config")]["data"][CONFIG_KEY]))
    assert config.capacity_scaling.enabled and config.capacity_scaling.grow_after == 90
    scoped = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, *enabled,
                                                      "--set", "watchNamespaces={team-a}")))
    assert scoped[("Role", "tfop")]["rules"][1] == patch and scoped[("ClusterRole", "tfop-capacity")]["rules"] == pods
    assert scoped[("ClusterRoleBinding", "tfop-capacity")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "tfop", "namespace": SYSTEM_NAMESPACE}]
    off = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE)))
    assert ("ClusterRole", "tfop-capacity") not in off and patch not in off[("ClusterRole", "tfop")]["rules"]
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(DEPLOY, overlay)],
        "components": [os.path.relpath(DEPLOY / "components" / "capacity-scaling", overlay)]}))
    base = by_kind_and_name(documents(cluster.kubectl("kustomize", str(overlay)).stdout))
    assert base[("ClusterRole", "tfop")]["rules"] == helm_rules


def test_helm_chart_with_the_ui_renders_the_kustomize_ui_component(cluster: LocalCluster, helm: Path,
                                                                     tmp_path: Path) -> None:
    """The page is off by default in both; on, the chart's objects are the component's."""
    shutil.copytree(DEPLOY, tmp_path / "deploy", symlinks=True)
    shutil.copytree(REPO / "crd", tmp_path / "crd")
    with (tmp_path / "deploy" / "kustomization.yaml").open("a") as kustomization:
        kustomization.write("components:\n- components/ui\n")
    base = by_kind_and_name(documents(kustomize(cluster)))
    with_ui = by_kind_and_name(documents(cluster.kubectl("kustomize", str(tmp_path / "deploy")).stdout))
    ui_objects = {key: value for key, value in with_ui.items() if key not in base}
    assert sorted(ui_objects) == [("ClusterRole", "tfop-ui"), ("ClusterRoleBinding", "tfop-ui"),
                                  ("Deployment", "tfop-ui"), ("Service", "tfop-ui"), ("ServiceAccount", "tfop-ui")]
    default = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE)))
    rendered = by_kind_and_name(documents(helm_template(helm, "tfop", SYSTEM_NAMESPACE, "--set", "ui.enabled=true")))
    assert {key: comparable(value) for key, value in rendered.items() if key not in default} == ui_objects
