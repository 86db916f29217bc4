"""A progress report read and judged, as pure functions of the request, the token's review and the cached pod.

The request is Kubeflow Trainer's (KEP-2779): POST {url}{status_path} with a bearer token and the JSON
{"trainerStatus": {"progressPercentage", "estimatedRemainingSeconds", "metrics": [{"name", "value"}],
"lastUpdatedTime"}}. Keys it does not name are ignored, as Kubeflow's server ignores them; a request without
trainerStatus is answered and records nothing. The bounds are those of Kubeflow's TrainJob schema, so a report one
accepts the other does too. The step and epoch come from the metrics of those names (KEP-2779's example reports
currentEpoch and totalEpochs as metrics); the time is tfop's, so a pod's clock never says when it reported. The
metric lastCheckpointTime, when the program last saved (plan/policies/checkpoints.py), must read as a time.

Who may report for a job: only a pod of that job. The token must be one the apiserver issued for the job's own
audience and bound to a pod (TokenReview names it); that pod, as cached (same name and uid: not a pod that took a
deleted one's name), must belong to the job of the URL.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tfop.api.constants import KIND, METRIC_LAST_CHECKPOINT_TIME
from tfop.api.timestamps import as_utc, parse_moment
from tfop.controller.owners import owner_key
from tfop.controller.plan.job_status import Metric, TrainerStatus
from tfop.objects import Object

MAX_BODY = 64 * 1024  # 256 metrics of 64-character names and values fit with room; Kubeflow's bound too
MAX_METRICS = 256
MAX_TEXT = 64
INT32_MAX = 2**31 - 1
POD_NAME_CLAIM = "authentication.kubernetes.io/pod-name"
POD_UID_CLAIM = "authentication.kubernetes.io/pod-uid"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
STEP_METRICS = ("currentStep", "step")
EPOCH_METRICS = ("currentEpoch", "epoch")
_NAME = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_PATH = re.compile(rf"^/apis/kubeflow\.org/v1/namespaces/({_NAME})/tfjobs/({_NAME})/status$")


@dataclass(frozen=True)
class Target:
    """The job a request's URL names."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Refusal:
    """An answer other than 200: its HTTP code, a Kubernetes Status reason, and words for the caller."""

    code: int
    reason: str
    message: str


@dataclass(frozen=True)
class Caller:
    """The pod a token is bound to, as the apiserver's TokenReview says."""

    namespace: str  # the ServiceAccount's, which is the pod's
    service_account: str
    pod_name: str
    pod_uid: str


def target_of(path: str) -> Target | None:
    found = _PATH.match(path.split("?", 1)[0])
    return None if found is None else Target(found.group(1), found.group(3))


def caller_of(status: Any, audience: str) -> Caller | Refusal:
    """The caller a TokenReview's status names, or a 401 Refusal: not authenticated, not for `audience` (the
    apiserver lists the audiences of the request the token has), not a ServiceAccount's, or not bound to a pod."""
    status = status if isinstance(status, dict) else {}
    if status.get("authenticated") is not True:
        return Refusal(401, "Unauthorized", f"the token is not valid: {status.get('error') or 'not authenticated'}")
    if audience not in (status.get("audiences") or ()):
        return Refusal(401, "Unauthorized", f"the token is not for this job's audience {audience}")
    user = status.get("user")
    user = user if isinstance(user, dict) else {}
    username = str(user.get("username") or "")
    namespace, _, account = username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    if not username.startswith(SERVICE_ACCOUNT_PREFIX) or not namespace or not account:
        return Refusal(401, "Unauthorized", f"the token is {username or 'nobody'}'s, not a ServiceAccount's")
    extra = user.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    name, uid = _claim(extra, POD_NAME_CLAIM), _claim(extra, POD_UID_CLAIM)
    if name is None or uid is None:
        return Refusal(401, "Unauthorized", "the token is not bound to a pod (mount the projected token tfop adds)")
    return Caller(namespace, account, name, uid)


def _claim(extra: dict[str, Any], claim: str) -> str | None:
    values = extra.get(claim)
    return values[0] if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str) else None


def authorize(target: Target, caller: Caller, pod: Object | None, job: Object | None) -> Refusal | None:
    """None when the caller's pod, as cached, is one of the target job's (`job`, as cached): controlled by it (by
    its uid, so not by an earlier job of the name), or by a replica Job of it (the Jobs backend)."""
    who = f"pod {caller.namespace}/{caller.pod_name}"
    if caller.namespace != target.namespace:
        return Refusal(403, "Forbidden", f"{who} may not report for TFJob {target.key}")
    if pod is None:
        return Refusal(403, "Forbidden", f"{who} is not a pod of any TFJob tfop runs")
    if pod["metadata"].get("uid") != caller.pod_uid:
        return Refusal(403, "Forbidden", f"the token was issued to an earlier {who}, which is gone")
    owner = owner_key(pod)
    if owner != target.key:
        whose = f"TFJob {owner}" if owner else "no TFJob"
        return Refusal(403, "Forbidden", f"{who} belongs to {whose}, so it may not report for TFJob {target.key}")
    controller: dict[str, Any] = next((ref for ref in pod["metadata"].get("ownerReferences") or ()
                                       if ref.get("controller")), {})
    if job is None or (controller.get("kind") == KIND and controller.get("uid") != job["metadata"].get("uid")):
        return Refusal(403, "Forbidden", f"{who} belongs to an earlier TFJob {target.key}, which is gone")
    return None


def read_report(body: bytes, now: datetime, pod_name: str) -> TrainerStatus | Refusal | None:
    """The report the body carries, stamped `now` (whole seconds) and with the pod that sent it; None when it
    carries none; a 400 (not JSON) or 422 (a field out of bounds) Refusal."""
    try:
        document = json.loads(body)
    except ValueError:
        return Refusal(400, "BadRequest", "the body is not JSON")
    if not isinstance(document, dict):
        return Refusal(400, "BadRequest", "the body is not a JSON object")
    raw = document.get("trainerStatus")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        return _invalid("trainerStatus must be an object")
    percent = raw.get("progressPercentage")
    if percent is not None and not _integer(percent, 0, 100):
        return _invalid(f"trainerStatus.progressPercentage must be an integer from 0 to 100, not {percent!r}")
    remaining = raw.get("estimatedRemainingSeconds")
    if remaining is not None and not _integer(remaining, 0, INT32_MAX):
        return _invalid(f"trainerStatus.estimatedRemainingSeconds must be an integer from 0 to {INT32_MAX}, "
                        f"not {remaining!r}")
    metrics = _metrics(raw.get("metrics"))
    if isinstance(metrics, Refusal):
        return metrics
    stamp = as_utc(now).replace(microsecond=0)
    values = {metric.name: metric.value for metric in metrics}
    checkpoint = values.get(METRIC_LAST_CHECKPOINT_TIME)
    if checkpoint is not None and parse_moment(checkpoint) is None:
        return _invalid(f"the metric {METRIC_LAST_CHECKPOINT_TIME} must be an RFC 3339 time or seconds since 1970, "
                        f"not {checkpoint!r}")
    return TrainerStatus(
        progress_percentage=percent, estimated_remaining_seconds=remaining,
        estimated_completion_time=None if remaining is None else stamp + timedelta(seconds=remaining),
        current_step=_count(values, STEP_METRICS), total_steps=_count(values, ("totalSteps",)),
        current_epoch=_count(values, EPOCH_METRICS), total_epochs=_count(values, ("totalEpochs",)),
        metrics=metrics or None, last_updated_time=stamp, reported_by=pod_name)


def _invalid(message: str) -> Refusal:
    return Refusal(422, "Invalid", message)


def _integer(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _metrics(raw: object) -> tuple[Metric, ...] | Refusal:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return _invalid("trainerStatus.metrics must be a list")
    if len(raw) > MAX_METRICS:
        return _invalid(f"trainerStatus.metrics has {len(raw)} entries, more than {MAX_METRICS}")
    metrics = []
    for position, given in enumerate(raw):
        entry = given if isinstance(given, dict) else {}
        name, value = entry.get("name"), entry.get("value")
        for field, text in (("name", name), ("value", value)):
            if not isinstance(text, str) or not 1 <= len(text) <= MAX_TEXT:
                return _invalid(f"trainerStatus.metrics[{position}].{field} must be a string of 1 to {MAX_TEXT} "
                                f"characters, not {text!r}")
        metrics.append(Metric(str(name), str(value)))
    return tuple(metrics)


def _count(values: dict[str, str], names: tuple[str, ...]) -> int | None:
    """The first of `names` whose value reads as a whole number of 0 or more ("3", "3.0"), else None."""
    for name in names:
        try:
            number = float(values[name])
        except (KeyError, ValueError):
            continue
        if math.isfinite(number) and number >= 0 and number == int(number):
            return int(number)
    return None
