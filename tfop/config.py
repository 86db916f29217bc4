"""The controller config file (the ConfigMap `tf-job-operator-config` in a cluster): settings that describe the
cluster the operator runs in rather than how one process runs (those are flags).

    serviceDomain: svc.cluster.local      # suffix of replica addresses in TF_CONFIG (default: svc)
    tfImage: tensorflow/tensorflow:2.21.0 # image of the default PS server when the job names none
    grpcServerFilePath: /opt/mlkube/grpc_tensorflow_server/grpc_tensorflow_server.py
                                          # where the default PS server's script is mounted in its container
    gpuResource: nvidia.com/gpu           # what pods ask for where a template says alpha.kubernetes.io/nvidia-gpu
    accelerators:                         # what pods asking for an accelerator need from the host
      nvidia.com/gpu:
        envVars:
        - {name: LD_LIBRARY_PATH, value: /usr/lib/nvidia:/usr/lib/x86_64-linux-gnu}
        volumes:
        - {name: lib, mountPath: /usr/lib/nvidia, hostPath: /usr/lib/nvidia-384}
    gangScheduler: scheduler-plugins      # none (default), scheduler-plugins, volcano or kubernetes (the
                                          # in-tree one, Kubernetes 1.37+): one PodGroup per job
    childNaming: RuntimeId                # new jobs' children: {job}-{type}-{runtimeId}-{index} (default), or
                                          # TypeIndex: {job}-{type}-{index}, as the Kubeflow training operator
    replicaBackend: pods                  # new jobs' replicas: Pods (default) or jobs, one batch/v1 Job each;
                                          # a job's annotation tfop.kubeflow.org/replica-backend overrides it
    evaluatorGraceSeconds: 300            # how long a job whose training succeeded waits for a running evaluator
                                          # (0: not at all); a job's tfop.kubeflow.org/evaluator-grace-seconds wins
    unknownSchedulingGraceSeconds: 600    # how long a job waits while its pods name a PriorityClass or a scheduler
                                          # the cluster lacks, then fails; a job's
                                          # tfop.kubeflow.org/unknown-scheduling-grace-seconds wins
    kueue:
      integration: own                    # who queues a job labelled kueue.x-k8s.io/queue-name: tfop itself with
                                          # a Workload it makes and follows (own, default: any Kueue from v0.15,
                                          # with or without its kubeflow.org/tfjob adapter), or Kueue's TFJob
                                          # adapter (kueue). Unset: own, unless the start finds Kueue's adapter
                                          # enabled (then the adapter) or no Kueue (then none)
      positionsEverySeconds: 10           # own: how often a pending job's place in its queue is read from Kueue's
                                          # visibility API into its Suspended message (0: never)
    progress:                             # the progress endpoint pods report training progress to (off by default;
      enabled: true                       # docs/tfjob/progress.md)
      url: https://tfop.tfop-system.svc:8444   # how pods reach it (required when enabled)
      address: ":8444"                    # where the operator listens
      certDir: /etc/tfop/progress-certs   # tls.crt, tls.key (and ca.crt); without: self-signed for the url's host
      reportsPerSecond: 1                 # per job, sustained, beyond a burst of `burst` (10)
      tokenSeconds: 3600                  # how long a pod's projected token lives
    tensorboard:                          # a job's TensorBoard (docs/tfjob/tensorboard.md)
      image: tensorflow/tensorflow:2.21.0 # with a `tensorboard` command; default: the job's own image
      ttlSeconds: 3600                    # kept this long after the job finishes (default 3600)
      nodeSelector: {pool: tools}         # where its pod runs (default: anywhere), whatever the job's pods ask
      tolerations:                        # taints of those nodes it tolerates (default: none)
      - {key: pool, operator: Equal, value: tools, effect: NoSchedule}
    capacityScaling:                      # elastic jobs resized to the cluster's free capacity (off by default)
      enabled: true
      growAfterSeconds: 60                # capacity idle this long: elastic jobs grow into it
      shrinkAfterSeconds: 30              # another job's pods waited this long for resources: elastic jobs shrink
      giveUpAfterSeconds: 120             # an extra worker unschedulable this long is given up
      checkEverySeconds: 5                # how often the cluster is looked at
"""

from __future__ import annotations

import difflib
import posixpath
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import yaml

from tfop import yamlio
from tfop.api.constants import NAMING_RUNTIME_ID, NAMINGS, NODE_LOSS_POLICIES, REPLICA_BACKEND_PODS, REPLICA_BACKENDS
from tfop.api.fields import one_of
from tfop.api.kueue import INTEGRATION_OWN, INTEGRATIONS, KueueIntegration
from tfop.api.tensorboard import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS
from tfop.controller.plan.controller_config import (
    DEFAULT_EVALUATOR_GRACE_SECONDS,
    DEFAULT_GPU_RESOURCE,
    DEFAULT_GRPC_SERVER_FILE_PATH,
    DEFAULT_SERVICE_DOMAIN,
    DEFAULT_TF_IMAGE,
    DEFAULT_UNKNOWN_SCHEDULING_GRACE_SECONDS,
    Accelerator,
    CapacityScalingSettings,
    ControllerConfig,
    DisruptionSettings,
    HostVolume,
    NodeLossSettings,
    ProgressSettings,
    TensorBoardSettings,
)
from tfop.controller.plan.gang_schedulers import GANG_NONE, GANG_SCHEDULER_NAMES
from tfop.controller.plan.job.legacy_gpu import LEGACY_GPU_RESOURCE, gpu_resource_problem

_DNS_SUFFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ConfigError(ValueError):
    """The config file is unreadable or holds a value we cannot use; the message names the key."""


def load_config(path: str | Path | None, warnings: list[str] | None = None) -> ControllerConfig:
    """`warnings` collects what is worth telling but not worth refusing to start over (a key we do not know)."""
    if path is None:
        return ControllerConfig()
    try:
        data: Any = yamlio.load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from error
    try:
        return parse_config(data, warnings)
    except ConfigError as error:
        raise ConfigError(f"config file {path}: {error}") from None


def parse_config(data: Any, warnings: list[str] | None = None) -> ControllerConfig:
    notes = warnings if warnings is not None else []
    document = _mapping(data, "the config")
    _known(document, "the config",
           {"serviceDomain", "accelerators", "gangScheduler", "childNaming", "tfImage", "grpcServerFilePath",
            "replicaBackend", "nodeLoss", "disruptions", "gpuResource", "evaluatorGraceSeconds",
            "unknownSchedulingGraceSeconds", "capacityScaling", "kueue", "progress", "tensorboard"}, notes)
    domain = document.get("serviceDomain", DEFAULT_SERVICE_DOMAIN)
    if not isinstance(domain, str) or not _DNS_SUFFIX.match(domain):
        raise ConfigError(f"serviceDomain {domain!r} is not a DNS suffix such as svc.cluster.local")
    image = document.get("tfImage", DEFAULT_TF_IMAGE)
    if not isinstance(image, str) or not image or image != image.strip():
        raise ConfigError(f"tfImage {image!r} must name an image, such as {DEFAULT_TF_IMAGE}")
    server_path = document.get("grpcServerFilePath", DEFAULT_GRPC_SERVER_FILE_PATH)
    if (not isinstance(server_path, str) or not server_path.startswith("/") or server_path.endswith("/")
            or posixpath.dirname(server_path) == "/"):
        raise ConfigError(f"grpcServerFilePath {server_path!r} must be an absolute file path below a directory "
                          "(the directory is where the script is mounted), such as "
                          f"{DEFAULT_GRPC_SERVER_FILE_PATH}")
    gpu_resource = document.get("gpuResource", DEFAULT_GPU_RESOURCE)
    problem = gpu_resource_problem(gpu_resource)
    if problem:
        raise ConfigError(f"gpuResource {problem}")
    accelerators = _gpu_accelerators({
        str(resource): _accelerator(spec, f"accelerators[{resource}]", notes)
        for resource, spec in _mapping(document.get("accelerators") or {}, "accelerators").items()
    }, str(gpu_resource), notes)
    asked_gang = document.get("gangScheduler", GANG_NONE)
    gang = one_of(asked_gang, GANG_SCHEDULER_NAMES)
    if gang is None:
        raise ConfigError(f"gangScheduler {asked_gang!r} is not one of {', '.join(GANG_SCHEDULER_NAMES)}")
    asked_naming = document.get("childNaming", NAMING_RUNTIME_ID)
    naming = one_of(asked_naming, NAMINGS)
    if naming is None:
        raise ConfigError(f"childNaming {asked_naming!r} is not one of {', '.join(NAMINGS)}")
    asked_backend = document.get("replicaBackend", REPLICA_BACKEND_PODS)
    backend = one_of(asked_backend, REPLICA_BACKENDS)
    if backend is None:
        raise ConfigError(f"replicaBackend {asked_backend!r} is not one of {', '.join(REPLICA_BACKENDS)}")
    evaluator_grace = _seconds(document.get("evaluatorGraceSeconds", DEFAULT_EVALUATOR_GRACE_SECONDS),
                               "evaluatorGraceSeconds")
    unknown_scheduling_grace = _seconds(document.get("unknownSchedulingGraceSeconds",
                                                     DEFAULT_UNKNOWN_SCHEDULING_GRACE_SECONDS),
                                        "unknownSchedulingGraceSeconds")
    kueue_integration, kueue_chosen, kueue_positions_every = _kueue(document.get("kueue") or {}, notes)
    return ControllerConfig(service_domain=domain, accelerators=MappingProxyType(accelerators), gang_scheduler=gang,
                            gpu_resource=str(gpu_resource), child_naming=naming, tf_image=image,
                            grpc_server_file_path=posixpath.normpath(server_path), replica_backend=backend,
                            node_loss=_node_loss(document.get("nodeLoss") or {}, notes),
                            disruptions=_disruptions(document.get("disruptions") or {}, notes),
                            evaluator_grace_seconds=evaluator_grace,
                            unknown_scheduling_grace_seconds=unknown_scheduling_grace,
                            capacity_scaling=_capacity_scaling(document.get("capacityScaling") or {}, notes),
                            kueue_integration=kueue_integration, kueue_integration_chosen=kueue_chosen,
                            kueue_positions_every=kueue_positions_every,
                            progress=_progress(document.get("progress") or {}, notes),
                            tensorboard=_tensorboard(document.get("tensorboard") or {}, notes))


def _tensorboard(data: Any, notes: list[str]) -> TensorBoardSettings:
    """tensorboard: {image, ttlSeconds, nodeSelector, tolerations}."""
    spec = _mapping(data, "tensorboard")
    _known(spec, "tensorboard", {"image", "ttlSeconds", "nodeSelector", "tolerations"}, notes)
    image = spec.get("image", "")
    if not isinstance(image, str) or image != image.strip():
        raise ConfigError(f"tensorboard.image {image!r} must name an image with a tensorboard command")
    ttl = spec.get("ttlSeconds", DEFAULT_TTL_SECONDS)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= MAX_TTL_SECONDS:
        raise ConfigError(f"tensorboard.ttlSeconds must be a whole number of seconds from 0 to {MAX_TTL_SECONDS}, "
                          f"not {ttl!r}")
    selector = _mapping(spec.get("nodeSelector") or {}, "tensorboard.nodeSelector")
    for key, value in selector.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ConfigError(f"tensorboard.nodeSelector must map label names to values (strings), "
                              f"not {key!r}: {value!r}")
    tolerations = tuple(MappingProxyType(_toleration(entry, f"tensorboard.tolerations[{i}]"))
                        for i, entry in enumerate(_list(spec.get("tolerations"), "tensorboard.tolerations")))
    return TensorBoardSettings(image=image, ttl_seconds=ttl, node_selector=MappingProxyType(dict(selector)),
                               tolerations=tolerations)


_TOLERATION_OPERATORS = ("Equal", "Exists")
_TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")


def _toleration(data: Any, where: str) -> dict[str, Any]:
    """A pod's toleration as Kubernetes writes it; checked here, since a bad one would fail every TensorBoard."""
    entry = _mapping(data, where)
    unknown = sorted(map(str, set(entry) - {"key", "operator", "value", "effect", "tolerationSeconds"}))
    if unknown:
        raise ConfigError(f"{where} has unknown key {unknown[0]!r}: a toleration has key, operator, value, "
                          f"effect and tolerationSeconds")
    for name in ("key", "value"):
        if not isinstance(entry.get(name, ""), str):
            raise ConfigError(f"{where}.{name} must be a string, not {entry[name]!r}")
    if entry.get("operator", "Equal") not in _TOLERATION_OPERATORS:
        raise ConfigError(f"{where}.operator must be Equal or Exists, not {entry['operator']!r}")
    if entry.get("operator") == "Exists" and entry.get("value"):
        raise ConfigError(f"{where} has operator Exists and a value: an Exists toleration takes none")
    if entry.get("effect", "") not in _TAINT_EFFECTS:
        raise ConfigError(f"{where}.effect must be NoSchedule, PreferNoSchedule or NoExecute, not {entry['effect']!r}")
    seconds = entry.get("tolerationSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        raise ConfigError(f"{where}.tolerationSeconds must be a whole number of seconds, not {seconds!r}")
    return dict(entry)


def _progress(data: Any, notes: list[str]) -> ProgressSettings:
    """progress: {enabled, url, address, certDir, reportsPerSecond, burst, tokenSeconds}."""
    spec = _mapping(data, "progress")
    _known(spec, "progress", {"enabled", "url", "address", "certDir", "reportsPerSecond", "burst", "tokenSeconds"},
           notes)
    defaults = ProgressSettings()
    enabled = spec.get("enabled", defaults.enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(f"progress.enabled must be true or false, not {enabled!r}")
    url = spec.get("url", defaults.url)
    parsed = urlsplit(url) if isinstance(url, str) else None
    if enabled and (parsed is None or parsed.scheme != "https" or not parsed.hostname or parsed.path.strip("/")
                    or parsed.query):
        raise ConfigError(f"progress.url {url!r} must be the https:// address pods reach the endpoint at, without "
                          "a path, such as https://tfop.tfop-system.svc:8444")
    address = spec.get("address", defaults.address)
    if not isinstance(address, str) or not re.fullmatch(r"[^\s]*:\d{1,5}", address):
        raise ConfigError(f"progress.address {address!r} must be host:port or :port, such as :8444")
    cert_dir = spec.get("certDir", defaults.cert_dir)
    if cert_dir is not None and (not isinstance(cert_dir, str) or not cert_dir):
        raise ConfigError(f"progress.certDir {cert_dir!r} must name a directory with tls.crt and tls.key")
    rate = spec.get("reportsPerSecond", defaults.reports_per_second)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1000:
        raise ConfigError(f"progress.reportsPerSecond must be a number above 0 and at most 1000, not {rate!r}")
    burst = spec.get("burst", defaults.burst)
    if isinstance(burst, bool) or not isinstance(burst, int) or not 1 <= burst <= 10000:
        raise ConfigError(f"progress.burst must be a whole number from 1 to 10000, not {burst!r}")
    token_seconds = spec.get("tokenSeconds", defaults.token_seconds)
    if isinstance(token_seconds, bool) or not isinstance(token_seconds, int) or not 600 <= token_seconds <= 86400:
        # The apiserver refuses a projected token shorter than 10 minutes.
        raise ConfigError(f"progress.tokenSeconds must be a whole number from 600 to 86400, not {token_seconds!r}")
    return ProgressSettings(enabled=enabled, url=str(url).rstrip("/") if isinstance(url, str) else "",
                            address=address, cert_dir=cert_dir, reports_per_second=float(rate), burst=burst,
                            token_seconds=token_seconds)


def _kueue(data: Any, notes: list[str]) -> tuple[KueueIntegration, bool, float]:
    """kueue: {integration: own | kueue, positionsEverySeconds}; whether the file chose the integration is kept,
    since the start resolves an unset one by the cluster (tfop/kueue_startup.py) and refuses a chosen one the cluster
    cannot honour."""
    spec = _mapping(data, "kueue")
    _known(spec, "kueue", {"integration", "positionsEverySeconds"}, notes)
    asked = spec.get("integration", INTEGRATION_OWN)
    integration = one_of(asked, INTEGRATIONS)
    if integration is None:
        raise ConfigError(f"kueue.integration {asked!r} is not one of {', '.join(INTEGRATIONS)}")
    every = _seconds(spec.get("positionsEverySeconds", ControllerConfig.kueue_positions_every),
                     "kueue.positionsEverySeconds")
    return integration, "integration" in spec, every


def _capacity_scaling(data: Any, notes: list[str]) -> CapacityScalingSettings:
    """capacityScaling: {enabled, growAfterSeconds, shrinkAfterSeconds, giveUpAfterSeconds, checkEverySeconds}."""
    spec = _mapping(data, "capacityScaling")
    keys = {"growAfterSeconds": "grow_after", "shrinkAfterSeconds": "shrink_after",
            "giveUpAfterSeconds": "give_up_after", "checkEverySeconds": "check_every"}
    _known(spec, "capacityScaling", {"enabled", *keys}, notes)
    defaults = CapacityScalingSettings()
    enabled = spec.get("enabled", defaults.enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(f"capacityScaling.enabled must be true or false, not {enabled!r}")
    seconds = {field: _seconds(spec.get(key, getattr(defaults, field)), f"capacityScaling.{key}")
               for key, field in keys.items()}
    if seconds["check_every"] < 1:
        raise ConfigError(f"capacityScaling.checkEverySeconds must be at least 1 (each look reads every cached pod), "
                          f"not {spec['checkEverySeconds']!r}")
    return CapacityScalingSettings(enabled=enabled, **seconds)


def _disruptions(data: Any, notes: list[str]) -> DisruptionSettings:
    """disruptions: {peerWindowSeconds, reclaimNoticeTaints, nodeSilenceSeconds}."""
    spec = _mapping(data, "disruptions")
    _known(spec, "disruptions", {"peerWindowSeconds", "reclaimNoticeTaints", "nodeSilenceSeconds"}, notes)
    defaults = DisruptionSettings()
    window = _seconds(spec.get("peerWindowSeconds", defaults.peer_window_seconds), "disruptions.peerWindowSeconds")
    silence = _seconds(spec.get("nodeSilenceSeconds", defaults.node_silence_seconds), "disruptions.nodeSilenceSeconds")
    taints = _list(spec.get("reclaimNoticeTaints", list(defaults.reclaim_taints)), "disruptions.reclaimNoticeTaints")
    if not all(isinstance(entry, str) and entry for entry in taints):
        raise ConfigError(f"disruptions.reclaimNoticeTaints must list taint keys, not {taints!r}")
    return DisruptionSettings(peer_window_seconds=window, reclaim_taints=tuple(str(entry) for entry in taints),
                              node_silence_seconds=silence)


def _node_loss(data: Any, notes: list[str]) -> NodeLossSettings:
    """nodeLoss: {watchNodes, policy, graceSeconds, terminatingMarginSeconds, unhealthyConditions, unhealthyTaints}."""
    spec = _mapping(data, "nodeLoss")
    _known(spec, "nodeLoss", {"watchNodes", "policy", "graceSeconds", "terminatingMarginSeconds",
                              "unhealthyConditions", "unhealthyTaints"}, notes)
    defaults = NodeLossSettings()
    watch = spec.get("watchNodes", defaults.watch_nodes)
    if not isinstance(watch, bool):
        raise ConfigError(f"nodeLoss.watchNodes must be true or false, not {watch!r}")
    asked_policy = spec.get("policy", defaults.policy)
    policy = one_of(asked_policy, NODE_LOSS_POLICIES)
    if policy is None:
        raise ConfigError(f"nodeLoss.policy {asked_policy!r} is not one of {', '.join(NODE_LOSS_POLICIES)}")
    seconds = {key: _seconds(spec.get(key, default), f"nodeLoss.{key}")
               for key, default in (("graceSeconds", defaults.grace_seconds),
                                    ("terminatingMarginSeconds", defaults.terminating_margin_seconds))}
    names = {}
    for key in ("unhealthyConditions", "unhealthyTaints"):
        entries = _list(spec.get(key), f"nodeLoss.{key}")
        if not all(isinstance(entry, str) and entry for entry in entries):
            raise ConfigError(f"nodeLoss.{key} must list condition types or taint keys, not {entries!r}")
        names[key] = tuple(str(entry) for entry in entries)
    return NodeLossSettings(watch_nodes=watch, policy=policy, grace_seconds=seconds["graceSeconds"],
                            terminating_margin_seconds=seconds["terminatingMarginSeconds"],
                            unhealthy_conditions=names["unhealthyConditions"],
                            unhealthy_taints=names["unhealthyTaints"])


def _seconds(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86400:
        raise ConfigError(f"{path} must be a number of seconds from 0 to 86400, not {value!r}")
    return float(value)


def _gpu_accelerators(accelerators: dict[str, Accelerator], gpu_resource: str,
                      notes: list[str]) -> dict[str, Accelerator]:
    """An entry for the legacy GPU name (seed 003's ConfigMap) serves the pods that now ask for gpuResource."""
    if LEGACY_GPU_RESOURCE not in accelerators:
        return accelerators
    if gpu_resource in accelerators:
        raise ConfigError(f"accelerators names both {LEGACY_GPU_RESOURCE} and {gpu_resource}, which tfop takes as "
                          f"one resource (gpuResource): keep one")
    notes.append(f"accelerators[{LEGACY_GPU_RESOURCE}] applies to {gpu_resource} (gpuResource), the resource pods "
                 "ask for where their template names the legacy one")
    return {(gpu_resource if name == LEGACY_GPU_RESOURCE else name): entry for name, entry in accelerators.items()}


def _accelerator(data: Any, path: str, notes: list[str]) -> Accelerator:
    spec = _mapping(data, path)
    _known(spec, path, {"envVars", "volumes"}, notes)
    env = []
    for position, variable in enumerate(_list(spec.get("envVars"), f"{path}.envVars")):
        where = f"{path}.envVars[{position}]"
        entry = _mapping(variable, where)
        _known(entry, where, {"name", "value"}, notes)
        name, value = entry.get("name"), entry.get("value", "")
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ConfigError(f"{where}.name must be an environment variable name, not {name!r}")
        env.append((name, str(value)))
    volumes = []
    for position, volume in enumerate(_list(spec.get("volumes"), f"{path}.volumes")):
        where = f"{path}.volumes[{position}]"
        entry = _mapping(volume, where)
        _known(entry, where, {"name", "mountPath", "hostPath"}, notes)
        name, mount_path, host_path = entry.get("name"), entry.get("mountPath"), entry.get("hostPath")
        if not isinstance(name, str) or not _DNS_LABEL.match(name):
            raise ConfigError(f"{where}.name must be a DNS label (it names a pod volume), not {name!r}")
        for key, value in (("mountPath", mount_path), ("hostPath", host_path)):
            if not isinstance(value, str) or not value.startswith("/"):
                raise ConfigError(f"{where}.{key} must be an absolute path, not {value!r}")
        volumes.append(HostVolume(name, str(mount_path), str(host_path)))
    return Accelerator(tuple(env), tuple(volumes))


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path} must be a mapping, not {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path} must be a list, not {type(value).__name__}")
    return value


def _known(document: dict[str, Any], path: str, keys: set[str], notes: list[str]) -> None:
    """A key we do not know is a warning (a config written for another operator version should not stop this one);
    a near miss of a key we know is an error, because the setting it meant would silently keep its default."""
    for key in sorted(map(str, set(document) - keys)):
        close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.8)
        if close and close[0] not in document:
            raise ConfigError(f"{path} has unknown key {key!r}: did you mean {close[0]!r}?")
        notes.append(f"{path} has unknown key {key!r}, ignored; known: {', '.join(sorted(keys))}")
