#!/usr/bin/env bash
# `make run`: install the CRD and run the operator in the foreground, against $KUBECONFIG if it is set, else
# against the local cluster (built and started if needed, with the real node unless REAL_NODE=0). Extra arguments
# go to `tfop run`.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-${REPO}/.local/cluster}"

BIN_DIR="$(bash "${REPO}/hack/build-controlplane.sh")"
if [[ -z "${KUBECONFIG:-}" ]]; then
  if [[ "${REAL_NODE:-1}" == 1 ]]; then node_flag=--real-node; else node_flag=--no-real-node; fi
  python3 "${REPO}/hack/local_cluster.py" up "${node_flag}" --dir "${CLUSTER_DIR}" >/dev/null
  KUBECONFIG="${CLUSTER_DIR}/kubeconfig"
fi
export KUBECONFIG
KUBECTL="${BIN_DIR}/kubectl"

"${KUBECTL}" apply -f "${REPO}/crd/kubeflow.org_tfjobs.yaml" >/dev/null
# (`kubectl wait` fails outright while the new CRD has no conditions yet, so poll.)
for _ in $(seq 1 300); do
  established="$("${KUBECTL}" get crd tfjobs.kubeflow.org \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null || true)"
  [[ "${established}" == "True" ]] && break
  sleep 0.2
done
[[ "${established}" == "True" ]] || { echo "the TFJob CRD did not become Established" >&2; exit 1; }
cat <<MSG
TFJob CRD installed on $("${KUBECTL}" config view --minify -o jsonpath='{.clusters[0].cluster.server}').
In another terminal:
  export KUBECONFIG=${KUBECONFIG}
  alias kubectl=${KUBECTL}
  kubectl apply -f ${REPO}/examples/distributed.yaml
  kubectl get tfjobs -A
Starting tfop (Ctrl-C stops it).
MSG
# A developer machine: endpoints on loopback only (flags given to make run ARGS=... come later and win).
exec "${REPO}/.venv/bin/tfop" run --kubeconfig "${KUBECONFIG}" --metrics-addr 127.0.0.1:8080 \
  --health-addr 127.0.0.1:8081 "$@"
