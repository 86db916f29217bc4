"""Names and values of the TFJob API (kubeflow.org/v1) and of the labels tfop puts on a job's children."""

from __future__ import annotations

from typing import Final, Literal

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
PLURAL: Final = "tfjobs"
KIND: Final = "TFJob"

# Replica types, spelled as the API spells them (keys of spec.tfReplicaSpecs after defaulting).
REPLICA_CHIEF: Final = "Chief"
REPLICA_MASTER: Final = "Master"
REPLICA_WORKER: Final = "Worker"
REPLICA_PS: Final = "PS"
REPLICA_EVALUATOR: Final = "Evaluator"
ReplicaType = Literal["Chief", "Master", "Worker", "PS", "Evaluator"]
REPLICA_TYPES: Final[tuple[ReplicaType, ...]] = (REPLICA_CHIEF, REPLICA_MASTER, REPLICA_WORKER, REPLICA_PS,
                                                 REPLICA_EVALUATOR)
CHIEF_REPLICA_TYPES: Final[tuple[ReplicaType, ...]] = (REPLICA_CHIEF, REPLICA_MASTER)

DEFAULT_CONTAINER_NAME: Final = "tensorflow"
DEFAULT_PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222
TF_CONFIG_ENV: Final = "TF_CONFIG"

# Children are Services too, so their names must be DNS-1035 labels.
MAX_CHILD_NAME_LENGTH: Final = 63
# Every pod's TF_CONFIG lists every replica, up to 140 bytes each, and a pod must fit in etcd's 1.5 MiB request
# limit: 5000 replicas take at most 700,000 bytes of it (the CRD's rule; docs/tfjob/reference.md has the arithmetic).
MAX_REPLICAS: Final = 5000

LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_RUNTIME_ID: Final = "training.kubeflow.org/runtime-id"
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
# The value the Kubeflow training operator's TFJob controller writes, which Kueue's TFJob integration and the
# Go operator's own Services select on; tfop writes it too (docs/install/from-go-operator.md).
OPERATOR_NAME: Final = "tfjob-controller"
# What tfop's children carried before it spoke the Go operator's label; still watched, so they are adopted.
LEGACY_OPERATOR_NAME: Final = "tfop"
# On every pod tfop creates, removed once the job's status records how the replica ended (or it needs no record):
# a finished pod cannot vanish (the pod GC, a user) before its outcome is kept. tfop's own domain, not the
# training.kubeflow.org the Go operator's labels share: a finalizer has one owner that removes it.
FINALIZER_REPLICA_TRACKING: Final = "tfop.kubeflow.org/replica-tracking"
# Tells the children tfop created from those the Go operator created.
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "tfop"
JOB_ROLE_MASTER: Final = "master"

# How a job's children are named (status.childNaming): tfop's `{job}-{type}-{runtimeId}-{index}`, or the Kubeflow
# training operator's `{job}-{type}-{index}`, which a job adopted from it keeps.
NAMING_RUNTIME_ID: Final = "RuntimeId"
NAMING_TYPE_INDEX: Final = "TypeIndex"
ChildNamingScheme = Literal["RuntimeId", "TypeIndex"]
NAMINGS: Final[tuple[ChildNamingScheme, ...]] = (NAMING_RUNTIME_ID, NAMING_TYPE_INDEX)

# What makes a job's replicas (status.replicaBackend): Pods the operator creates, or one batch/v1 Job per replica
# whose controller makes the pod. Chosen per operator, overridden per job by the annotation, kept once recorded.
REPLICA_BACKEND_PODS: Final = "pods"
REPLICA_BACKEND_JOBS: Final = "jobs"
ReplicaBackendName = Literal["pods", "jobs"]
REPLICA_BACKENDS: Final[tuple[ReplicaBackendName, ...]] = (REPLICA_BACKEND_PODS, REPLICA_BACKEND_JOBS)
ANNOTATION_REPLICA_BACKEND: Final = "tfop.kubeflow.org/replica-backend"

# What tfop does with a replica whose node is unreachable (docs/tfjob/node-loss.md): Replace it once the node
# has been so for the grace, or WaitForProof (the out-of-service taint, the node deleted) that its process is gone.
NODE_LOSS_REPLACE: Final = "Replace"
NODE_LOSS_WAIT_FOR_PROOF: Final = "WaitForProof"
NodeLossPolicy = Literal["Replace", "WaitForProof"]
NODE_LOSS_POLICIES: Final[tuple[NodeLossPolicy, ...]] = (NODE_LOSS_REPLACE, NODE_LOSS_WAIT_FOR_PROOF)
ANNOTATION_NODE_LOSS_POLICY: Final = "tfop.kubeflow.org/node-loss-policy"
ANNOTATION_NODE_LOSS_GRACE: Final = "tfop.kubeflow.org/node-loss-grace-seconds"

# Whether a failed or lost replica restarts alone (Replica) or with every other live replica (Job), as a
# MultiWorkerMirroredStrategy collective needs.
RESTART_SCOPE_REPLICA: Final = "Replica"
RESTART_SCOPE_JOB: Final = "Job"
RestartScope = Literal["Replica", "Job"]
RESTART_SCOPES: Final[tuple[RestartScope, ...]] = (RESTART_SCOPE_REPLICA, RESTART_SCOPE_JOB)
ANNOTATION_RESTART_SCOPE: Final = "tfop.kubeflow.org/restart-scope"

# How long a job whose training succeeded waits for its running evaluators' final evaluation before it completes
# (docs/tfjob/reference.md#the-evaluators-final-evaluation); the controller config's evaluatorGraceSeconds else.
ANNOTATION_EVALUATOR_GRACE: Final = "tfop.kubeflow.org/evaluator-grace-seconds"
# "true": the job's progress reports are also the metric tf_operator_job_training_steps_per_second (tfop/progress/).
ANNOTATION_PROGRESS_METRICS: Final = "tfop.kubeflow.org/progress-metrics"

# How long a job waits while its pods name a PriorityClass the cluster lacks (admission refuses them) or a scheduler
# that never takes them, before it fails (docs/tfjob/reference.md#when-a-priorityclass-or-scheduler-is-missing);
# the controller config's unknownSchedulingGraceSeconds else.
ANNOTATION_UNKNOWN_SCHEDULING_GRACE: Final = "tfop.kubeflow.org/unknown-scheduling-grace-seconds"

# An opt-in NetworkPolicy per job (Isolated): ingress to its pods only from its own pods, and from the peers the
# second annotation lists, as a JSON list of NetworkPolicyPeers.
NETWORK_POLICY_ISOLATED: Final = "Isolated"
NETWORK_POLICY_NONE: Final = "None"
NetworkPolicyMode = Literal["Isolated", "None"]
NETWORK_POLICY_MODES: Final[tuple[NetworkPolicyMode, ...]] = (NETWORK_POLICY_ISOLATED, NETWORK_POLICY_NONE)
ANNOTATION_NETWORK_POLICY: Final = "tfop.kubeflow.org/network-policy"
ANNOTATION_NETWORK_POLICY_FROM: Final = "tfop.kubeflow.org/network-policy-from"

# An opt-in PodDisruptionBudget per job, kept while it runs: how many of its pods a drain may evict at a time
# (plan/children/disruption_budget.py).
DISRUPTION_BUDGET_NONE: Final = "None"
DISRUPTION_BUDGET_ONE_AT_A_TIME: Final = "OneAtATime"
DISRUPTION_BUDGET_NO_EVICTION: Final = "NoEviction"
DisruptionBudgetPolicy = Literal["None", "OneAtATime", "NoEviction"]
DISRUPTION_BUDGETS: Final[tuple[DisruptionBudgetPolicy, ...]] = (
    DISRUPTION_BUDGET_NONE, DISRUPTION_BUDGET_ONE_AT_A_TIME, DISRUPTION_BUDGET_NO_EVICTION)
ANNOTATION_DISRUPTION_BUDGET: Final = "tfop.kubeflow.org/disruption-budget"

# On each replica pod: the replica counts its TF_CONFIG's cluster was built from (e.g. "Chief=1,PS=2,Worker=3";
# with enableDynamicWorker only the PS, which is all a worker's sparse cluster names). A live pod whose value is
# not the job's current one has an out-of-date TF_CONFIG: the job was resized (docs/tfjob/scaling.md).
ANNOTATION_TF_CLUSTER: Final = "tfop.kubeflow.org/tf-cluster"
# On each live pod of a job whose program reports its checkpoints: when the job last saved one (RFC 3339, UTC), for
# schedulers that prefer as victims the pods that would lose the least work (Volcano); written by tfop alone, from
# the job's status.lastCheckpointTime (plan/policies/checkpoints.py, docs/tfjob/disruptions.md).
ANNOTATION_LAST_CHECKPOINT_TIME: Final = "volcano.sh/last-checkpoint-time"
# The progress report's metric that says when the program last saved a checkpoint (tfop/progress/).
METRIC_LAST_CHECKPOINT_TIME: Final = "lastCheckpointTime"
# On a TFJob, written by the capacity auto-scaler with the Worker count it sets, in the same patch: why, e.g.
# "Worker 4 -> 2: ns/b's pods waited 30 s for cpu". The resize to that count is then told as caused by Capacity.
ANNOTATION_RESIZE_REASON: Final = "tfop.kubeflow.org/resize-reason"

# On a TFJob, for people: `tfop.kubeflow.org/link-<name>: <URL>` names a page about the job (its TensorBoard, a
# Grafana dashboard) that `tfop ui` shows as a link (docs/tfjob/ui.md); tfop itself reads nothing from it.
ANNOTATION_LINK_PREFIX: Final = "tfop.kubeflow.org/link-"

RESTART_POLICY_ALWAYS: Final = "Always"
RESTART_POLICY_ON_FAILURE: Final = "OnFailure"
RESTART_POLICY_NEVER: Final = "Never"
RESTART_POLICY_EXIT_CODE: Final = "ExitCode"
RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
RESTART_POLICIES: Final[tuple[RestartPolicy, ...]] = (
    RESTART_POLICY_ALWAYS, RESTART_POLICY_ON_FAILURE, RESTART_POLICY_NEVER, RESTART_POLICY_EXIT_CODE,
)

CLEAN_POD_POLICY_ALL: Final = "All"
CLEAN_POD_POLICY_RUNNING: Final = "Running"
CLEAN_POD_POLICY_NONE: Final = "None"
CleanPodPolicy = Literal["All", "Running", "None"]
CLEAN_POD_POLICIES: Final[tuple[CleanPodPolicy, ...]] = (
    CLEAN_POD_POLICY_ALL, CLEAN_POD_POLICY_RUNNING, CLEAN_POD_POLICY_NONE,
)

SUCCESS_POLICY_DEFAULT: Final = ""
SUCCESS_POLICY_ALL_WORKERS: Final = "AllWorkers"
SuccessPolicy = Literal["", "AllWorkers"]
SUCCESS_POLICIES: Final[tuple[SuccessPolicy, ...]] = (SUCCESS_POLICY_DEFAULT, SUCCESS_POLICY_ALL_WORKERS)

CONDITION_CREATED: Final = "Created"
CONDITION_RUNNING: Final = "Running"
CONDITION_RESTARTING: Final = "Restarting"
CONDITION_SUCCEEDED: Final = "Succeeded"
CONDITION_FAILED: Final = "Failed"
CONDITION_SUSPENDED: Final = "Suspended"
# Present, False, only while a job asks for a TensorBoard that cannot be made (plan/policies/tensorboard.py); it
# never decides the job's state.
CONDITION_TENSORBOARD: Final = "TensorBoard"
ConditionType = Literal["Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended", "TensorBoard"]
ConditionStatus = Literal["True", "False", "Unknown"]
CONDITION_STATUSES: Final[tuple[ConditionStatus, ...]] = ("True", "False", "Unknown")
FINAL_CONDITIONS: Final[tuple[ConditionType, ...]] = (CONDITION_SUCCEEDED, CONDITION_FAILED)  # True: the job ended

# Condition and event reasons: CamelCase so `kubectl get events | grep` finds them.
REASON_CREATED: Final = "TFJobCreated"
REASON_PENDING: Final = "TFJobPending"
REASON_RUNNING: Final = "TFJobRunning"
REASON_RESTARTING: Final = "TFJobRestarting"
REASON_RESIZED: Final = "Resized"  # the Worker count changed: who asked, and how the job follows
REASON_RESIZING: Final = "Resizing"  # Restarting's reason while every replica restarts for a resize
# A Warning: a gang-scheduled job resized below its schedulingPolicy.minAvailable, so its PodGroup waits.
REASON_RESIZED_BELOW_MIN_AVAILABLE: Final = "ResizedBelowMinAvailable"
REASON_NODE_LOST: Final = "NodeLost"  # a replica's node is lost or unhealthy: its pod is replaced
# A replica's pod carries DisruptionTarget (preempted, evicted, drained, its node tainted): replaced, not counted.
REASON_REPLICA_DISRUPTED: Final = "ReplicaDisrupted"
REASON_SUCCEEDED: Final = "TFJobSucceeded"
# The training succeeded and the job waits for its evaluators (Succeeded False, Running True); and the Warning
# events that say an evaluator's final evaluation failed or was cut short by the grace (the job still succeeds).
REASON_WAITING_FOR_EVALUATOR: Final = "WaitingForEvaluator"
REASON_EVALUATOR_FAILED: Final = "EvaluatorFailed"
REASON_EVALUATOR_GRACE_EXPIRED: Final = "EvaluatorGraceExpired"
REASON_FAILED: Final = "TFJobFailed"
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
# The job failed because its pods name a PriorityClass or a scheduler the cluster still lacked after the grace.
REASON_PRIORITY_CLASS_NOT_FOUND: Final = "PriorityClassNotFound"
REASON_SCHEDULER_NOT_FOUND: Final = "SchedulerNotFound"
REASON_INVALID_SPEC: Final = "InvalidSpec"
REASON_SPEC_CORRECTED: Final = "InvalidSpecCorrected"
REASON_SUSPENDED: Final = "TFJobSuspended"
REASON_RESUMED: Final = "TFJobResumed"
REASON_TTL_EXPIRED: Final = "TTLExpired"
REASON_TEMPLATE_RESTART_POLICY: Final = "SetPodTemplateRestartPolicy"  # the Kubeflow training operator's reason

# A Warning: the job's gang cannot be placed; also the mark in its Running condition's message while so.
REASON_GANG_UNSCHEDULABLE: Final = "GangUnschedulable"

# Fields of the job's status that tfop adds to the Kubeflow API's, for kubectl and the page (docs/tfjob/reference.md).
STATUS_POD_GROUP_PHASE: Final = "podGroupPhase"  # the phase of the job's PodGroup, for kubectl get -o wide
STATUS_LAST_RESIZE: Final = "lastResize"  # the latest resize, as its Resized event told it

EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"
EventType = Literal["Normal", "Warning"]

# Summary fields the older API versions had (kubectl columns still show them).
PHASE_CREATING: Final = "Creating"
PHASE_RUNNING: Final = "Running"
PHASE_CLEANUP: Final = "CleanUp"
PHASE_FAILED: Final = "Failed"
PHASE_DONE: Final = "Done"
JobPhase = Literal["Creating", "Running", "CleanUp", "Failed", "Done"]
JOB_PHASES: Final[tuple[JobPhase, ...]] = (PHASE_CREATING, PHASE_RUNNING, PHASE_CLEANUP, PHASE_FAILED, PHASE_DONE)
# `state` is what `kubectl get tfjobs` shows in its STATE column: the one word a user wants to know.
STATE_CREATED: Final = "Created"  # seen by the operator, no replica pod waited for yet
STATE_PENDING: Final = "Pending"  # some replica pods do not run yet (being created, scheduled, pulling images)
STATE_RUNNING: Final = "Running"  # every replica pod runs (or has finished its part)
STATE_RESTARTING: Final = "Restarting"  # a replica is being recreated after a retryable exit
STATE_SUSPENDED: Final = "Suspended"
STATE_SUCCEEDED: Final = "Succeeded"
STATE_FAILED: Final = "Failed"
JobState = Literal["Created", "Pending", "Running", "Restarting", "Suspended", "Succeeded", "Failed"]
JOB_STATES: Final[tuple[JobState, ...]] = (STATE_CREATED, STATE_PENDING, STATE_RUNNING, STATE_RESTARTING,
                                           STATE_SUSPENDED, STATE_SUCCEEDED, STATE_FAILED)

# Pod phases, as the kubelet reports them.
POD_PENDING: Final = "Pending"
POD_RUNNING: Final = "Running"
POD_SUCCEEDED: Final = "Succeeded"
POD_FAILED: Final = "Failed"
PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]  # Unknown: the kubelet is not heard from
POD_PHASES: Final[tuple[PodPhase, ...]] = (POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED, "Unknown")
