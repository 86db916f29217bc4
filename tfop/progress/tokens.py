"""The tokens of progress reports, reviewed by the apiserver (TokenReview with the job's audience).

A review's answer is kept for `ttl` seconds by the token's SHA-256 and audience, so a pod reporting every few
seconds costs the apiserver one review per token and ttl, not one per report; a pod deleted meanwhile is refused
all the same, since every report is authorized against the pod cache. Reviews of tokens not seen before are paced
for the whole endpoint (`reviews_per_second`), so a flood of made-up tokens costs the apiserver at most that.
"""

from __future__ import annotations

import hashlib
import threading

from tfop.kube.access_review import TOKEN_REVIEWS, ask
from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.expiring_cache import ExpiringCache
from tfop.kube.ratelimit import TokenBucket
from tfop.progress.report import Caller, Refusal, caller_of

BUSY = Refusal(429, "TooManyRequests", "too many new tokens to review; report again later")


class TokenReviewer:
    def __init__(self, client: KubeClient, *, ttl: float = 300.0, max_entries: int = 4096,
                 reviews_per_second: float = 20.0, burst: int = 40, clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self._answers: ExpiringCache[tuple[bytes, str], Caller | Refusal] = ExpiringCache(ttl, max_entries, clock)
        self._reviews = TokenBucket(reviews_per_second, burst, clock)
        self._lock = threading.Lock()

    def review(self, token: str, audience: str) -> Caller | Refusal:
        """Raises ReviewError when the apiserver cannot be asked; that is never kept."""
        key = (hashlib.sha256(token.encode()).digest(), audience)
        cached = self._answers.get(key)
        if cached is not None:
            return cached
        with self._lock:
            if not self._reviews.try_take():
                return BUSY
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": token, "audiences": [audience]}}
        answer = caller_of((ask(self._client, TOKEN_REVIEWS, review) or {}).get("status"), audience)
        self._answers.put(key, answer)
        return answer
