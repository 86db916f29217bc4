"""A job's own NetworkPolicy against the real apiserver, with both replica backends: made for a job that asks for
isolation, owned by it, kept in line with its annotations, deleted when isolation is turned off and collected with
the job; and its pod selector, evaluated by the apiserver, picks exactly the job's pods.

The local cluster runs no network plugin that enforces NetworkPolicies (kwok's pods have no network at all): these
tests prove the object, its owner and its selectors, not that a connection is refused."""

from __future__ import annotations

import json
from typing import Any

from support.tfjobs import TFJOBS, children, condition, events_about, job_status, pods_by_name, replica, tfjob
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS, Resource

NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
SWITCH = "tfop.kubeflow.org/network-policy"
FROM = "tfop.kubeflow.org/network-policy-from"
PEERS = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
         {"namespaceSelector": {}, "podSelector": {"matchExpressions": [
             {"key": "app.kubernetes.io/name", "operator": "In", "values": ["tensorboard"]}]}},
         {"ipBlock": {"cidr": "198.18.0.0/15", "except": ["198.19.0.0/16"]}}]
OWN = {"matchLabels": {"training.kubeflow.org/job-name": "iso"},
       "matchExpressions": [{"key": "training.kubeflow.org/operator-name", "operator": "In",
                             "values": ["tfjob-controller", "tfop"]}]}




def policy(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return client.get(NETWORK_POLICIES, name, namespace)
    except NotFound:
        return None


def annotate(client: KubeClient, namespace: str, job: str, annotations: dict[str, str | None]) -> None:
    client.patch(TFJOBS, job, {"metadata": {"annotations": annotations}}, namespace)


def selected(client: KubeClient, namespace: str, selector: dict[str, Any]) -> set[str]:
    """The pods the apiserver finds with `selector` (a LabelSelector, as in the policy) in `namespace`."""
    terms = [f"{key}={value}" for key, value in selector.get("matchLabels", {}).items()]
    terms += [f"{e['key']} {e['operator'].lower()} ({','.join(e['values'])})" for e in selector["matchExpressions"]]
    items, _ = client.list(PODS, namespace, label_selector=",".join(terms))
    return {pod["metadata"]["name"] for pod in items}


def test_an_isolated_job_gets_its_own_network_policy(backend: str, kube_client: KubeClient, namespace: str) -> None:
    job = tfjob("iso", Worker=replica(2), PS=replica())
    job["metadata"]["annotations"] = {SWITCH: "Isolated", FROM: json.dumps(PEERS)}
    uid = kube_client.create(TFJOBS, job, namespace)["metadata"]["uid"]
    kube_client.create(TFJOBS, tfjob("open", Worker=replica()), namespace)  # a neighbour, not isolated
    rid = wait_for(lambda: job_status(kube_client, namespace, "iso").get("runtimeId"), message="runtimeId")
    name = f"iso-{rid}"
    made = wait_for(lambda: policy(kube_client, namespace, name), message="the job's NetworkPolicy")
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("TFJob", "iso", uid, True)
    assert made["metadata"]["labels"] == {"training.kubeflow.org/job-name": "iso",
                                          "training.kubeflow.org/runtime-id": rid,
                                          "training.kubeflow.org/operator-name": "tfjob-controller",
                                          "app.kubernetes.io/managed-by": "tfop"}
    # As stored by the apiserver: what tfop sent, nothing defaulted or rewritten (so nothing to patch back).
    assert made["spec"] == {"podSelector": OWN, "policyTypes": ["Ingress"],
                            "ingress": [{"from": [{"podSelector": OWN}, *PEERS]}]}

    wait_for(lambda: condition(kube_client, namespace, "iso", "Running"), DEADLINE, "iso Running")
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "open")) == 1, DEADLINE, "the neighbour's pod")
    # The selector picks exactly the job's pods, from either backend, and not its neighbour's.
    own_pods = set(pods_by_name(kube_client, namespace, "iso"))
    assert len(own_pods) == 3 and selected(kube_client, namespace, made["spec"]["podSelector"]) == own_pods
    assert children(kube_client, NETWORK_POLICIES, namespace, "open") == []

    # The peers edited: patched once, then left alone.
    annotate(kube_client, namespace, "iso", {FROM: json.dumps(PEERS[:1])})
    wait_for(lambda: (policy(kube_client, namespace, name) or {}).get("spec", {}).get("ingress") == [
        {"from": [{"podSelector": OWN}, PEERS[0]]}], DEADLINE, "the policy patched to the new peers")
    consistently(lambda: len([e for e in events_about(kube_client, namespace, "iso")
                              if e["reason"] == "SuccessfulUpdateNetworkPolicy"]) <= 1, 3,
                 "one update of the policy, no patch loop")

    # Isolation turned off: deleted (the peers go first: they need the switch); on again: made again.
    annotate(kube_client, namespace, "iso", {FROM: None, SWITCH: "None"})
    wait_for(lambda: policy(kube_client, namespace, name) is None, DEADLINE, "the policy deleted")
    assert condition(kube_client, namespace, "iso", "Running")
    annotate(kube_client, namespace, "iso", {SWITCH: "Isolated"})
    wait_for(lambda: policy(kube_client, namespace, name), DEADLINE, "the policy made again")

    kube_client.delete(TFJOBS, "iso", namespace)
    # The garbage collector starts watching a newly installed CRD's objects at its next discovery pass (every 30 s):
    # soon after the CRD appears (a session's first test), collecting takes up to half a minute more.
    wait_for(lambda: policy(kube_client, namespace, name) is None, DEADLINE, "the policy collected with the job")


def test_bad_peers_fail_the_job_naming_the_annotation(backend: str, kube_client: KubeClient, namespace: str) -> None:
    job = tfjob("badpeers", Worker=replica())
    job["metadata"]["annotations"] = {SWITCH: "Isolated", FROM: '[{"namespace": "monitoring"}]'}
    kube_client.create(TFJOBS, job, namespace)
    failed = wait_for(lambda: condition(kube_client, namespace, "badpeers", "Failed"), DEADLINE, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"] == (
        f"TFJob {namespace}/badpeers has an invalid spec: metadata.annotations[tfop.kubeflow.org/network-policy-from]"
        "[0]: unknown key 'namespace'; a peer has podSelector, namespaceSelector, ipBlock.")
    consistently(lambda: not pods_by_name(kube_client, namespace, "badpeers")
                 and not kube_client.list(NETWORK_POLICIES, namespace)[0], 2, "nothing created")
