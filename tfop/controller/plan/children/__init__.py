"""The bodies of the children a job owns, built as the applier sends them: pods and services (desired.py) with
TF_CONFIG (tf_config.py), a replica's batch Job, the PodGroup, the NetworkPolicy; and how children are named."""
