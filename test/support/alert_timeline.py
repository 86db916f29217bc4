"""Watching alerts in a running Prometheus: wait for a rule's state, and print when each step happened, both as
the test saw it and as Prometheus recorded it (its ALERTS series)."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime
from typing import Any

from localcluster.addons.prometheus import Prometheus
from localcluster.addons.prometheus_chart import seconds


def clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S.%f")[:-3]


def runs(stamps: list[float], interval: float) -> list[tuple[float, float, int]]:
    """Evaluations `interval` apart (give or take one) as runs: (first, last, how many)."""
    found: list[tuple[float, float, int]] = []
    for at in stamps:
        if found and at - found[-1][1] < 2 * interval:
            found[-1] = (found[-1][0], at, found[-1][2] + 1)
        else:
            found.append((at, at, 1))
    return found


def with_short_for(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule groups with every alert's `for:` read in seconds instead of minutes (5m -> 5s), their expressions
    untouched: the shipped pending times would make a test take a quarter of an hour."""
    shortened = copy.deepcopy(groups)
    for group in shortened:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = f"{max(1, round(seconds(rule['for']) / 60))}s"
    return shortened


class AlertTimeline:
    """What happened to which alert when; printed by `report`."""

    def __init__(self, prometheus: Prometheus) -> None:
        self.prometheus = prometheus
        self.started = time.time()
        self.lines: list[str] = []

    def note(self, what: str) -> float:
        now = time.time()
        self.lines.append(f"{clock(now)}  {what}")
        return now

    def rule(self, alert: str) -> dict[str, Any]:
        groups = self.prometheus.api("rules", type="alert", **{"rule_name[]": [alert]})["groups"]
        [rule] = [rule for group in groups for rule in group["rules"]]
        return dict(rule)

    def wait_state(self, alert: str, state: str, timeout: float) -> dict[str, Any]:
        """Polls the rule until it is `state` (inactive, pending or firing) and notes when, with the alert's
        labels, value and activeAt (when its expression first held) as Prometheus gives them."""
        deadline = time.monotonic() + timeout
        while True:
            rule = self.rule(alert)
            if rule["state"] == state:
                break
            if time.monotonic() > deadline:
                # What the rule and the scrapes say: an erroring rule, or scrapes failing (up 0), or the
                # expression's value itself.
                up = [(series["metric"].get("job"), series["value"][1]) for series in self.prometheus.query("up")]
                raise AssertionError(
                    f"{alert} still {rule['state']} after {timeout}s, not {state}:\n" + "\n".join(self.lines)
                    + f"\nrule health {rule.get('health')} lastError {rule.get('lastError')!r} lastEvaluation "
                    f"{rule.get('lastEvaluation')}; up {up}; expression now "
                    f"{self.prometheus.query(rule['query'])}")
            time.sleep(0.25)
        details = [f"{a['labels']} value={a['value']} activeAt={a['activeAt']}" for a in rule["alerts"]]
        rule["observedAt"] = self.note(f"{alert} is {state}" + (f": {'; '.join(details)}" if details else ""))
        return rule

    def runs_of(self, alert: str) -> dict[str, list[tuple[float, float, int]]]:
        """Prometheus' own record of the alert since the timeline began, by state (pending, firing): its ALERTS
        samples, each stamped with the evaluation that wrote it, as runs of consecutive evaluations."""
        window = max(1, int(time.time() - self.started) + 1)
        found: dict[str, list[tuple[float, float, int]]] = {}
        for series in self.prometheus.query(f'ALERTS{{alertname="{alert}"}}[{window}s]'):
            stamps = [float(at) for at, _ in series["values"]]
            found.setdefault(series["metric"]["alertstate"], []).extend(
                runs(stamps, seconds(self.prometheus.job.interval)))
        return {state: sorted(found[state]) for state in sorted(found)}

    def recorded(self, alert: str) -> list[str]:
        return [f"ALERTS{{alertname={alert!r}, alertstate={state!r}}}: evaluations {clock(first)} .. {clock(last)}"
                f" ({count})" for state, found in self.runs_of(alert).items() for first, last, count in found]

    def report(self, *alerts: str) -> str:
        recorded = [line for alert in alerts for line in self.recorded(alert)]
        return "\n".join(["timeline (UTC):", *self.lines, "as Prometheus recorded it (its ALERTS samples):", *recorded])
