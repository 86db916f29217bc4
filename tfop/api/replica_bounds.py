"""How many replicas a job may have: as many as the largest TF_CONFIG one of its pods gets can list.

A dense job's every pod lists every replica, so its bound is a count (MAX_REPLICAS: at 140 bytes a replica at worst,
5,000 of them take TF_CONFIG_BUDGET). With enableDynamicWorker a worker lists only the PS and itself and a PS only
itself, so 10,000 replicas (MAX_DYNAMIC_REPLICAS) store no more than 5,000 dense ones; but the chief and the
evaluator still list the whole cluster, and a worker every PS. So a dynamic job over the dense count is held to
the budget by the bytes of its largest cluster, counted from its names: a job of short names fits, one of 63-character
names and namespace does not, and either way no pod is made that etcd cannot store.
"""

from __future__ import annotations

from tfop.api.constants import (
    CHIEF_REPLICA_TYPES,
    MAX_DYNAMIC_REPLICAS,
    MAX_REPLICAS,
    REPLICA_EVALUATOR,
    REPLICA_PS,
    REPLICA_TYPES,
    REPLICA_WORKER,
)
from tfop.api.runtime_id import RUNTIME_ID_LENGTH, child_name

# ":" and a port of at most 5 digits; two quotes and a comma around each address.
_PORT_AND_QUOTES = len(":65535") + 3


def replica_limit(dynamic_workers: bool) -> int:
    return MAX_DYNAMIC_REPLICAS if dynamic_workers else MAX_REPLICAS


def largest_cluster_bytes(job_name: str, namespace: str, service_domain: str, counts: dict[str, int], *,
                          dynamic_workers: bool) -> int:
    """The bytes of the addresses the largest TF_CONFIG of the job lists (each quoted, with its comma), at most 4
    more a replica than exact (the port counted as 5 digits). `counts`: replicas by canonical replica type."""
    domain = service_domain.strip(".")
    suffix = len(f".{namespace}") + (len(domain) + 1 if domain else 0) + _PORT_AND_QUOTES

    def addresses(replica_type: str, first: int, end: int) -> int:
        """The bytes of the addresses of replicas first..end-1 of a type."""
        prefix = len(child_name(job_name, replica_type, "a" * RUNTIME_ID_LENGTH, 0)) - 1  # without the index
        return (end - first) * (prefix + suffix) + _digits(end) - _digits(first)

    everyone = sum(addresses(replica_type, 0, counts.get(replica_type, 0)) for replica_type in REPLICA_TYPES)
    if not dynamic_workers or any(counts.get(t, 0) for t in (*CHIEF_REPLICA_TYPES, REPLICA_EVALUATOR)):
        return everyone
    workers, ps = counts.get(REPLICA_WORKER, 0), counts.get(REPLICA_PS, 0)
    if workers:  # a worker: every PS and itself, the last one's name the longest
        return addresses(REPLICA_PS, 0, ps) + addresses(REPLICA_WORKER, workers - 1, workers)
    return addresses(REPLICA_PS, ps - 1, ps) if ps else 0


def _digits(end: int) -> int:
    """How many digits the numbers 0..end-1 are written with."""
    total, low, width = 0, 0, 1
    while low < end:
        high = min(end, 10 ** width)
        total += (high - low) * width
        low, width = high, width + 1
    return total
