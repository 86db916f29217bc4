#!/usr/bin/env bash
# `make run`: install the CRD and run the operator in the foreground, against $KUBECONFIG if it is set, else
# against the local cluster (built and started if needed). Extra arguments go to `tfop run`.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-${REPO}/.local/cluster}"

BIN_DIR="$(bash "${REPO}/hack/build-controlplane.sh")"
if [[ -z "${KUBECONFIG:-}" ]]; then
  python3 "${REPO}/hack/local_cluster.py" up --dir "${CLUSTER_DIR}" >/dev/null
  KUBECONFIG="${CLUSTER_DIR}/kubeconfig"
fi
export KUBECONFIG
KUBECTL="${BIN_DIR}/kubectl"

"${KUBECTL}" apply -f "${REPO}/crd/kubeflow.org_tfjobs.yaml" >/dev/null
"${KUBECTL}" wait --for=condition=Established --timeout=60s crd/tfjobs.kubeflow.org >/dev/null
cat <<MSG
TFJob CRD installed on $("${KUBECTL}" config view --minify -o jsonpath='{.clusters[0].cluster.server}').
In another terminal:
  export KUBECONFIG=${KUBECONFIG}
  alias kubectl=${KUBECTL}
  kubectl apply -f ${REPO}/examples/distributed.yaml
  kubectl get tfjobs -A
Starting tfop (Ctrl-C stops it).
MSG
exec "${REPO}/.venv/bin/tfop" run --kubeconfig "${KUBECONFIG}" "$@"
