"""Create many objects concurrently in growing batches (1, 2, 4, ...), stopping at the first failure.

When creates fail for a reason that will not go away (a quota, an admission webhook, a bad template), this
makes one request fail instead of hundreds; when they succeed, it reaches full concurrency after a few rounds.
The same idea as client-go's slow-start batch in the Job and ReplicaSet controllers.

With `group_of`, a failure stops only its own group: the items of other groups keep filling the growing
batches, so one group's refusal neither holds up the others nor costs them extra round trips.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TypeVar

from tfop.kube.errors import AlreadyExists, ApiError
from tfop.objects import Object

T = TypeVar("T")


def object_name(body: Object) -> str:
    return str(body["metadata"]["name"])


@dataclass
class BatchResult:
    created: list[str] = field(default_factory=list)  # names now present on the server (AlreadyExists included)
    failures: list[tuple[str, ApiError]] = field(default_factory=list)  # the first failed name of each group
    skipped: list[str] = field(default_factory=list)  # not attempted, their group having failed

    @property
    def failed(self) -> str | None:
        return self.failures[0][0] if self.failures else None

    @property
    def error(self) -> ApiError | None:
        return self.failures[0][1] if self.failures else None


def create_in_batches(create: Callable[[T], Object], items: Sequence[T], executor: Executor, *,
                      name_of: Callable[[T], str], group_of: Callable[[T], Hashable] = lambda item: None,
                      initial_batch: int = 1) -> BatchResult:
    """`create` each item (an object, or whatever `create` takes); results are reported by `name_of(item)`."""
    result = BatchResult()
    failed_groups: set[Hashable] = set()
    pending = list(items)
    batch = initial_batch
    while pending:
        chunk: list[T] = []
        rest: list[T] = []
        for item in pending:
            if group_of(item) in failed_groups:
                result.skipped.append(name_of(item))
            elif len(chunk) < batch:
                chunk.append(item)
            else:
                rest.append(item)
        outcomes = list(executor.map(lambda item: _attempt(create, item), chunk))
        for item, error in zip(chunk, outcomes, strict=True):
            if error is None:
                result.created.append(name_of(item))
            elif group_of(item) not in failed_groups:
                failed_groups.add(group_of(item))
                result.failures.append((name_of(item), error))
        pending = rest
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
