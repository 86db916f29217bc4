#!/usr/bin/env bash
# Builds the scheduler-plugins scheduler (kube-scheduler with the Coscheduling plugin, `cmd/scheduler`) from source
# through the Go module proxy and caches the binary per version, like hack/build-controlplane.sh. Prints the bin
# directory.
#
#   hack/build-coscheduler.sh               build (or reuse) and print the bin directory
#   hack/build-coscheduler.sh --module-dir  print the module's source directory in the Go module cache (the local
#                                           cluster installs the PodGroup CRD from its manifests/coscheduling)
#
# Its go.mod pins every k8s.io staging module with replace directives (k8s.io/kubernetes requires them at v0.0.0),
# which `go install pkg@version` refuses; so it is built from a throwaway wrapper module that requires it and carries
# the same replaces, each pinned to a published tag.
set -euo pipefail

LOG_NAME=build-coscheduler
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${SCHEDULER_PLUGINS_VERSION}"
MODULE=sigs.k8s.io/scheduler-plugins
PACKAGE="${MODULE}/cmd/scheduler"

BIN_DIR="${CACHE_ROOT}/scheduler-plugins/${VERSION}/bin"
STAMP="${BIN_DIR}/.complete"

go_build_env

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

if [[ "${1:-}" == "--module-dir" ]]; then
  dir="$(module_field "${MODULE}" "${VERSION}" Dir)"
  [[ -d "${dir}" ]] || die "could not download ${MODULE}@${VERSION} from the Go module proxy"
  echo "${dir}"
  exit 0
fi

if [[ -f "${STAMP}" ]]; then
  echo "${BIN_DIR}"
  exit 0
fi

modfile="$(module_field "${MODULE}" "${VERSION}" GoMod)"
[[ -f "${modfile}" ]] || die "could not download ${MODULE}@${VERSION} from the Go module proxy"

# The module's replaces, one per line: `X => X vN` (inside a replace block or on a `replace` line). A replace to a
# local path cannot be honoured outside the module's own tree: stop and say so.
replaces="$(sed -n -E 's/^\s*(replace\s+)?([a-z0-9./-]+)\s+=>\s+(.*)$/\2 => \3/p' "${modfile}")"
if grep -qE '=> \.\.?/' <<<"${replaces}"; then
  die "${MODULE}@${VERSION}'s go.mod replaces a module with a local path; pin it to a published tag here"
fi
{
  echo "module tfop.local/build"
  echo
  grep -E '^go [0-9]' "${modfile}"
  echo
  echo "require ${MODULE} ${VERSION}"
  echo
  sed 's/^/replace /' <<<"${replaces}"
} >"${WORK}/go.mod"
# Its go.sum vouches for the same versions, so nothing needs a checksum database lookup (which may be unreachable).
moddir="$(module_field "${MODULE}" "${VERSION}" Dir)"
[[ -f "${moddir}/go.sum" ]] || die "${MODULE}@${VERSION} has no go.sum in ${moddir}"
cp "${moddir}/go.sum" "${WORK}/go.sum"

log "building ${PACKAGE}@${VERSION} (kube-scheduler with the Coscheduling plugin: 5-15 min on 2 cores the first time)"
start=${SECONDS}
mkdir -p "${BIN_DIR}.partial"
with_progress "${PACKAGE}@${VERSION}" \
  bash -c "cd '${WORK}' && go build -ldflags '-s -w' -o '${BIN_DIR}.partial/kube-scheduler-plugins' '${PACKAGE}'" \
  || die "building ${PACKAGE}@${VERSION} failed (see the Go output above)"
rm -rf "${BIN_DIR}"
mv "${BIN_DIR}.partial" "${BIN_DIR}"
touch "${STAMP}"
log "built in $((SECONDS - start))s into ${BIN_DIR}"
echo "${BIN_DIR}"
