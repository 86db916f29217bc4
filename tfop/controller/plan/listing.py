"""The parts of a condition message that name many things: a list cut at a few entries, and a refused create."""

from __future__ import annotations

from tfop.controller.plan.types import CreateRefusal

MAX_LISTED = 5  # replicas or field errors named in one message; the rest are counted


def listing(entries: list[str]) -> str:
    """e.g. `a; b; c; d; e; and 3 more`."""
    shown = "; ".join(entries[:MAX_LISTED])
    return shown if len(entries) <= MAX_LISTED else f"{shown}; and {len(entries) - MAX_LISTED} more"


def describe_refusal(refusal: CreateRefusal) -> str:
    """e.g. `the apiserver refused the pod of Worker 1: Pod "x" is invalid: spec.volumes[0].name: ...`."""
    slot = refusal.slot
    whose = "the job" if slot is None else f"{slot.replica_type} {slot.index}"
    return f"the apiserver refused the {refusal.kind.lower()} of {whose}: {refusal.message.rstrip('.')}"
