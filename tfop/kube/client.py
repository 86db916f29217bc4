"""REST calls to the apiserver with raw JSON dicts: timeouts, a client-side QPS limit, retries and typed errors.

Only the kubernetes package's transport (RESTClientObject: urllib3 with the configuration's TLS and proxy) and its
kubeconfig and service account loading are used, through tfop.kube.credentials. Its generated API and model classes
are never imported: parsing into them costs far more time and memory than one `json.loads`, 37.x rebuilt them on
pydantic, and merely importing them costs more memory than the operator's caches of a thousand finished jobs.
"""

from __future__ import annotations

import copy
import json
import os
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import urllib3

from tfop import __version__
from tfop.kube import credentials
from tfop.kube.errors import (
    TLSVerificationError,
    TransportError,
    error_from_status,
    is_tls_verification_failure,
    tls_failure_text,
)
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import Resource
from tfop.kube.streams import LineStream, WatchStream
from tfop.kube.throttle import RequestThrottle, RetryPolicy, parse_retry_after

Objects = list[dict[str, Any]]
Page = tuple[Objects, str]  # one page of a list: its items and the resourceVersion of the list's snapshot

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
# urllib3 keeps at most this many idle connections per host; below the worker count, threads would open and drop
# connections (and TLS handshakes) on every request.
MIN_CONNECTION_POOL = 32
# The read timeout of a watch is its server-side timeout plus this: a healthy watch always ends first, a dead
# connection is noticed soon after.
WATCH_READ_GRACE = 30.0
# Failures raised before the request was sent: the server surely did not see it.
_NOT_SENT = (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)


class KubeClient:
    """A thread-safe client for any resource, speaking plain dicts.

    Defaults qps=50, burst=100: client-go's 5/10 would make a 100-replica job wait 20 s for its creates, while the
    server defends itself with priority and fairness anyway. The limit is a guard against our own bugs (a hot
    reconcile loop cannot exceed 50 requests/s) more than a courtesy.
    """

    def __init__(self, configuration: Any, *, qps: float = 50.0, burst: int = 100,
                 connect_timeout: float = 5.0, read_timeout: float = 30.0, max_retries: int = 5,
                 user_agent: str = f"tfop/{__version__}", metrics: KubeMetrics | None = None) -> None:
        config = copy.deepcopy(configuration)  # the caller's object stays as it was
        config.connection_pool_maxsize = max(MIN_CONNECTION_POOL, config.connection_pool_maxsize or 0)
        config.retries = False  # retries are decided here, not by urllib3
        if config.socket_options is None:
            config.keep_alive = True  # TCP keepalive: a watch behind a dead peer fails instead of hanging
        self._config = config
        self._rest = credentials.RESTClientObject(config)
        self._host: str = config.host.rstrip("/")
        self.user_agent = user_agent
        self.timeout = (connect_timeout, read_timeout)
        self.retry_policy = RetryPolicy(max_retries=max_retries)
        self._throttle = RequestThrottle(qps, burst)
        self._metrics = metrics or KubeMetrics.create()

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None, *, server: str | None = None,
                        **kw: Any) -> KubeClient:
        """A client from a kubeconfig file (None: $KUBECONFIG or ~/.kube/config); `server` overrides its URL
        with the same credentials (like kubectl --server)."""
        config = credentials.from_kubeconfig(path, context)
        if server:
            config.host = server
        return cls(config, **kw)

    @classmethod
    def in_cluster(cls, **kw: Any) -> KubeClient:
        """A client with the pod's service account (its token file is re-read when it rotates)."""
        return cls(credentials.in_cluster(), **kw)

    @classmethod
    def auto(cls, kubeconfig: str | None = None, **kw: Any) -> KubeClient:
        """An explicit kubeconfig, else the in-cluster service account, else $KUBECONFIG or ~/.kube/config."""
        if kubeconfig:
            return cls.from_kubeconfig(kubeconfig, **kw)
        if os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(credentials.SERVICE_TOKEN_FILE):
            return cls.in_cluster(**kw)
        return cls.from_kubeconfig(None, **kw)

    @property
    def host(self) -> str:
        """The apiserver's URL."""
        return self._host

    def close(self) -> None:
        self._rest.close()

    # -- transport ---------------------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
                content_type: str = "application/json", timeout: tuple[float, float] | None = None,
                max_retries: int | None = None) -> Any:
        """One API call; returns the parsed JSON answer (None for an empty body) or raises a typed ApiError.

        `max_retries` overrides the client's policy for this call (0: one attempt), for callers that run
        against their own deadline such as leader election.
        """
        response = self._send(method, path, query, body, content_type, timeout, max_retries, stream=False)
        data = response.data
        return json.loads(data) if data else None

    def request_text(self, path: str, *, query: Sequence[tuple[str, str]] = (),
                     timeout: tuple[float, float] | None = None, max_retries: int | None = None) -> str:
        """A GET whose answer is text, not JSON (a pod's log); undecodable bytes are replaced."""
        response = self._send("GET", path, query, None, "application/json", timeout, max_retries, stream=False)
        return bytes(response.data or b"").decode("utf-8", errors="replace")

    def stream_lines(self, path: str, *, query: Sequence[tuple[str, str]] = (), timeout: tuple[float, float],
                     max_line: int) -> LineStream:
        """A GET whose answer goes on as long as the server sends (a followed log), read line by line; one
        attempt, no retries: the caller decides whether to open it again."""
        return LineStream(self._send("GET", path, query, None, "application/json", timeout, 0, stream=True),
                          max_line)

    def forward(self, method: str, path: str, *, query: str, body: bytes | None, headers: Mapping[str, str],
                timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        """One request passed through the apiserver to what it proxies (a Service's port): the caller's headers
        with this client's credentials; the answer read whole and returned whatever its status, never retried
        (the caller's own client retries what it wants to)."""
        self._throttle.acquire()
        started = time.monotonic()
        sent = {**headers, "User-Agent": self.user_agent}
        token = credentials.bearer_token(self._config)
        if token:
            sent["authorization"] = token
        try:
            response: urllib3.BaseHTTPResponse = self._rest.pool_manager.request(
                method.upper(), self._host + path + (f"?{query}" if query else ""), body=body, headers=sent,
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]), redirect=False, retries=False)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self._observe(method, "<error>", started)
            raise TransportError(f"{method} {path}: {exc}") from exc
        self._observe(method, str(response.status), started)
        return response

    def _send(self, method: str, path: str, query: Sequence[tuple[str, str]], body: Any, content_type: str,
              timeout: tuple[float, float] | None, max_retries: int | None, *,
              stream: bool) -> urllib3.BaseHTTPResponse:
        """Send with throttling and retries; returns the response, its body already read unless `stream`."""
        method = method.upper()
        url = self._host + path + ("?" + urlencode(list(query)) if query else "")
        policy = self.retry_policy if max_retries is None else replace(self.retry_policy, max_retries=max_retries)
        attempt = 0
        while True:
            self._throttle.acquire()
            started = time.monotonic()
            status: int | None = None
            try:
                response: urllib3.BaseHTTPResponse = self._rest.request(
                    method, url, headers=self._headers(content_type), body=body,
                    _request_timeout=timeout or self.timeout).response
                status = response.status
                if not (stream and 200 <= status < 300):
                    try:
                        response.data  # noqa: B018 - reads the whole body now, inside the timeout handling
                    finally:
                        response.release_conn()
            except (urllib3.exceptions.HTTPError, credentials.ApiException, OSError) as exc:
                self._observe(method, "<error>" if status is None else str(status), started)
                if is_tls_verification_failure(exc):
                    raise TLSVerificationError(f"{method} {path}: {tls_failure_text(exc)}") from exc
                delay = policy.delay(attempt, method, content_type, status=None,
                                     reached_server=not isinstance(exc, _NOT_SENT), retry_after=None,
                                     rnd=random.random())
                if delay is None:
                    detail = (str(getattr(exc, "reason", "")).strip() if isinstance(exc, credentials.ApiException)
                              else str(exc))
                    raise TransportError(f"{method} {path}: {detail}") from exc
            else:
                self._observe(method, str(status), started)
                if 200 <= status < 300:
                    return response
                retry_after = parse_retry_after(response.headers.get("Retry-After"), time.time())
                delay = policy.delay(attempt, method, content_type, status=status, reached_server=True,
                                     retry_after=retry_after, rnd=random.random())
                if delay is None:
                    raise error_from_status(status, response.data, response.reason or "")
            time.sleep(delay)
            attempt += 1

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type, "User-Agent": self.user_agent}
        token = credentials.bearer_token(self._config)  # refreshed first when it rotates
        if token:
            headers["authorization"] = token
        return headers

    def _observe(self, method: str, code: str, started: float) -> None:
        self._metrics.requests.labels(code, method).inc()
        self._metrics.request_duration.labels(method).observe(time.monotonic() - started)

    # -- verbs -------------------------------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", resource.path(namespace, name))
        return result

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, limit: int = 500) -> tuple[list[dict[str, Any]], str]:
        """All objects, fetched in pages of `limit`; returns (items, the list's resourceVersion).

        Items get the kind and apiVersion that list answers leave out. Pages of one list come from one snapshot;
        a continue token that expired mid-way raises Gone (list again).
        """
        items: list[dict[str, Any]] = []
        resource_version = ""
        # The last page's resourceVersion is the list's.
        for page, resource_version in self.list_pages(resource, namespace, label_selector=label_selector,  # noqa: B007
                                                      field_selector=field_selector, limit=limit):
            items.extend(page)
        return items, resource_version

    def list_pages(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int = 500) -> Iterator[Page]:
        """Like `list`, one page at a time: (items, resourceVersion of the snapshot), so a caller can shrink
        each page (an informer's transform) before the next one arrives, and the peak memory stays one page."""
        base = _selector_query(label_selector, field_selector)
        token = ""
        while True:
            query = base + [("limit", str(limit))] + ([("continue", token)] if token else [])
            page = self.request("GET", resource.path(namespace), query=query)
            items: Objects = page.get("items") or []
            for item in items:
                item.setdefault("kind", resource.kind)
                item.setdefault("apiVersion", resource.api_version)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            yield items, str(meta.get("resourceVersion") or "")
            if not token:
                return

    def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Create `body`; the namespace defaults to the body's own metadata.namespace."""
        if resource.namespaced and not namespace:
            namespace = (body.get("metadata") or {}).get("namespace")
        result: dict[str, Any] = self.request("POST", resource.path(namespace), body=body)
        return result

    def replace(self, resource: Resource, name: str, body: dict[str, Any], namespace: str | None = None, *,
                subresource: str | None = None) -> dict[str, Any]:
        """PUT the whole object (or a subresource such as status); its metadata.resourceVersion makes it
        conditional (Conflict if stale)."""
        result: dict[str, Any] = self.request("PUT", resource.path(namespace, name, subresource), body=body)
        return result

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *, uid: str | None = None,
               resource_version: str | None = None, propagation_policy: str | None = None,
               grace_period_seconds: int | None = None) -> dict[str, Any]:
        """Delete, only if the object still has `uid` / `resource_version` (Conflict otherwise).

        Returns the server's answer: the object (when finalizers or graceful deletion keep it around, also as it
        was removed) or a Status; `removed_by_delete` tells which.
        """
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        result: dict[str, Any] = self.request("DELETE", resource.path(namespace, name), body=options)
        return result

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str | None = None, field_manager: str | None = None,
              force: bool = False) -> dict[str, Any]:
        """Patch with a merge, JSON, strategic-merge or server-side apply patch (apply needs a field manager)."""
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r}; one of {sorted(PATCH_CONTENT_TYPES)}") from None
        if patch_type == "apply" and not field_manager:
            raise ValueError("a server-side apply patch needs a field_manager")
        query = [("fieldManager", field_manager)] if field_manager else []
        if force:
            query.append(("force", "true"))
        result: dict[str, Any] = self.request("PATCH", resource.path(namespace, name, subresource), query=query,
                                              body=patch, content_type=content_type)
        return result

    def patch_status(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
                     patch_type: str = "merge") -> dict[str, Any]:
        return self.patch(resource, name, patch, namespace, patch_type=patch_type, subresource="status")

    def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int, label_selector: str | None = None, field_selector: str | None = None,
              allow_bookmarks: bool = True) -> WatchStream:
        """Open a watch from `resource_version`; iterate the returned stream for raw events, close it to stop.

        No retries here: the caller (a reflector) owns the loop and its backoff. The read timeout is the server's
        timeout plus a grace, so silence longer than a whole watch means a dead connection.
        """
        query = [*_selector_query(label_selector, field_selector),
                 ("watch", "true"), ("resourceVersion", resource_version), ("timeoutSeconds", str(timeout_seconds))]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        response = self._send("GET", resource.path(namespace), query, None, "application/json",
                              (self.timeout[0], timeout_seconds + WATCH_READ_GRACE), 0, stream=True)
        return WatchStream(response)


def _selector_query(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
    query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def removed_by_delete(answer: dict[str, Any]) -> bool:
    """Whether a DELETE's answer says the object is gone from the apiserver, its name free, rather than marked for
    deletion: a finalizer left, or a grace period to wait out (a pod deleted gracefully, whose kubelet confirms),
    keeps it. A pod deleted with a grace period of 0 and no finalizer is removed at once and answered as it was."""
    if answer.get("kind") == "Status":  # the answer of kinds that do not return the object
        return answer.get("status") == "Success"
    metadata = answer.get("metadata")
    return isinstance(metadata, dict) and not metadata.get("finalizers") and not metadata.get(
        "deletionGracePeriodSeconds")
