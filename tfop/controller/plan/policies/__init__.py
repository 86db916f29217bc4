"""The rules, one module per rule, each named for what it decides: success, backoff, deadline, suspension,
running, cleanup (and TTL), node loss, restart scope, the evaluators' wait, gang scheduling, network
isolation, troubles. planner.py composes them."""
