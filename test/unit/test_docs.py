"""The documentation site (docs/, mkdocs.yml) builds with --strict: a broken link or anchor, or a page left out of
the nav, fails `make test` as it fails `make docs`. Every alert links to its section of the runbook page, and the
reference pages keep up with what they list: the CRD's fields, the alerts, the metric families."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from tfop import yamlio
from tfop.metrics import OperatorMetrics

REPO = Path(__file__).resolve().parents[2]
RUNBOOK = "docs/operating/runbook.md"


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
               "--site-dir", str(site)]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=300)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = build_site(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}{result.stderr}"
    assert (tmp_path / "site" / "operating" / "runbook" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Guard against a build that can never fail: the same site with one link to a section that does not exist."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "operating" / "alerts.md"
    page.write_text(page.read_text() + "\n[gone](runbook.md#no-such-alert)\n")
    result = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-alert" in result.stdout + result.stderr


def test_every_alert_links_to_its_runbook_section() -> None:
    rule = yamlio.load((REPO / "deploy" / "helm" / "tfop" / "files" / "prometheusrule.yaml").read_text())
    runbook = (REPO / RUNBOOK).read_text()
    # MkDocs' anchors: the heading lowercased, punctuation dropped, spaces as hyphens.
    anchors = {re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
               for heading in re.findall(r"^#+ (.+)$", runbook, re.MULTILINE)}
    alerts = [alert for group in rule["spec"]["groups"] for alert in group["rules"]]
    assert alerts
    for alert in alerts:
        url = alert["annotations"].get("runbook_url", "")
        assert url == f"{RUNBOOK}#{alert['alert'].lower()}", f"{alert['alert']}: runbook_url {url!r}"
        assert url.partition("#")[2] in anchors, f"{alert['alert']}: the runbook page has no section for it"


def crd_field_paths(node: dict[str, Any], path: str) -> list[str]:
    """Every field of a schema as the reference page writes it: `{type}` for a map's key, `[]` for a list's item;
    a pod template, and the elastic policy's HPA metrics and behavior, are one field each (their schemas are
    Kubernetes')."""
    paths = []
    for name, child in (node.get("properties") or {}).items():
        here = f"{path}.{name}"
        paths.append(here)
        if name == "template" or here in ("spec.elasticPolicy.metrics", "spec.elasticPolicy.behavior"):
            continue
        if child.get("type") == "array":
            paths += crd_field_paths(child.get("items") or {}, here + "[]")
        elif isinstance(child.get("additionalProperties"), dict):
            paths += crd_field_paths(child["additionalProperties"], here + ".{type}")
        else:
            paths += crd_field_paths(child, here)
    return paths


def test_the_reference_lists_every_field_of_the_crd() -> None:
    crd = yamlio.load((REPO / "crd" / "kubeflow.org_tfjobs.yaml").read_text())
    [v1] = [version for version in crd["spec"]["versions"] if version["name"] == "v1"]
    schema = v1["schema"]["openAPIV3Schema"]["properties"]
    fields = crd_field_paths(schema["spec"], "spec") + crd_field_paths(schema["status"], "status")
    reference = (REPO / "docs" / "tfjob" / "reference.md").read_text()
    missing = [field for field in fields if f"| `{field}` |" not in reference]
    assert len(fields) > 40 and not missing, f"docs/tfjob/reference.md has no row for {missing}"


def test_the_alerts_page_lists_every_alert() -> None:
    rule = yamlio.load((REPO / "deploy" / "helm" / "tfop" / "files" / "prometheusrule.yaml").read_text())
    page = (REPO / "docs" / "operating" / "alerts.md").read_text()
    missing = [alert["alert"] for group in rule["spec"]["groups"] for alert in group["rules"]
               if f"| `{alert['alert']}` |" not in page]
    assert not missing, f"docs/operating/alerts.md has no row for {missing}"


def test_the_metrics_page_lists_every_family_the_operator_exports() -> None:
    registry = CollectorRegistry()
    OperatorMetrics.create(registry)
    page = (REPO / "docs" / "operating" / "metrics.md").read_text()
    names = [family.name + ("_total" if family.type == "counter" else "") for family in registry.collect()]
    missing = [name for name in names if f"| `{name}` |" not in page]
    assert len(names) > 20 and not missing, f"docs/operating/metrics.md has no row for {missing}"
