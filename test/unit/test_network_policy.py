"""Table tests of a job's NetworkPolicy (tfop/controller/plan/children/network_policy.py,
policies/network_isolation.py, job/annotations.py): what the annotations ask for, what is wrong with them, and what
the plan creates, patches or deletes. Every expected row is written out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    RID,
    T0,
    UID,
    condition,
    make_job,
    message,
    parsed,
    running,
    running_pods,
    services_for,
)
from tfop.controller.children import Scope, child_kinds
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.annotations import network_isolation
from tfop.controller.plan.job.model import NetworkIsolation
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import NETWORK_POLICY, POD, SERVICE, ChildPatch, ChildRef, Creation, Plan, PlanContext

SWITCH = "tfop.kubeflow.org/network-policy"
FROM = "tfop.kubeflow.org/network-policy-from"
NAME = f"mnist-{RID}"
OWN = {"matchLabels": {"training.kubeflow.org/job-name": "mnist"},
       "matchExpressions": [{"key": "training.kubeflow.org/operator-name", "operator": "In",
                             "values": ["tfjob-controller", "tfop"]}]}
ISOLATED_SPEC = {"podSelector": OWN, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": OWN}]}]}
MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
WITH_MONITORING = {**ISOLATED_SPEC, "ingress": [{"from": [{"podSelector": OWN}, MONITORING]}]}
IN_FROM = f"metadata.annotations[{FROM}]"

# annotations -> (isolated, peers, errors)
ASKED: dict[str, tuple[dict[str, str], bool, tuple[dict[str, Any], ...], list[str]]] = {
    "no annotation: no policy": ({}, False, (), []),
    "None: no policy": ({SWITCH: "None"}, False, (), []),
    "Isolated: only the job's own pods": ({SWITCH: "Isolated"}, True, (), []),
    "a monitoring namespace let in": (
        {SWITCH: "Isolated", FROM: '[{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": '
                                   '"monitoring"}}}]'}, True, (MONITORING,), []),
    "pods of a namespace, an expression, an address block": (
        {SWITCH: "Isolated", FROM: (
            '[{"namespaceSelector": {"matchLabels": {"team": "ml"}}, "podSelector": {"matchLabels": '
            '{"app": "tensorboard"}}}, {"podSelector": {"matchExpressions": [{"key": "example.com/role", '
            '"operator": "Exists"}]}}, {"ipBlock": {"cidr": "198.18.0.0/15", "except": ["198.19.0.0/16"]}}]')}, True,
        ({"namespaceSelector": {"matchLabels": {"team": "ml"}}, "podSelector": {"matchLabels": {"app": "tensorboard"}}},
         {"podSelector": {"matchExpressions": [{"key": "example.com/role", "operator": "Exists"}]}},
         {"ipBlock": {"cidr": "198.18.0.0/15", "except": ["198.19.0.0/16"]}}), []),
    "every namespace is an empty selector, kept; empty fields are left out": (
        {SWITCH: "Isolated", FROM: '[{"namespaceSelector": {}}, {"podSelector": {"matchLabels": {}, '
                                   '"matchExpressions": []}}]'}, True,
        ({"namespaceSelector": {}}, {"podSelector": {}}), []),
    "an empty list lets in nothing more": ({SWITCH: "Isolated", FROM: "[]"}, True, (), []),
    "the switch misspelt": ({SWITCH: "isolated"}, False, (), [
        "metadata.annotations[tfop.kubeflow.org/network-policy]: must be one of Isolated, None, not 'isolated'"]),
    "peers without the switch": ({FROM: "[]"}, False, (), [
        f"{IN_FROM}: lists peers to let in, which needs tfop.kubeflow.org/network-policy: Isolated"]),
    "not JSON": ({SWITCH: "Isolated", FROM: "monitoring"}, False, (), [
        f"{IN_FROM}: must be a JSON list of NetworkPolicyPeers: Expecting value: line 1 column 1 (char 0)"]),
    "one peer, not a list": ({SWITCH: "Isolated", FROM: '{"namespaceSelector": {}}'}, False, (), [
        f"{IN_FROM}: must be a JSON list of NetworkPolicyPeers, not an object"]),
    "an empty peer": ({SWITCH: "Isolated", FROM: "[{}]"}, False, (), [
        f"{IN_FROM}[0]: must be an object with podSelector, namespaceSelector or ipBlock"]),
    "a key no peer has": ({SWITCH: "Isolated", FROM: '[{"namespace": "monitoring"}]'}, False, (), [
        f"{IN_FROM}[0]: unknown key 'namespace'; a peer has podSelector, namespaceSelector, ipBlock"]),
    "a label key with a space and a value too long": (
        {SWITCH: "Isolated", FROM: '[{"podSelector": {"matchLabels": {"my app": "' + "x" * 64 + '"}}}]'}, False,
        (), [(f"{IN_FROM}[0].podSelector.matchLabels: 'my app' is not a label key (a name of at most 63 letters, "
              "digits, '-', '_' or '.', with an optional DNS subdomain prefix and '/')"),
             (f"{IN_FROM}[0].podSelector.matchLabels[my app]: '{'x' * 64}' is not a label value (at most 63 "
              "letters, digits, '-', '_' or '.')")]),
    "an operator Kubernetes has not": (
        {SWITCH: "Isolated", FROM: '[{"podSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", '
                                   '"values": ["a"]}]}}]'}, False, (),
        [(f"{IN_FROM}[0].podSelector.matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, "
          "not 'Equals'")]),
    "In without values, Exists with some": (
        {SWITCH: "Isolated", FROM: '[{"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}, '
                                   '{"key": "app", "operator": "Exists", "values": ["a"]}]}}]'}, False, (),
        [f"{IN_FROM}[0].podSelector.matchExpressions[0].values: must not be empty for In",
         f"{IN_FROM}[0].podSelector.matchExpressions[1].values: must be empty for Exists"]),
    "an address block with a selector": (
        {SWITCH: "Isolated", FROM: '[{"ipBlock": {"cidr": "198.18.0.0/15"}, "podSelector": {}}]'}, False, (),
        [f"{IN_FROM}[0]: ipBlock cannot be combined with a selector in one peer"]),
    "an address block not at its network's first address, an exception outside it": (
        {SWITCH: "Isolated", FROM: '[{"ipBlock": {"cidr": "198.18.0.1/15"}}, {"ipBlock": {"cidr": "198.18.0.0/16", '
                                   '"except": ["198.19.0.0/24"]}}]'}, False, (),
        [(f"{IN_FROM}[0].ipBlock.cidr: must be a network in CIDR notation such as 198.18.0.0/15 or fd00::/8 (its first "
          "address, in canonical form), not '198.18.0.1/15'"),
         f"{IN_FROM}[1].ipBlock.except[0]: '198.19.0.0/24' is not inside 198.18.0.0/16"]),
}


@pytest.mark.parametrize(("annotations", "isolated", "peers", "errors"), list(ASKED.values()), ids=list(ASKED))
def test_what_the_annotations_ask_for(annotations: dict[str, str], isolated: bool, peers: tuple[dict[str, Any], ...],
                                      errors: list[str]) -> None:
    isolation, found = network_isolation(annotations)
    assert (isolation, [str(error) for error in found]) == (NetworkIsolation(isolated, peers), errors)


def isolated(job: dict[str, Any], peers: str | None = None, switch: str = "Isolated") -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["metadata"]["annotations"] = {SWITCH: switch, **({FROM: peers} if peers is not None else {})}
    return job


def stored(spec: dict[str, Any], name: str = NAME, terminating: bool = False) -> dict[str, Any]:
    """The job's NetworkPolicy as the cache keeps it."""
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"np-{name}"}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata, "spec": spec}


@dataclass
class Case:
    job: dict[str, Any]
    policies: list[dict[str, Any]]
    create: list[Creation] = field(default_factory=list)  # of NetworkPolicies
    patch: list[ChildPatch] = field(default_factory=list)
    delete: list[ChildRef] = field(default_factory=list)  # of NetworkPolicies
    creates_pods: bool = False
    failed: str | None = None  # the InvalidSpec message


RUNNING = running(make_job())
PLANNED = {
    "asked for at creation: made with the pods, as the job's own child": Case(
        isolated(make_job()), [], create=[Creation(NETWORK_POLICY, None, NAME)], creates_pods=True),
    "asked for while running: made": Case(isolated(RUNNING), [], create=[Creation(NETWORK_POLICY, None, NAME)]),
    "as asked: left alone": Case(isolated(RUNNING), [stored(ISOLATED_SPEC)]),
    "as the apiserver keeps an empty selector map: left alone, no patch loop": Case(
        isolated(RUNNING, '[{"namespaceSelector": {"matchLabels": {}}}]'),
        [stored({**ISOLATED_SPEC, "ingress": [{"from": [{"podSelector": OWN}, {"namespaceSelector": {
            "matchLabels": {}}}]}]})]),
    "a peer added to the annotation: patched": Case(
        isolated(RUNNING, '[{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]'),
        [stored(ISOLATED_SPEC)], patch=[ChildPatch(NETWORK_POLICY, NAME, {"spec": WITH_MONITORING})]),
    "edited by hand: patched back": Case(
        isolated(RUNNING), [stored({**ISOLATED_SPEC, "ingress": [{}]})],
        patch=[ChildPatch(NETWORK_POLICY, NAME, {"spec": ISOLATED_SPEC})]),
    "the switch turned off: deleted": Case(
        isolated(RUNNING, switch="None"), [stored(ISOLATED_SPEC)],
        delete=[ChildRef(NETWORK_POLICY, NAME, f"np-{NAME}")]),
    "the annotation removed: deleted": Case(RUNNING, [stored(ISOLATED_SPEC)],
                                            delete=[ChildRef(NETWORK_POLICY, NAME, f"np-{NAME}")]),
    "a stray one deleted, the job's own made": Case(
        isolated(RUNNING), [stored(ISOLATED_SPEC, name="mnist")], create=[Creation(NETWORK_POLICY, None, NAME)],
        delete=[ChildRef(NETWORK_POLICY, "mnist", "np-mnist")]),
    "one being deleted is waited out, not deleted again": Case(
        isolated(RUNNING, switch="None"), [stored(ISOLATED_SPEC, terminating=True)]),
    "a misspelt switch fails the job, creating nothing": Case(
        isolated(make_job(), switch="On"), [], failed=(
            "TFJob ns/mnist has an invalid spec: metadata.annotations[tfop.kubeflow.org/network-policy]: must be "
            "one of Isolated, None, not 'On'.")),
    "bad peers fail the job, creating nothing": Case(
        isolated(make_job(), '[{"namespace": "monitoring"}]'), [], failed=(
            "TFJob ns/mnist has an invalid spec: metadata.annotations[tfop.kubeflow.org/network-policy-from][0]: "
            "unknown key 'namespace'; a peer has podSelector, namespaceSelector, ipBlock.")),
    "a suspended job keeps its policy": Case(
        isolated({**RUNNING, "spec": {**RUNNING["spec"], "runPolicy": {"suspend": True}}}), [stored(ISOLATED_SPEC)]),
}


def planned(case: Case) -> Plan:
    pods = [] if case.creates_pods or case.failed else running_pods()
    children = {POD: pods, SERVICE: [] if case.creates_pods else services_for(), NETWORK_POLICY: case.policies}
    return plan(PlanContext(case.job, children, NOW, ControllerConfig()))


@pytest.mark.parametrize("case", list(PLANNED.values()), ids=list(PLANNED))
def test_what_the_plan_does_with_the_policy(case: Case) -> None:
    result = planned(case)
    assert result.creates(NETWORK_POLICY) == case.create
    assert [patch for patch in result.patch if patch.kind == NETWORK_POLICY] == case.patch
    assert result.deletes(NETWORK_POLICY) == case.delete
    assert bool(result.creates(POD)) is case.creates_pods
    if case.failed is not None:
        assert condition(result, "Failed") == ("True", "InvalidSpec")
        assert message(result, "Failed") == case.failed
        assert result.create == []


def test_the_policy_is_created_before_the_replicas() -> None:
    result = planned(PLANNED["asked for at creation: made with the pods, as the job's own child"])
    assert result.create[0] == Creation(NETWORK_POLICY, None, NAME)
    # The applier sends a job's own children first, one by one, and no replica's child after a refusal.
    assert child_kinds(None)[NETWORK_POLICY].scope is Scope.JOB


def test_the_body_is_owned_labelled_and_selects_the_jobs_pods() -> None:
    job = isolated(make_job(), '[{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": '
                               '"monitoring"}}}]')
    assert DesiredChildren(parsed(job)).body(NETWORK_POLICY, None) == {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": NAME, "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id": RID,
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": UID, "controller": True, "blockOwnerDeletion": True}]},
        "spec": WITH_MONITORING}


def test_the_cache_keeps_the_spec_and_drops_the_rest() -> None:
    served = {**stored(ISOLATED_SPEC), "metadata": {**stored(ISOLATED_SPEC)["metadata"], "generation": 1,
                                                    "annotations": {"a": "b"}, "managedFields": [{"manager": "x"}]}}
    assert child_kinds(None)[NETWORK_POLICY].transform(served) == stored(ISOLATED_SPEC)
