#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok)
# from source through the Go module proxy and caches the binaries per version. Prints the bin directory.
#
# k8s.io/kubernetes and etcd's server replace their sibling modules with local paths, which `go install
# pkg@version` refuses; so each is built from a throwaway wrapper module that requires it and points every such
# replace at the sibling's published tag instead.
set -euo pipefail

LOG_NAME=build-controlplane
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIN_DIR="${CACHE_ROOT}/controlplane/k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}/bin"
STAMP="${BIN_DIR}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${BIN_DIR}"
  exit 0
fi
building "Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION} and kwok ${KWOK_VERSION} (${BIN_DIR})"

go_build_env

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
mkdir -p "${BIN_DIR}.partial"
OUT="${BIN_DIR}.partial"

build_kubernetes() {
  local v="${KUBERNETES_VERSION}"
  log "building Kubernetes ${v}: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (the longest step: 10-30 min on 2 cores)"
  wrapper_module "${WORK}/k8s" k8s.io/kubernetes "${v}" "v0.${v#v1.}"
  local ldflags
  ldflags="$(kubernetes_ldflags "${v}")"
  (cd "${WORK}/k8s" && go build -ldflags "${ldflags}" -o "${OUT}/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl) \
    || die "building Kubernetes ${v} failed (see the Go output above)"
}

build_etcd() {
  log "building etcd ${ETCD_VERSION}"
  wrapper_module "${WORK}/etcd" go.etcd.io/etcd/server/v3 "${ETCD_VERSION}" "${ETCD_VERSION}"
  (cd "${WORK}/etcd" && go build -ldflags "-s -w" -o "${OUT}/etcd" go.etcd.io/etcd/server/v3) \
    || die "building etcd ${ETCD_VERSION} failed (see the Go output above)"
}

build_kwok() {
  log "building kwok ${KWOK_VERSION}"
  GOBIN="${OUT}" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" \
    || die "building kwok ${KWOK_VERSION} failed (see the Go output above)"
}

start=${SECONDS}
for component in etcd kwok kubernetes; do
  for c in "${component}"; do
    case "${c}" in
      etcd) [[ -x "${OUT}/etcd" ]] || build_etcd ;;
      kwok) [[ -x "${OUT}/kwok" ]] || build_kwok ;;
      kubernetes) [[ -x "${OUT}/kubectl" && -x "${OUT}/kube-apiserver" ]] || build_kubernetes ;;
      *) die "unknown component ${c}" ;;
    esac
  done
done
rm -rf "${BIN_DIR}"
mv "${OUT}" "${BIN_DIR}"
touch "${STAMP}"
log "built in $((SECONDS - start))s into ${BIN_DIR}"
echo "${BIN_DIR}"
