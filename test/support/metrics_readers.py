"""ServiceAccounts that scrape a secure /metrics in tests: their tokens (TokenRequest, as `kubectl create token`
gets one), and for those that may read it, a binding to the shipped ClusterRole tfop-metrics-reader."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from support.waiting import DEADLINE, wait_for

if TYPE_CHECKING:
    from localcluster import LocalCluster

READER_ROLE = "tfop-metrics-reader"


def may_get_metrics(cluster: LocalCluster, user: str) -> bool:
    answer = cluster.kubectl("auth", "can-i", "get", "/metrics", "--as", user, check=False).stdout.strip()
    return answer == "yes"


@contextmanager
def scraper_tokens(cluster: LocalCluster, namespace: str, *, readers: Sequence[str], others: Sequence[str] = (),
                   role: str = READER_ROLE) -> Iterator[dict[str, str]]:
    """Tokens by account name; `readers` are bound to the ClusterRole `role` (which must exist) until the block
    ends."""
    bindings = []
    try:
        for account in (*readers, *others):
            cluster.kubectl("create", "serviceaccount", account, "-n", namespace)
        for account in readers:
            bindings.append(f"{namespace}-{account}-metrics")
            cluster.kubectl("create", "clusterrolebinding", bindings[-1], f"--clusterrole={role}",
                            f"--serviceaccount={namespace}:{account}")
            # The authorizer sees a binding through its own cache; a 403 the operator cached meanwhile would last.
            wait_for(lambda account=account: may_get_metrics(cluster, f"system:serviceaccount:{namespace}:{account}"),
                     DEADLINE, f"the apiserver's authorizer to see {account}'s binding")
        yield {account: cluster.kubectl("create", "token", account, "-n", namespace, "--duration=10m").stdout.strip()
               for account in (*readers, *others)}
    finally:
        for binding in bindings:
            cluster.kubectl("delete", "clusterrolebinding", binding, check=False)
