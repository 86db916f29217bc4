"""The tests `make test` leaves to `make test-all`, each with what it costs and why it is not on every change.

`make test` is the gate every change passes: at most 12 minutes warm on 2 cores
(docs/development/index.md#time-budget). The suite is CPU-bound there, so the budget is met by doing less work,
not by more parallelism: the scenarios below each cost minutes of the machine (real TensorFlow training for
minutes, the node lifecycle controller's grace several times over, thousands of replicas), and what they prove is
also covered, in the gate, by a cheaper test of the same code on kwok nodes (named in the reason). `make test-all`
runs them too, before a release and for a change to the code they name, and CI (.ci/run) runs `make test-all` on
every landing whose machine has every build cached (`make builds-cached`), as it has right after a session: 33
minutes warm on 2 cores, within CI's 90. On a cold machine CI runs `make test` alone, as the builds (45 minutes of
2 busy cores) and the whole suite would not both fit.

Keys are pytest node ids or their prefixes: a module's path takes all its tests. Each cost is the module's seconds
in the last CI run of `make test-all` (its lanes' "modules, seconds" lines, 2 cores; a module's first test carries its
lane's cluster start-up); a module not among its lane's six costliest is below the sixth.
"""

from __future__ import annotations

LONG: dict[str, str] = {
    "test/e2e/test_node_loss_on_real_nodes.py":
        "about 14 min (820 s): nodes powered off and cut off under real TensorFlow, each waiting out the node "
        "lifecycle grace; the gate's test/integration/test_node_loss.py drives the same policy on kwok nodes",
    "test/e2e/test_disruption_on_real_nodes.py":
        "about 19 min (1,144 s, its first run, beside a cold make test at load 15-30): a drain, a preemption and "
        "a spot reclaim under real TensorFlow, each restarting the job from its backup; the gate's "
        "test/integration/test_disruptions.py drains, taints and budgets on kwok nodes",
    "test/e2e/test_kueue_preemption_on_real_nodes.py":
        "about 2-4 min besides the cluster's start (216-361 s in three runs alone, 95-141 s of each the session's "
        "cluster and real nodes starting): a Keras job preempted through Kueue and resumed, TensorFlow imported "
        "twice on the real nodes; the "
        "gate's test/integration/test_kueue_own.py preempts and readmits on kwok nodes",
    "test/e2e/test_scaling_on_real_nodes.py":
        "about 6 min (369 s) of TensorFlow resized while it trains; the gate's test/integration/test_resize.py and "
        "test_gang_resize.py resize on kwok nodes",
    "test/e2e/test_evaluator_on_real_nodes.py":
        "about 2 min (120 s): the evaluator's final evaluation in TensorFlow; the gate's "
        "test/integration/test_evaluator.py covers the grace",
    "test/e2e/test_capacity_on_real_nodes.py":
        "under 72 s (not among the e2e lane's six costliest) of an elastic TensorFlow job shrinking and growing "
        "back; the gate's test/integration/test_capacity.py does the same on kwok nodes",
    "test/e2e/test_resource_metrics_on_real_nodes.py":
        "about 80 s of busy pods read by metrics-server; the gate's test/integration/test_autoscaler.py drives "
        "the HPA through the scale subresource",
    "test/e2e/test_examples_on_real_node.py::test_example_trains_to_succeeded_with_every_replica_in_one_cluster":
        "under 101 s, the whole module's with the gate's PS example: the MWMS, ParameterServerStrategy and Keras "
        "examples trained to the end; the gate keeps one real TensorFlow job on the real nodes (the PS example with "
        "tfop's default PS server)",
    "test/e2e/test_python_sdk.py":
        "under 72 s (not among the e2e lane's six costliest): the SDK's train_func trained by TensorFlow on the "
        "real nodes; the gate's "
        "test/integration/test_python_sdk.py creates, waits for, fails and deletes jobs through the same SDK, and "
        "the gate's PS example trains real TensorFlow with the TF_CONFIG tfop writes",
    "test/e2e/test_progress_on_real_nodes.py":
        "about 4 min (with the real nodes started): TensorFlow and the Kubeflow SDK imported in real pods to post "
        "their progress; the gate's "
        "test/integration/test_progress.py posts with the same SDK and pod-bound tokens on kwok pods",
    "test/e2e/test_tensorboard_on_real_nodes.py":
        "a Keras fit and a TensorBoard each importing TensorFlow in real pods (to be measured in CI's test-all); the "
        "gate's test/integration/test_tensorboard.py serves a stand-in TensorBoard through the same page and "
        "apiserver proxy, and makes the Deployment this one runs",
    "test/e2e/test_real_node.py::test_a_second_cluster_runs_its_own_node_beside_and_leaves_nothing_behind":
        "under 72 s, the whole module's with the gate's real-node tests: a second cluster with its own node, a "
        "developer tool's promise rather than the operator's",
    "test/e2e/test_native_gang_on_real_nodes.py":
        "about 3 min (its three scenarios 57-61 s each in their first run): Kubernetes' own gang scheduling on "
        "the real nodes, each gang watched unbound for 40 s (past tfop's 30-s grace) before "
        "room appears; the gate's test/integration/test_native_gang.py runs the same scheduler on a kwok node",
    "test/integration/test_big_job.py":
        "about 6 min (365 s): a 2,000-replica job under the Deployment's memory limit",
    "test/integration/test_multikueue.py":
        "about 74 s: a second cluster with Kueue as MultiKueue's worker; the gate's test_kueue.py admits jobs",
    "test/integration/test_multikueue_own.py":
        "about 100 s (89 and 100 s, its first two passing runs): the same two clusters with tfop's own Kueue "
        "integration (MultiKueue's generic adapter); the gate's test_kueue_own.py admits jobs and "
        "test/unit/test_multikueue_own.py plans both sides",
}


def is_long(nodeid: str) -> bool:
    """Whether a test (by its pytest node id) is one `make test` leaves to `make test-all`."""
    return any(nodeid == key or nodeid.startswith((f"{key}::", f"{key}[")) for key in LONG)
