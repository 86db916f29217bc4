"""The progress of the jobs that opt in (annotation tfop.kubeflow.org/progress-metrics: "true"), as metrics made
from the latest reports when /metrics is scraped: a job's series exists while the operator holds a report of it.

    tf_operator_job_training_steps_per_second{job_namespace, job_name}   between the job's last two reports
    tf_operator_job_training_progress_percent{job_namespace, job_name}   as last reported
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tfop.controller.progress_reports import ProgressReports

LABELS = ["job_namespace", "job_name"]


class ProgressCollector(Collector):
    def __init__(self, reports: ProgressReports) -> None:
        self._reports = reports

    def collect(self) -> Iterator[GaugeMetricFamily]:
        rate = GaugeMetricFamily("tf_operator_job_training_steps_per_second", "Training steps per second between "
                                 "a job's last two progress reports (jobs annotated "
                                 "tfop.kubeflow.org/progress-metrics: \"true\").", labels=LABELS)
        percent = GaugeMetricFamily("tf_operator_job_training_progress_percent", "How complete a job's training "
                                    "is, as its pods last reported (jobs annotated "
                                    "tfop.kubeflow.org/progress-metrics: \"true\").", labels=LABELS)
        for key, report in sorted(self._reports.metered().items()):
            labels = list(key.split("/", 1))
            if report.steps_per_second is not None:
                rate.add_metric(labels, report.steps_per_second)
            if report.status.progress_percentage is not None:
                percent.add_metric(labels, report.status.progress_percentage)
        yield rate
        yield percent
