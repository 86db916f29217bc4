"""A job's replicas as the planner sees them: the replica backends (Pods, Jobs), the children sorted into replica
slots with each slot's state, the restart ledger, and replicaStatuses."""
