"""Files tfop ships into pods (not imported by the operator)."""
