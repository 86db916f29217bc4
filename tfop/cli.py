"""The `tfop` command.

A mistake in the flags ends the process with exit code 2 and one line saying what is wrong and how to fix it, as
`tfop run --help` would; the process logs the same as one structured line, so a pod's log has it too.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from tfop import __version__
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULER_NAMES
from tfop.startup import EXIT_USAGE, StartupError, report_startup_error

# The client-side limit guards against our own runaway loops; the apiserver protects itself (priority and fairness).
# 500/s is about twice what a small control plane accepts, so it never sets the pace of a real workload: at 50/s,
# a hundred 7-replica jobs took 4.5x as long to create as the apiserver needed (make bench).
DEFAULT_QPS = 500.0
DEFAULT_BURST = 1000
# Bounds that catch a typo (an extra zero, a unit mistaken for another) without second-guessing a real setting.
MAX_THREADS = 256
MAX_QPS = 100_000.0
MAX_BURST = 1_000_000
MAX_DRAIN_SECONDS = 3600.0


class _Parser(argparse.ArgumentParser):
    """argparse prints its usage block on a mistake; one line naming the flag and `--help` is easier to read in a
    terminal and in a pod's log."""

    def error(self, message: str) -> NoReturn:
        report_startup_error(StartupError(EXIT_USAGE, "invalid flags", message, f"see `{self.prog} --help`"))
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfop", description="A Kubernetes operator for distributed TensorFlow training (TFJob, kubeflow.org/v1).")
    parser.add_argument("--version", action="version", version=f"tfop {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run the operator in the foreground",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                              description="Run the TFJob controller until SIGTERM or Ctrl-C. Exit codes: 0 stopped, "
                                          "1 the cluster is unreachable or not ready (no TFJob CRD), 2 bad flags "
                                          "or config.")
    run.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                     help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)")
    run.add_argument("--namespace", action="append", default=[], type=_namespace,
                     help="watch only this namespace; repeat for several (default: all namespaces)")
    run.add_argument("--threads", type=_int_in(1, MAX_THREADS), default=8,
                     help=f"reconcile worker threads, 1-{MAX_THREADS} (and one more kept for jobs whose pass only "
                          "observes: see docs/architecture.md)")
    run.add_argument("--qps", type=_float_in(0.0, MAX_QPS, low_open=True), default=DEFAULT_QPS,
                     help=f"client-side limit on API requests per second, above 0 and at most {MAX_QPS:g}")
    run.add_argument("--burst", type=_int_in(1, MAX_BURST), default=DEFAULT_BURST,
                     help=f"client-side burst above --qps, 1-{MAX_BURST}")
    run.add_argument("--leader-elect", action="store_true",
                     help="elect a leader through a Lease so only one of several replicas acts")
    run.add_argument("--leader-elect-namespace", default=None, type=_namespace,
                     help="namespace of the Lease (default: the pod's namespace, else kube-system)")
    run.add_argument("--leader-elect-id", default="tfop-leader", type=_lease_name, help="name of the Lease")
    run.add_argument("--metrics-addr", default=None,
                     help="host:port for /metrics; [::]:8443 or [::1]:8080 for IPv6, :8443 for every address, "
                          "port 0 for any free port (default: :8443 when secure, else 127.0.0.1:8080)")
    run.add_argument("--metrics-secure", action=argparse.BooleanOptionalAction, default=None,
                     help="serve /metrics over HTTPS, only to callers the apiserver authenticates and allows get on "
                          "the non-resource URL /metrics (default: on in a pod or with --metrics-cert-dir, else off)")
    run.add_argument("--metrics-cert-dir", default=None,
                     help="directory with tls.crt and tls.key for secure /metrics, read again when they change "
                          "(default: a self-signed certificate made at start with openssl)")
    run.add_argument("--health-addr", default=":8081",
                     help="host:port for /healthz and /readyz, always plain HTTP (as --metrics-addr)")
    run.add_argument("--log-format", choices=["auto", "json", "console"], default="auto",
                     help="auto = JSON unless stderr is a terminal")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.add_argument("--config", default=None, help="controller config file (YAML)")
    run.add_argument("--gang-scheduler-name", choices=list(GANG_SCHEDULER_NAMES), default=None,
                     help="gang-schedule each job as one PodGroup of this scheduler (default: the config file's "
                          "gangScheduler, else none)")
    run.add_argument("--replica-backend", choices=["pods", "jobs"], default=None,
                     help="what new jobs' replicas are: pods, or one batch/v1 Job each (default: the config file's "
                          "replicaBackend, else pods; a job's tfop.kubeflow.org/replica-backend annotation wins)")
    run.add_argument("--webhook-addr", default=None,
                     help="host:port to serve the CRD's conversion webhook on (HTTPS /convert; default: not served)")
    run.add_argument("--webhook-cert-dir", default="/run/tfop/webhook",
                     help="directory with tls.crt and tls.key for the webhook, read again when they change")
    run.add_argument("--drain-seconds", type=_float_in(0.0, MAX_DRAIN_SECONDS), default=20.0,
                     help=f"on SIGTERM, how long in-flight reconciles may take to finish, 0-{MAX_DRAIN_SECONDS:g} "
                          "(keep it below the pod's terminationGracePeriodSeconds)")


    webhook = commands.add_parser("webhook", help="serve only the CRD's conversion webhook",
                                  formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                  description="Serve HTTPS POST /convert for the TFJob CRD until SIGTERM.")
    webhook.add_argument("--addr", default=":9443", help="host:port to listen on")
    webhook.add_argument("--cert-dir", default="/run/tfop/webhook", help="directory with tls.crt and tls.key")
    webhook.add_argument("--log-format", choices=["auto", "json", "console"], default="auto")
    webhook.add_argument("--config", default=None,
                         help="the operator's controller config file: its gpuResource names what converted jobs ask "
                              "for where they asked for alpha.kubernetes.io/nvidia-gpu (default nvidia.com/gpu)")

    ui = commands.add_parser("ui", help="serve the read-only TFJob page",
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                             description="Serve the TFJob page (job list, a job's replicas, events, logs, timeline) "
                                         "until SIGTERM. Every request needs a bearer token; what it shows is what "
                                         "the apiserver lets that token's user read. Needs tfop[ui].")
    ui.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                    help="kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)")
    ui.add_argument("--addr", default="127.0.0.1:8080",
                    help="host:port to serve on (:8080 for every address, port 0 for any free port)")
    ui.add_argument("--cert-dir", default=None,
                    help="directory with tls.crt and tls.key to serve HTTPS (default: plain HTTP, for behind "
                         "`kubectl port-forward` or a proxy that terminates TLS)")
    ui.add_argument("--log-format", choices=["auto", "json", "console"], default="auto")

    convert = commands.add_parser(
        "convert", help="print legacy TFJob manifests as kubeflow.org/v1",
        description="Convert TFJob manifests of kubeflow.org/v1alpha1, kubeflow.org/v1beta1 or tensorflow.org/"
                    "v1alpha1 (TfJob) to kubeflow.org/v1 YAML on stdout, with a warning on stderr for every field "
                    "v1 cannot carry. Other documents pass through unchanged. Exit 1 when there were warnings.")
    convert.add_argument("files", nargs="*", default=["-"], help="YAML files ('-' or none: stdin)")
    convert.add_argument("--gpu-resource", default="nvidia.com/gpu", type=_gpu_resource,
                         help="what converted jobs ask for where they asked for alpha.kubernetes.io/nvidia-gpu, "
                              "e.g. amd.com/gpu (the operator's gpuResource)")
    return parser


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its message
    return parse


def _float_in(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or value > high:
            bound = f"above {low:g}" if low_open else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"must be {bound} and at most {high:g}, not {text}")
        return value

    parse.__name__ = "number"
    return parse


def _namespace(text: str) -> str:
    from tfop.startup import dns_label_problem

    problem = dns_label_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem} (leave the flag out to watch every namespace)")
    return text


def _lease_name(text: str) -> str:
    from tfop.startup import dns_subdomain_problem

    problem = dns_subdomain_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _gpu_resource(text: str) -> str:
    from tfop.controller.plan.job.legacy_gpu import gpu_resource_problem

    problem = gpu_resource_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from tfop.operator import run_operator

        return run_operator(args)
    if args.command == "webhook":
        from tfop.operator import run_webhook

        return run_webhook(args)
    if args.command == "ui":
        from tfop.ui.server import run_ui

        return run_ui(args)
    if args.command == "convert":
        from tfop.convert import convert_files

        return convert_files(args.files, gpu_resource=args.gpu_resource)
    raise AssertionError(f"unhandled command {args.command}")
