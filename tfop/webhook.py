"""The CRD's conversion webhook: HTTPS POST /convert answers a ConversionReview with tfop/api/conversion.py.

It runs inside `tfop run` (--webhook-addr; every replica serves it, leader or not, so conversion keeps working
through a rollout) or alone as `tfop webhook`. The certificate is read from --webhook-cert-dir (tls.crt and
tls.key, the layout of a kubernetes.io/tls Secret that cert-manager keeps) and read again when the files change,
so a rotated certificate is used without a restart. The webhook needs no API access at all.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import structlog

from tfop.api.constants import API_VERSION
from tfop.api.conversion import ConversionError, convert
from tfop.controller.plan.controller_config import DEFAULT_GPU_RESOURCE
from tfop.controller.plan.job.legacy_gpu import rewrite_legacy_gpu
from tfop.tls import CertificateFiles, HTTPSServing

log = structlog.get_logger("tfop.webhook")
REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
MAX_BODY = 16 * 1024 * 1024  # a list of large TFJobs; the apiserver's own request limit is 3 MiB per object


def review_response(review: Any, gpu_resource: str = DEFAULT_GPU_RESOURCE) -> dict[str, Any]:
    """The ConversionReview answering `review`: every object converted, or a Failure naming the fields. An older
    version's object stored as v1 asks for `gpu_resource` where it asked for the legacy GPU resource; a v1 object
    read in an older version is left as it is."""
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        return _answer("", failure="the body is not a ConversionReview with a request")
    uid = str(request.get("uid", ""))
    desired = request.get("desiredAPIVersion")
    converted: list[dict[str, Any]] = []
    for obj in request.get("objects") or []:
        try:
            result = convert(obj, str(desired))
        except ConversionError as error:
            return _answer(uid, failure=str(error))
        problems = [str(problem) for problem in result.problems]
        if desired == API_VERSION and obj.get("apiVersion") != API_VERSION:
            rewrite = rewrite_legacy_gpu(result.obj, gpu_resource)
            result.obj = rewrite.job
            problems += map(str, rewrite.problems)
        if problems:
            name = (obj.get("metadata") or {}).get("name", "")
            fields = "; ".join(problems)
            return _answer(uid, failure=f"{obj.get('apiVersion')} TFJob {name!r} cannot be stored as "
                                        f"kubeflow.org/v1: {fields}")
        converted.append(result.obj)
    return _answer(uid, converted=converted)


def _answer(uid: str, *, converted: list[dict[str, Any]] | None = None, failure: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid}
    if failure is None:
        response.update(result={"status": "Success"}, convertedObjects=converted or [])
    else:
        response.update(result={"status": "Failure", "message": failure}, convertedObjects=[])
    return {"apiVersion": REVIEW_API_VERSION, "kind": "ConversionReview", "response": response}


class ConversionWebhook:
    def __init__(self, address: str, cert_dir: str | Path, gpu_resource: str = DEFAULT_GPU_RESOURCE) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path.split("?", 1)[0] != "/convert":
                    self._send(404, {"message": "not found"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 < length <= MAX_BODY:
                    self._send(413, {"message": "body missing or too large"})
                    return
                try:
                    review = json.loads(self.rfile.read(length))
                except ValueError:
                    self._send(400, {"message": "the body is not JSON"})
                    return
                answer = review_response(review, gpu_resource)
                result = answer["response"]["result"]
                if result["status"] != "Success":
                    log.info("conversion refused", message=result["message"])
                self._send(200, answer)

            def do_GET(self) -> None:
                self._send(200 if self.path == "/healthz" else 404, {"status": "ok"})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body, separators=(",", ":")).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._serving = HTTPSServing(address, Handler, CertificateFiles(cert_dir, "webhook").context, "webhook")

    @property
    def address(self) -> str:
        return self._serving.address

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()
