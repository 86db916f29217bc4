"""Every metric tfop exports, twice: as docs/operating/metrics.md's tables list them, and as a Prometheus that
scraped tfop has them (its target metadata and its series). A metric is named as queries name it: a counter with
its `_total`, a histogram by its family name (its series add `_bucket`, `_sum` and `_count`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.addons.prometheus import Prometheus

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operating" / "metrics.md"
HEADER = "| metric | type | labels | what it answers |"
# The series Prometheus writes itself, not scraped from tfop: about each scrape, and for each alert of our rules
# that is pending or firing (those carry the alert expression's labels, job="tfop" among them; whether one is
# pending when the test reads depends on the workload's timing).
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
             "scrape_series_added", "ALERTS", "ALERTS_FOR_STATE"}
SAMPLE_LABELS = {"le", "quantile"}  # a histogram's and a summary's, not the metric's own


@dataclass(frozen=True)
class Metric:
    name: str
    type: str
    labels: frozenset[str]
    answers: str  # the table's last column, or the metric's help text

    def row(self) -> str:
        labels = ", ".join(f"`{label}`" for label in sorted(self.labels))
        return f"| `{self.name}` | {self.type} | {labels} | {self.answers} |"


def documented(text: str | None = None) -> dict[str, Metric]:
    """The rows of every table on the page that starts with HEADER. Labels are the backticked names of the labels
    column outside parentheses (those hold example values)."""
    lines = (PAGE.read_text() if text is None else text).splitlines()
    found: dict[str, Metric] = {}
    in_table = False
    for line in lines:
        if line.strip() == HEADER:
            in_table = True
            continue
        if not in_table or re.fullmatch(r"\|( *-+ *\|)+", line.strip()):
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 4, f"{PAGE.name}: a row of four cells, not {line!r}"
        name, kind, labels, answers = cells
        name = name.strip("`")
        assert name not in found, f"{PAGE.name}: {name} has two rows"
        outside = re.sub(r"\([^)]*\)", "", labels)
        found[name] = Metric(name, kind, frozenset(re.findall(r"`(\w+)(?:=[^`]*)?`", outside)), answers)
    return found


def family_series(name: str, kind: str) -> set[str]:
    """The series names a family's samples carry."""
    if kind == "counter":
        return {name if name.endswith("_total") else f"{name}_total"}
    if kind in ("histogram", "gaugehistogram"):
        return {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    if kind == "summary":
        return {name, f"{name}_sum", f"{name}_count"}
    return {name}


@dataclass(frozen=True)
class Scraped:
    """What Prometheus has of one scrape job: its targets' metadata by family, and its series' label sets."""

    metadata: dict[str, dict[str, Any]]  # family -> {type, help, unit}
    series: list[dict[str, str]]

    @classmethod
    def read(cls, prometheus: Prometheus, job: str) -> Scraped:
        metadata: dict[str, dict[str, Any]] = {}
        for entry in prometheus.api("targets/metadata", match_target=f'{{job="{job}"}}'):
            metadata.setdefault(entry["metric"], entry)
        return cls(metadata, list(prometheus.api("series", **{"match[]": [f'{{job="{job}"}}']})))

    def names_of(self, family: str) -> set[str]:
        return family_series(family, self.metadata[family]["type"])

    def unexplained(self) -> set[str]:
        """Series names no family's metadata accounts for (nor Prometheus' own)."""
        known = {name for family in self.metadata for name in self.names_of(family)} | SYNTHETIC
        return {labels["__name__"] for labels in self.series} - known

    def metrics(self, target_labels: Iterable[str]) -> dict[str, Metric]:
        """Each family as the table names it, with the labels its series carry beyond the target's."""
        ignored = {"__name__", *target_labels, *SAMPLE_LABELS}
        found = {}
        for family, entry in self.metadata.items():
            names = self.names_of(family)
            labels = {label for series in self.series if series["__name__"] in names for label in series} - ignored
            query_name = next(iter(names)) if entry["type"] == "counter" else family
            found[query_name] = Metric(query_name, entry["type"], frozenset(labels), entry["help"])
        return found


def differences(documented: dict[str, Metric], scraped: dict[str, Metric]) -> list[str]:
    """What the page says that the server does not, and the rows it lacks (ready to paste)."""
    problems = [f"no row (scraped: {scraped[name].row()})" for name in sorted(scraped.keys() - documented.keys())]
    problems += [f"`{name}` has a row but Prometheus scraped no such metric" for name in
                 sorted(documented.keys() - scraped.keys())]
    for name in sorted(documented.keys() & scraped.keys()):
        page, server = documented[name], scraped[name]
        if (page.type, page.labels) != (server.type, server.labels):
            problems.append(f"`{name}`: the page says {page.type} {sorted(page.labels)}, Prometheus has "
                            f"{server.type} {sorted(server.labels)}")
        if not page.answers:
            problems.append(f"`{name}`: the row does not say what it answers")
    return problems


def naming_problems(scraped: Scraped) -> list[str]:
    """Counters and only counters end in `_total`, no `_created` series, and a time or a size says its base unit
    (seconds, bytes) at the end of its name, as its help text or OpenMetrics unit suggests."""
    names = {series["__name__"] for series in scraped.series}
    problems = [f"{name}: a *_created series" for name in sorted(names) if name.endswith("_created")]
    for family, entry in sorted(scraped.metadata.items()):
        kind = entry["type"]
        if kind == "counter" and ((family in names and not family.endswith("_total"))
                                  or not scraped.names_of(family) & names):
            problems.append(f"{family}: a counter whose series do not end in _total")
        if kind != "counter" and any(name.endswith("_total") for name in scraped.names_of(family)):
            problems.append(f"{family}: a {kind} named like a counter")
        base = family.removesuffix("_total")
        words = f"{base.replace('_', ' ')} {entry['help']}".lower()
        if entry.get("unit") and not base.endswith(f"_{entry['unit']}"):
            problems.append(f"{family}: its unit {entry['unit']} is not at the end of its name")
        if re.search(r"\b(time|duration|latency|seconds|wait)\b", words) and not base.endswith("_seconds"):
            problems.append(f"{family}: a time not named *_seconds ({entry['help']})")
        if re.search(r"\b(bytes|memory)\b", words) and not base.endswith("_bytes"):
            problems.append(f"{family}: a size not named *_bytes ({entry['help']})")
        if re.search(r"_(milli|micro|nano)seconds|_(minutes|hours|days|percent)|_(kilo|mega|giga)bytes", base):
            problems.append(f"{family}: not in a base unit (seconds, bytes, ratios)")
    return problems


def help_problems(scraped: Scraped) -> list[str]:
    return sorted(family for family, entry in scraped.metadata.items()
                  if not entry["help"].strip() or entry["help"].strip() == family)
