"""The `tfop` command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from tfop import __version__

# The client-side limit guards against our own runaway loops; the apiserver protects itself (priority and fairness).
# 500/s is about twice what a small control plane accepts, so it never sets the pace of a real workload: at 50/s,
# a hundred 7-replica jobs took 4.5x as long to create as the apiserver needed (make bench).
DEFAULT_QPS = 500.0
DEFAULT_BURST = 1000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfop", description="A Kubernetes operator for distributed TensorFlow training (TFJob, kubeflow.org/v1).")
    parser.add_argument("--version", action="version", version=f"tfop {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run the operator in the foreground",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                              description="Run the TFJob controller until SIGTERM or Ctrl-C.")
    run.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                     help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)")
    run.add_argument("--namespace", action="append", default=[],
                     help="watch only this namespace; repeat for several (default: all namespaces)")
    run.add_argument("--threads", type=_positive_int, default=8, help="reconcile worker threads")
    run.add_argument("--qps", type=float, default=DEFAULT_QPS, help="client-side limit on API requests per second")
    run.add_argument("--burst", type=_positive_int, default=DEFAULT_BURST, help="client-side burst above --qps")
    run.add_argument("--leader-elect", action="store_true",
                     help="elect a leader through a Lease so only one of several replicas acts")
    run.add_argument("--leader-elect-namespace", default=None,
                     help="namespace of the Lease (default: the pod's namespace, else kube-system)")
    run.add_argument("--leader-elect-id", default="tfop-leader", help="name of the Lease")
    run.add_argument("--metrics-addr", default=":8080", help="host:port for /metrics (port 0 = any free port)")
    run.add_argument("--health-addr", default=":8081", help="host:port for /healthz and /readyz")
    run.add_argument("--log-format", choices=["auto", "json", "console"], default="auto",
                     help="auto = JSON unless stderr is a terminal")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--config", default=None, help="controller config file (YAML)")
    run.add_argument("--gang-scheduler-name", choices=["none", "scheduler-plugins", "volcano"], default=None,
                     help="gang-schedule each job as one PodGroup of this scheduler (default: the config file's "
                          "gangScheduler, else none)")
    run.add_argument("--drain-seconds", type=float, default=20.0,
                     help="on SIGTERM, how long in-flight reconciles may take to finish (keep it below the pod's "
                          "terminationGracePeriodSeconds)")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from tfop.operator import run_operator

        return run_operator(args)
    raise AssertionError(f"unhandled command {args.command}")
