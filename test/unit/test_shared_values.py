"""SharedValues: one object for equal JSON values, a copy never changed, and values nothing refers to forgotten."""

from __future__ import annotations

import gc
import json

from tfop.kube.shared_values import SharedValues


def decoded(value: object) -> object:
    return json.loads(json.dumps(value))


def test_equal_values_become_one_object_and_what_is_given_is_not_changed() -> None:
    shared = SharedValues()
    given = decoded({"a": [1, {"b": "c"}], "d": True})
    first, second = shared.share(given), shared.share(decoded(given))
    assert first is second
    assert first == given and first is not given
    assert first["a"][1] is shared.share(decoded({"b": "c"}))


def test_values_equal_in_python_but_not_in_json_stay_apart() -> None:
    shared = SharedValues()
    rows = [({"x": True}, "true"), ({"x": 1}, "1"), ({"x": 1.0}, "1.0"), ({"x": "1"}, '"1"')]
    made = [shared.share(value) for value, _ in rows]
    assert [json.dumps(value["x"]) for value in made] == [text for _, text in rows]


def test_dicts_with_keys_in_another_order_are_equal_values() -> None:
    shared = SharedValues()
    one = shared.share({"a": 1, "b": 2})
    other = shared.share({"b": 2, "a": 1})
    assert one == other  # shared or not, the same content


def test_values_no_one_holds_are_forgotten_when_the_table_grows() -> None:
    shared = SharedValues()
    kept = [shared.share({"kept": index}) for index in range(100)]
    for index in range(20_000):
        shared.share({"dropped": index})
    gc.collect()
    assert 100 <= len(shared) < 6_000  # swept: at most a quarter over what is held, and never under it
    assert all(shared.share({"kept": index}) is kept[index] for index in range(100))
