"""A job's replicas as the planner sees them: the replica backends (Pods, Jobs), the children sorted into replica
slots with each slot's state, the restart ledger, replicaStatuses, how containers ended (exit classes, their
events), and which replicas a clean-up removes."""
