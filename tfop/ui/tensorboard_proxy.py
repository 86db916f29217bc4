"""A job's TensorBoard served by the page under the job's own path (api/tensorboard.py), to whoever may get the
job, through the apiserver's proxy of its Service: no port of the cluster is opened, and the page reaches it
from inside or outside the cluster alike.

TensorBoard runs the job's image (or the operator's), so what it serves is code that anyone who may edit the
job's namespace chose, running in the page's own origin. Its answers therefore carry, besides TensorBoard's own
Content-Security-Policy (both are enforced), one that confines every script, style, image, connection and frame
of theirs to the job's TensorBoard path and opens no window (a sandbox without popups): a script there cannot
read the page's other views as the user. A redirect out of that path is refused (the browser would no longer
check the path after it), and so is a service worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from starlette.responses import Response

from tfop.api.runtime_id import runtime_id
from tfop.api.tensorboard import ANNOTATION_TENSORBOARD, TENSORBOARD_PORT_NAME, tensorboard_name, tensorboard_path
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.objects import Object
from tfop.ui.security import CONFINED

# Of the browser's request, what TensorBoard reads; of its answer, what the browser needs. Nothing else passes
# (not the user's cookie, which names the user to the page alone, nor the page's compression).
REQUEST_HEADERS = ("accept", "content-type", "if-none-match", "x-xsrf-protected")
ANSWER_HEADERS = ("content-type", "etag", "last-modified", "location", "content-security-policy")
TIMEOUT = (3.0, 60.0)
MAX_BODY = 1 << 20  # a POST of TensorBoard's (its multi-run scalar queries) is small


def service_name(job: Object) -> str | None:
    """The Service of a job that asks for a TensorBoard; None for one that does not."""
    metadata = job.get("metadata") or {}
    if ANNOTATION_TENSORBOARD not in (metadata.get("annotations") or {}):
        return None
    return tensorboard_name(str(metadata.get("name")), runtime_id(str(metadata.get("uid"))))


def upstream_path(namespace: str, service: str, job_name: str, rest: str) -> str:
    """The apiserver's proxy path of the Service's port for a path under the job's TensorBoard prefix."""
    return (f"/api/v1/namespaces/{quote(namespace, safe='')}/services/{quote(service, safe='')}:"
            f"{TENSORBOARD_PORT_NAME}/proxy{tensorboard_path(namespace, job_name)}/{quote(rest, safe='/')}")


def proxy_prefix(namespace: str, service: str) -> bytes:
    """What the apiserver puts before a path it rewrites in an HTML answer (an absolute link), to be taken off."""
    return f"/api/v1/namespaces/{namespace}/services/{service}:{TENSORBOARD_PORT_NAME}/proxy/".encode()


def confining_policy(origin: str, prefix: str) -> str:
    """Everything the TensorBoard's pages load or reach is under `prefix` of this origin; no popups."""
    here = f"{origin}{prefix}/"
    return (f"default-src {here}; script-src {here} 'unsafe-inline' 'unsafe-eval'; style-src {here} 'unsafe-inline'; "
            f"img-src {here} data: blob:; font-src {here} data:; connect-src {here}; frame-src {here}; "
            f"worker-src {here}; object-src 'none'; base-uri 'none'; form-action {here}; frame-ancestors 'self'; "
            "sandbox allow-scripts allow-same-origin allow-forms allow-downloads")


def stays_under(location: str, origin: str, prefix: str) -> bool:
    """Whether a redirect's target is still the job's TensorBoard (a relative one is resolved by the browser
    against a path under it, so only absolute paths and URLs can leave)."""
    parts = urlsplit(location)
    if parts.scheme or parts.netloc:
        if f"{parts.scheme}://{parts.netloc}" != origin:
            return False
    elif not location.startswith("/"):
        return ".." not in location.split("/")
    return (parts.path + "/").startswith(prefix + "/")


def forwarded(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in REQUEST_HEADERS if name in headers}


def answered(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() in ANSWER_HEADERS]


def without_proxy_links(body: bytes, content_type: str, namespace: str, service: str) -> bytes:
    """An HTML answer with the apiserver's rewriting of absolute links undone, so they stay the page's paths."""
    if not content_type.lower().startswith("text/html"):
        return body
    return body.replace(proxy_prefix(namespace, service), b"/")


class UnreachableError(Exception):
    """The TensorBoard gave no answer the page may pass on."""


@dataclass(frozen=True)
class Asked:
    namespace: str
    job: str
    service: str
    method: str
    rest: str  # the path under the job's TensorBoard prefix
    query: str
    body: bytes | None
    headers: dict[str, str]  # forwarded(...) of the browser's
    origin: str  # the page's, scheme://host


def answer(client: KubeClient, asked: Asked) -> Response:
    """The TensorBoard's answer to one request, confined (the module's docstring says how)."""
    try:
        upstream = client.forward(asked.method, upstream_path(asked.namespace, asked.service, asked.job, asked.rest),
                                  query=asked.query, body=asked.body, headers=asked.headers, timeout=TIMEOUT)
    except ApiError as error:
        raise UnreachableError(f"The TensorBoard of TFJob {asked.namespace}/{asked.job} cannot be reached: "
                          f"{error}") from None
    prefix = tensorboard_path(asked.namespace, asked.job)
    location = upstream.headers.get("location")
    if location is not None and not stays_under(location, asked.origin, prefix):
        raise UnreachableError("The TensorBoard answered with a redirect out of its own pages.")
    content = without_proxy_links(bytes(upstream.data or b""), upstream.headers.get("content-type", ""),
                                  asked.namespace, asked.service)
    response = Response(content, status_code=upstream.status)
    response.raw_headers = [*(h for h in response.raw_headers if h[0] != b"content-type"),
                            *((k.lower().encode(), v.encode("latin-1")) for k, v in answered(upstream.headers.items())),
                            (CONFINED, confining_policy(asked.origin, prefix).encode())]
    return response
