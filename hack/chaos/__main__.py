"""`make chaos`: a local cluster of its own (kwok; --real-nodes N adds real nodes and their faults), one chaos run
of --duration seconds for --seed, its report written to --out as JSON and markdown. Exit 1 if an invariant failed.

    PYTHONPATH=hack:test python -m chaos --seed 7 --duration 600
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from chaos.run import ChaosRun, log
from localcluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crd" / "kubeflow.org_tfjobs.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults (then every job is ended)")
    parser.add_argument("--jobs", type=int, default=40, help="kwok jobs kept running")
    parser.add_argument("--real-nodes", type=int, default=0, help="real nodes, and their faults (needs root)")
    parser.add_argument("--out", type=Path, default=REPO / "chaos-results")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="tfop-chaos-"))
    cluster = LocalCluster(directory / "cluster", real_nodes=args.real_nodes)
    try:
        cluster.up()
        cluster.kubectl("apply", "-f", str(CRD))
        # A CRD just created has no conditions yet, which `kubectl wait` takes for an error: ask until Established.
        deadline = time.monotonic() + 180
        while cluster.kubectl("wait", "--for=condition=Established", "crd/tfjobs.kubeflow.org", "--timeout=60s",
                              check=time.monotonic() > deadline).returncode:
            time.sleep(0.5)
        namespace = f"chaos-{args.seed}"
        cluster.kubectl("create", "namespace", namespace)
        while cluster.kubectl("get", "serviceaccount", "default", "-n", namespace, check=False).returncode:
            time.sleep(0.5)  # the ServiceAccount admission plugin rejects pods until the default account exists
        report = ChaosRun(cluster, namespace, args.seed, args.duration, directory,
                          running_jobs=args.jobs, real_nodes=bool(args.real_nodes)).run()
    finally:
        cluster.destroy()
    json_path, markdown_path = report.write(args.out)
    print(report.to_markdown())
    log(f"report: {json_path} and {markdown_path}; operator logs were in {directory}")
    return 0 if report.held else 1


if __name__ == "__main__":
    sys.exit(main())
