"""The list of tests `make test` leaves to `make test-all` (test/support/tiers.py) names tests that exist, so a
renamed test cannot quietly change tier, and its keys select what they say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.tiers import LONG, is_long

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key", sorted(LONG))
def test_every_long_key_names_a_module_or_test_that_exists(key: str) -> None:
    module, _, test = key.partition("::")
    assert (REPO / module).is_file(), f"{module} does not exist"
    if test:
        assert re.search(rf"^def {re.escape(test)}\(", (REPO / module).read_text(), re.MULTILINE), \
            f"{module} has no test {test}"


@pytest.mark.parametrize(("nodeid", "long"), [
    ("test/integration/test_big_job.py::test_big_job_under_the_deployments_memory_limit", True),
    (("test/e2e/test_examples_on_real_node.py::test_example_trains_to_succeeded_with_every_replica_in_one_cluster"
      "[mwms.yaml-tasks0]"), True),
    ("test/e2e/test_examples_on_real_node.py::test_ps_strategy_with_the_default_ps_server_trains_to_succeeded", False),
    ("test/integration/test_big_job.py.orig::test_x", False),
    ("test/integration/test_kueue.py::test_quota_admits_two_of_three_jobs_and_the_third_runs_when_one_succeeds",
     False),
])
def test_a_key_takes_its_module_or_test_and_nothing_that_only_starts_like_it(nodeid: str, long: bool) -> None:
    assert is_long(nodeid) is long
