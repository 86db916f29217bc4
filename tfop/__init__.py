"""tfop: a Kubernetes operator for distributed TensorFlow training (TFJob, kubeflow.org/v1)."""

__version__ = "0.1.0"
