"""The bodies of the children a job owns, built as the applier sends them: pods and services (desired.py) with
TF_CONFIG (tf_config.py), a replica's batch Job; the job's own children, one entry each (job_child.py) of the
table in job_children.py: the PodGroup, the NetworkPolicy, the HPA; and how children are named."""
