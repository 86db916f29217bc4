"""Which Kueue integration this process runs, settled once at start against the cluster.

Two facts decide it. Does the apiserver serve Kueue's Workloads, ResourceFlavors and WorkloadPriorityClasses
(without them tfop's own integration's informers would never sync)? And is Kueue's own TFJob adapter
(`kubeflow.org/tfjob`) enabled, so that Kueue would make a second Workload for every job tfop makes one for?

The adapter is told by what it does, not by Kueue's Configuration (a file tfop may not read, wherever an
installation put it): Kueue registers its TFJob mutating webhook for an enabled integration only; a disabled one
gets a no-op webhook (v0.19 jobframework/setup.go, `setupControllers`), and the enabled one suspends every TFJob
created with a queue-name label, whether that LocalQueue exists or not (jobframework/utils.go,
`WorkloadShouldBeSuspended`). Kueue's webhooks declare no side effects, so they run on a dry run. A server-side
dry-run create of a TFJob with a queue label therefore answers with `runPolicy.suspend: true` exactly where the
adapter would take the job. Nothing is stored. Namespaces its webhooks' selector leaves out are not seen here;
the planner notices the adapter's Workload per job there (policies/kueue_admission.py).

A choice in the config file is honoured or refused (exit 1); left out, `own` gives way to what the cluster has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import structlog

from tfop.api.constants import API_VERSION, KIND
from tfop.api.kueue import INTEGRATION_ADAPTER, INTEGRATION_OWN, QUEUE_NAME, TFJOB_INTEGRATION
from tfop.controller.children import RESOURCE_FLAVORS, TFJOBS, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound, TransportError
from tfop.startup import EXIT_UNREACHABLE, StartupError

log = structlog.get_logger("tfop")

PROBE_QUEUE = "tfop-adapter-probe"  # a LocalQueue name no one needs: the webhook suspends for any name
PROBE_RETRIES = 2

Adapter = Literal["enabled", "disabled", "unknown"]


@dataclass(frozen=True)
class AdapterProbe:
    """What the dry runs showed: where the adapter took the probe, or why nothing could be told."""

    adapter: Adapter
    detail: str  # the namespace it was seen in, or the answer that left it unknown


@dataclass(frozen=True)
class Settled:
    config: ControllerConfig
    note: str | None = None  # said at start (a warning) when the cluster changed or left open what the file meant


def settle(config: ControllerConfig, missing: Sequence[str], probe: AdapterProbe | None) -> Settled:
    """The integration to run, pure: `missing`, the Kueue resources the apiserver does not serve; `probe`, the
    adapter probe (None when it was not needed). Raises StartupError for a chosen `own` the cluster cannot honour."""
    if config.kueue_integration != INTEGRATION_OWN:
        return Settled(config)
    chosen = config.kueue_integration_chosen
    adapter = dataclasses.replace(config, kueue_integration=INTEGRATION_ADAPTER)
    if missing:
        if chosen:
            raise StartupError(EXIT_UNREACHABLE, "Kueue missing",
                               f"kueue.integration is own, but the apiserver does not serve {', '.join(missing)} of "
                               f"{WORKLOADS.api_version}",
                               "install Kueue (v0.15 or later), or set kueue.integration: kueue in the config")
        return Settled(adapter, f"Kueue is not installed ({WORKLOADS.api_version} serves no {', '.join(missing)}): "
                                f"tfop queues no job; a job naming a Kueue queue runs unqueued, and says so. "
                                f"Restart tfop once Kueue is installed")
    if probe is None or probe.adapter == "disabled":
        return Settled(config)
    if probe.adapter == "unknown":
        return Settled(config, f"could not tell whether Kueue's {TFJOB_INTEGRATION} adapter is enabled "
                               f"({probe.detail}); tfop's own integration runs, and refuses any job the adapter "
                               f"takes too (KueueAdapterConflict)")
    both = (f"Kueue's {TFJOB_INTEGRATION} adapter is enabled (its webhook suspended a TFJob naming a queue in "
            f"namespace {probe.detail}, on a dry run), so Kueue would make a second Workload for every job tfop's "
            f"own integration queues")
    if chosen:
        raise StartupError(EXIT_UNREACHABLE, "Kueue's TFJob adapter enabled", f"kueue.integration is own, but {both}",
                           f"take {TFJOB_INTEGRATION} out of integrations.frameworks in Kueue's Configuration and "
                           f"restart Kueue, or set kueue.integration: kueue in tfop's config")
    return Settled(adapter, f"{both}: tfop leaves queueing to it (kueue.integration: kueue). To move to tfop's own, "
                            f"see docs/scheduling/kueue.md")


def settle_kueue_integration(client: KubeClient, config: ControllerConfig,
                             namespaces: Sequence[str]) -> ControllerConfig:
    """Asks the cluster what `settle` needs, and says at start what it decided when that is not what the file
    said."""
    if config.kueue_integration != INTEGRATION_OWN:
        return config
    missing = kueue_missing(client)
    settled = settle(config, missing, None if missing else probe_adapter(client, namespaces))
    if settled.note is not None:
        log.warning("kueue integration", integration=settled.config.kueue_integration, note=settled.note)
    return settled.config


def kueue_missing(client: KubeClient) -> list[str]:
    wanted = {WORKLOADS.plural, RESOURCE_FLAVORS.plural, WORKLOAD_PRIORITY_CLASSES.plural}
    try:
        group = client.request("GET", f"/apis/{WORKLOADS.group}/{WORKLOADS.version}", max_retries=PROBE_RETRIES)
        served = {r.get("name") for r in (group or {}).get("resources") or ()}
    except NotFound:
        served = set()
    return sorted(wanted - served)


def probe_job() -> dict[str, object]:
    """The TFJob sent on a dry run: valid, naming a queue, not suspended."""
    container = {"name": "tensorflow", "image": "tfop.invalid/adapter-probe"}
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"generateName": "tfop-adapter-probe-", "labels": {QUEUE_NAME: PROBE_QUEUE}},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [container]}}}}}}


def probe_adapter(client: KubeClient, namespaces: Sequence[str]) -> AdapterProbe:
    """Dry-run creates in the namespaces tfop watches (or `default`), until one is suspended by Kueue's webhook."""
    unknown: AdapterProbe | None = None
    for namespace in [*namespaces] or ["default"]:
        try:
            answer = client.request("POST", TFJOBS.path(namespace), query=[("dryRun", "All")], body=probe_job(),
                                    max_retries=PROBE_RETRIES)
        except (ApiError, TransportError) as error:
            unknown = unknown or AdapterProbe("unknown", f"a dry-run create of a TFJob in {namespace}: {error}")
            continue
        run_policy = ((answer or {}).get("spec") or {}).get("runPolicy") or {}
        if run_policy.get("suspend") is True:
            return AdapterProbe("enabled", namespace)
    return unknown or AdapterProbe("disabled", ", ".join(namespaces) or "default")
