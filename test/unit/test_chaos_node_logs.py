"""The invariant "never two live processes claiming one TensorFlow task" from container log files written out as the
kubelet keeps them on each node's disk (hack/chaos/node_logs.py, observations.process_claim, invariants)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import invariants
from chaos.node_logs import NodeLogs, read_attempts
from chaos.observations import process_claim

NS = "chaos-7"
OLD, NEW = "chaos-tf-0001-worker-x7k2-0", "chaos-tf-0001-worker-x7k2-0"  # a replacement keeps its pod's name


def write_log(node: Path, pod: str, uid: str, attempt: int, lines: list[tuple[str, str]]) -> None:
    """The container's lines (runtime time, text) as the kubelet writes them: `<time> <stream> <tag> <text>`."""
    directory = node / f"{NS}_{pod}_{uid}" / "tensorflow"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{attempt}.log").write_text("".join(f"2026-11-27T17:{at}.123456789Z stdout F {text}\n"
                                                      for at, text in lines))


def claim(at: str, task: str = "worker:0") -> tuple[str, str]:
    return at, f"tfop-example: task={task} workers=2 chief=1 ps=1"


def step(at: str, n: int) -> tuple[str, str]:
    return at, f"step {n} loss 0.5000"


def judged(tmp_path: Path) -> list[str]:
    logs = NodeLogs([tmp_path / "real-0", tmp_path / "real-1"], NS)
    logs.read()
    return invariants.one_process_per_task(logs.claims())


def test_a_replacement_that_claims_after_the_lost_process_last_worked_holds(tmp_path: Path) -> None:
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("00:05", 1), step("00:06", 2)])
    write_log(tmp_path / "real-0", NEW, "uid-new", 0, [claim("01:00"), step("01:05", 1)])
    assert judged(tmp_path) == []


def test_a_replacement_that_claims_while_the_cut_off_process_still_steps_is_a_double_claim(tmp_path: Path) -> None:
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("00:05", 1), step("02:00", 9)])
    write_log(tmp_path / "real-0", NEW, "uid-new", 0, [claim("01:00"), step("01:05", 1)])
    assert judged(tmp_path) == [("chaos-tf-0001 (x7k2) worker:0: chaos-tf-0001-worker-x7k2-0 (uid-new, 0.log) "
                                 "claimed it while chaos-tf-0001-worker-x7k2-0 (uid-old, 0.log) still worked as it")]


def test_a_line_that_is_not_work_after_the_replacement_claimed_holds(tmp_path: Path) -> None:
    """A cut-off process that only says it gives up, after its replacement took over, did not work as the task."""
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("00:05", 1),
                                                      ("02:00", "a peer is gone (UnavailableError); exiting 138")])
    write_log(tmp_path / "real-0", NEW, "uid-new", 0, [claim("01:00"), step("01:05", 1)])
    assert judged(tmp_path) == []


def test_attempts_of_one_pod_restarted_in_place_are_each_a_process(tmp_path: Path) -> None:
    write_log(tmp_path / "real-0", OLD, "uid-old", 0, [claim("00:00"), step("00:05", 1)])
    write_log(tmp_path / "real-0", OLD, "uid-old", 1, [claim("00:30"), step("00:35", 1)])
    assert judged(tmp_path) == []
    write_log(tmp_path / "real-0", OLD, "uid-old", 0, [claim("00:00"), step("00:05", 1), step("00:40", 2)])
    assert len(judged(tmp_path)) == 1


def test_a_third_process_is_judged_against_the_longest_claim_before_it(tmp_path: Path) -> None:
    """The first process steps on past the second's whole life: the third's claim still overlaps the first."""
    write_log(tmp_path / "real-1", OLD, "uid-a", 0, [claim("00:00"), step("03:00", 9)])
    write_log(tmp_path / "real-0", NEW, "uid-b", 0, [claim("01:00"), step("01:10", 1)])
    write_log(tmp_path / "real-0", NEW, "uid-c", 0, [claim("02:00"), step("02:10", 1)])
    assert [v.split(" claimed")[0] for v in judged(tmp_path)] == [
        "chaos-tf-0001 (x7k2) worker:0: chaos-tf-0001-worker-x7k2-0 (uid-b, 0.log)",
        "chaos-tf-0001 (x7k2) worker:0: chaos-tf-0001-worker-x7k2-0 (uid-c, 0.log)"]


@pytest.mark.parametrize(("other_pod", "other_task"), [
    ("chaos-tf-0001-worker-x7k2-1", "worker:1"),  # another task of the job
    ("chaos-tf-0002-worker-q9zz-0", "worker:0"),  # the same task of another job
    ("chaos-tf-0001-worker-b4c5-0", "worker:0"),  # the job deleted and created again: another RuntimeId
])
def test_processes_of_other_tasks_may_run_at_once(tmp_path: Path, other_pod: str, other_task: str) -> None:
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("02:00", 9)])
    write_log(tmp_path / "real-0", other_pod, "uid-other", 0, [claim("01:00", other_task), step("01:05", 1)])
    assert judged(tmp_path) == []


def test_two_pods_of_different_names_claiming_one_task_are_a_double_claim(tmp_path: Path) -> None:
    """The task is the one the process says it is (its TF_CONFIG), not its pod's name."""
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("02:00", 9)])
    write_log(tmp_path / "real-0", "chaos-tf-0001-worker-x7k2-1", "uid-other", 0, [claim("01:00"), step("01:05", 1)])
    assert len(judged(tmp_path)) == 1


def test_a_process_that_never_said_its_task_claims_nothing(tmp_path: Path) -> None:
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("02:00", 9)])
    write_log(tmp_path / "real-0", NEW, "uid-new", 0, [("01:00", "importing TensorFlow")])
    assert judged(tmp_path) == []


def test_lines_are_kept_once_the_kubelet_removed_the_pods_directory(tmp_path: Path) -> None:
    write_log(tmp_path / "real-1", OLD, "uid-old", 0, [claim("00:00"), step("02:00", 9)])
    logs = NodeLogs([tmp_path / "real-0", tmp_path / "real-1"], NS)
    logs.read()
    (tmp_path / "real-1" / f"{NS}_{OLD}_uid-old" / "tensorflow" / "0.log").unlink()
    write_log(tmp_path / "real-0", NEW, "uid-new", 0, [claim("01:00"), step("01:05", 1)])
    logs.read()
    assert len(invariants.one_process_per_task(logs.claims())) == 1


def test_only_the_runs_namespace_is_read(tmp_path: Path) -> None:
    write_log(tmp_path / "real-0", OLD, "uid-old", 0, [claim("00:00")])
    (tmp_path / "real-0" / f"other_{OLD}_uid-x" / "tensorflow").mkdir(parents=True)
    assert list(read_attempts([tmp_path / "real-0"], NS)) == [(f"{NS}_{OLD}_uid-old", "0.log")]


def test_a_claim_spans_from_its_task_line_to_its_last_line_of_work() -> None:
    lines = ["2026-11-27T17:00:00.5Z stdout F importing",
             "2026-11-27T17:00:10.5Z stdout F tfop-example: task=chief:0 workers=1 chief=1 ps=0",
             "2026-11-27T17:00:20.5Z stdout F epoch 1 loss 0.3 accuracy 0.9",
             "2026-11-27T17:00:30.5Z stdout F done: accuracy 0.9 after 3 epochs"]
    found = process_claim(f"{NS}_keras-chief-x7k2-0_uid-1", "0.log", lines)
    assert (found.job, found.task, found.held_from, found.held_to) == (
        "keras (x7k2)", "chief:0", 1795798810.5, 1795798820.5)
