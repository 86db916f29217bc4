"""The operator process: configuration, HTTP endpoints, signals, leader election, and the controller's lifecycle.

Caches are filled before leader election is attempted, so a standby is ready to act the moment it leads and
answers /readyz meanwhile. SIGTERM stops taking work, lets in-flight reconciles finish within --drain-seconds,
then releases the lease so a successor takes over at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog
from prometheus_client import CollectorRegistry

from tfop import logs
from tfop.config import ConfigError, load_config
from tfop.controller.capacity.scaler import CapacityScaler
from tfop.controller.children import TFJOBS
from tfop.controller.plan.controller_config import ProgressSettings
from tfop.controller.reconciler import TFJobController
from tfop.health import Checks, EndpointServer
from tfop.kube.client import KubeClient
from tfop.kube.events import EventRecorder
from tfop.kube.leaderelection import LeaderElector
from tfop.kueue_startup import settle_kueue_integration
from tfop.malloc_arenas import limit_malloc_arenas
from tfop.metrics import OperatorMetrics, create_registry
from tfop.metrics_serving import MetricsServing, in_a_pod, metrics_serving, secure_endpoint
from tfop.preflight import check_cluster, gang_scheduler_problem, make_client
from tfop.progress.metrics import ProgressCollector
from tfop.progress.server import ProgressServer
from tfop.progress.serving import certificate, configmap_data, progress_server
from tfop.startup import EXIT_USAGE, ListenAddress, StartupError, parse_listen_address, report_startup_error
from tfop.tls import ContextSource
from tfop.webhook import ConversionWebhook

log = structlog.get_logger("tfop")

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def run_operator(args: argparse.Namespace) -> int:
    """Runs until SIGTERM/SIGINT; returns the exit code: 0, 1 (cluster unreachable or not ready), 2 (flags, config)."""
    logs.configure(args.log_format, args.log_level)
    limit_malloc_arenas()  # before any thread of ours starts
    try:
        return _run(args)
    except StartupError as error:
        report_startup_error(error)
        return error.exit_code


def _run(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    try:
        config = load_config(args.config, warnings)
        if args.gang_scheduler_name is not None:
            config = dataclasses.replace(config, gang_scheduler=args.gang_scheduler_name)
        if args.replica_backend is not None:
            config = dataclasses.replace(config, replica_backend=args.replica_backend)
    except ConfigError as error:
        raise StartupError(EXIT_USAGE, "invalid configuration", str(error), "fix the file given to --config") from None
    for warning in warnings:
        log.warning("configuration", warning=warning, file=args.config)
    health_addr = parse_listen_address(args.health_addr, "--health-addr")
    serving = metrics_serving(args.metrics_addr, args.metrics_secure, args.metrics_cert_dir, health=health_addr,
                              in_pod=in_a_pod(os.environ))
    if serving.exposed_in_plain:
        log.warning("/metrics is served over plain HTTP without authentication beyond loopback",
                    address=str(serving.address), fix="pass --metrics-secure, or a loopback --metrics-addr")
    registry = create_registry()
    metrics = OperatorMetrics.create(registry, namespaces=args.namespace)
    client = make_client(args.kubeconfig, qps=args.qps, burst=args.burst, metrics=metrics.kube)
    check_cluster(client, args.namespace)
    config = settle_kueue_integration(client, config, args.namespace)
    recorder = EventRecorder(client, "tfop", metrics=metrics.kube)
    gang_problem = gang_scheduler_problem(client, config.gang)
    if gang_problem is not None:
        log.error("gang scheduling unavailable", problem=gang_problem)
    progress_tls = _progress_certificate(config.progress) if config.progress.enabled else None
    controller = TFJobController(client, recorder, config=config, metrics=metrics, namespaces=args.namespace,
                                 threads=args.threads, gang_problem=gang_problem,
                                 progress_files=None if progress_tls is None else configmap_data(progress_tls[1]))
    # Cross-job, so beside the controller rather than in it: it reads the controller's TFJob cache.
    scaler = (CapacityScaler(client, config, lambda: controller.runtime.stores(TFJOBS))
              if config.capacity_scaling.enabled else None)
    servers: list[EndpointServer | ConversionWebhook | ProgressServer] = [
        *_endpoint_servers(serving, health_addr, controller, registry, client)]
    if progress_tls is not None:
        registry.register(ProgressCollector(controller.progress))
        try:
            servers.append(progress_server(config.progress, controller, client, progress_tls[0]))
        except OSError as error:
            for server in servers:
                server.stop()
            raise StartupError(EXIT_USAGE, "cannot listen", f"progress.address {config.progress.address}: "
                               f"{error.strerror or error}", "choose a free port in the config's progress.address",
                               ) from None
    if args.webhook_addr:
        try:
            servers.append(ConversionWebhook(args.webhook_addr, args.webhook_cert_dir, config.gpu_resource))
        except OSError as error:
            raise StartupError(EXIT_USAGE, "cannot serve the conversion webhook", f"{error} ({args.webhook_cert_dir})",
                               "give --webhook-cert-dir a directory with tls.crt and tls.key") from None
    stop = threading.Event()
    _stop_on_signals(stop)

    for server in servers:
        server.start()
    recorder.start()
    controller.start_informers()
    if scaler is not None:
        scaler.start_informers()
    log.info("starting", namespaces=args.namespace or "all", threads=args.threads, qps=args.qps, burst=args.burst,
             leader_elect=args.leader_elect, endpoints=[s.address for s in servers], server=client.host,
             metrics_secure=serving.secure,
             gang_scheduler=config.gang_scheduler, replica_backend=config.replica_backend)
    try:
        while not controller.wait_for_sync(timeout=1.0):
            if stop.is_set():
                return 0
        log.info("caches synced")
        if args.leader_elect:
            return _run_with_leader_election(args, client, controller, scaler, metrics, stop)
        controller.start_workers()
        if scaler is not None:
            scaler.start()
        metrics.is_leader.set(1)
        stop.wait()
        if scaler is not None:
            scaler.stop()
        controller.stop(args.drain_seconds)
        return 0
    finally:
        if scaler is not None:
            scaler.stop_informers()
        recorder.stop(timeout=2.0)
        for server in servers:
            server.stop()
        log.info("stopped")


def run_webhook(args: argparse.Namespace) -> int:
    logs.configure(args.log_format, "info")
    try:
        # Only gpuResource matters here; the whole file is read so the webhook refuses what the operator would.
        config = load_config(args.config)
    except ConfigError as error:
        report_startup_error(StartupError(EXIT_USAGE, "invalid configuration", str(error),
                                          "fix the file given to --config"))
        return EXIT_USAGE
    try:
        webhook = ConversionWebhook(args.addr, args.cert_dir, config.gpu_resource)
    except OSError as error:
        log.error("cannot serve the conversion webhook", error=str(error), cert_dir=args.cert_dir)
        return 2
    stop = threading.Event()
    _stop_on_signals(stop)
    webhook.start()
    log.info("serving the conversion webhook", address=webhook.address)
    stop.wait()
    webhook.stop()
    return 0


def _run_with_leader_election(args: argparse.Namespace, client: KubeClient, controller: TFJobController,
                              scaler: CapacityScaler | None, metrics: OperatorMetrics, stop: threading.Event) -> int:
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"

    def started_leading() -> None:
        controller.start_workers()
        if scaler is not None:
            scaler.start()
        metrics.is_leader.set(1)

    def stopped_leading() -> None:
        # Runs before the lease is released on a graceful stop, so the successor never overlaps our workers;
        # after a loss there is nothing to wait for: stop at once.
        metrics.is_leader.set(0)
        if scaler is not None:
            scaler.stop()
        controller.stop(args.drain_seconds if stop.is_set() else 0.0)

    elector = LeaderElector(client, args.leader_elect_namespace or _own_namespace(), args.leader_elect_id, identity,
                            on_started_leading=started_leading, on_stopped_leading=stopped_leading,
                            metrics=metrics.kube)
    elector.run(stop)
    if stop.is_set():
        return 0
    log.error("lost the leader lease; exiting so that only the new leader acts", identity=identity)
    return 1


def _endpoint_servers(serving: MetricsServing, health_addr: ListenAddress, controller: TFJobController,
                      registry: CollectorRegistry, client: KubeClient) -> list[EndpointServer]:
    """Bound here, before anything starts, so an address in use is a one-line error, not a traceback."""
    liveness, readiness = Checks(), Checks()
    liveness.add("controller", controller.health_problem)
    readiness.add("caches", controller.readiness_problem)
    readiness.add("gang-scheduler", controller.gang_readiness_problem)
    metrics: dict[str, object] = {"metrics": registry}
    if serving.secure:
        metrics["guard"], metrics["tls"] = secure_endpoint(serving, client)
    if serving.address == health_addr and not serving.secure:
        wanted = [("--metrics-addr", health_addr, {"liveness": liveness, "readiness": readiness, **metrics})]
    else:
        wanted = [("--metrics-addr", serving.address, metrics),
                  ("--health-addr", health_addr, {"liveness": liveness, "readiness": readiness})]
    servers: list[EndpointServer] = []
    for flag, address, endpoints in wanted:
        try:
            servers.append(EndpointServer(address, **endpoints))  # type: ignore[arg-type]
        except OSError as error:
            for server in servers:
                server.stop()
            raise StartupError(EXIT_USAGE, "cannot listen", f"{flag} {address}: {error.strerror or error}",
                               f"choose a free port or an address of this machine with {flag}") from None
    return servers


def _progress_certificate(settings: ProgressSettings) -> tuple[ContextSource, Callable[[], str]]:
    try:
        return certificate(settings)
    except OSError as error:
        raise StartupError(EXIT_USAGE, "cannot serve the progress endpoint", f"{error} (progress.certDir "
                           f"{settings.cert_dir})" if settings.cert_dir else str(error),
                           "give progress.certDir a directory with tls.crt and tls.key, or install openssl",
                           ) from None


def _own_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except OSError:
        return "kube-system"


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop`, from a thread of their own. A Python signal handler runs in the main thread
    wherever it happens to be, and one that takes a lock there (the Event's, the log's) waits for ever if the main
    thread holds it; so the handler does nothing, and the interpreter's own C handler, which takes no lock, writes
    the signal's number to a pipe this thread reads. Must be called from the main thread. The pipe stays open
    for the life of the process (the interpreter writes to it at every signal); raw descriptors, which the
    process's exit closes without a ResourceWarning in the log."""
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _ignore)

    def watch() -> None:
        while True:
            received = os.read(reader, 1)
            if not received:
                return  # closed: the process is going
            if received[0] in (signal.SIGTERM, signal.SIGINT):
                break
        log.info("signal received, shutting down", signal=signal.Signals(received[0]).name)
        stop.set()

    threading.Thread(target=watch, name="signals", daemon=True).start()


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler of SIGTERM and SIGINT: the wakeup fd carries them (see _stop_on_signals)."""
