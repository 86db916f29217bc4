"""The restartPolicy a replica's pods get from the replica's own (its Pod, its Job's template, its Workload pod
set's template)."""

from __future__ import annotations

from tfop.api.constants import RESTART_POLICY_EXIT_CODE, RESTART_POLICY_NEVER


def pod_restart_policy(replica_policy: str) -> str:
    """ExitCode is the operator's policy, not the kubelet's: the pod must not restart in place, so the operator
    sees the exit code and decides."""
    return RESTART_POLICY_NEVER if replica_policy == RESTART_POLICY_EXIT_CODE else replica_policy
