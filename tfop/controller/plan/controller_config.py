"""The controller's settings: what describes the cluster the operator runs in (the controller config file) as
one frozen value that the planner reads. Flags about how one process runs (threads, qps) are not here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tfop.api.constants import (
    NAMING_RUNTIME_ID,
    NODE_LOSS_REPLACE,
    REPLICA_BACKEND_PODS,
    ChildNamingScheme,
    NodeLossPolicy,
    ReplicaBackendName,
)
from tfop.api.kueue import INTEGRATION_OWN, KueueIntegration
from tfop.api.tensorboard import DEFAULT_TTL_SECONDS
from tfop.controller.plan.gang_schedulers import GANG_NONE, GangScheduler, GangSchedulerName, gang_scheduler

# "svc" resolves through every pod's DNS search path, whatever the cluster domain; "svc.cluster.local" names it.
DEFAULT_SERVICE_DOMAIN = "svc"
# The default PS server (controller/plan/job/default_ps_server.py): its image when the job names none, and where its
# script is mounted (the seeds' controller config names this very path).
DEFAULT_TF_IMAGE = "tensorflow/tensorflow:2.21.0"
DEFAULT_GRPC_SERVER_FILE_PATH = "/opt/mlkube/grpc_tensorflow_server/grpc_tensorflow_server.py"
# How long a job whose training succeeded waits for a running evaluator's final evaluation
# (plan/policies/evaluator.py): long enough for one evaluation pass over a test set, short enough that a hung
# evaluator holds its node only minutes.
DEFAULT_EVALUATOR_GRACE_SECONDS = 300.0
# How long a job waits while its pods name a PriorityClass or a scheduler the cluster lacks
# (plan/policies/unknown_scheduling.py): long enough to apply the missing object after the job, or for a scheduler
# to start; short enough that a typo fails the job within minutes instead of never.
DEFAULT_UNKNOWN_SCHEDULING_GRACE_SECONDS = 600.0
# What pods ask for where a template asks for the legacy alpha.kubernetes.io/nvidia-gpu (plan/job/legacy_gpu.py).
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class HostVolume:
    name: str
    mount_path: str
    host_path: str


@dataclass(frozen=True)
class Accelerator:
    env: tuple[tuple[str, str], ...] = ()
    volumes: tuple[HostVolume, ...] = ()


Accelerators = Mapping[str, Accelerator]  # extended resource name (e.g. nvidia.com/gpu) -> what it needs


@dataclass(frozen=True)
class NodeLossSettings:
    """The operator's defaults (its config file's `nodeLoss`); a job's annotations may set its policy and grace."""

    # False: the operator does not watch Nodes (it may lack the RBAC to), and decides nothing about them.
    watch_nodes: bool = True
    policy: NodeLossPolicy = NODE_LOSS_REPLACE
    grace_seconds: float = 30.0  # past the node's Ready transition (or an unhealthy mark), before replacing
    terminating_margin_seconds: float = 30.0  # past a pod's deletion deadline, on a node that is not Ready
    unhealthy_conditions: tuple[str, ...] = ()  # node condition types whose status True means "move off"
    unhealthy_taints: tuple[str, ...] = ()  # taint keys that mean the same


# The taints a cloud's termination handler puts on a node about to be reclaimed: the AWS node termination handler's
# spot interruption notice, and GKE's (docs/tfjob/disruptions.md names more).
RECLAIM_NOTICE_TAINTS = ("aws-node-termination-handler/spot-itn", "cloud.google.com/impending-node-termination")


@dataclass(frozen=True)
class DisruptionSettings:
    """What the planner counts as a disruption beyond what the pods say (its config file's `disruptions`;
    plan/policies/disruptions.py)."""

    # After a disruption (and the disrupted pod's grace period), how long a synchronous job's peers' failures are
    # the disruption's, not counted.
    peer_window_seconds: float = 60.0
    # Node taints that announce a reclaim: the replicas on such a node are moved (stopped gracefully) at once.
    reclaim_taints: tuple[str, ...] = RECLAIM_NOTICE_TAINTS
    # How long before a node's Ready turned Unknown its kubelet went silent (the node lifecycle controller's
    # node-monitor-grace-period): a lost node's window opens that much earlier.
    node_silence_seconds: float = 50.0


@dataclass(frozen=True)
class CapacityScalingSettings:
    """The capacity auto-scaler's switch and windows (its config file's `capacityScaling`; tfop/controller/capacity).
    Off by default: it resizes jobs nobody asked to resize."""

    enabled: bool = False
    grow_after: float = 60.0  # seconds of idle capacity before an elastic job grows into it (DRAGON's 60 s)
    shrink_after: float = 30.0  # seconds another job's pods waited for resources before elastic jobs shrink
    give_up_after: float = 120.0  # seconds an extra worker may stay unschedulable before the job gives it up
    check_every: float = 5.0  # seconds between two looks at the cluster


@dataclass(frozen=True)
class ProgressSettings:
    """The progress endpoint (its config file's `progress`; tfop/progress/, docs/tfjob/progress.md). Off by default:
    on, every job's pods get a token and the endpoint's address, and the operator serves it."""

    enabled: bool = False
    url: str = ""  # how pods reach the endpoint, e.g. https://tfop.tfop-system.svc:8444 (no path)
    address: str = ":8444"  # where the operator listens; not read by the planner
    cert_dir: str | None = None  # tls.crt and tls.key (and ca.crt); None: self-signed for the url's host
    reports_per_second: float = 1.0  # per job, sustained; beyond the burst a report is answered 429
    burst: int = 10
    token_seconds: int = 3600  # how long a pod's projected token lives (the kubelet renews it before)


@dataclass(frozen=True)
class TensorBoardSettings:
    """What a job's TensorBoard runs (its config file's `tensorboard`; docs/tfjob/tensorboard.md)."""

    # The image with a `tensorboard` command; "": the image of the job's container that mounts its log directory.
    image: str = ""
    ttl_seconds: int = DEFAULT_TTL_SECONDS  # kept this long after the job finishes, unless the job says
    # Where its pod may run, whatever the job's pods ask: a pool for such servers, tainted ones it tolerates.
    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tolerations: tuple[Mapping[str, object], ...] = ()


@dataclass(frozen=True)
class ControllerConfig:
    # Addresses in TF_CONFIG are `{child}.{namespace}.{service_domain}:{port}`.
    service_domain: str = DEFAULT_SERVICE_DOMAIN
    # Env vars and hostPath mounts for containers that request an accelerator resource.
    accelerators: Accelerators = field(default_factory=lambda: MappingProxyType({}))
    # What pods ask for where a template asks for the legacy alpha.kubernetes.io/nvidia-gpu (plan/job/legacy_gpu.py).
    gpu_resource: str = DEFAULT_GPU_RESOURCE
    # Which gang scheduler places the job's pods as one PodGroup: none, scheduler-plugins, volcano or kubernetes.
    gang_scheduler: GangSchedulerName = GANG_NONE
    # How new jobs name their children (controller/plan/children/naming.py); adopted jobs keep the naming they have.
    child_naming: ChildNamingScheme = NAMING_RUNTIME_ID
    tf_image: str = DEFAULT_TF_IMAGE
    # What new jobs' replicas are, unless a job's annotation says: Pods, or batch/v1 Jobs (plan/children/batch_job.py).
    replica_backend: ReplicaBackendName = REPLICA_BACKEND_PODS
    grpc_server_file_path: str = DEFAULT_GRPC_SERVER_FILE_PATH
    # When a replica's node counts as lost, and what tfop then does (plan/policies/node_loss.py).
    node_loss: NodeLossSettings = field(default_factory=NodeLossSettings)
    # Peer failures a disruption causes, and reclaim notices (plan/policies/disruptions.py).
    disruptions: DisruptionSettings = field(default_factory=DisruptionSettings)
    # A job's annotation tfop.kubeflow.org/evaluator-grace-seconds wins; 0 does not wait (plan/policies/evaluator.py).
    evaluator_grace_seconds: float = DEFAULT_EVALUATOR_GRACE_SECONDS
    # A job's annotation tfop.kubeflow.org/unknown-scheduling-grace-seconds wins (plan/policies/unknown_scheduling.py).
    unknown_scheduling_grace_seconds: float = DEFAULT_UNKNOWN_SCHEDULING_GRACE_SECONDS
    # Elastic jobs resized to the cluster's free capacity (tfop/controller/capacity); not read by the planner.
    capacity_scaling: CapacityScalingSettings = field(default_factory=CapacityScalingSettings)
    # Who queues a job that names a Kueue queue: tfop with a Workload of its own (own: plan/policies/
    # kueue_admission.py), or Kueue's TFJob adapter (kueue). Not chosen in the file (own by default), the start
    # decides by the cluster (tfop/kueue_startup.py): the adapter where Kueue's is enabled, nothing without Kueue.
    kueue_integration: KueueIntegration = INTEGRATION_OWN
    kueue_integration_chosen: bool = False
    # How often tfop's own integration reads where its pending Workloads stand in their queues (Kueue's visibility
    # API, tfop/controller/kueue_positions.py); 0: never.
    kueue_positions_every: float = 10.0
    # The progress endpoint: whether pods are given what reporting to it needs (plan/children/progress_reporting.py).
    progress: ProgressSettings = field(default_factory=ProgressSettings)
    # A job's TensorBoard, for jobs that ask (plan/children/tensorboard.py).
    tensorboard: TensorBoardSettings = field(default_factory=TensorBoardSettings)

    @property
    def gang(self) -> GangScheduler | None:
        return gang_scheduler(self.gang_scheduler)
