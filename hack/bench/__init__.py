"""`make bench`: tfop against the apiserver's own limit and against the Kubeflow Go operator, on a fresh local
cluster. Run as `PYTHONPATH=hack .venv/bin/python -m bench --help`."""
