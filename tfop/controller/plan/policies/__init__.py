"""The rules, one module per rule, each named for what it decides: success, backoff, deadline, suspension,
running, cleanup (and TTL), node loss, restart scope, the evaluators' wait, the job's own children (one policy
for all their kinds), gang scheduling, troubles. planner.py composes them."""
