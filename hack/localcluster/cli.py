"""The local cluster's command line (hack/local_cluster.py runs it):

    up [--real-nodes N | --real-node | --no-real-node] [--dir DIR]   start (idempotent); N real nodes (default:
                                                                     what the cluster had, none for a new one)
    down | destroy | status [--dir DIR]                              stop keeping data; stop and delete; show
    node stop|partition|start NAME [--dir DIR]                       fail a real node as a power loss would, or
                                                                     as a network partition would; bring it back
    operator-config [--dir DIR]                                      write the controller config of an operator
                                                                     run against the cluster; print its path
    kueue ... | coscheduler ... | prometheus ... | metrics-server ... the add-ons (each has its own --help)
    network-policy up|down|status [--node real-0] [--dir DIR]        enforce NetworkPolicies (kube-router's firewall)
    webhook crd [--dir DIR]                                          the TFJob CRD converting through `make run`
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from .addons.process import run_cli
from .cluster import DEFAULT_DIR, LocalCluster
from .controlplane import build_controlplane
from .node_layout import MAX_NODES, NODE_LABEL
from .operator_config import write as write_operator_config
from .supervisor import log


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("kueue", "coscheduler", "prometheus", "metrics-server", "webhook", "network-policy"):
        # Imported only when asked for: Kueue's, Prometheus', metrics-server's and the webhook's modules need PyYAML
        # (make's virtualenv).
        addon = importlib.import_module(f"localcluster.addons.{argv[0].replace('-', '_')}")
        return int(addon.main(argv[1:]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "destroy", "build", "watch", "node",
                                                "operator-config"])
    parser.add_argument("action", nargs="?", choices=["stop", "partition", "start"], help="node: what to do")
    parser.add_argument("name", nargs="?", help="node: which real node (real-0, real-1, ...)")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"state directory (default {DEFAULT_DIR})")
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument("--real-nodes", type=int, choices=range(MAX_NODES + 1), metavar=f"0..{MAX_NODES}",
                       help="up: run this many real nodes (kubelet and containerd each); kept for later `up`s")
    nodes.add_argument("--real-node", dest="real_nodes", action="store_const", const=1, help="up: one real node")
    nodes.add_argument("--no-real-node", dest="real_nodes", action="store_const", const=0,
                       help="up: no real node (and stop those that ran)")
    args = parser.parse_args(argv)
    if args.command == "build":
        print(build_controlplane())
        return 0
    if args.command == "operator-config":
        print(write_operator_config(args.dir))
        return 0
    if args.command == "node" and not (args.action and args.name):
        parser.error("node needs an action (stop, partition, start) and a node's name")
    cluster = LocalCluster(args.dir, real_nodes=args.real_nodes)

    def command() -> None:
        if args.command == "up":
            cluster.up()
            print(f"Kubernetes {cluster.version()} is up at {cluster.server}")
            for node in cluster.nodes:
                print(f"real node {node.name} at {node.layout.network.ip}")
            if cluster.real_nodes:
                print(f"pods run on the real nodes with nodeSelector {NODE_LABEL}=true and a toleration of the taint "
                      f"{NODE_LABEL}=true:NoSchedule; a directory all of them share: {cluster.shared_dir}")
            print(f"export KUBECONFIG={cluster.kubeconfig}")
            print(f"kubectl: {cluster.bin_dir}/kubectl")
        elif args.command == "down":
            cluster.down()
            log("stopped")
        elif args.command == "destroy":
            cluster.destroy()
            log(f"stopped and removed {args.dir}")
        elif args.command == "watch":
            cluster.watch()
        elif args.command == "node":
            {"stop": cluster.node_stop, "partition": cluster.node_partition, "start": cluster.node_start}[
                args.action](args.name)
        else:
            for component, state in cluster.status().items():
                print(f"{component:26} {state}")
            print(f"kubeconfig: {cluster.kubeconfig}")

    return run_cli(command, log)
