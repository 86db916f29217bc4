"""The checks test_metrics_scraped.py runs on what Prometheus scraped, fed data that breaks each rule: a checker
that can never fail would pass any metric."""

from __future__ import annotations

from support import grafana
from support.metric_table import Metric, Scraped, differences, documented, help_problems, naming_problems

TARGET = {"job", "instance", "pod"}


def scraped(**families: tuple[str, str, list[dict[str, str]]]) -> Scraped:
    """family -> (type, help, the label sets of its series, each with its __name__)."""
    metadata = {name: {"type": kind, "help": text, "unit": ""} for name, (kind, text, _) in families.items()}
    return Scraped(metadata, [series for _, _, found in families.values() for series in found])


def test_well_named_metrics_pass() -> None:
    good = scraped(
        jobs_done=("counter", "Jobs that finished.", [{"__name__": "jobs_done_total", "job": "tfop", "ns": "a"}]),
        wait_seconds=("histogram", "Time in queue.", [{"__name__": "wait_seconds_bucket", "le": "1"},
                                                      {"__name__": "wait_seconds_sum"}]),
        memory_bytes=("gauge", "Resident memory.", [{"__name__": "memory_bytes"}]))
    assert naming_problems(good) == [] and help_problems(good) == []
    assert good.metrics(TARGET)["jobs_done_total"].labels == {"ns"}
    assert good.unexplained() == set()


def test_each_naming_rule_catches_its_breach() -> None:
    bad = scraped(
        queued_total=("gauge", "Items queued.", [{"__name__": "queued_total"}]),
        latency=("histogram", "Request latency.", [{"__name__": "latency_bucket", "le": "1"}]),
        wait_milliseconds=("gauge", "How long it waited.", [{"__name__": "wait_milliseconds"}]),
        heap=("gauge", "Heap memory in use.", [{"__name__": "heap"}]),
        restarts=("counter", "", [{"__name__": "restarts"}, {"__name__": "restarts_created"}]))
    problems = "\n".join(naming_problems(bad))
    for expected in ("queued_total: a gauge named like a counter", "latency: a time not named *_seconds",
                     "wait_milliseconds: not in a base unit", "heap: a size not named *_bytes",
                     "restarts: a counter whose series do not end in _total", "restarts_created: a *_created"):
        assert expected in problems, expected
    assert help_problems(bad) == ["restarts"]
    assert bad.unexplained() == {"restarts", "restarts_created"}


PAGE = """# Metrics

| metric | type | labels | what it answers |
| --- | --- | --- | --- |
| `jobs_done_total` | counter | `ns`, `framework="tensorflow"`, `result` (`ok`, `failed`) | jobs that finished |
| `queue_depth` | gauge | | |

Prose after the table.
"""


def test_the_page_and_the_server_are_compared_both_ways() -> None:
    page = documented(PAGE)
    assert page["jobs_done_total"] == Metric("jobs_done_total", "counter", frozenset({"ns", "framework", "result"}),
                                             "jobs that finished")
    server = {"jobs_done_total": Metric("jobs_done_total", "counter", frozenset({"ns", "result"}), "Jobs."),
              "wait_seconds": Metric("wait_seconds", "histogram", frozenset(), "Time in queue.")}
    problems = "\n".join(differences(page, server))
    assert "no row (scraped: | `wait_seconds` | histogram |  | Time in queue. |)" in problems
    assert "`queue_depth` has a row but Prometheus scraped no such metric" in problems
    assert "`jobs_done_total`: the page says counter ['framework', 'ns', 'result']" in problems


def test_dashboard_variables_and_intervals_are_substituted_as_grafana_does() -> None:
    expr = 'sum(rate(x{ns=~"$namespace"}[$__rate_interval])) + increase(y{ns=~"${namespace}"}[$__range])'
    assert grafana.substitute(expr, {"namespace": "a"}, range_seconds=90.5, step=1, scrape_interval=1) == \
        'sum(rate(x{ns=~"a"}[4s])) + increase(y{ns=~"a"}[90s])'
    # Four scrapes at least; a wide step's interval plus one scrape past that.
    rate = "rate(x[$__rate_interval])"
    assert grafana.substitute(rate, {}, range_seconds=1, step=15, scrape_interval=30) == "rate(x[120s])"
    assert grafana.substitute(rate, {}, range_seconds=1, step=200, scrape_interval=30) == "rate(x[230s])"
