"""The local cluster: a control plane on loopback, kwok's fake nodes, optional real nodes, and add-ons (Kueue, the
gang schedulers). LocalCluster is the API; hack/local_cluster.py the command line."""

from .cluster import DEFAULT_DIR, LocalCluster
from .supervisor import ClusterError

__all__ = ["DEFAULT_DIR", "ClusterError", "LocalCluster"]
