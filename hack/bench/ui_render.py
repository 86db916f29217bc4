"""How long the page takes to render its two heaviest views from cached objects: the list of 2,000 jobs (every
row rendered, as on the first view; and with each row kept from an earlier render, as once the rows are cached
per resourceVersion, tfop/ui/row_cache.py), and a job of 500 replicas with 1,000 events (issue 35's figures), also
with every replica's pod recreated once (its exit read from the job's status, on the table and the timeline).
The apiserver's reviews are left out: they are cached per user for 5 s.
Run: PYTHONPATH=hack:. python -m bench.ui_render [--jobs 10000] (`bench.memory --pile` times the same list over
the jobs it piled up, as the apiserver returns them)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from tfop.ui.app import HERE, job_url
from tfop.ui.pieces import COLUMNS
from tfop.ui.row_cache import RowCache
from tfop.ui.views.clock_text import time_html
from tfop.ui.views.job_list import JobRow, Page, page_of, select_rows
from tfop.ui.views.job_page import condition_rows, event_rows, recreated_exits, replica_rows
from tfop.ui.views.list_query import ListQuery
from tfop.ui.views.summary import summary
from tfop.ui.views.timeline import layout

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
RUNS = 7


def ago(seconds: int) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


CONDITIONS = [{"type": "Created", "status": "True", "lastTransitionTime": ago(600), "message": "created"},
              {"type": "Running", "status": "True", "lastTransitionTime": ago(500), "message": "running"}]


def jobs(count: int) -> list[dict[str, Any]]:
    return [{"metadata": {"namespace": f"ns-{i % 40}", "name": f"job-{i}", "creationTimestamp": ago(600),
                          "resourceVersion": str(1000 + i)},
             "status": {"conditions": CONDITIONS, "replicaStatuses": {"Worker": {"active": 4, "restarts": 1},
                                                                      "PS": {"active": 2}}}}
            for i in range(count)]


def pods(count: int) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"big-worker-{i}", "uid": str(i), "creationTimestamp": ago(600),
                          "labels": {"training.kubeflow.org/replica-type": "worker",
                                     "training.kubeflow.org/replica-index": str(i)}},
             "spec": {"nodeName": f"node-{i % 50}"},
             "status": {"phase": "Running", "containerStatuses": [{
                 "name": "tensorflow", "restartCount": 1, "state": {"running": {"startedAt": ago(400)}},
                 "lastState": {"terminated": {"exitCode": 137, "startedAt": ago(550), "finishedAt": ago(450)}}}]}}
            for i in range(count)]


def events(count: int) -> list[dict[str, Any]]:
    return [{"involvedObject": {"kind": "Pod", "name": f"big-worker-{i % 500}"}, "type": "Normal",
             "reason": "Started", "message": "Started container tensorflow", "lastTimestamp": ago(400 - i % 100)}
            for i in range(count)]


def measure(name: str, render: Callable[[], str], runs: int = RUNS, echo: bool = True) -> dict[str, Any]:
    """Median, min and max seconds of `runs` renders (after a first one, which gives the HTML's size)."""
    size = len(render())
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        render()
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    if echo:
        print(f"{name}: median {median * 1000:.0f} ms (min {min(times) * 1000:.0f}, "
              f"max {max(times) * 1000:.0f}; {runs} runs), {size / 1e6:.2f} MB of HTML")
    return {"name": name, "median_s": median, "min_s": min(times), "max_s": max(times), "runs": runs,
            "html_mb": size / 1e6}


def templates_env() -> Environment:
    templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    templates.globals.update(job_url=job_url, time_html=lambda moment: time_html(moment, None))
    return templates


def list_timings(listed: list[dict[str, Any]], now: datetime, runs: int = RUNS,
                 echo: bool = True) -> list[dict[str, Any]]:
    """The job list over `listed` (jobs as the page's cache holds them), as the app renders it: every job's row
    made (or kept from an earlier render), all sorted newest first, then the rows of one page written; and the
    whole list in one page."""
    templates = templates_env()
    macros: Any = templates.get_template("_job_row.html").module
    count = f"{len(listed):,}"

    def render_row(row: JobRow) -> tuple[Markup, Markup]:
        return Markup(macros.head(row)), Markup(macros.tail(row))

    def job_list(cache: RowCache, per: str = "") -> str:
        """As the app does it: every row selected and sorted (newest first), then one page of them written."""
        query = ListQuery.parse({"per": per})
        selected = select_rows([cache.row(job) for job in listed], lambda rendered: rendered.row, now)
        page = page_of(len(selected), "1", per) if per else Page(1, 1, len(selected), len(selected))
        rows = [rendered.html(now) for rendered in selected[page.first:page.last]]
        return templates.get_template("_job_table.html").render(rows=rows, query=query, page=page, columns=COLUMNS,
                                                                empty="")

    warm = RowCache(render_row)
    job_list(warm)
    return [
        measure(f"the list of {count} jobs, every row rendered", lambda: job_list(RowCache(render_row)), runs, echo),
        measure(f"the list of {count} jobs, rows cached", lambda: job_list(warm), runs, echo),
        measure(f"the first page (50) of {count} jobs, no row kept yet", lambda: job_list(RowCache(render_row), "50"),
                runs, echo),
        measure(f"the first page (50) of {count} jobs, rows cached", lambda: job_list(warm, "50"), runs, echo)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000, help="jobs in the list")
    args = parser.parse_args(argv)
    templates = templates_env()
    replicas, recorded = pods(500), events(1000)
    job = {"metadata": {"namespace": "a", "name": "big"}, "status": {"conditions": CONDITIONS}}
    list_timings(jobs(args.jobs), NOW)

    def job_page(job: dict[str, Any], replicas: list[dict[str, Any]]) -> str:
        recreated = recreated_exits(job)
        return templates.get_template("_job_live.html").render(
            namespace="a", name="big", state="Running", conditions=condition_rows(job),
            replicas=replica_rows(replicas, recreated), timeline=layout(replicas, CONDITIONS, NOW, (), recreated),
            events=event_rows(recorded), pod_url=lambda pod: f"/p/{pod}", links=[],
            summary=summary(job, replicas, [], recreated))

    measure("a job of 500 replicas and 1,000 events", lambda: job_page(job, replicas))
    recreated_job = {**job, "status": {"conditions": CONDITIONS, "replicaStatuses": {"Worker": {"recreatedExits": [
        {"index": i, "exitCode": 137, "reason": "Error", "finishedAt": ago(450)} for i in range(500)]}}}}
    new_pods = [{**pod, "status": {"phase": "Running", "containerStatuses": [{
        "name": "tensorflow", "restartCount": 0, "state": {"running": {"startedAt": ago(400)}}}]}} for pod in replicas]
    measure("the same job, every replica's pod recreated once", lambda: job_page(recreated_job, new_pods))


if __name__ == "__main__":
    main()
