"""Create many objects concurrently in growing batches (1, 2, 4, ...), stopping at the first failure.

When creates fail for a reason that will not go away (a quota, an admission webhook, a bad template), this
makes one request fail instead of hundreds; when they succeed, it reaches full concurrency after a few rounds.
The same idea as client-go's slow-start batch in the Job and ReplicaSet controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from tfop.kube.errors import AlreadyExists, ApiError

Object = dict[str, Any]


@dataclass
class BatchResult:
    created: list[str] = field(default_factory=list)  # names now present on the server (AlreadyExists included)
    failed: str | None = None  # the first name whose create failed
    error: ApiError | None = None
    skipped: list[str] = field(default_factory=list)  # not attempted after the failure


def create_in_batches(create: Callable[[Object], Object], bodies: Sequence[Object], executor: Executor,
                      initial_batch: int = 1) -> BatchResult:
    result = BatchResult()
    position, batch = 0, initial_batch
    while position < len(bodies):
        chunk = bodies[position:position + batch]
        outcomes = list(executor.map(lambda body: _attempt(create, body), chunk))
        for body, error in zip(chunk, outcomes):
            name = body["metadata"]["name"]
            if error is None:
                result.created.append(name)
            elif result.error is None:
                result.failed, result.error = name, error
        position += len(chunk)
        if result.error is not None:
            result.skipped = [body["metadata"]["name"] for body in bodies[position:]]
            break
        batch *= 2
    return result


def _attempt(create: Callable[[Object], Object], body: Object) -> ApiError | None:
    try:
        create(body)
    except AlreadyExists:
        return None  # names are deterministic: it is ours, created by an earlier attempt
    except ApiError as error:
        return error
    return None
