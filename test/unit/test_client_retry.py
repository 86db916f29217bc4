"""The client's pure decisions: which failures are retried and after how long, Retry-After, the QPS limit,
typed errors from Status bodies, and the paths requests address."""

from __future__ import annotations

import email.utils
import json

import pytest

from tfop.kube.clock import FakeClock
from tfop.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    TooLarge,
    TransportError,
    error_from_status,
    error_from_watch_status,
)
from tfop.kube.resource import CUSTOM_RESOURCE_DEFINITIONS, LEASES, NAMESPACES, PODS, Resource
from tfop.kube.throttle import (
    ExponentialBackoff,
    RequestThrottle,
    RetryPolicy,
    backoff_delay,
    is_idempotent,
    jittered,
    parse_retry_after,
)

POLICY = RetryPolicy(max_retries=5, initial_delay=0.25, max_delay=8.0, max_retry_after=60.0)
JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message}).encode()


# -- idempotency -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "content_type", "expected"), [
    ("GET", JSON, True),
    ("get", JSON, True),
    ("PUT", JSON, True),
    ("DELETE", JSON, True),
    ("POST", JSON, False),
    ("PATCH", MERGE_PATCH, True),
    ("PATCH", "application/strategic-merge-patch+json", True),
    ("PATCH", "application/apply-patch+yaml", True),
    ("PATCH", JSON_PATCH, False),
])
def test_idempotency(method: str, content_type: str, expected: bool) -> None:
    assert is_idempotent(method, content_type) is expected


# -- retry decisions ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("method", "content_type", "status", "reached", "retried"), [
    ("POST", JSON, 429, True, True),  # turned away before being handled: safe for any request
    ("PATCH", JSON_PATCH, 429, True, True),
    ("GET", JSON, 503, True, True),
    ("GET", JSON, 500, True, True),
    ("DELETE", JSON, 504, True, True),
    ("PATCH", MERGE_PATCH, 502, True, True),
    ("POST", JSON, 503, True, False),  # the create may have happened
    ("PATCH", JSON_PATCH, 500, True, False),
    ("GET", JSON, 501, True, False),  # not implemented will not become implemented
    ("GET", JSON, 404, True, False),
    ("PUT", JSON, 409, True, False),
    ("GET", JSON, 410, True, False),
    ("POST", JSON, 422, True, False),
    ("POST", JSON, None, False, True),  # refused / DNS / connect timeout: never sent
    ("POST", JSON, None, True, False),  # reset or read timeout after sending: may have been handled
    ("GET", JSON, None, True, True),
    ("PATCH", JSON_PATCH, None, True, False),
    ("PATCH", JSON_PATCH, None, False, True),
])
def test_which_failures_are_retried(method: str, content_type: str, status: int | None, reached: bool,
                                    retried: bool) -> None:
    delay = POLICY.delay(0, method, content_type, status=status, reached_server=reached, retry_after=None, rnd=0.0)
    assert (delay is not None) is retried


def test_retries_stop_after_max_retries() -> None:
    def decide(attempt: int) -> float | None:
        return POLICY.delay(attempt, "GET", JSON, status=503, reached_server=True, retry_after=None, rnd=0.5)

    assert all(decide(attempt) is not None for attempt in range(5))
    assert decide(5) is None
    assert RetryPolicy(max_retries=0).delay(0, "GET", JSON, status=503, reached_server=True, retry_after=None,
                                            rnd=0.0) is None


def test_backoff_grows_exponentially_and_is_capped() -> None:
    delays = [POLICY.delay(n, "GET", JSON, status=500, reached_server=True, retry_after=None, rnd=0.0)
              for n in range(5)]
    assert delays == [0.25, 0.5, 1.0, 2.0, 4.0]
    long_policy = RetryPolicy(max_retries=20, initial_delay=0.25, max_delay=8.0)
    assert long_policy.delay(15, "GET", JSON, status=500, reached_server=True, retry_after=None, rnd=0.99) == 8.0


def test_jitter_spreads_the_delay_up_to_double() -> None:
    low = POLICY.delay(2, "GET", JSON, status=500, reached_server=True, retry_after=None, rnd=0.0)
    high = POLICY.delay(2, "GET", JSON, status=500, reached_server=True, retry_after=None, rnd=0.999)
    assert low == 1.0
    assert high is not None and 1.99 < high < 2.0


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    assert POLICY.delay(0, "POST", JSON, status=429, reached_server=True, retry_after=3.0, rnd=0.9) == 3.0
    assert POLICY.delay(4, "GET", JSON, status=503, reached_server=True, retry_after=1.0, rnd=0.9) == 1.0
    assert POLICY.delay(0, "GET", JSON, status=429, reached_server=True, retry_after=3600.0, rnd=0.0) == 60.0
    # Retry-After does not make a non-retryable failure retryable.
    assert POLICY.delay(0, "POST", JSON, status=503, reached_server=True, retry_after=1.0, rnd=0.0) is None


def test_backoff_helpers() -> None:
    assert jittered(2.0, 0.2, 0.0) == 2.0
    assert jittered(2.0, 0.2, 0.5) == pytest.approx(2.2)
    assert backoff_delay(0, 0.8, 30.0, 0.0) == 0.8
    assert backoff_delay(3, 0.8, 30.0, 0.0) == pytest.approx(6.4)
    assert backoff_delay(10, 0.8, 30.0, 0.0) == 30.0
    assert backoff_delay(4, 0.8, 30.0, 0.99) == pytest.approx(12.8 * 1.99)
    assert backoff_delay(5, 0.8, 30.0, 0.99) == 30.0  # jitter never pushes past the cap
    assert backoff_delay(10_000, 0.8, 30.0, 0.5) == 30.0  # no overflow for very long outages


def test_exponential_backoff_resets_after_success() -> None:
    backoff = ExponentialBackoff(0.8, 30.0, rng=lambda: 0.0)
    assert [backoff.next() for _ in range(7)] == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0])
    backoff.reset()
    assert backoff.next() == 0.8


def test_exponential_backoff_starts_over_once_no_delay_was_asked_for_a_while() -> None:
    clock = FakeClock(start=0.0)
    backoff = ExponentialBackoff(0.8, 30.0, rng=lambda: 0.0, reset_after=120.0, clock=clock)
    delays: list[float] = []
    # Seconds from the end of the previous delay to the next failure.
    for seconds_after_previous_delay in (0.0, 1.0, 60.0, 120.0, 120.5, 5.0):
        clock.step(seconds_after_previous_delay + (delays[-1] if delays else 0.0))
        delays.append(backoff.next())
    # 120 s exactly is not past the window; 120.5 s is.
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 0.8, 1.6])


def test_exponential_backoff_is_not_reset_by_the_length_of_its_own_delays() -> None:
    """Delays longer than the window (a 5 s window, delays from 2 s doubling) with each failure right after the
    delay ends: the loop never went `reset_after` seconds without a failure, so the delays keep growing."""
    clock = FakeClock(start=0.0)
    backoff = ExponentialBackoff(2.0, 60.0, rng=lambda: 0.0, reset_after=5.0, clock=clock)
    delays: list[float] = []
    for _ in range(5):
        delays.append(backoff.next())
        clock.step(delays[-1] + 0.5)
    assert delays == pytest.approx([2.0, 4.0, 8.0, 16.0, 32.0])


# -- Retry-After -------------------------------------------------------------------------------------------------

NOW = 1_700_000_000.0


@pytest.mark.parametrize(("header", "expected"), [
    (None, None),
    ("5", 5.0),
    (" 2 ", 2.0),
    ("0.5", 0.5),
    ("0", 0.0),
    ("-3", None),
    ("soon", None),
    ("", None),
    ("nan", None),
    (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
    (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past means now
])
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    result = parse_retry_after(header, NOW)
    if expected is None:
        assert result is None
    else:
        assert result == pytest.approx(expected)


# -- the client-side QPS limit -----------------------------------------------------------------------------------

def test_throttle_allows_the_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    throttle = RequestThrottle(10.0, 3, clock=clock)
    assert [throttle.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert throttle.reserve() == pytest.approx(0.1)
    assert throttle.reserve() == pytest.approx(0.2)  # waiters queue up behind each other
    clock.step(1.0)  # pays back the debt of 2 tokens, refills 8, but never beyond the burst
    assert [throttle.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert throttle.reserve() > 0


def test_throttle_sleeps_for_the_reserved_wait_and_can_be_disabled() -> None:
    slept: list[float] = []
    throttle = RequestThrottle(2.0, 1, clock=FakeClock(), sleep=slept.append)
    assert throttle.acquire() == 0.0
    assert throttle.acquire() == pytest.approx(0.5)
    assert slept == [pytest.approx(0.5)]
    unlimited = RequestThrottle(0, 0, sleep=slept.append)
    assert all(unlimited.acquire() == 0.0 for _ in range(1000))
    assert len(slept) == 1


# -- typed errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "reason", "cls"), [
    (404, "NotFound", NotFound),
    (409, "AlreadyExists", AlreadyExists),
    (409, "Conflict", Conflict),
    (410, "Gone", Gone),
    (410, "Expired", Gone),  # an expired continue token: list again
    (422, "Invalid", Invalid),
    (403, "Forbidden", ApiError),
    (500, "InternalError", ApiError),
    (413, "RequestEntityTooLarge", TooLarge),
])
def test_errors_are_typed_from_the_status_body(code: int, reason: str, cls: type[ApiError]) -> None:
    error = error_from_status(code, status_body(code, reason, f"the {reason} message"), "HTTP reason")
    assert type(error) is cls
    assert (error.status, error.reason, error.message) == (code, reason, f"the {reason} message")
    assert error.body is not None and error.body["code"] == code
    assert f"the {reason} message" in str(error)


@pytest.mark.parametrize(("message", "cls"), [
    ("etcdserver: request is too large", TooLarge),
    ("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2100745 vs. 2097152)",
     TooLarge),
    ("etcdserver: leader changed", ApiError),
])
def test_an_object_too_large_for_etcd_is_told_from_a_failing_server(message: str, cls: type[ApiError]) -> None:
    """Both reach the client as 500 InternalError (what kube-apiserver v1.36 answers for a pod over 1.5 MiB)."""
    assert type(error_from_status(500, status_body(500, "InternalError", message))) is cls


def test_errors_without_a_status_body_keep_the_http_reason_and_text() -> None:
    error = error_from_status(502, b"<html>bad gateway</html>", "Bad Gateway")
    assert type(error) is ApiError
    assert (error.status, error.reason, error.message, error.body) == (502, "Bad Gateway", "<html>bad gateway</html>",
                                                                      None)
    empty = error_from_status(404, b"", "Not Found")
    assert isinstance(empty, NotFound) and empty.reason == "Not Found"


def test_watch_error_events_map_410_to_gone() -> None:
    status = json.loads(status_body(410, "Expired", "too old resource version: 1 (42)"))
    error = error_from_watch_status(status)
    assert isinstance(error, Gone) and "too old" in error.message
    assert type(error_from_watch_status({"kind": "Status", "message": "odd"})) is ApiError


def test_transport_errors_are_api_errors_with_status_zero() -> None:
    error = TransportError("connection refused")
    assert isinstance(error, ApiError) and error.status == 0 and "connection refused" in str(error)


# -- paths -------------------------------------------------------------------------------------------------------

def test_paths_for_core_group_and_named_groups() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path("ns", "p-0") == "/api/v1/namespaces/ns/pods/p-0"
    assert PODS.path("ns", "p-0", "status") == "/api/v1/namespaces/ns/pods/p-0/status"
    assert LEASES.path("kube-system", "tfop") == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tfop"
    assert NAMESPACES.path(name="ns") == "/api/v1/namespaces/ns"
    assert CUSTOM_RESOURCE_DEFINITIONS.path(name="tfjobs.kubeflow.org") == (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org")
    tfjobs = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
    assert tfjobs.api_version == "kubeflow.org/v1" and PODS.api_version == "v1"
    assert tfjobs.path("ns", "mnist", "status") == "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist/status"


def test_paths_reject_scope_mistakes_and_escape_names() -> None:
    with pytest.raises(ValueError, match="is namespaced"):
        PODS.path(name="p-0")  # a namespaced object needs its namespace
    with pytest.raises(ValueError, match="is cluster-scoped"):
        NAMESPACES.path("ns", "x")  # a cluster-scoped one has none
    with pytest.raises(ValueError, match="needs an object name"):
        PODS.path("ns", subresource="status")
    with pytest.raises(ValueError, match="empty Pod name"):
        PODS.path("ns", "")
    assert PODS.path("ns", "a/b") == "/api/v1/namespaces/ns/pods/a%2Fb"
