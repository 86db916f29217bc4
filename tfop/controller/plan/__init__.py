"""The pure planner: (PlanContext: a job, its children by kind, now, config) -> Plan.

Every module here is pure (test/unit/test_layers.py checks the directory): no client, no clock, no I/O, nothing of
ours outside tfop.api and this package. One file per policy; planner.py composes them.
"""
