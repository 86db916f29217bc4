"""`make run`'s conversion webhook: on the local cluster tfop serves it itself, on loopback (`tfop run
--webhook-addr`), so the TFJob CRD goes in with its conversion pointed at https://127.0.0.1:PORT/convert and a CA
of our own in its caBundle, in place of the in-cluster Service only deploy/webhook/ (with cert-manager) provides.

    crd [--dir DIR] [--crd FILE]   make the certificates (once; again when missing or about to expire), install
                                   the CRD pointed at them, wait until it is Established, and print the address
                                   and certificate directory for `tfop run --webhook-addr ADDR --webhook-cert-dir`

The certificates and the port are kept in DIR/webhook/, so the CRD stays right across `make run`s.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from pathlib import Path
from typing import Any

from tfop import yamlio

from ..cluster import DEFAULT_DIR, LocalCluster
from ..pki import DAYS, PKIError, openssl
from ..supervisor import ClusterError, log
from .process import kept_port, run_cli

CRD_NAME = "tfjobs.kubeflow.org"
CRD_FILE = Path(__file__).resolve().parents[3] / "crd" / "kubeflow.org_tfjobs.yaml"
RENEW_SECONDS = 7 * 24 * 3600  # remade a week before it expires, so a running `make run` never outlives it


def webhook_dir(cluster: LocalCluster) -> Path:
    return cluster.directory / "webhook"


def certificates(directory: Path) -> Path:
    """tls.crt/tls.key for 127.0.0.1, signed by a CA of their own; returns the CA's certificate. Kept while valid:
    remaking them changes the caBundle the CRD must carry."""
    directory.mkdir(parents=True, exist_ok=True)
    files = [directory / name for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")]
    if all(f.exists() for f in files) and _valid_for(directory / "tls.crt", RENEW_SECONDS):
        return directory / "ca.crt"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", DAYS,
            "-subj", "/CN=tfop-local-webhook-ca", cwd=directory)
    (directory / "tls.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
            "-subj", "/CN=tfop-webhook", cwd=directory)
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tls.crt", "-days", DAYS, "-extfile", "tls.ext", cwd=directory)
    return directory / "ca.crt"


def _valid_for(cert: Path, seconds: int) -> bool:
    try:
        openssl("x509", "-checkend", str(seconds), "-noout", "-in", cert.name, cwd=cert.parent)
    except PKIError:
        return False
    return True


def address(directory: Path) -> str:
    """127.0.0.1 and a port picked once per cluster: the CRD's URL names it, so it must not change between runs,
    and two clusters' `make run`s must not share it."""
    return f"127.0.0.1:{kept_port(directory)}"


def pointed_crd(crd: dict[str, Any], url: str, ca_pem: bytes) -> dict[str, Any]:
    """`crd` with its conversion webhook at `url` (trusting `ca_pem`) instead of the Service it names."""
    conversion = crd["spec"]["conversion"]
    webhook = conversion.setdefault("webhook", {})
    webhook["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_pem).decode()}
    conversion["strategy"] = "Webhook"
    return crd


def install_crd(cluster: LocalCluster, crd_file: Path = CRD_FILE, timeout: float = 60.0) -> tuple[str, Path]:
    """The CRD from `crd_file` installed pointed at this cluster's loopback webhook, Established; returns (the
    address tfop must serve the webhook on, the directory with its tls.crt and tls.key)."""
    directory = webhook_dir(cluster)
    ca = certificates(directory)
    addr = address(directory)
    crd = pointed_crd(yamlio.load(crd_file.read_text()), f"https://{addr}/convert", ca.read_bytes())
    # A CRD already there may name the Service: that goes first (a clientConfig holds a url or a service, never
    # both), by a patch, since an apply only removes what its own last-applied annotation had.
    if cluster.kubectl("get", "crd", CRD_NAME, "-o", "name", check=False).returncode == 0:
        client_config = {**crd["spec"]["conversion"]["webhook"]["clientConfig"], "service": None}
        patch = {"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": client_config}}}}
        cluster.kubectl("patch", "crd", CRD_NAME, "--type=merge", "-p", json.dumps(patch))
    cluster.apply("-", manager="tfop-hack-webhook", input=json.dumps(crd))
    deadline = time.monotonic() + timeout
    established = '{.status.conditions[?(@.type=="Established")].status}'
    while cluster.kubectl("get", "crd", CRD_NAME, "-o", f"jsonpath={established}", check=False).stdout != "True":
        if time.monotonic() > deadline:
            raise ClusterError(f"the TFJob CRD did not become Established in {timeout:g}s")
        time.sleep(0.2)
    return addr, directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["crd"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    parser.add_argument("--crd", type=Path, default=CRD_FILE, help=f"the CRD to install (default {CRD_FILE})")
    args = parser.parse_args(argv)

    def command() -> None:
        try:
            addr, directory = install_crd(LocalCluster(args.dir), args.crd)
        except PKIError as error:
            raise ClusterError(str(error)) from None
        log(f"TFJob CRD installed, converting through https://{addr}/convert")
        print(addr, directory)

    return run_cli(command, log)
