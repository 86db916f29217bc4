"""Injecting each kind of fault and healing it. An injector does both (a component taken down comes back after the
fault's hold) and answers a line for the timeline, or None when nothing fit (no running job to hit, say)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from chaos import schedule
from chaos.driver import Driver
from chaos.observer import TFJOBS
from chaos.operators import OperatorPair
from chaos.retrying import retrying
from chaos.workload import DELETED, FAILED
from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.etcd_compaction import compact_etcd


@dataclass
class Target:
    cluster: LocalCluster
    operators: OperatorPair
    driver: Driver

    @property
    def namespace(self) -> str:
        return self.driver.namespace


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def restart_component(cluster: LocalCluster, component: str, hold: float, port: int | None = None) -> None:
    """SIGKILL (the watchdog leaves it down), wait `hold`, start it again: start() returns once it is healthy."""
    cluster.kill(component)
    try:
        time.sleep(hold)
        deadline = time.monotonic() + 60
        while port is not None and not port_free(port) and time.monotonic() < deadline:
            time.sleep(0.1)  # the kernel frees a killed listener's port a moment after the process is gone
    finally:
        cluster.start(component)


def operator_kill(target: Target, fault: schedule.Fault) -> str:
    return target.operators.kill_leader()


def apiserver_restart(target: Target, fault: schedule.Fault) -> str:
    restart_component(target.cluster, "kube-apiserver", fault.hold, urlparse(target.cluster.server).port)
    return f"down {fault.hold:.1f} s"


def etcd_compact(target: Target, fault: schedule.Fault) -> str:
    return f"compacted at revision {compact_etcd(target.cluster.etcd_url)}"


def pod_retryable(target: Target, fault: schedule.Fault) -> str | None:
    plan = target.driver.claim(lambda p: bool(p.restartable_tasks()))
    pod = target.driver.kill_retryably(plan) if plan else None
    return f"{pod} exited 137 ({plan.restart_policy})" if plan and pod else None


def pod_permanent(target: Target, fault: schedule.Fault) -> str | None:
    driver = target.driver
    plan = driver.claim(lambda p: p.restart_policy == "ExitCode" and p.replicas.get("Worker", 0) > 1)
    pod = driver.running_pod(plan, "Worker", 1) if plan else None
    if plan is None or pod is None:
        return None
    name = pod["metadata"]["name"]
    retrying(lambda: exit_pod(driver.client, driver.namespace, name, 1))
    plan.expected, plan.ending = FAILED, True
    return f"{name} exited 1: {plan.name} must fail"


def job_delete_mid_restart(target: Target, fault: schedule.Fault) -> str | None:
    driver = target.driver
    plan = driver.claim(lambda p: p.restart_policy == "ExitCode" and bool(p.restartable_tasks()))
    pod = driver.kill_retryably(plan) if plan else None
    if plan is None or pod is None:
        return None
    retrying(lambda: driver.client.delete(TFJOBS, plan.name, driver.namespace))
    plan.expected, plan.deleted, plan.ending = DELETED, True, True
    return f"{pod} exited 137, {plan.name} deleted"


def spec_edit(target: Target, fault: schedule.Fault) -> str | None:
    driver = target.driver
    plan = driver.claim(lambda p: "Worker" in p.replicas)
    if plan is None:
        return None
    before = plan.replicas["Worker"]
    after = before + 1 if before <= 2 else before - 1
    retrying(lambda: driver.client.patch(TFJOBS, plan.name, {"spec": {"tfReplicaSpecs": {"Worker": {
        "replicas": after}}}}, driver.namespace))
    plan.replicas["Worker"] = after
    return f"{plan.name} Worker {before} -> {after}"


def _node_down(target: Target, fault: schedule.Fault, take_down: Callable[[str], None], how: str) -> str | None:
    """A real node taken down (`take_down(name)`) for the fault's hold, then started again."""
    name = target.driver.claim_node(target.cluster.node_names)
    if name is None:
        return None
    take_down(name)
    time.sleep(fault.hold)
    target.cluster.node_start(name)
    return f"{name} {how} for {fault.hold:.1f} s"


def node_stop(target: Target, fault: schedule.Fault) -> str | None:
    return _node_down(target, fault, target.cluster.node_stop, "off")


def node_partition(target: Target, fault: schedule.Fault) -> str | None:
    return _node_down(target, fault, target.cluster.node_partition, "cut off")


def coredns_restart(target: Target, fault: schedule.Fault) -> str:
    restart_component(target.cluster, "coredns", fault.hold)
    return f"down {fault.hold:.1f} s"


INJECTORS: dict[str, Callable[[Target, schedule.Fault], str | None]] = {
    schedule.OPERATOR_KILL: operator_kill,
    schedule.APISERVER_RESTART: apiserver_restart,
    schedule.ETCD_COMPACT: etcd_compact,
    schedule.POD_RETRYABLE: pod_retryable,
    schedule.POD_PERMANENT: pod_permanent,
    schedule.JOB_DELETE_MID_RESTART: job_delete_mid_restart,
    schedule.SPEC_EDIT: spec_edit,
    schedule.NODE_STOP: node_stop,
    schedule.NODE_PARTITION: node_partition,
    schedule.COREDNS_RESTART: coredns_restart,
}
