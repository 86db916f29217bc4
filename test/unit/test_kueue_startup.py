"""Which Kueue integration tfop runs, settled at start (tfop/kueue_startup.py): a choice in the file honoured or
refused with the fix, a left-out one giving way to what the cluster has; the probe TFJob a dry run sends."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tfop.config import parse_config
from tfop.kueue_startup import AdapterProbe, probe_job, settle
from tfop.startup import StartupError

ALL_SERVED: list[str] = []
NO_KUEUE = ["resourceflavors", "workloadpriorityclasses", "workloads"]
DISABLED = AdapterProbe("disabled", "team-a")
ENABLED = AdapterProbe("enabled", "team-a")
UNKNOWN = AdapterProbe("unknown", "a dry-run create of a TFJob in team-a: 403 Forbidden")
BOTH = ("Kueue's kubeflow.org/tfjob adapter is enabled (its webhook suspended a TFJob naming a queue in namespace "
        "team-a, on a dry run), so Kueue would make a second Workload for every job tfop's own integration queues")


@dataclass(frozen=True)
class Row:
    file: dict[str, str]  # the config file's kueue section
    missing: list[str]
    probe: AdapterProbe | None
    integration: str  # what runs
    note: str | None = None


SETTLED = {
    "left out, Kueue without its adapter: own": Row({}, ALL_SERVED, DISABLED, "own"),
    "own chosen, Kueue without its adapter: own": Row({"integration": "own"}, ALL_SERVED, DISABLED, "own"),
    "left out, no Kueue: nothing queued, said": Row({}, NO_KUEUE, None, "kueue", (
        "Kueue is not installed (kueue.x-k8s.io/v1beta2 serves no resourceflavors, workloadpriorityclasses, "
        "workloads): tfop queues no job; a job naming a Kueue queue runs unqueued, and says so. Restart tfop once "
        "Kueue is installed")),
    "left out, the adapter enabled: the adapter, said": Row({}, ALL_SERVED, ENABLED, "kueue", (
        f"{BOTH}: tfop leaves queueing to it (kueue.integration: kueue). To move to tfop's own, see "
        "docs/scheduling/kueue.md")),
    "own chosen, the adapter unknown (no right to dry-run): own, said": Row({"integration": "own"}, ALL_SERVED,
                                                                            UNKNOWN, "own", (
        "could not tell whether Kueue's kubeflow.org/tfjob adapter is enabled (a dry-run create of a TFJob in "
        "team-a: 403 Forbidden); tfop's own integration runs, and refuses any job the adapter takes too "
        "(KueueAdapterConflict)")),
    "the adapter chosen: nothing asked of the cluster": Row({"integration": "kueue"}, NO_KUEUE, None, "kueue"),
}


@pytest.mark.parametrize("row", SETTLED.values(), ids=SETTLED.keys())
def test_the_integration_is_settled_by_the_file_and_the_cluster(row: Row) -> None:
    settled = settle(parse_config({"kueue": row.file}), row.missing, row.probe)
    assert (settled.config.kueue_integration, settled.note) == (row.integration, row.note)


REFUSED = {
    "own chosen, no Kueue": (NO_KUEUE, None, "Kueue missing", (
        "kueue.integration is own, but the apiserver does not serve resourceflavors, workloadpriorityclasses, "
        "workloads of kueue.x-k8s.io/v1beta2; install Kueue (v0.15 or later), or set kueue.integration: kueue in "
        "the config")),
    "own chosen, the adapter enabled": (ALL_SERVED, ENABLED, "Kueue's TFJob adapter enabled", (
        f"kueue.integration is own, but {BOTH}; take kubeflow.org/tfjob out of integrations.frameworks in Kueue's "
        "Configuration and restart Kueue, or set kueue.integration: kueue in tfop's config")),
}


@pytest.mark.parametrize(("missing", "probe", "event", "said"), REFUSED.values(), ids=REFUSED.keys())
def test_a_chosen_own_the_cluster_cannot_honour_stops_the_start(missing: list[str], probe: AdapterProbe | None,
                                                                 event: str, said: str) -> None:
    with pytest.raises(StartupError) as raised:
        settle(parse_config({"kueue": {"integration": "own"}}), missing, probe)
    assert (raised.value.exit_code, raised.value.event, str(raised.value)) == (1, event, said)


def test_the_probe_names_a_queue_and_is_not_suspended() -> None:
    assert probe_job() == {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"generateName": "tfop-adapter-probe-",
                     "labels": {"kueue.x-k8s.io/queue-name": "tfop-adapter-probe"}},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tfop.invalid/adapter-probe"}]}}}}}}
