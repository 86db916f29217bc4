"""The one error type of the TFJob API: what is wrong, and where.

Validation, the annotations, the conversions between versions and the legacy GPU rewrite all report problems as
FieldErrors; a rejected job's condition lists them as `path: message`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str  # e.g. spec.runPolicy.backoffLimit, metadata.annotations[tfop.kubeflow.org/restart-scope]
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
