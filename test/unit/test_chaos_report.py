"""A chaos run's report: counts and recovery times by kind, skipped faults left out (hack/chaos/report.py)."""

from __future__ import annotations

import json
from pathlib import Path

from chaos.invariants import Verdict
from chaos.report import FaultRecord, Report


def report() -> Report:
    return Report(7, 600.0, elapsed=620.0, faults=[
        FaultRecord(0, "operator-kill", 10.0, 10.5, "killed tfop-0, started tfop-2", 14.0),
        FaultRecord(0, "etcd-compact", 11.0, 11.0, "compacted at revision 9", 14.0),
        FaultRecord(1, "operator-kill", 40.0, 40.5, "killed tfop-1, started tfop-3", 16.0),
        FaultRecord(2, "spec-edit", 70.0, 70.0, "skipped: nothing fitted", 0.5),
        FaultRecord(3, "apiserver-restart", 90.0, 96.0, "down 5.0 s", None),
        FaultRecord(4, "apiserver-restart", 120.0, 190.0, "error: TimeoutError: not ready within 60 s", 40.0),
    ], verdicts=[Verdict("a", ()), Verdict("b", ("x broke",))],
        rss={"tfop-0": [(31.0, 100 * 2**20), (300.0, 110 * 2**20)]}, jobs={"Succeeded/TFJobSucceeded": 3})


def test_counts_and_recovery_by_kind_leave_skipped_and_errored_faults_out() -> None:
    made = report()
    assert made.counts() == {"apiserver-restart": 1, "etcd-compact": 1, "operator-kill": 2}
    assert made.counts("errored") == {"apiserver-restart": 1}
    assert made.counts("skipped") == {"spec-edit": 1}
    assert made.recovery() == {"etcd-compact": {"n": 1, "median": 14.0, "max": 14.0},
                               "operator-kill": {"n": 2, "median": 15.0, "max": 16.0}}
    assert not made.held


def test_written_as_json_and_markdown(tmp_path: Path) -> None:
    json_path, markdown_path = report().write(tmp_path)
    data = json.loads(json_path.read_text())
    assert data["seed"] == 7 and data["held"] is False and len(data["timeline"]) == 6
    assert data["fault_counts"] == {"apiserver-restart": 1, "etcd-compact": 1, "operator-kill": 2}
    assert data["faults_errored"] == {"apiserver-restart": 1} and data["faults_skipped"] == {"spec-edit": 1}
    assert data["rss"] == {"tfop-0": {"lived_s": 300, "start_mib": 100.0, "end_mib": 110.0, "judged": True}}
    text = markdown_path.read_text()
    assert "| b | NO | x broke |" in text and "| operator-kill | 2 | 0 | 0 | 15.0 | 16.0 |" in text
    assert "| apiserver-restart | 1 | 1 | 0 | - | - |" in text and "| spec-edit | 0 | 0 | 1 | - | - |" in text
    assert "| tfop-0 | 300 | 100.0 | 110.0 | yes |" in text
    assert "| 3 | 90 | apiserver-restart | 96 | - | down 5.0 s |" in text


def test_a_report_without_verdicts_does_not_pass() -> None:
    assert not Report(7, 600.0).held
    assert Report(7, 600.0, verdicts=[Verdict("a", ())]).held
