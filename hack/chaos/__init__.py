"""The chaos soak (`make chaos`): a seeded schedule of faults, alone and overlapping, against a local cluster
running two tfop replicas with leader election and a mix of TFJobs whose outcomes are known in advance; invariants
checked over what was observed; a report per run. docs/operating/chaos.md says how to read and replay one."""
