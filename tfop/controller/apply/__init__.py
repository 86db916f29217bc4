"""Applying a plan: PlanApplier (applier.py) and the writers it composes, one per thing a plan writes."""
