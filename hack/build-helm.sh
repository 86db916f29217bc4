#!/usr/bin/env bash
# Builds helm (HELM_VERSION in versions.env) from the Go module proxy and caches it per version, next to the
# control plane in the same cache root. Prints the path of the helm binary.
#
# helm.sh/helm/v3's go.mod has no replace directives, so a plain `go install pkg@version` builds it. The ldflags
# are the ones helm's own Makefile sets: its version, and the Kubernetes version `helm template` and `helm lint`
# assume without a cluster, taken from the client-go that this helm release requires.
set -euo pipefail

LOG_NAME=build-helm
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -n "${HELM_VERSION:-}" ]] || die "HELM_VERSION is not set in ${HACK_DIR}/versions.env"

BIN_DIR="${CACHE_ROOT}/helm/${HELM_VERSION}/bin"
MODULE=helm.sh/helm/v3

if [[ -x "${BIN_DIR}/helm" ]]; then
  echo "${BIN_DIR}/helm"
  exit 0
fi
building "helm ${HELM_VERSION} (${BIN_DIR})"

go_build_env

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

modfile="$(cd "${WORK}" && go mod download -json "${MODULE}@${HELM_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
[[ -f "${modfile}" ]] || die "could not download ${MODULE}@${HELM_VERSION} from the Go module proxy"
if grep -qE '^\s*replace\b|=>' "${modfile}"; then
  die "${MODULE}@${HELM_VERSION}'s go.mod has replace directives, which \`go install pkg@version\` refuses"
fi
client_go="$(sed -n -E 's/^\s*k8s\.io\/client-go v0\.([0-9]+)\..*/\1/p' "${modfile}")"
[[ -n "${client_go}" ]] || die "cannot find the k8s.io/client-go version in ${modfile}"

log "building helm ${HELM_VERSION} (a few minutes on 2 cores; assumes Kubernetes 1.${client_go} when offline)"
start=${SECONDS}
ldflags="-s -w -X ${MODULE}/internal/version.version=${HELM_VERSION} -X ${MODULE}/internal/version.gitTreeState=clean"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X ${MODULE}/${pkg}.k8sVersionMajor=1 -X ${MODULE}/${pkg}.k8sVersionMinor=${client_go}"
done
mkdir -p "${WORK}/bin"
GOBIN="${WORK}/bin" go install -ldflags "${ldflags}" "${MODULE}/cmd/helm@${HELM_VERSION}" \
  || die "building helm ${HELM_VERSION} failed (see the Go output above)"
mkdir -p "${BIN_DIR}"
mv "${WORK}/bin/helm" "${BIN_DIR}/helm.partial"
mv "${BIN_DIR}/helm.partial" "${BIN_DIR}/helm"  # atomic: a half-written binary is never taken as built
log "built in $((SECONDS - start))s: ${BIN_DIR}/helm"
echo "${BIN_DIR}/helm"
