"""kwok, the local cluster's fake kubelet (hack/localcluster/kwok-stages.yaml), ends a deleted pod as a kubelet
would, and never touches a later pod that took the same name. The operator replaces a failed replica's pod under
the same name, so a stray delete by name made replacement pods vanish a second after they appeared, over and over."""

from __future__ import annotations

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.waiting import consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS

# kwok retried a failed delete after 1 s (+-20%), then 2 s: a replacement that outlives both was left alone.
QUIET_SECONDS = 4.0


def pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow"}]}}


def phase(client: KubeClient, namespace: str, name: str) -> tuple[str, str] | None:
    """(uid, phase) of the pod, or None once it is gone."""
    try:
        found = client.get(PODS, name, namespace)
    except NotFound:
        return None
    return found["metadata"]["uid"], found.get("status", {}).get("phase", "")


def test_a_pod_made_again_under_its_name_is_left_running(cluster: LocalCluster, kube_client: KubeClient,
                                                         namespace: str) -> None:
    # One that failed (the apiserver deletes it at once) and one still running (kwok ends its grace period).
    names = ("failed", "running")
    for name in names:
        kube_client.create(PODS, pod(name), namespace)
    for name in names:
        wait_for(lambda n=name: (found := phase(kube_client, namespace, n)) and found[1] == "Running",
                 message=f"kwok runs {name}")
    exit_pod(kube_client, namespace, "failed", 1)
    replacements: dict[str, str] = {}
    for name in names:
        uid = kube_client.get(PODS, name, namespace)["metadata"]["uid"]
        kube_client.delete(PODS, name, namespace, uid=uid)
        wait_for(lambda n=name: phase(kube_client, namespace, n) is None, message=f"{name} gone")
        replacements[name] = kube_client.create(PODS, pod(name), namespace)["metadata"]["uid"]

    consistently(lambda: all((found := phase(kube_client, namespace, name)) is not None and found[0] == uid
                             for name, uid in replacements.items()), QUIET_SECONDS,
                 "every replacement pod kept (not deleted by a stray retry)")
    for name, uid in replacements.items():
        wait_for(lambda n=name, u=uid: phase(kube_client, namespace, n) == (u, "Running"),
                 message=f"kwok runs the new {name} pod")
    # The stray deletes showed as NotFound errors in kwok's log even when no replacement was there to hit.
    strays = [line for line in cluster.log_file("kwok").read_text().splitlines()
              if f'"pod":"{namespace}/' in line and "failed to apply stage" in line]
    assert not strays, f"kwok tried to delete pods that were already gone: {strays}"
