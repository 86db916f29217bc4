"""The table of a job's own children (plan/children/job_children.py) and its one shared policy
(plan/policies/job_children.py), on all its kinds at once: which states keep each, what a name held by a child
being deleted does, and what the wiring makes of each entry. Every expected row is written out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

import gen_rbac
from support.plan_builders import NOW, RID, T0, make_job, make_pod, name_of, running, running_pods, services_for
from tfop.controller.children import Scope, child_kinds, replicas_selector
from tfop.controller.plan.children.job_child import JobState
from tfop.controller.plan.children.job_children import job_child_kinds
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULERS
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import (
    AUTOSCALER,
    DISRUPTION_BUDGET,
    NETWORK_POLICY,
    POD,
    POD_GROUP,
    SERVICE,
    Plan,
    PlanContext,
)
from tfop.kube.resource import PODS, SERVICES, Resource

RUNNING, QUEUED, SUSPENDED, FINISHED, KEPT = (JobState.RUNNING, JobState.QUEUED, JobState.SUSPENDED,
                                              JobState.FINISHED, JobState.FINISHED_PODS_KEPT)
NP_NAME = f"mnist-{RID}"
ELASTIC = {"minReplicas": 1, "maxReplicas": 4, "metrics": [
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}
ISOLATED = {"tfop.kubeflow.org/network-policy": "Isolated", "tfop.kubeflow.org/disruption-budget": "OneAtATime"}
# The specs the job above wants, as stored: in line, so nothing is patched.
HPA_SPEC = {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"}, **ELASTIC}
JOB_PODS = {"matchLabels": {"training.kubeflow.org/job-name": "mnist"},
            "matchExpressions": [{"key": "training.kubeflow.org/operator-name", "operator": "In",
                                  "values": ["tfjob-controller", "tfop"]}]}
PDB_SPEC = {"minAvailable": 2, "selector": JOB_PODS}  # 3 replicas, one at a time
NP_SPEC = {"podSelector": JOB_PODS, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": JOB_PODS}]}]}
SUCCEEDED = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}],
             "completionTime": "2026-11-21T10:00:00Z"}


def test_the_table_in_the_order_they_are_made() -> None:
    volcano = GANG_SCHEDULERS["volcano"]
    assert [(kind.kind, kind.api_version, kind.plural, kind.cached, set(kind.kept_in))
            for kind in job_child_kinds(volcano)] == [
        ("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups", ("spec", "status"), {RUNNING, KEPT}),
        ("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", ("spec",),
         {RUNNING, QUEUED, SUSPENDED, FINISHED, KEPT}),
        ("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", ("spec",), {RUNNING}),
        ("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", ("spec",), {RUNNING}),
        ("TensorBoard", "apps/v1", "deployments", ("spec",), {RUNNING, FINISHED, KEPT}),
        ("TensorBoardService", "v1", "services", ("spec",), {RUNNING, FINISHED, KEPT}),
    ]
    assert [kind.kind for kind in job_child_kinds(None)] == ["NetworkPolicy", "HorizontalPodAutoscaler",
                                                             "PodDisruptionBudget", "TensorBoard",
                                                             "TensorBoardService"]
    assert [(kind.kind, kind.api_version, kind.plural, kind.cached, set(kind.kept_in))
            for kind in job_child_kinds(None, own_kueue=True)][-1] == (
        "Workload", "kueue.x-k8s.io/v1beta2", "workloads", ("spec", "status"), {RUNNING, QUEUED})


OURS = "training.kubeflow.org/operator-name in (tfjob-controller,tfop)"


def test_the_wiring_watches_each_entry_as_the_jobs_own() -> None:
    kinds = child_kinds(GANG_SCHEDULERS["scheduler-plugins"])
    assert [(kind.kind, kind.resource, kind.scope) for kind in kinds if kind.scope is Scope.JOB] == [
        ("PodGroup", Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"), Scope.JOB),
        ("NetworkPolicy", Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"), Scope.JOB),
        ("HorizontalPodAutoscaler", Resource("autoscaling", "v2", "horizontalpodautoscalers",
                                             "HorizontalPodAutoscaler"), Scope.JOB),
        ("PodDisruptionBudget", Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"), Scope.JOB),
        ("TensorBoard", Resource("apps", "v1", "deployments", "TensorBoard"), Scope.JOB),
        ("TensorBoardService", Resource("", "v1", "services", "TensorBoardService"), Scope.JOB),
    ]
    # The replicas' Services and the TensorBoard's are apart: each informer selects only its own.
    assert [(kind.kind, kind.label_selector) for kind in kinds if kind.resource.plural == "services"] == [
        ("TensorBoardService", f"{OURS},tfop.kubeflow.org/tensorboard-of"),
        ("Service", f"{OURS},!tfop.kubeflow.org/tensorboard-of"),
    ]
    served = {"apiVersion": "v1", "kind": "PodGroup", "metadata": {"name": "mnist", "generation": 3},
              "spec": {"minMember": 3}, "status": {"phase": "Running"}, "extra": {"a": 1}}
    assert kinds[POD_GROUP].transform(served) == {"apiVersion": "v1", "kind": "PodGroup",
                                                  "metadata": {"name": "mnist"}, "spec": {"minMember": 3},
                                                  "status": {"phase": "Running"}}
    assert kinds[AUTOSCALER].transform(served) == {"apiVersion": "v1", "kind": "PodGroup",
                                                   "metadata": {"name": "mnist"}, "spec": {"minMember": 3}}



def test_the_replicas_informers_leave_out_the_marker_labels_of_entries_on_their_resource() -> None:
    by_name = {kind.kind: kind for kind in job_child_kinds(None)}
    board, service = by_name["TensorBoard"], by_name["TensorBoardService"]
    second = replace(service, kind="DashboardService", marker_label="example.test/dashboard-of")
    assert replicas_selector(SERVICES, (board, service, second)) == (
        f"{OURS},!tfop.kubeflow.org/tensorboard-of,!example.test/dashboard-of")
    assert replicas_selector(PODS, (board, service)) == OURS
    unmarked = replace(service, kind="DashboardService", marker_label="")
    with pytest.raises(ValueError, match="DashboardService shares services with a replica's children"):
        replicas_selector(SERVICES, (board, unmarked))

def own(kind: str, name: str, *, terminating: bool = False, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"{kind.lower()}-{name}"}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"kind": kind, "metadata": metadata, "spec": spec or {}}


def all_three() -> dict[str, list[dict[str, Any]]]:
    return {POD_GROUP: [own(POD_GROUP, "mnist", spec={"minMember": 3})],
            NETWORK_POLICY: [own(NETWORK_POLICY, NP_NAME, spec=NP_SPEC)],
            AUTOSCALER: [own(AUTOSCALER, "mnist", spec=HPA_SPEC)],
            DISRUPTION_BUDGET: [own(DISRUPTION_BUDGET, NP_NAME, spec=PDB_SPEC)]}


def wanting_all(**run_policy: Any) -> dict[str, Any]:
    job = make_job(run_policy=run_policy or None, elasticPolicy=ELASTIC)
    job["metadata"]["annotations"] = dict(ISOLATED)
    return job


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    own: dict[str, list[dict[str, Any]]]
    pods: list[dict[str, Any]] = field(default_factory=running_pods)
    services: list[dict[str, Any]] = field(default_factory=services_for)
    create: list[tuple[str, str]] = field(default_factory=list)
    delete: list[tuple[str, str]] = field(default_factory=list)


ROWS = {
    "running, none yet: each made, in the table's order, before the replicas": Row(
        wanting_all(), {}, pods=[], services=[],
        create=[(POD_GROUP, "mnist"), (NETWORK_POLICY, NP_NAME), (AUTOSCALER, "mnist"), (DISRUPTION_BUDGET, NP_NAME),
                *[(kind, name_of(t, i)) for kind in (POD, SERVICE) for t, i in (("Worker", 0), ("Worker", 1),
                                                                              ("PS", 0))]]),
    "running, each there: nothing to do": Row(running(wanting_all()), all_three()),
    "suspended: the PodGroup, the HPA and the PodDisruptionBudget go, the NetworkPolicy stays": Row(
        wanting_all(suspend=True), all_three(),
        delete=[(POD_GROUP, "mnist"), (AUTOSCALER, "mnist"), (DISRUPTION_BUDGET, NP_NAME),
                *[(kind, name_of(t, i)) for kind in (POD, SERVICE) for t, i in (("Worker", 0), ("Worker", 1),
                                                                              ("PS", 0))]]),
    "finished, cleanPodPolicy None: only the HPA and the PodDisruptionBudget go": Row(
        {**wanting_all(cleanPodPolicy="None"), "status": SUCCEEDED}, all_three(),
        delete=[(AUTOSCALER, "mnist"), (DISRUPTION_BUDGET, NP_NAME)]),
    "finished, cleanPodPolicy All: the PodGroup, the HPA and the PodDisruptionBudget go with the pods": Row(
        {**wanting_all(cleanPodPolicy="All"), "status": SUCCEEDED}, all_three(),
        pods=[make_pod("Worker", 0, "Succeeded", exit_code=0)],
        delete=[(POD_GROUP, "mnist"), (AUTOSCALER, "mnist"), (DISRUPTION_BUDGET, NP_NAME), (POD, name_of("Worker", 0)),
                *[(SERVICE, name_of(t, i)) for t, i in (("Worker", 0), ("Worker", 1), ("PS", 0))]]),
    "running, the NetworkPolicy's name held by one being deleted: not made, and no pod before it": Row(
        wanting_all(), {**all_three(), NETWORK_POLICY: [own(NETWORK_POLICY, NP_NAME, terminating=True)]}, pods=[]),
    "running, the HPA's name held by one being deleted: not made, and no pod before it": Row(
        wanting_all(), {**all_three(), AUTOSCALER: [own(AUTOSCALER, "mnist", terminating=True)]}, pods=[]),
    "running, asking for no NetworkPolicy, HPA nor budget: those go, strays too; the PodGroup stays": Row(
        running(make_job()), {POD_GROUP: [own(POD_GROUP, "mnist", spec={"minMember": 3})],
                              NETWORK_POLICY: [own(NETWORK_POLICY, NP_NAME), own(NETWORK_POLICY, "other")],
                              AUTOSCALER: [own(AUTOSCALER, "mnist")],
                              DISRUPTION_BUDGET: [own(DISRUPTION_BUDGET, NP_NAME)]},
        delete=[(NETWORK_POLICY, NP_NAME), (NETWORK_POLICY, "other"), (AUTOSCALER, "mnist"),
                (DISRUPTION_BUDGET, NP_NAME)]),
    "running, the PodDisruptionBudget's name held by one being deleted: not made, and no pod before it": Row(
        wanting_all(), {**all_three(), DISRUPTION_BUDGET: [own(DISRUPTION_BUDGET, NP_NAME, terminating=True)]},
        pods=[]),
}


def plan_row(row: Row) -> Plan:
    children = {POD: row.pods, SERVICE: row.services, **row.own}
    return plan(PlanContext(row.job, children, NOW, ControllerConfig(gang_scheduler="scheduler-plugins")))


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_one_policy_for_the_jobs_own_children(row: Row) -> None:
    result = plan_row(row)
    assert [(creation.kind, creation.name) for creation in result.create] == row.create
    assert [(ref.kind, ref.name) for ref in result.delete] == row.delete
    assert result.patch == []


def test_the_operators_role_grants_each_child_kind_what_the_writer_does() -> None:
    """A kind added to the table without its RBAC rule fails here, not on a cluster (the chart's copy of the rule
    is checked by test/integration/test_deploy.py)."""
    documents = yaml.safe_load_all((Path(__file__).resolve().parents[2] / "deploy/manifests/rbac.yaml").read_text())
    [role] = [d for d in documents if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "tfop"]
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule.get("apiGroups", [])
               for resource in rule.get("resources", []) for verb in rule.get("verbs", [])}
    missing = [(kind.kind, verb) for kind in child_kinds(None, own_kueue=True)
               for verb in ("list", "watch", "create", "delete", *(("patch",) if kind.scope is Scope.JOB else ()))
               if (kind.resource.group, kind.resource.plural, verb) not in granted]
    assert missing == []


def test_the_rules_generated_from_a_table() -> None:
    """One rule per resource, in the table's order, naming the kinds on it and the modules declaring them; none
    for a resource a replica's children share (the hand-written Services rule grants what both need)."""
    kinds = job_child_kinds(None, own_kueue=True)
    by_name = {kind.kind: kind for kind in kinds}
    second_deployment = replace(by_name["TensorBoard"], kind="Dashboard")
    table = (by_name["HorizontalPodAutoscaler"], by_name["TensorBoard"], by_name["TensorBoardService"],
             second_deployment, by_name["Workload"])
    assert gen_rbac.rules(table) == (
        "# A job's own HorizontalPodAutoscaler, as tfop/controller/plan/children/autoscaler.py declares it\n"
        "- apiGroups: [autoscaling]\n"
        "  resources: [horizontalpodautoscalers]\n"
        "  verbs: [list, watch, create, patch, delete]\n"
        "# A job's own TensorBoard and Dashboard, as tfop/controller/plan/children/tensorboard.py declares it\n"
        "- apiGroups: [apps]\n"
        "  resources: [deployments]\n"
        "  verbs: [list, watch, create, patch, delete]\n"
        "# A job's own Workload, as tfop/controller/plan/children/workload.py declares it\n"
        "- apiGroups: [kueue.x-k8s.io]\n"
        "  resources: [workloads]\n"
        "  verbs: [list, watch, create, patch, delete]\n")


def test_both_ways_of_deploying_grant_the_tables_rules_as_generated() -> None:
    """`make rbac` writes them (hack/gen_rbac.py); a kind added to the table fails here until it is run."""
    for path in gen_rbac.TARGETS:
        text = path.read_text()
        assert gen_rbac.rewritten(text, path) == text, f"{path} is stale: run make rbac"
    assert gen_rbac.main(["--check"]) == 0


def test_a_stale_file_is_found_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "rbac.yaml"
    stale.write_text(f"rules:\n{gen_rbac.BEGIN}\n- apiGroups: [old]\n{gen_rbac.END}\n- apiGroups: [kept]\n")
    monkeypatch.setattr(gen_rbac, "TARGETS", (stale,))
    monkeypatch.setattr(gen_rbac, "REPO", tmp_path)
    assert gen_rbac.main(["--check"]) == 1
    assert gen_rbac.main([]) == 0
    assert stale.read_text() == f"rules:\n{gen_rbac.BEGIN}\n{gen_rbac.rules()}{gen_rbac.END}\n- apiGroups: [kept]\n"
    assert gen_rbac.main(["--check"]) == 0
