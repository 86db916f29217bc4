"""The chart's Grafana dashboard's queries, as Grafana sends them to Prometheus: with its template variables and
its built-in intervals substituted, range or instant as each target asks."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.addons.prometheus import Prometheus

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "tfop" / "files" / "grafana-dashboard.json"


@dataclass(frozen=True)
class PanelQuery:
    panel: str  # "#<id> <title>"
    legend: str  # the target's legend, else its refId
    expr: str  # as the dashboard writes it
    instant: bool  # a stat's one value at the end of the range; else a graph over it


def load() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def queries(dashboard: Mapping[str, Any]) -> list[PanelQuery]:
    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for item in items:
            yield item
            yield from panels(item.get("panels", []))  # collapsed rows hold theirs

    return [PanelQuery(f"#{panel['id']} {panel['title']}", target.get("legendFormat") or target["refId"],
                       target["expr"], bool(target.get("instant")))
            for panel in panels(dashboard["panels"]) for target in panel.get("targets", [])]


def query_variables(dashboard: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The `label_values(selector, label)` variables: name -> (selector, label)."""
    found = {}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["query"]["query"])
        assert match, f"variable {variable['name']}: only label_values(selector, label) is read here"
        found[variable["name"]] = (match[1], match[2])
    return found


def variable_options(prometheus: Prometheus, dashboard: Mapping[str, Any]) -> dict[str, list[str]]:
    """What each query variable offers, asked of Prometheus the way Grafana asks (the label values API)."""
    return {name: list(prometheus.api(f"label/{label}/values", **{"match[]": [selector]}))
            for name, (selector, label) in query_variables(dashboard).items()}


def substitute(expr: str, variables: Mapping[str, str], *, range_seconds: float, step: float,
               scrape_interval: float) -> str:
    """Grafana's built-ins, then the template variables (`$name` or `${name}`). `$__rate_interval` is Grafana's
    max($__interval + scrape interval, 4 * scrape interval), so a rate always spans four scrapes."""
    builtins = {"__rate_interval": f"{int(max(step + scrape_interval, 4 * scrape_interval))}s",
                "__range": f"{int(range_seconds)}s", "__interval": f"{int(step)}s"}
    values = {**builtins, **variables}

    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        assert name in values, f"no value for ${name} in {expr}"
        return values[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)


def metric_names(prometheus: Prometheus, expr: str) -> set[str]:
    """The metric names a query selects, from Prometheus' own parse of it (/api/v1/parse_query)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("vectorSelector", "matrixSelector"):
                by_matcher = [m["value"] for m in node.get("matchers", []) if m["name"] == "__name__"]
                names.update([node["name"]] if node.get("name") else by_matcher)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(prometheus.api("parse_query", query=expr))
    return names
