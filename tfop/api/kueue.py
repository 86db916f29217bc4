"""What Kueue and MultiKueue need of a TFJob's spec, as pure functions of the job.

`runPolicy.managedBy` says which controller runs a job. Like the Kubeflow training operator, tfop runs a job whose
value is absent, empty or that operator's own `kubeflow.org/training-operator` (tfop replaces it, so manifests
and Kueue, which knows only that value, keep working); any other value, such as MultiKueue's on a manager
cluster, hands the job to that controller, and tfop never touches it. The top-level `spec.managedBy` says the
same (the CRD refuses the two naming different controllers): it is where Kueue's generic MultiKueue adapter for
external kinds reads and removes it, so with tfop's own Kueue integration a job sent to MultiKueue names it there,
and the manager cluster's tfop keeps only its Workload (plan/policies/multikueue.py). The copy MultiKueue makes
on a worker names the Workload it made for it (PREBUILT_WORKLOAD), which that cluster's tfop follows.

Kueue's TFJob integration looks replica types up by their TitleCase keys only (Chief, Master, PS, Worker,
Evaluator): a `worker` key makes no pod set, so its pods would run outside the quota and without the flavor's
node selectors. A queued job must spell its keys that way; tfop accepts the other spellings everywhere else.

Whether Kueue queues a job at all is up to Kueue: its TFJob integration (`kubeflow.org/tfjob` in the
Configuration's integrations.frameworks) suspends a job that names a queue as it is created, and admits it later.
Without the integration (off by default in Kueue releases from mid-2026) the job is stored as written and runs at
once, unqueued. tfop can tell only from a job whose spec is still as created (generation 1): named a queue, not
suspended.
"""

from __future__ import annotations

from typing import Final, Literal

from tfop.api.constants import REPLICA_TYPES
from tfop.api.errors import FieldError
from tfop.api.fields import mapping_at, text

MANAGED_BY_OPERATOR: Final = "kubeflow.org/training-operator"
# MultiKueue's controller name: a job whose spec.managedBy is this is dispatched to a worker cluster by Kueue.
MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
# The Workload MultiKueue made on a worker cluster for its copy of a job: named by an annotation (Kueue v0.18 and
# later, feature gate WorkloadIdentifierAnnotations, on by default) or, as before, a label of the same key.
PREBUILT_WORKLOAD: Final = "kueue.x-k8s.io/prebuilt-workload-name"
# Kueue reads the queue from this label (and, deprecated, from an annotation of the same name).
QUEUE_NAME: Final = "kueue.x-k8s.io/queue-name"
# A WorkloadPriorityClass, by name, as Kueue reads it from a job's label.
PRIORITY_CLASS: Final = "kueue.x-k8s.io/priority-class"
# Without that label, the pods' PriorityClass (scheduling.k8s.io) gives a queued job its priority, found as Kueue's
# TFJob adapter finds it: runPolicy.schedulingPolicy.priorityClass, else the first replica type's in this order
# whose pod template names one.
PRIORITY_CLASS_ORDER: Final = ("chief", "master", "ps", "worker", "evaluator")
TFJOB_INTEGRATION: Final = "kubeflow.org/tfjob"
REASON_NOT_QUEUED: Final = "NotQueuedByKueue"  # a Warning event's reason
# Kueue's TFJob adapter queues a job tfop's own integration queues too: the Suspended condition's reason, and a
# Warning event's. Kueue marks the Workloads it makes for a job with the job's uid under this label.
REASON_ADAPTER_CONFLICT: Final = "KueueAdapterConflict"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"

# Who queues a job that names a Kueue queue (the operator config's `kueue.integration`): tfop itself, creating and
# following the job's Workload (Kueue's "external framework" pattern, for Kueue releases without the TFJob
# adapter), or Kueue's TFJob adapter, which suspends and resumes the job through spec.runPolicy.suspend.
KueueIntegration = Literal["own", "kueue"]
INTEGRATION_OWN: Final = "own"
INTEGRATION_ADAPTER: Final = "kueue"
INTEGRATIONS: Final[tuple[KueueIntegration, ...]] = (INTEGRATION_OWN, INTEGRATION_ADAPTER)
# The Workload API tfop writes with its own integration (Kueue v0.15 and later serve it).
KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"


def managed_elsewhere(job: object) -> str | None:
    """The controller that runs `job` instead of tfop (spec.managedBy, else spec.runPolicy.managedBy), or None when
    tfop runs it."""
    spec = mapping_at(job, "spec")
    manager = text(spec.get("managedBy")) or text(mapping_at(spec, "runPolicy").get("managedBy"))
    return manager if manager and manager != MANAGED_BY_OPERATOR else None


def dispatched_by_multikueue(job: object) -> bool:
    """Whether the job's spec.managedBy hands it to MultiKueue: where Kueue's generic adapter for external kinds
    looks (runPolicy.managedBy is what Kueue's own TFJob adapter reads)."""
    return text(mapping_at(job, "spec").get("managedBy")) == MULTIKUEUE


def prebuilt_workload(job: object) -> str | None:
    """The name of the Workload MultiKueue made for this copy of a job on a worker cluster, if it is one: the
    annotation first, then the label, as Kueue reads them."""
    metadata = mapping_at(job, "metadata")
    return (text(mapping_at(metadata, "annotations").get(PREBUILT_WORKLOAD))
            or text(mapping_at(metadata, "labels").get(PREBUILT_WORKLOAD)) or None)


def queue_name(job: object) -> str | None:
    metadata = mapping_at(job, "metadata")
    return text(mapping_at(metadata, "labels").get(QUEUE_NAME)) or text(
        mapping_at(metadata, "annotations").get(QUEUE_NAME)) or None


def priority_class(job: object) -> str | None:
    """The WorkloadPriorityClass the job names (label kueue.x-k8s.io/priority-class), if any."""
    return text(mapping_at(job, "metadata", "labels").get(PRIORITY_CLASS)) or None


def pod_priority_class(job: object) -> str | None:
    """The scheduling.k8s.io PriorityClass the job's pods name, as Kueue's TFJob adapter reads it for the
    Workload's priority (see PRIORITY_CLASS_ORDER), if any."""
    spec = mapping_at(job, "spec")
    given = text(mapping_at(spec, "runPolicy", "schedulingPolicy").get("priorityClass"))
    if given:
        return given
    replicas = mapping_at(spec, "tfReplicaSpecs")
    ranked = sorted((PRIORITY_CLASS_ORDER.index(key.lower()), key) for key in replicas
                    if isinstance(key, str) and key.lower() in PRIORITY_CLASS_ORDER)
    for _, key in ranked:
        name = text(mapping_at(replicas, key, "template", "spec").get("priorityClassName"))
        if name:
            return name
    return None


def kueue_key_problems(job: object) -> list[FieldError]:
    """Replica keys Kueue would not count, for a job in a Kueue queue (run before defaulting renames keys)."""
    queue = queue_name(job)
    if queue is None:
        return []
    problems = []
    for key in mapping_at(job, "spec", "tfReplicaSpecs"):
        titled = next((replica_type for replica_type in REPLICA_TYPES if replica_type.lower() == key.lower()), None)
        if titled is not None and titled != key:
            problems.append(FieldError(f"spec.tfReplicaSpecs[{key}]", (
                f"must be spelt {titled} in a job queued by Kueue (label {QUEUE_NAME}={queue}): Kueue counts quota "
                f"only for the keys {', '.join(REPLICA_TYPES)}, so its pods would run outside the queue's quota")))
    return problems


def not_queued_by_kueue(job: object) -> str | None:
    """Why the job runs outside the Kueue queue it names, or None: it names one, yet its spec is still the one it
    was created with (generation 1) and not suspended, so no Kueue webhook suspended it at creation."""
    queue = queue_name(job)
    if queue is None or mapping_at(job, "metadata").get("generation") != 1:
        return None
    if mapping_at(job, "spec", "runPolicy").get("suspend") is True:
        return None
    return (f"it names the Kueue queue {queue} ({QUEUE_NAME}) but was not suspended when it was created, so Kueue "
            f"does not manage it and it runs now, outside any quota; Kueue queues TFJobs only with its "
            f"{TFJOB_INTEGRATION} integration enabled (integrations.frameworks in its Configuration) and its "
            f"webhooks covering this namespace")
