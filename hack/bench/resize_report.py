"""`bench.resize`'s summary: one line per step of each round (a mode's step up, then down)."""

from __future__ import annotations

from typing import Any


def summary(report: dict[str, Any]) -> str:
    return "\n".join(step_line(step) for run in report["rounds"] for step in run["steps"])


def step_line(step: dict[str, Any]) -> str:
    def seconds(what: str) -> str:
        return "/".join(str(step.get(f"{what}_{part}_s", "-")) for part in ("first", "p50", "p99", "last"))

    old_pods = f" old pods gone {seconds('old_pods_gone')}," if "old_pods_gone_last_s" in step else ""
    return (f"{step['mode']:<7} {step['jobs']} jobs, Worker {step['from']} -> {step['to']}: {step['done']}/"
            f"{step['jobs']} done within {step['window_s']} s; done first/p50/p99/last {seconds('done')} s "
            f"(count recorded {seconds('recorded')},{old_pods} pods {seconds('pods')}, status {seconds('status')}); "
            f"scales sent in {step['sent_s']} s; lastResize told {step['last_resize_told']}/{step['jobs']}; "
            f"pods kept {step['pods_kept']}/{step.get('pods_to_keep', '-')}, "
            f"seen terminating {step['pods_seen_terminating']}; "
            f"CPU {step['cpu_s']} s, peak RSS {step['peak_rss_mb']} MB; "
            f"{step['passes_per_job']} passes ({step.get('passes_failed', '-')} failed) and "
            f"{step['requests_per_job']} requests per job: {step['requests_by_kind']}, "
            f"failed {step.get('requests_failed', {})}")
