"""bench/targets.py: one table of targets, the same on the benchmarks page, and each verdict says by how much."""

from __future__ import annotations

from pathlib import Path

from bench.nodeloss_report import rack_check
from bench.targets import ALL_TARGETS, FAIRNESS_TARGET, check, markdown, verdict

PAGE = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "index.md"


def test_the_benchmarks_page_lists_the_targets_table() -> None:
    assert markdown() in PAGE.read_text()


def test_keys_are_unique() -> None:
    keys = [target.key for target in ALL_TARGETS]
    assert len(keys) == len(set(keys))


def test_verdicts() -> None:
    assert verdict(check(FAIRNESS_TARGET, 1.16, name="tfop")) == (
        "  [MET ] tfop small jobs' start p99 beside the big job within 1.2x of alone: 1.16x, target <= 1.2x: "
        "met with 0.04x to spare")
    assert verdict(check(FAIRNESS_TARGET, 1.2, name="tfop")).startswith("  [MET ]")  # at the bound is met
    assert verdict(check(FAIRNESS_TARGET, 1.46, name="tfop")).endswith("missed by 0.26x")
    assert verdict(check(FAIRNESS_TARGET, None, name="tfop")) == (
        "  [n/a ] tfop small jobs' start p99 beside the big job within 1.2x of alone: not measured "
        "(target <= 1.2x)")


def test_a_rack_not_all_replaced_is_missed() -> None:
    full = rack_check({"operator": "tfop", "grace_s": 30, "all_replaced_s": 95.3})
    assert verdict(full) == ("  [MISS] tfop every replica of the lost nodes replaced at most 30 s after the grace: "
                             "65.30 s, target <= 30 s: missed by 35.30 s")
    partial = rack_check({"operator": "tfop", "grace_s": 30})
    assert partial["met"] is False
    assert verdict(partial).startswith("  [MISS] ") and "never reached" in verdict(partial)
