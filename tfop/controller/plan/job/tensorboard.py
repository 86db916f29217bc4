"""A job's ask for a TensorBoard (`tfop.kubeflow.org/tensorboard: <log directory>`), read once with the job: which
volume of its templates holds the log directory, how the TensorBoard mounts it, which image it runs, how long it
outlives the job; or why none can be made.

The log directory is found where the replicas write it: the first replica type, in the order Chief, Master,
Worker, Evaluator, PS, whose container (the `tensorflow` one first) mounts a volume at the directory or above it
(the deepest such mount). The TensorBoard mounts that same volume at the same path, read-only, so `--logdir` is
the job's own path. A volume only its own pod can see (emptyDir, an ephemeral claim) or one mounted by the pod's
own variables (subPathExpr) cannot be shared: the ask is kept with its problem, which the job's TensorBoard
condition and a Warning event tell (plan/policies/tensorboard.py), and nothing is made.

A PersistentVolumeClaim is read for its access modes, when the cache has it (the reconciler hands the job's
claims over): one only a single pod may mount (ReadWriteOncePod) is such a problem too, since the replica holds
it; one the pods of a single node may mount (ReadWriteOnce) is shared on the node of the job's pods only, so the
TensorBoard goes there (required pod affinity to the job's pods, tolerating what their template tolerates) rather
than to the config's nodes, where it would wait for a volume it cannot have. A claim the cache does not hold, or
one many nodes may mount, leaves the TensorBoard where the config puts it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from tfop.api.constants import (
    CHIEF_REPLICA_TYPES,
    DEFAULT_CONTAINER_NAME,
    LABEL_JOB_NAME,
    REPLICA_EVALUATOR,
    REPLICA_PS,
    REPLICA_WORKER,
)
from tfop.api.errors import FieldError
from tfop.api.fields import integer, items, mapping, mapping_at, text
from tfop.api.tensorboard import ANNOTATION_TENSORBOARD, ANNOTATION_TENSORBOARD_TTL, MAX_TTL_SECONDS
from tfop.controller.plan.controller_config import TensorBoardSettings
from tfop.objects import Object

_SEARCH_ORDER = (*CHIEF_REPLICA_TYPES, REPLICA_WORKER, REPLICA_EVALUATOR, REPLICA_PS)
# Volume sources that exist per pod: another pod mounting "the same" volume gets its own, empty.
_PER_POD = {"emptyDir": "an emptyDir", "ephemeral": "an ephemeral volume"}
# What the TensorBoard's pod takes from the template whose volume it mounts: to pull the same image, and to read
# files as the replica's user and group wrote them. Where it runs is the operator config's (_placement).
_POD_FIELDS = ("imagePullSecrets", "securityContext")
# Access modes that let pods of more than one node mount a claim; without one, the claim is one node's at a time.
_MANY_NODES = frozenset({"ReadWriteMany", "ReadOnlyMany"})


@dataclass(frozen=True, slots=True)
class TensorBoardAsk:
    log_dir: str  # normalized, absolute
    ttl_seconds: int  # kept this long after the job finishes
    image: str = ""
    volume: Object | None = None  # the template's volume entry, as written
    mount: Object | None = None  # how the TensorBoard's container mounts it (read-only)
    pod_fields: Mapping[str, object] | None = None  # _POD_FIELDS the template sets
    problem: str = ""  # why no TensorBoard can be made; "" when it can


def tensorboard_ask(job: Object, settings: TensorBoardSettings, claims: Mapping[str, Object] | None = None
                    ) -> tuple[TensorBoardAsk | None, list[FieldError]]:
    """The ask of a defaulted job (None: it asks for no TensorBoard), or the annotation errors. `claims`: the
    cached PersistentVolumeClaims of the job's namespace its templates name, by name."""
    annotations = mapping_at(job, "metadata", "annotations")
    asked = annotations.get(ANNOTATION_TENSORBOARD)
    if asked is None:
        return None, []
    errors: list[FieldError] = []
    log_dir = text(asked) or ""
    if not log_dir.startswith("/") or ".." in log_dir.split("/"):
        errors.append(FieldError(f"metadata.annotations[{ANNOTATION_TENSORBOARD}]",
                                 f"must be the absolute path of the job's log directory, such as /logs, "
                                 f"not {asked!r}"))
    ttl = _ttl(annotations.get(ANNOTATION_TENSORBOARD_TTL))
    if ttl is None and annotations.get(ANNOTATION_TENSORBOARD_TTL) is not None:
        errors.append(FieldError(f"metadata.annotations[{ANNOTATION_TENSORBOARD_TTL}]",
                                 f"must be a whole number of seconds from 0 to {MAX_TTL_SECONDS}, "
                                 f"not {annotations[ANNOTATION_TENSORBOARD_TTL]!r}"))
    if errors:
        return None, errors
    return _found(posixpath.normpath(log_dir), settings.ttl_seconds if ttl is None else ttl,
                  mapping_at(job, "spec", "tfReplicaSpecs"), settings,
                  text(mapping_at(job, "metadata").get("name")) or "", claims or {}), []


def tensorboard_ttl(job: Object, settings: TensorBoardSettings) -> int:
    """How long a finished job keeps its TensorBoard, read leniently (an invalid or finished job's too)."""
    ttl = _ttl(mapping_at(job, "metadata", "annotations").get(ANNOTATION_TENSORBOARD_TTL))
    return settings.ttl_seconds if ttl is None else ttl


def _ttl(value: object) -> int | None:
    seconds = integer(value) if not isinstance(value, str) else (int(value) if value.isdigit() else None)
    return seconds if seconds is not None and 0 <= seconds <= MAX_TTL_SECONDS else None


def _found(log_dir: str, ttl: int, replicas: Mapping[str, object], settings: TensorBoardSettings, job_name: str,
           claims: Mapping[str, Object]) -> TensorBoardAsk:
    for replica_type in (t for t in _SEARCH_ORDER if t in replicas):
        spec = mapping_at(replicas[replica_type], "template", "spec")
        for container in _containers(spec):
            mount = _deepest_mount(container, log_dir)
            if mount is None:
                continue
            name = text(mount.get("name")) or ""
            volume = next((mapping(v) for v in items(spec.get("volumes")) if mapping(v).get("name") == name), None)
            where = (f"{replica_type}'s container {text(container.get('name'))!r} mounts volume {name!r} at "
                     f"{mount.get('mountPath')}")
            problem = ""
            if volume is None:
                problem = f"the {where}, which its template does not define"
            elif (kind := next((k for k in _PER_POD if k in volume), None)) is not None:
                problem = (f"the {where}: {_PER_POD[kind]}, which only its own pod sees; put the log directory on "
                           f"a volume other pods can mount too, such as a PersistentVolumeClaim")
            elif mount.get("subPathExpr"):
                problem = f"the {where} by subPathExpr, which names the replica's own variables"
            modes = _access_modes(volume, claims)
            if not problem and modes == {"ReadWriteOncePod"}:
                problem = (f"the {where}: claim {_claim_name(volume)!r}, ReadWriteOncePod, which only one pod may "
                           f"mount at a time; put the log directory on a claim other pods can mount too, such as a "
                           f"ReadWriteMany one")
            one_node = bool(modes) and not modes & _MANY_NODES
            placement = _beside_the_job(job_name, spec) if one_node else _placement(settings)
            ask = TensorBoardAsk(log_dir, ttl, settings.image or text(container.get("image")) or "", volume,
                                 _read_only(mount), {**{key: spec[key] for key in _POD_FIELDS if key in spec},
                                                     **placement}, problem)
            return ask if not problem else TensorBoardAsk(log_dir, ttl, problem=problem)
    return TensorBoardAsk(log_dir, ttl, problem=(
        f"no replica's container mounts a volume at {log_dir} or above it: TensorBoard reads the log directory "
        f"from the volume the replicas write it to"))


def _claim_name(volume: Mapping[str, object] | None) -> str:
    return text(mapping_at(volume or {}, "persistentVolumeClaim").get("claimName")) or ""


def _access_modes(volume: Mapping[str, object] | None, claims: Mapping[str, Object]) -> frozenset[str]:
    """The access modes of the cached claim the volume names: those it was bound with, else those it asks for;
    empty for no claim, or one the cache does not hold."""
    claim = claims.get(_claim_name(volume)) if _claim_name(volume) else None
    if claim is None:
        return frozenset()
    bound, asked = (frozenset(mode for mode in items(mapping_at(claim, part).get("accessModes"))
                              if isinstance(mode, str)) for part in ("status", "spec"))
    return bound or asked


def _beside_the_job(job_name: str, spec: Mapping[str, object]) -> Object:
    """On a node of the job's pods, which hold the claim there, tolerating what their template tolerates."""
    placement: Object = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {LABEL_JOB_NAME: job_name}}}]}}}
    if "tolerations" in spec:
        placement["tolerations"] = spec["tolerations"]
    return placement


def _placement(settings: TensorBoardSettings) -> Object:
    """Where the operator's config puts TensorBoards: the job's own nodeSelector and tolerations are for its
    training (accelerator nodes, most often), which a TensorBoard has no use for."""
    placement: Object = {}
    if settings.node_selector:
        placement["nodeSelector"] = dict(settings.node_selector)
    if settings.tolerations:
        placement["tolerations"] = [dict(entry) for entry in settings.tolerations]
    return placement


def _containers(spec: Mapping[str, object]) -> list[Mapping[str, object]]:
    containers = [mapping(c) for c in items(spec.get("containers"))]
    return sorted(containers, key=lambda c: c.get("name") != DEFAULT_CONTAINER_NAME)


def _deepest_mount(container: Mapping[str, object], log_dir: str) -> Mapping[str, object] | None:
    covering = [mount for mount in map(mapping, items(container.get("volumeMounts")))
                if _covers(text(mount.get("mountPath")) or "", log_dir)]
    return max(covering, key=lambda mount: len(posixpath.normpath(str(mount["mountPath"]))), default=None)


def _covers(mount_path: str, log_dir: str) -> bool:
    if not mount_path.startswith("/"):
        return False
    mount_path = posixpath.normpath(mount_path)
    return log_dir == mount_path or log_dir.startswith(mount_path.rstrip("/") + "/")


def _read_only(mount: Mapping[str, object]) -> Object:
    kept = {key: mount[key] for key in ("name", "mountPath", "subPath") if key in mount}
    return {**kept, "readOnly": True}
