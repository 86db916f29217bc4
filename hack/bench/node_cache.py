"""What tfop's node cache holds for N nodes, measured in this process with tracemalloc: N copies of one node as
the apiserver serves it (each decoded from JSON on its own, with its own name and uid, as a list or watch would
bring it), slimmed by the cache's transform and kept in an informer's store. Cheaper than N nodes in a cluster,
and the same objects: the transform keeps no field a kwok node lacks and a kubelet's node has (images, addresses,
capacity and the heartbeats are dropped either way)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from tfop.controller.cache_transforms import node_health_transform
from tfop.kube.store import Store


def node_cache_bytes(node: dict[str, Any], count: int) -> dict[str, float]:
    """The bytes the store of `count` nodes like `node` takes, in all and per node."""
    transform = node_health_transform(())
    served = json.dumps(node)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = Store()
        for index in range(count):
            copy = json.loads(served)
            copy["metadata"]["name"] = f"{copy['metadata']['name']}-{index}"
            copy["metadata"]["uid"] = f"{index:08d}-{copy['metadata']['uid'][9:]}"
            store.upsert(transform(copy))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(store.list()) == count
    return {"nodes": count, "mb": round(held / 2**20, 2), "bytes_per_node": round(held / count),
            "served_bytes_per_node": len(served)}
