"""Create many objects concurrently in growing batches (1, 2, 4, ...), stopping at the first failure.

When creates fail for a reason that will not go away (a quota, an admission webhook, a bad template), this
makes one request fail instead of hundreds; when they succeed, it reaches full concurrency after a few rounds.
The same idea as client-go's slow-start batch in the Job and ReplicaSet controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tfop.kube.errors import AlreadyExists, ApiError

Object = dict[str, Any]
T = TypeVar("T")


def object_name(body: Object) -> str:
    return str(body["metadata"]["name"])


@dataclass
class BatchResult:
    created: list[str] = field(default_factory=list)  # names now present on the server (AlreadyExists included)
    failed: str | None = None  # the first name whose create failed
    error: ApiError | None = None
    skipped: list[str] = field(default_factory=list)  # not attempted after the failure


def create_in_batches(create: Callable[[T], Object], items: Sequence[T], executor: Executor, *,
                      name_of: Callable[[T], str], initial_batch: int = 1) -> BatchResult:
    """`create` each item (an object, or whatever `create` takes); results are reported by `name_of(item)`."""
    result = BatchResult()
    position, batch = 0, initial_batch
    while position < len(items):
        chunk = items[position:position + batch]
        outcomes = list(executor.map(lambda item: _attempt(create, item), chunk))
        for item, error in zip(chunk, outcomes, strict=True):
            if error is None:
                result.created.append(name_of(item))
            elif result.error is None:
                result.failed, result.error = name_of(item), error
        position += len(chunk)
        if result.error is not None:
            result.skipped = [name_of(item) for item in items[position:]]
            break
        batch *= 2
    return result


def _attempt(create: Callable[[T], Object], item: T) -> ApiError | None:
    try:
        create(item)
    except AlreadyExists:
        return None  # names are deterministic: it is ours, created by an earlier attempt
    except ApiError as error:
        return error
    return None
