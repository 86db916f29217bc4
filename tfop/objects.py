"""The one type every layer shares: a Kubernetes object as the raw JSON the apiserver sent (never the client's
generated models, which cost time and memory). It imports nothing of ours, so tfop/kube and tfop/api may use it."""

from typing import Any

Object = dict[str, Any]
