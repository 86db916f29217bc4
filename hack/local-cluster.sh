#!/usr/bin/env bash
# Start, stop or inspect the local control plane: hack/local-cluster.sh up|down|status|destroy [--dir DIR]
exec python3 "$(dirname "${BASH_SOURCE[0]}")/local_cluster.py" "$@"
