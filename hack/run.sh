#!/usr/bin/env bash
# `make run`: install the CRD and run the operator in the foreground, against $KUBECONFIG if it is set, else
# against the local cluster (built and started if needed, with REAL_NODES real nodes, 1 by default), where tfop also
# serves the CRD's conversion webhook on loopback (hack/localcluster/addons/webhook.py points the CRD there). Extra
# arguments go to `tfop run`, except these two:
#   --install-crd      install or update the TFJob CRD in a $KUBECONFIG cluster without asking
#   --no-install-crd   never touch the CRD (tfop then says so and exits 1 if the cluster lacks it)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER_DIR="${CLUSTER_DIR:-${REPO}/.local/cluster}"

crd_choice=ask
tfop_args=()
for arg in "$@"; do
  case "${arg}" in
    --install-crd) crd_choice=yes ;;
    --no-install-crd) crd_choice=no ;;
    *) tfop_args+=("${arg}") ;;
  esac
done

BIN_DIR="$(bash "${REPO}/hack/build-controlplane.sh")"
ours=no
local_args=()
if [[ -z "${KUBECONFIG:-}" ]]; then
  python3 "${REPO}/hack/local_cluster.py" up --real-nodes "${REAL_NODES:-1}" --dir "${CLUSTER_DIR}" >/dev/null
  KUBECONFIG="${CLUSTER_DIR}/kubeconfig"
  ours=yes
  # The local cluster's controller config: the default PS server runs the TensorFlow image the real nodes hold,
  # since they pull nothing. ARGS="--config FILE" comes later and wins.
  local_args=(--config "$(python3 "${REPO}/hack/local_cluster.py" operator-config --dir "${CLUSTER_DIR}")")
fi
export KUBECONFIG
KUBECTL="${BIN_DIR}/kubectl"
SERVER="$("${KUBECTL}" config view --minify -o jsonpath='{.clusters[0].cluster.server}')"

# A cluster we did not start may be someone's production: changing its CRDs is asked first.
if [[ "${ours}" == no && "${crd_choice}" == ask ]]; then
  context="$("${KUBECTL}" config current-context 2>/dev/null || echo '?')"
  if [[ -t 0 ]]; then
    read -r -p "Install or update the TFJob CRD (tfjobs.kubeflow.org) on ${SERVER} (context ${context})? [y/N] " reply
    [[ "${reply}" =~ ^[Yy] ]] && crd_choice=yes || crd_choice=no
  else
    echo "Not installing the TFJob CRD on ${SERVER} (context ${context}) without asking, and stdin is no terminal:" \
      "pass ARGS=--install-crd to install it, or ARGS=--no-install-crd to say it is there." >&2
    crd_choice=no
  fi
fi

webhook_args=()
if [[ "${ours}" == yes ]]; then
  # Our cluster: tfop serves the conversion webhook on loopback and the CRD points there (certificates and port
  # kept in the cluster directory), so v1alpha1 and v1beta1 manifests apply as written.
  read -r webhook_addr webhook_dir < <("${REPO}/.venv/bin/python" "${REPO}/hack/local_cluster.py" webhook crd \
    --dir "${CLUSTER_DIR}") || true
  [[ -n "${webhook_dir:-}" ]] || { echo "could not install the TFJob CRD with its conversion webhook" >&2; exit 1; }
  webhook_args=(--webhook-addr "${webhook_addr}" --webhook-cert-dir "${webhook_dir}")
  echo "TFJob CRD installed on ${SERVER}; tfop serves its conversion webhook on https://${webhook_addr}/convert."
elif [[ "${crd_choice}" == yes ]]; then
  # Someone else's cluster: the CRD as checked in, its conversion naming deploy/webhook/'s Service.
  "${KUBECTL}" apply -f "${REPO}/crd/kubeflow.org_tfjobs.yaml" >/dev/null
  # (`kubectl wait` fails outright while the new CRD has no conditions yet, so poll.)
  for _ in $(seq 1 300); do
    established="$("${KUBECTL}" get crd tfjobs.kubeflow.org \
      -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null || true)"
    [[ "${established}" == "True" ]] && break
    sleep 0.2
  done
  [[ "${established}" == "True" ]] || { echo "the TFJob CRD did not become Established" >&2; exit 1; }
  echo "TFJob CRD installed on ${SERVER}."
else
  echo "Leaving the CRDs of ${SERVER} as they are."
fi
# The TFJob page (tfop ui, docs/ui.md) beside the operator, on loopback, as long as make run runs. It needs a token
# to log in with; the local cluster's admin has a certificate instead, so a ServiceAccount that may read
# everything (this cluster only) gives one.
UI_ADDR="${UI_ADDR:-127.0.0.1:8090}"
"${REPO}/.venv/bin/tfop" ui --kubeconfig "${KUBECONFIG}" --addr "${UI_ADDR}" --log-format console \
  >"${CLUSTER_DIR}/ui.log" 2>&1 &
ui_pid=$!
trap 'kill "${ui_pid}" 2>/dev/null || true' EXIT
ui_token_hint="a token of a user who may read TFJobs"
if [[ "${ours}" == yes ]]; then
  "${KUBECTL}" -n default create serviceaccount tfop-ui-viewer >/dev/null 2>&1 || true
  "${KUBECTL}" create clusterrolebinding tfop-ui-viewer --clusterrole=view \
    --serviceaccount=default:tfop-ui-viewer >/dev/null 2>&1 || true
  "${KUBECTL}" create clusterrole tfop-ui-viewer-tfjobs --verb=get,list,watch --resource=tfjobs.kubeflow.org \
    >/dev/null 2>&1 || true
  "${KUBECTL}" create clusterrolebinding tfop-ui-viewer-tfjobs --clusterrole=tfop-ui-viewer-tfjobs \
    --serviceaccount=default:tfop-ui-viewer >/dev/null 2>&1 || true
  ui_token_hint="\$(kubectl -n default create token tfop-ui-viewer)"
fi
cat <<MSG
TFJob page: http://${UI_ADDR}/ (log in with ${ui_token_hint}; its log: ${CLUSTER_DIR}/ui.log)
In another terminal:
  export KUBECONFIG=${KUBECONFIG}
  alias kubectl=${KUBECTL}
  kubectl apply -f ${REPO}/examples/distributed.yaml   # kwok nodes: pods only pretend to run
  kubectl apply -f ${REPO}/examples/mwms.yaml          # the real nodes (unless REAL_NODES=0): train for real
  kubectl apply -f ${REPO}/test/data/seeds/002-example-job.yaml   # kubeflow.org/v1alpha1 (local cluster only)
  kubectl get tfjobs -A
Starting tfop (Ctrl-C stops it).
MSG
# A developer machine: endpoints on loopback only (flags given to make run ARGS=... come later and win).
# Not exec: the trap stops the page when the operator ends.
"${REPO}/.venv/bin/tfop" run --kubeconfig "${KUBECONFIG}" --metrics-addr 127.0.0.1:8080 \
  --health-addr 127.0.0.1:8081 ${local_args[@]+"${local_args[@]}"} ${webhook_args[@]+"${webhook_args[@]}"} \
  ${tfop_args[@]+"${tfop_args[@]}"}
