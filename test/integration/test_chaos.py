"""The chaos soak's short form (`make chaos` is the long one): kwok jobs, two operators with leader election, about
a minute and a half of faults, mostly overlapping, from fixed seeds; every invariant must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.run import ChaosRun
from chaos.seeds import REGRESSION_SEEDS, SHORT_FORM_SEEDS
from localcluster import LocalCluster

SHORT_DURATION = 90.0
SHORT_JOBS = 12


@pytest.mark.time_limit(1200)
@pytest.mark.parametrize("seed", SHORT_FORM_SEEDS + REGRESSION_SEEDS)
def test_every_invariant_holds_through_overlapping_faults(cluster: LocalCluster, tfjob_crd: Path, namespace: str,
                                                         tmp_path: Path, seed: int) -> None:
    # Memory growth is `make chaos`'s to judge: in 90 s of faults no replica need live the 90 s it takes.
    report = ChaosRun(cluster, namespace, seed, SHORT_DURATION, tmp_path, running_jobs=SHORT_JOBS,
                      overlap_probability=0.8, judge_memory=False).run()
    _, markdown_path = report.write(tmp_path)
    print(report.to_markdown())
    assert any(fault.kind for fault in report.faults), "no fault was injected"
    assert any(len([f for f in report.faults if f.round == r]) > 1 for r in {f.round for f in report.faults}), \
        "no round overlapped faults"
    failed = {verdict.name: verdict.violations for verdict in report.verdicts if not verdict.held}
    assert not failed, f"invariants violated (report: {markdown_path}):\n{failed}"
