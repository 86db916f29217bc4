"""How the progress endpoint is served: its certificate, what pods trust (the CA in the ConfigMap tfop keeps in
their namespace, with the Keras callback beside it), and the server put together for the operator process."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

import structlog

from tfop.controller.plan.children.progress_reporting import CA_KEY, CALLBACK_KEY
from tfop.controller.plan.controller_config import ProgressSettings
from tfop.controller.ps_server_configmap import ConfigMapData
from tfop.kube.client import KubeClient
from tfop.progress.server import JobRates, Jobs, ProgressHandling, ProgressServer
from tfop.progress.tokens import TokenReviewer
from tfop.tls import CertificateFiles, ContextSource, self_signed_certificate, self_signed_hosts

log = structlog.get_logger("tfop.progress")
SELF_SIGNED_NAME = "tfop-progress"


def callback_source() -> str:
    return resources.files("tfop.progress").joinpath("keras.py").read_text()


def certificate(settings: ProgressSettings) -> tuple[ContextSource, Callable[[], str]]:
    """(the server's TLS context, the CA certificate pods verify it with as PEM). From certDir, read again when the
    files change (its ca.crt, else its tls.crt for a self-signed one); else self-signed now for the url's host.
    Raises OSError when neither can be had."""
    if settings.cert_dir:
        files = CertificateFiles(settings.cert_dir, "progress")
        ca = Path(settings.cert_dir) / CA_KEY

        def ca_pem() -> str:  # read at each use: a rotated CA reaches the namespaces' ConfigMaps
            return (ca if ca.exists() else files.cert).read_text()

        return files.context, ca_pem
    host = urlsplit(settings.url).hostname or ""
    context, fingerprint, pem = self_signed_certificate([host, *self_signed_hosts()], SELF_SIGNED_NAME)
    log.info("made a self-signed certificate for the progress endpoint", host=host, sha256=fingerprint)
    return lambda: context, lambda: pem


def configmap_data(ca: Callable[[], str]) -> ConfigMapData:
    callback = callback_source()
    return lambda: {CA_KEY: ca(), CALLBACK_KEY: callback}


def progress_server(settings: ProgressSettings, jobs: Jobs, client: KubeClient,
                    contexts: ContextSource) -> ProgressServer:
    """Bound now (an address in use raises OSError); serves once started."""
    handling = ProgressHandling(jobs, TokenReviewer(client), JobRates(settings.reports_per_second, settings.burst))
    return ProgressServer(settings, handling, contexts)
