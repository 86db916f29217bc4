"""The capacity auto-scaler: elastic TFJobs resized to what the cluster has free (docs/tfjob/scaling.md, "Scaling
to the cluster's capacity"). It looks across jobs, so it is not part of the per-job planner: `cluster.py` reads
what the caches hold into plain values, `decide.py` decides (pure, tested by tables), `scaler.py` runs the look
periodically and writes each resize as the job's Worker count, which the planner's resize policy then carries out.
"""
