"""The informer's Store: keys, indexes kept right through every kind of change, replace diffs, thread safety."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from tfop.kube.store import (
    Change,
    IndexFunc,
    Store,
    by_controller_uid,
    by_label,
    by_namespace,
    object_key,
)

INDEXERS: dict[str, IndexFunc] = {
    "namespace": by_namespace,
    "owner": by_controller_uid,
    "job": by_label("job-name"),
}


def pod(name: str, namespace: str = "ns", rv: str = "1", *, job: str | None = None,
        owner: str | None = None, extra_owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": {}}
    if job is not None:
        meta["labels"]["job-name"] = job
    refs = []
    if extra_owner is not None:
        refs.append({"uid": extra_owner, "controller": False})
    if owner is not None:
        refs.append({"uid": owner, "controller": True})
    if refs:
        meta["ownerReferences"] = refs
    return {"kind": "Pod", "metadata": meta}


def names(objects: list[dict[str, Any]]) -> set[str]:
    return {obj["metadata"]["name"] for obj in objects}


def assert_indexes_match_contents(store: Store, indexers: dict[str, IndexFunc]) -> None:
    """Recompute every index from the stored objects and compare with what the store answers."""
    for index_name, func in indexers.items():
        expected: dict[str, set[str]] = {}
        for obj in store.list():
            for value in func(obj):
                expected.setdefault(value, set()).add(object_key(obj))
        assert set(store.index_values(index_name)) == set(expected), index_name
        for value, keys in expected.items():
            assert set(store.index_keys(index_name, value)) == keys, (index_name, value)


def test_object_key_is_namespace_slash_name_or_name_for_cluster_scoped() -> None:
    assert object_key(pod("a", "ns1")) == "ns1/a"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"


def test_generic_index_functions() -> None:
    obj = pod("a", "ns1", job="train", owner="uid-1", extra_owner="uid-0")
    assert by_namespace(obj) == ["ns1"]
    assert by_controller_uid(obj) == ["uid-1"]  # only the controlling owner, not any owner
    assert by_label("job-name")(obj) == ["train"]
    assert by_label("missing")(obj) == []
    assert by_controller_uid(pod("b")) == []
    assert by_namespace({"metadata": {"name": "node"}}) == []


def test_upsert_get_and_index_lookup() -> None:
    store = Store(INDEXERS)
    assert store.upsert(pod("a", job="j1", owner="u1")) is None
    store.upsert(pod("b", job="j1", owner="u2"))
    store.upsert(pod("c", "other", job="j2"))
    assert len(store) == 3
    assert store.get("ns/a") is not None and "ns/a" in store
    assert store.get_by_name("other", "c") is store.get("other/c")
    assert names(store.by_index("job", "j1")) == {"a", "b"}
    assert names(store.by_index("owner", "u2")) == {"b"}
    assert names(store.by_index("namespace", "other")) == {"c"}
    assert store.by_index("job", "nope") == []
    assert_indexes_match_contents(store, INDEXERS)


def test_update_moves_the_object_between_index_values_and_drops_empty_values() -> None:
    store = Store(INDEXERS)
    store.upsert(pod("a", job="j1"))
    old = store.upsert(pod("a", rv="2", job="j2"))
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert store.by_index("job", "j1") == []
    assert "j1" not in store.index_values("job")  # no empty sets left behind
    assert names(store.by_index("job", "j2")) == {"a"}
    store.upsert(pod("a", rv="3"))  # label removed entirely
    assert store.index_values("job") == []
    assert_indexes_match_contents(store, INDEXERS)


def test_delete_removes_from_every_index() -> None:
    store = Store(INDEXERS)
    store.upsert(pod("a", job="j1", owner="u1"))
    store.upsert(pod("b", job="j1", owner="u1"))
    removed = store.delete("ns/a")
    assert removed is not None and removed["metadata"]["name"] == "a"
    assert store.delete("ns/a") is None
    assert names(store.by_index("owner", "u1")) == {"b"}
    store.delete("ns/b")
    assert store.index_values("owner") == [] and store.index_values("namespace") == []
    assert len(store) == 0


def test_replace_reports_adds_updates_and_deletes_with_last_known_state() -> None:
    store = Store(INDEXERS)
    kept = pod("kept", rv="5", job="j")
    store.upsert(kept)
    store.upsert(pod("changed", rv="1", job="j"))
    store.upsert(pod("gone", rv="7", job="j"))

    changes = store.replace([pod("kept", rv="5", job="j"), pod("changed", rv="2", job="k"), pod("new", rv="9")])

    by_type = {(c.type, c.obj["metadata"]["name"]) for c in changes}
    assert by_type == {("update", "changed"), ("add", "new"), ("delete", "gone")}
    assert changes[-1].type == "delete"  # deletes come after adds and updates
    update = next(c for c in changes if c.type == "update")
    assert update.old is not None and update.old["metadata"]["resourceVersion"] == "1"
    delete = next(c for c in changes if c.type == "delete")
    assert delete.obj["metadata"]["resourceVersion"] == "7"  # the last state the store knew
    assert store.get("ns/kept") is kept  # unchanged objects keep their cached dict
    assert sorted(store.keys()) == ["ns/changed", "ns/kept", "ns/new"]
    assert names(store.by_index("job", "j")) == {"kept"}
    assert names(store.by_index("job", "k")) == {"changed"}
    assert_indexes_match_contents(store, INDEXERS)


def test_replace_reports_a_name_made_again_as_the_old_ones_delete_then_the_new_ones_add() -> None:
    """Deleted and created again under the same name while the watch was down: the relist finds the key held by
    another uid. A handler following uids must learn that the old one is gone, not see it turn into the new."""
    store = Store(INDEXERS)
    old = pod("worker-0", rv="3", owner="job-uid")
    old["metadata"]["uid"] = "uid-1"
    store.upsert(old)
    again = pod("worker-0", rv="8", owner="job-uid")
    again["metadata"]["uid"] = "uid-2"

    changes = store.replace([again])

    assert [(c.type, c.obj["metadata"]["uid"], c.old) for c in changes] == [("delete", "uid-1", None),
                                                                          ("add", "uid-2", None)]
    assert store.get("ns/worker-0") is again
    assert names(store.by_index("owner", "job-uid")) == {"worker-0"}
    assert_indexes_match_contents(store, INDEXERS)


def test_replace_with_nothing_empties_the_store_and_indexes() -> None:
    store = Store(INDEXERS)
    for i in range(5):
        store.upsert(pod(f"p{i}", job="j", owner="u"))
    changes = store.replace([])
    assert [c.type for c in changes] == ["delete"] * 5
    assert len(store) == 0
    for index_name in INDEXERS:
        assert store.index_values(index_name) == []


def test_indexers_added_later_cover_existing_objects() -> None:
    store = Store()
    store.upsert(pod("a", job="j1"))
    store.add_indexers({"job": by_label("job-name")})
    assert names(store.by_index("job", "j1")) == {"a"}
    with pytest.raises(ValueError, match="index 'job' already exists"):
        store.add_indexers({"job": by_namespace})


def test_unknown_index_is_an_error_not_an_empty_answer() -> None:
    with pytest.raises(KeyError):
        Store().by_index("missing", "x")


def test_change_defaults() -> None:
    assert Change("add", pod("a")).old is None


def test_concurrent_writers_and_readers_keep_indexes_consistent() -> None:
    store = Store(INDEXERS)
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            for step in range(3000):
                name = f"p{rng.randrange(60)}"
                op = rng.random()
                if op < 0.6:
                    store.upsert(pod(name, rv=str(step), job=f"j{rng.randrange(4)}", owner=f"u{rng.randrange(3)}"))
                elif op < 0.95:
                    store.delete(f"ns/{name}")
                else:
                    store.replace([pod(f"p{i}", rv="r", job="j0") for i in range(rng.randrange(10))])
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def reader() -> None:
        try:
            start.wait()
            for _ in range(3000):
                value = f"j{random.randrange(4)}"
                for obj in store.by_index("job", value):
                    # An object found through an index really carries that value at that moment.
                    assert obj["metadata"]["labels"].get("job-name") == value
                store.list()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors[0]
    assert_indexes_match_contents(store, INDEXERS)
