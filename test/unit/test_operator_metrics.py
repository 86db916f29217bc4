"""The job counters under the Kubeflow training operator's names, each exported once."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from tfop.metrics import FRAMEWORK, OperatorMetrics


def test_job_counters_speak_the_training_operators_names_and_labels() -> None:
    registry = CollectorRegistry()
    metrics = OperatorMetrics.create(registry)
    for counter in metrics.job_counters.values():
        counter.labels("team-a", FRAMEWORK).inc()
    exported = generate_latest(registry).decode()
    for what in ("created", "deleted", "successful", "failed", "restarted"):
        assert f'training_operator_jobs_{what}_total{{framework="tensorflow",job_namespace="team-a"}} 1.0' in exported
    assert "tf_operator_jobs_" not in exported  # the old tf-operator's names are not exported a second time
    names = [line.split()[2] for line in exported.splitlines() if line.startswith("# TYPE ")]
    assert len(names) == len(set(names))
