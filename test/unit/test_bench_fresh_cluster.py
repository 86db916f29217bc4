"""`bench --fresh-cluster`: every run after the first gets a new cluster, with the CRD installed, before it
starts; runs stay alternating and the last cluster's logs are not overwritten by the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mock import MockerFixture

from bench.__main__ import Bench, parse_args


class RecordingCluster:
    """The bench's side of a cluster, recording what the bench asks of it, in order."""

    def __init__(self, calls: list[str], directory: Path) -> None:
        self.calls = calls
        self.directory = directory

    def up(self) -> None:
        self.calls.append("new cluster")

    def install_crd(self, path: Path) -> None:
        self.calls.append(f"CRD {path.name}")

    def delete_namespaces(self, names: list[str]) -> float:
        self.calls.append(f"delete {','.join(names)}")
        return 0.0


class RecordingRunner:
    def __init__(self, calls: list[str], results: Path) -> None:
        self.calls = calls
        self.results = results
        self.cluster = RecordingCluster(calls, results / "cluster")
        self.pinning = None

    def run(self, contender: Any, jobs: int, index: int) -> dict[str, Any]:
        self.calls.append(f"{contender.name} run {index + 1}")
        return {"namespace": f"{contender.name}-{index}"}


def bench(argv: list[str], tmp_path: Path, mocker: MockerFixture) -> tuple[Bench, list[str]]:
    mocker.patch.object(Bench, "save", return_value="")  # the tables need real runs' figures
    copied = mocker.patch("bench.__main__.copy_logs")
    calls: list[str] = []
    copied.side_effect = lambda cluster, destination: calls.append(f"logs to {destination.name}")
    args = parse_args(["--jobs", "10", "--runs", "2", "--contenders", "limit,tfop", "--big-jobs", "0",
                       "--idle-jobs", "0", "--delete-each-run", *argv])
    runner = RecordingRunner(calls, tmp_path)
    return Bench(args, runner, []), calls  # type: ignore[arg-type]


def test_fresh_cluster_puts_a_new_cluster_with_the_crd_before_every_run_but_the_first_and_deletes_nothing(
        tmp_path: Path, mocker: MockerFixture) -> None:
    made, calls = bench(["--fresh-cluster"], tmp_path, mocker)
    made.group(Path("tfjob-crd.yaml"), made.args.contenders, [], idle=False)
    assert calls == [
        "CRD tfjob-crd.yaml",
        "limit run 1",
        "logs to cluster-1", "new cluster", "CRD tfjob-crd.yaml",
        "tfop run 1",
        "logs to cluster-2", "new cluster", "CRD tfjob-crd.yaml",
        "limit run 2",
        "logs to cluster-3", "new cluster", "CRD tfjob-crd.yaml",
        "tfop run 2",
    ]
    assert made.clusters == 4


def test_without_it_every_run_shares_the_one_cluster(tmp_path: Path, mocker: MockerFixture) -> None:
    made, calls = bench([], tmp_path, mocker)
    made.group(Path("tfjob-crd.yaml"), made.args.contenders, [], idle=False)
    assert calls == ["CRD tfjob-crd.yaml", "limit run 1", "delete limit-0", "tfop run 1", "delete tfop-0",
                     "limit run 2", "delete limit-1", "tfop run 2", "delete tfop-1"]
