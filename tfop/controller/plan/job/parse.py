"""The one step from a raw TFJob to the planner's TFJobModel: defaults, the default PS server, the legacy GPU
rewrite, validation and every annotation, in that order; or every FieldError found, for the reject path.

Callers may rely on: the raw job is never changed; the errors are in a stable order (the spec's, then Kueue's
keys, then the annotations'); a job that parses once parses the same way while its spec, annotations and the
operator's config stay the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from tfop.api.constants import (
    CLEAN_POD_POLICIES,
    CLEAN_POD_POLICY_RUNNING,
    REPLICA_TYPES,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    ReplicaBackendName,
)
from tfop.api.defaults import apply_defaults
from tfop.api.errors import FieldError
from tfop.api.fields import integer, items, mapping, mapping_at, one_of, text
from tfop.api.kueue import (
    INTEGRATION_OWN,
    kueue_key_problems,
    not_queued_by_kueue,
    pod_priority_class,
    prebuilt_workload,
    priority_class,
    queue_name,
)
from tfop.api.validation import validate
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job import annotations as parse_annotation
from tfop.controller.plan.job import legacy_gpu
from tfop.controller.plan.job.default_ps_server import with_default_ps_server
from tfop.controller.plan.job.model import (
    POD_PRIORITY_CLASS,
    REPLICAS_WRITERS,
    WORKLOAD_PRIORITY_CLASS,
    ElasticPolicy,
    JobMeta,
    JobOptions,
    PriorityClassRef,
    ReplicaSpec,
    ReplicasWriter,
    RunPolicy,
    SchedulingPolicy,
    TFJobModel,
    TFJobSpec,
)
from tfop.controller.plan.job.tensorboard import tensorboard_ask
from tfop.objects import Object

_Choice = TypeVar("_Choice", bound=str)


@dataclass(frozen=True, slots=True)
class InvalidJob:
    """A job the planner rejects, with why."""

    errors: tuple[FieldError, ...]
    # The backend it has or asks for, None when its annotation is what is invalid.
    replica_backend: ReplicaBackendName | None
    source: Object  # the job defaulted and rewritten, as far as that went, for its clean-up


def parse_job(raw: Object, config: ControllerConfig, *, settled_backend: ReplicaBackendName | None = None,
              claims: Mapping[str, Object] | None = None) -> TFJobModel | InvalidJob:
    """`settled_backend`: the replica backend the job already has (backends.settled_backend), which its
    annotation no longer decides. `claims`: the cached PersistentVolumeClaims its templates name, by name (for
    where its TensorBoard may run, plan/job/tensorboard.py)."""
    rewrite = legacy_gpu.rewrite_legacy_gpu(with_default_ps_server(apply_defaults(raw), config), config.gpu_resource)
    job = rewrite.job
    annotations: Mapping[str, object] = mapping_at(raw, "metadata", "annotations")
    backend_errors: list[FieldError] = []
    backend: ReplicaBackendName | None = settled_backend
    if backend is None:
        backend, backend_errors = parse_annotation.replica_backend(annotations, config.replica_backend)
    node_policy, node_policy_errors = parse_annotation.node_policy(annotations, config.node_loss)
    scope, scope_errors = parse_annotation.restart_scope(annotations, backend)
    grace, grace_errors = parse_annotation.evaluator_grace(annotations, config.evaluator_grace_seconds)
    unknown_grace, unknown_grace_errors = parse_annotation.unknown_scheduling_grace(
        annotations, config.unknown_scheduling_grace_seconds)
    isolation, isolation_errors = parse_annotation.network_isolation(annotations)
    budget, budget_errors = parse_annotation.disruption_budget(annotations)
    tensorboard, tensorboard_errors = tensorboard_ask(job, config.tensorboard, claims)
    # Kueue's adapter counts only TitleCase keys; tfop's own integration names pod sets itself.
    own = config.kueue_integration == INTEGRATION_OWN
    errors = (*validate(job, config.service_domain), *([] if own else kueue_key_problems(raw)), *node_policy_errors,
              *scope_errors, *backend_errors, *rewrite.problems, *grace_errors, *unknown_grace_errors,
              *isolation_errors, *budget_errors, *tensorboard_errors)
    if errors or backend is None:
        return InvalidJob(errors, backend, job)
    options = JobOptions(backend, scope, node_policy, grace, unknown_grace, isolation, rewrite.renamed,
                         unqueued=None if own else not_queued_by_kueue(raw),
                         capacity_resize=parse_annotation.capacity_resize(annotations),
                         own_queue=queue_name(raw) if own else None,
                         own_priority_class=_own_priority_class(raw) if own and queue_name(raw) else None,
                         disruption_budget=budget,
                         tensorboard=tensorboard)
    return TFJobModel(_metadata(job), _spec(job), options)


def _own_priority_class(raw: Object) -> PriorityClassRef | None:
    """As Kueue's job integrations find it: the job's WorkloadPriorityClass label first, then its pods' class."""
    workload_class = priority_class(raw)
    if workload_class is not None:
        return PriorityClassRef(WORKLOAD_PRIORITY_CLASS, workload_class)
    pods_class = pod_priority_class(raw)
    return PriorityClassRef(POD_PRIORITY_CLASS, pods_class) if pods_class is not None else None


def _metadata(job: Object) -> JobMeta:
    metadata = job["metadata"]
    writers = {replica_type: ReplicasWriter(writer["manager"], writer["operation"], text(writer.get("subresource")))
               for replica_type, writer in mapping(metadata.get(REPLICAS_WRITERS)).items()
               if isinstance(writer, dict) and isinstance(writer.get("manager"), str)
               and isinstance(writer.get("operation"), str)}
    return JobMeta(metadata["name"], metadata["namespace"], metadata["uid"], integer(metadata.get("generation")),
                   writers, prebuilt_workload(job))


def _spec(job: Object) -> TFJobSpec:
    spec = job["spec"]
    replicas = {replica_type: ReplicaSpec(replica_type, replica["replicas"],
                                          _valid(replica["restartPolicy"], RESTART_POLICIES), replica["template"])
                for replica_type, replica in ((_valid(key, REPLICA_TYPES), value)
                                              for key, value in spec["tfReplicaSpecs"].items())}
    elastic = spec.get("elasticPolicy")
    return TFJobSpec(replicas, _run_policy(spec["runPolicy"]), one_of(spec.get("successPolicy"), SUCCESS_POLICIES),
                     spec.get("enableDynamicWorker") is True,
                     _elastic_policy(elastic) if isinstance(elastic, dict) else None, text(spec.get("managedBy")))


def _elastic_policy(elastic: Object) -> ElasticPolicy:
    """Validated already (api/validation.py): the bounds are integers, min defaulting to 1."""
    behavior = elastic.get("behavior")
    return ElasticPolicy(integer(elastic.get("minReplicas")) or 1, elastic["maxReplicas"],
                         tuple(mapping(metric) for metric in items(elastic.get("metrics"))),
                         mapping(behavior) if behavior is not None else None)


def _run_policy(run_policy: Object) -> RunPolicy:
    scheduling = run_policy.get("schedulingPolicy")
    return RunPolicy(_valid(run_policy["cleanPodPolicy"], CLEAN_POD_POLICIES),
                     integer(run_policy.get("ttlSecondsAfterFinished")),
                     integer(run_policy.get("activeDeadlineSeconds")), integer(run_policy.get("backoffLimit")),
                     _scheduling_policy(scheduling) if isinstance(scheduling, dict) else None,
                     run_policy.get("suspend") is True, text(run_policy.get("managedBy")))


def _scheduling_policy(scheduling: Object) -> SchedulingPolicy:
    min_resources = scheduling.get("minResources")
    return SchedulingPolicy(integer(scheduling.get("minAvailable")), text(scheduling.get("queue")),
                            text(scheduling.get("priorityClass")),
                            mapping(min_resources) if min_resources is not None else None,
                            integer(scheduling.get("scheduleTimeoutSeconds")))


def lenient_run_policy(job: Object) -> RunPolicy:
    """The clean-up and TTL of a job that did not parse (a rejected or finished job is cleaned up all the same):
    what is invalid reads as left out."""
    run_policy = mapping_at(job, "spec", "runPolicy")
    policy = one_of(run_policy.get("cleanPodPolicy"), CLEAN_POD_POLICIES)
    ttl = integer(run_policy.get("ttlSecondsAfterFinished"))
    return RunPolicy(policy if policy is not None else CLEAN_POD_POLICY_RUNNING,
                     ttl if ttl is not None and ttl >= 0 else None)


def template_restart_policies(parsed: TFJobModel | InvalidJob) -> list[tuple[str, str | None, str | None]]:
    """(replica type, the pod template's restartPolicy, the replica's) of each replica; an invalid job's read
    leniently."""
    if isinstance(parsed, TFJobModel):
        return [(replica_type, text(mapping(replica.template.get("spec")).get("restartPolicy")),
                 replica.restart_policy) for replica_type, replica in parsed.spec.replica_specs.items()]
    return [(str(replica_type), text(mapping_at(replica, "template", "spec").get("restartPolicy")),
             text(mapping(replica).get("restartPolicy")))
            for replica_type, replica in mapping_at(parsed.source, "spec", "tfReplicaSpecs").items()]


def _valid(value: object, choices: tuple[_Choice, ...]) -> _Choice:
    """A field validation has checked (api/validation.py) and defaulting filled in, typed as its Literal."""
    choice = one_of(value, choices)
    if choice is None:
        raise AssertionError(f"{value!r} passed validation but is not one of {choices}")
    return choice
