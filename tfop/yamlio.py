"""YAML read with libyaml's parser where PyYAML has it (its wheels do): the same safe loader, about 8 times less
CPU than the pure-Python one, which matters for large documents (the TFJob CRD is 560 KB: 1.6 s pure, 0.2 s here)."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    """One document, as yaml.safe_load reads it."""
    return yaml.load(text, Loader=SafeLoader)


def load_all(text: str) -> list[Any]:
    """Every document but the empty ones (a `---` at the end, or between two), as yaml.safe_load_all reads them."""
    return [document for document in yaml.load_all(text, Loader=SafeLoader) if document is not None]
