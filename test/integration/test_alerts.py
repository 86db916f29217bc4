"""The alerts as Prometheus will run them: the Helm chart's PrometheusRule, rendered by helm, passes `promtool
check rules`, and its rules pass their unit tests (test/data/prometheus/alerts_test.yaml) under `promtool test
rules`, which cover every alert both ways: the series that fire it, and ones that must not.

helm and promtool are built from source by hack/ (cached per user); a failed build fails the tests, never skips
them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from support.builds import built
from tfop import yamlio

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "tfop"
RULE_TESTS = REPO / "test" / "data" / "prometheus" / "alerts_test.yaml"
RULES_FILE = "tfop-alerts.yaml"  # the name RULE_TESTS' rule_files gives the rendered rules
EVALUATION_INTERVAL = 60  # seconds; RULE_TESTS' evaluation_interval


class BlockStrings(yaml.SafeDumper):
    """Writes multi-line strings (the expressions) as `|` blocks, so promtool's line numbers lead somewhere."""


BlockStrings.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None))


@pytest.fixture(scope="module")
def promtool() -> Path:
    """hack/build-prometheus.sh's promtool (built from the Go module proxy once, then cached)."""
    return built("build-prometheus.sh", "promtool") / "promtool"


@pytest.fixture(scope="module")
def rules(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rule groups of the PrometheusRule the chart renders with its default values, as a Prometheus rule
    file beside a copy of RULE_TESTS (promtool reads rule_files relative to the test file)."""
    result = subprocess.run([str(helm), "template", "tfop", str(CHART), "--namespace", "tfop-system", "--set",
                             "metrics.prometheusRule.enabled=true"], capture_output=True, text=True, check=False,
                            timeout=120)
    assert result.returncode == 0, f"helm template failed:\n{result.stderr}"
    [rule] = [doc for doc in yamlio.load_all(result.stdout) if doc and doc["kind"] == "PrometheusRule"]
    directory = tmp_path_factory.mktemp("alerts")
    path = directory / RULES_FILE
    path.write_text(yaml.dump({"groups": rule["spec"]["groups"]}, Dumper=BlockStrings, sort_keys=False, width=120))
    shutil.copy(RULE_TESTS, directory / RULE_TESTS.name)
    return path


def run_promtool(promtool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, check=False, timeout=300)


def test_promtool_is_the_pinned_version(promtool: Path) -> None:
    versions = dict(line.split("=", 1) for line in (REPO / "hack" / "versions.env").read_text().splitlines()
                    if re.match(r"^[A-Z_]+=", line))
    pinned = re.fullmatch(r"v0\.3(\d\d)\.(\d+)", versions["PROMETHEUS_VERSION"])
    assert pinned, f"PROMETHEUS_VERSION={versions['PROMETHEUS_VERSION']} is not a 3.x module version"
    output = run_promtool(promtool, "--version").stdout
    assert f"version 3.{int(pinned[1])}.{pinned[2]} " in output, output


def test_rendered_rules_pass_promtool_check(promtool: Path, rules: Path) -> None:
    result = run_promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", str(rules))
    assert result.returncode == 0, f"promtool check rules:\n{result.stdout}{result.stderr}"
    print(result.stdout + result.stderr)


def test_alerts_pass_their_unit_tests(promtool: Path, rules: Path) -> None:
    result = run_promtool(promtool, "test", "rules", str(rules.parent / RULE_TESTS.name))
    assert result.returncode == 0, f"promtool test rules:\n{result.stdout}{result.stderr}"
    print(result.stdout + result.stderr)


def alerts(rules: Path) -> set[str]:
    groups = yamlio.load(rules.read_text())["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}


def seconds(duration: str) -> int:
    """A promtool eval_time written in whole minutes or hours, as RULE_TESTS writes them."""
    match = re.fullmatch(r"(\d+)([mh])", duration)
    assert match, f"eval_time {duration!r}: write it as minutes or hours"
    return int(match[1]) * {"m": 60, "h": 3600}[match[2]]


def test_every_alert_has_a_test_that_fires_it_and_one_that_must_not(rules: Path) -> None:
    """For every alert: a group that fires it also checks it one evaluation earlier, so a `for:` or a range that
    is off by some minutes fails; and a group of series that must not fire it (the healthy one, or another)
    checks it quiet throughout."""
    spec = yamlio.load(RULE_TESTS.read_text())
    assert spec["evaluation_interval"] == f"{EVALUATION_INTERVAL // 60}m"
    wanted = alerts(rules)
    fired, fired_on_time, never_fired = set(), set(), set()
    for group in spec["tests"]:
        cases = group.get("alert_rule_test", [])
        firing = {(case["alertname"], seconds(case["eval_time"])) for case in cases if case.get("exp_alerts")}
        quiet = {(case["alertname"], seconds(case["eval_time"])) for case in cases if not case.get("exp_alerts")}
        for name, _ in firing | quiet:
            assert name in wanted, f"{group['name']!r}: no alert {name} in the rules"
        fired |= {name for name, _ in firing}
        fired_on_time |= {name for name, at in firing if (name, at - EVALUATION_INTERVAL) in quiet}
        never_fired |= {name for name, _ in quiet} - {name for name, _ in firing}
    assert not wanted - fired, f"alerts no test fires: {sorted(wanted - fired)}"
    assert not wanted - fired_on_time, \
        f"alerts no test checks quiet one evaluation before they fire: {sorted(wanted - fired_on_time)}"
    assert not wanted - never_fired, \
        f"alerts no group of series checks quiet throughout: {sorted(wanted - never_fired)}"
