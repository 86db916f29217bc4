"""The links a job names in its annotations (`tfop.kubeflow.org/link-<name>: <URL>`), e.g. its TensorBoard and a
Grafana dashboard. Anyone who may edit the job writes them, so only an absolute http or https URL becomes a link
(a `javascript:` or `data:` one would run in the page's origin); anything else is shown as text."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from tfop.api.constants import ANNOTATION_LINK_PREFIX
from tfop.objects import Object

# How the names people are likely to use are written; any other name is shown as written.
KNOWN_TITLES = {"tensorboard": "TensorBoard", "grafana": "Grafana", "mlflow": "MLflow", "wandb": "Weights & Biases"}
MAX_URL = 2048


@dataclass(frozen=True)
class JobLink:
    title: str
    text: str  # the annotation's value, as written
    url: str | None  # the value when it is a link to follow, else None (shown as text)


def link_url(value: str) -> str | None:
    """`value` when it is an absolute http(s) URL with a host and nothing a browser would read otherwise."""
    if len(value) > MAX_URL or any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in value):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return value if parts.scheme.lower() in ("http", "https") and parts.hostname else None


def job_links(job: Object) -> list[JobLink]:
    """By name. An empty name or value is no link."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    links = []
    for key in sorted(annotations):
        name = key[len(ANNOTATION_LINK_PREFIX):] if key.startswith(ANNOTATION_LINK_PREFIX) else ""
        value = annotations[key].strip() if isinstance(annotations[key], str) else ""
        if name and value:
            links.append(JobLink(KNOWN_TITLES.get(name.lower(), name), value, link_url(value)))
    return links
