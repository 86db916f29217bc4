"""The gang schedulers tfop knows, as settings: which one the operator config names is part of the cluster it runs
in (ControllerConfig.gang_scheduler). What a PodGroup of theirs holds is children/pod_group.py's business.

Three are known: the Coscheduling plugin of scheduler-plugins (PodGroup scheduling.x-k8s.io/v1alpha1, a pod joins
by a label), Volcano (PodGroup scheduling.volcano.sh/v1beta1, a pod joins by an annotation) and kube-scheduler's own
GangScheduling plugin (PodGroup scheduling.k8s.io/v1beta1, beta in Kubernetes 1.37 behind the GenericWorkload gate, a
pod joins by its spec.schedulingGroup).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

GangSchedulerName = Literal["none", "scheduler-plugins", "volcano", "kubernetes"]
GANG_NONE: Final = "none"
GANG_SCHEDULER_PLUGINS: Final = "scheduler-plugins"
GANG_VOLCANO: Final = "volcano"
GANG_KUBERNETES: Final = "kubernetes"
GANG_SCHEDULER_NAMES: Final[tuple[GangSchedulerName, ...]] = (
    GANG_NONE, GANG_SCHEDULER_PLUGINS, GANG_VOLCANO, GANG_KUBERNETES)


@dataclass(frozen=True)
class GangScheduler:
    name: GangSchedulerName  # the value of --gang-scheduler-name / gangScheduler
    group: str  # the API group and version that serve its PodGroups
    version: str
    scheduler_name: str  # the pods' spec.schedulerName, unless their template names one
    # Volcano admits a group (phase Pending -> Inqueue) before its pods may exist; the Coscheduling plugin holds
    # pods that exist until their whole group fits.
    pods_wait_for_admission: bool
    # What its PodGroup spec has beyond minMember and minResources (a CRD prunes the fields it does not declare,
    # so setting one it lacks would look like a change on every reconcile).
    schedule_timeout: bool  # scheduleTimeoutSeconds
    queues: bool  # queue and priorityClassName
    # Kubernetes' own PodGroup: a built-in API (no CRD), whose spec is a gang policy with minCount, and which a pod
    # names in its spec.schedulingGroup (children/native_gang.py).
    native: bool = False

    kind = "PodGroup"
    plural = "podgroups"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def missing(self) -> str:
        """What a cluster lacks when the apiserver does not serve its PodGroups."""
        if self.native:
            return (f"Kubernetes 1.37 or later with the GenericWorkload feature gate on the apiserver, scheduler and "
                    f"controller-manager, and --runtime-config={self.api_version}=true on the apiserver")
        return f"CRD {self.plural}.{self.group} is not installed"


GANG_SCHEDULERS: dict[GangSchedulerName, GangScheduler] = {
    GANG_SCHEDULER_PLUGINS: GangScheduler(
        GANG_SCHEDULER_PLUGINS, "scheduling.x-k8s.io", "v1alpha1",
        # The name scheduler-plugins' own manifests give the co-scheduler when it runs beside the default one.
        "scheduler-plugins-scheduler", pods_wait_for_admission=False, schedule_timeout=True, queues=False),
    GANG_VOLCANO: GangScheduler(
        GANG_VOLCANO, "scheduling.volcano.sh", "v1beta1",
        "volcano", pods_wait_for_admission=True, schedule_timeout=False, queues=True),
    GANG_KUBERNETES: GangScheduler(
        GANG_KUBERNETES, "scheduling.k8s.io", "v1beta1",
        "default-scheduler", pods_wait_for_admission=False, schedule_timeout=False, queues=False, native=True),
}


def gang_scheduler(name: GangSchedulerName) -> GangScheduler | None:
    """None for `none`."""
    return None if name == GANG_NONE else GANG_SCHEDULERS[name]
