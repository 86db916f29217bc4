#!/usr/bin/env bash
# Builds Kueue's manager (`sigs.k8s.io/kueue/cmd/kueue`, the job queueing controller and its webhooks) from source
# through the Go module proxy and caches the binary per version, like hack/build-coscheduler.sh. Prints the bin
# directory. hack/kueue.py runs it out of cluster against a local cluster.
#
#   hack/build-kueue.sh               build (or reuse) and print the bin directory
#   hack/build-kueue.sh --module-dir  print the module's source directory in the Go module cache (hack/kueue.py
#                                     installs Kueue's CRDs and webhook configurations from its config/components)
#
# It is built from a throwaway wrapper module that requires Kueue and restates its replaces (none in v0.15.0; `go
# install pkg@version` would refuse any) with Kueue's own go.sum, so no checksum database lookup is needed.
set -euo pipefail

LOG_NAME=build-kueue
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${KUEUE_VERSION}"
MODULE=sigs.k8s.io/kueue
PACKAGE="${MODULE}/cmd/kueue"

BIN_DIR="${CACHE_ROOT}/kueue/${VERSION}/bin"
STAMP="${BIN_DIR}/.complete"

go_build_env

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

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

modfile="$(module_field "${MODULE}" "${VERSION}" GoMod)"
[[ -f "${modfile}" ]] || die "could not download ${MODULE}@${VERSION} from the Go module proxy"
moddir="$(module_field "${MODULE}" "${VERSION}" Dir)"
[[ -f "${moddir}/go.sum" ]] || die "${MODULE}@${VERSION} has no go.sum in ${moddir}"

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
  if [[ -n "${replaces}" ]]; then sed 's/^/replace /' <<<"${replaces}"; fi
} >"${WORK}/go.mod"
cp "${moddir}/go.sum" "${WORK}/go.sum"

log "building ${PACKAGE}@${VERSION} (Kueue's manager: 5-20 min on 2 cores the first time)"
start=${SECONDS}
mkdir -p "${BIN_DIR}.partial"
with_progress "${PACKAGE}@${VERSION}" \
  bash -c "cd '${WORK}' && go build -ldflags '-s -w' -o '${BIN_DIR}.partial/kueue' '${PACKAGE}'" \
  || die "building ${PACKAGE}@${VERSION} failed (see the Go output above)"
[[ -x "${BIN_DIR}.partial/kueue" ]] || die "go build reported success but wrote no ${BIN_DIR}.partial/kueue"
rm -rf "${BIN_DIR}"
mv "${BIN_DIR}.partial" "${BIN_DIR}"
touch "${STAMP}"
log "built in $((SECONDS - start))s into ${BIN_DIR}"
echo "${BIN_DIR}"
