"""How /metrics is served: on which address, whether securely, with which certificate, and who may read it.

Secure is what an operator made with kubebuilder serves: HTTPS, readable only by callers whose bearer token the
apiserver authenticates (TokenReview) and allows `get` on the non-resource URL /metrics (SubjectAccessReview);
anyone else gets 401 (no token, or one the apiserver rejects) or 403 (a user without the grant). Where tfop runs
decides the default: in a pod (the kubelet sets KUBERNETES_SERVICE_HOST in every one) secure on every address,
:8443; elsewhere (`make run`) plain HTTP on loopback, 127.0.0.1:8080. The shipped manifests pass --metrics-secure
all the same, so they never rest on that guess. The health probes keep a plain HTTP port of their own: the kubelet
probes without a token.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from tfop.health import Environ, Guard, Refusal
from tfop.kube.access_review import AccessReviewer, Outcome, ReviewError, Verdict, bearer_token, verb_of
from tfop.kube.client import KubeClient
from tfop.startup import EXIT_USAGE, ListenAddress, StartupError, parse_listen_address
from tfop.tls import CertificateError, CertificateFiles, ContextSource, self_signed_context, self_signed_hosts

log = structlog.get_logger("tfop.metrics")

SECURE_DEFAULT_ADDR = ":8443"
PLAIN_DEFAULT_ADDR = "127.0.0.1:8080"
SELF_SIGNED_NAME = "tfop-metrics"

UNAUTHORIZED = Refusal("401 Unauthorized", b"Unauthorized: send a bearer token the apiserver accepts\n",
                       (("WWW-Authenticate", "Bearer"),))
UNAVAILABLE = Refusal("503 Service Unavailable", b"Service Unavailable: the apiserver cannot review the token now\n",
                      (("Retry-After", "5"),))


@dataclass(frozen=True)
class MetricsServing:
    address: ListenAddress
    secure: bool
    cert_dir: str | None  # secure without one: a self-signed certificate made at start

    @property
    def exposed_in_plain(self) -> bool:
        """Plain HTTP beyond loopback: whoever reaches the port reads the metrics."""
        return not self.secure and not is_loopback(self.address.host)


def in_a_pod(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("KUBERNETES_SERVICE_HOST"))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # "" (every address) or another name
        return False


def metrics_serving(addr: str | None, secure: bool | None, cert_dir: str | None, *, health: ListenAddress,
                    in_pod: bool) -> MetricsServing:
    """The flags --metrics-addr, --metrics-secure/--no-metrics-secure and --metrics-cert-dir, resolved; raises
    StartupError (exit 2) for a combination that cannot work. A certificate given means secure."""
    if secure is False and cert_dir:
        raise StartupError(EXIT_USAGE, "invalid flags", "--metrics-cert-dir is for HTTPS, but --no-metrics-secure "
                           "was given", "drop one of the two")
    if secure is None:
        secure = in_pod or bool(cert_dir)
    address = parse_listen_address(addr or (SECURE_DEFAULT_ADDR if secure else PLAIN_DEFAULT_ADDR), "--metrics-addr")
    if secure and address == health and address.port != 0:
        raise StartupError(EXIT_USAGE, "invalid flags", f"--metrics-addr and --health-addr are both {address}, but "
                           "secure /metrics cannot share a port with the plain HTTP probes",
                           "give --health-addr a port of its own (the kubelet probes it without a token)")
    return MetricsServing(address, secure, cert_dir or None)


def access_guard(review: Callable[[str, str, str], Verdict]) -> Guard:
    """Lets a request through when `review(token, verb, path)` (AccessReviewer.review: the apiserver's word) says
    its token's user may use its verb on its path."""

    def guard(environ: Environ) -> Refusal | None:
        path = str(environ.get("PATH_INFO", ""))
        verb = verb_of(str(environ.get("REQUEST_METHOD", "GET")))
        peer = str(environ.get("REMOTE_ADDR", ""))
        token = bearer_token(environ.get("HTTP_AUTHORIZATION"))
        if token is None:
            log.debug("metrics request refused", status=401, reason="no bearer token", peer=peer)
            return UNAUTHORIZED
        try:
            verdict = review(token, verb, path)
        except ReviewError as error:
            log.warning("cannot review a metrics request", error=str(error), peer=peer)
            return UNAVAILABLE
        if verdict.outcome is Outcome.ALLOWED:
            return None
        if verdict.outcome is Outcome.UNAUTHENTICATED:
            log.debug("metrics request refused", status=401, reason=verdict.reason, peer=peer)
            return UNAUTHORIZED
        log.debug("metrics request refused", status=403, user=verdict.user, verb=verb, path=path,
                  reason=verdict.reason, peer=peer)
        return Refusal("403 Forbidden", f"Forbidden: {verdict.user} may not {verb} {path}\n".encode())

    return guard


def serving_certificate(serving: MetricsServing) -> ContextSource:
    """The mounted certificate (read again when it changes), else a self-signed one made now."""
    if serving.cert_dir:
        try:
            return CertificateFiles(serving.cert_dir, "metrics").context
        except OSError as error:
            raise StartupError(EXIT_USAGE, "cannot serve /metrics securely", f"{error} (--metrics-cert-dir "
                               f"{serving.cert_dir})", "give --metrics-cert-dir a directory with tls.crt and tls.key",
                               ) from None
    try:
        context, fingerprint = self_signed_context(self_signed_hosts(), SELF_SIGNED_NAME)
    except CertificateError as error:
        raise StartupError(EXIT_USAGE, "cannot serve /metrics securely", str(error),
                           "install openssl, or mount a certificate and pass --metrics-cert-dir") from None
    log.info("made a self-signed certificate for /metrics", sha256=fingerprint)
    return lambda: context


def secure_endpoint(serving: MetricsServing, client: KubeClient) -> tuple[Guard, ContextSource]:
    """The guard and the certificate of a secure /metrics; the guard asks the apiserver through `client`."""
    return access_guard(AccessReviewer(client).review), serving_certificate(serving)
