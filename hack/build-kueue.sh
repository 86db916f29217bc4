#!/usr/bin/env bash
# Builds Kueue's manager (`sigs.k8s.io/kueue/cmd/kueue`, the job queueing controller and its webhooks) from source
# through the Go module proxy and caches the binary per version, like hack/build-coscheduler.sh. Prints the bin
# directory. hack/localcluster/addons/kueue.py runs it out of cluster against a local cluster.
#
#   hack/build-kueue.sh               build (or reuse) and print the bin directory
#   hack/build-kueue.sh --module-dir  print the module's source directory in the Go module cache (hack/localcluster/addons/kueue.py
#                                     installs Kueue's CRDs and webhook configurations from its config/components)
#   hack/build-kueue.sh --version V [--module-dir]
#                                     the same for Kueue V instead of KUEUE_VERSION; each version is cached apart
#
# It is built from a throwaway wrapper module that requires Kueue and restates its replaces (`go install
# pkg@version` would refuse any) with Kueue's own go.sum, so no checksum database lookup is needed.
set -euo pipefail

LOG_NAME=build-kueue
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${KUEUE_VERSION}"
if [[ "${1:-}" == "--version" ]]; then
  [[ -n "${2:-}" ]] || die "--version needs a Kueue version, such as ${KUEUE_VERSION}"
  VERSION="$2"
  shift 2
fi
MODULE=sigs.k8s.io/kueue
PACKAGE="${MODULE}/cmd/kueue"

BIN_DIR="${CACHE_ROOT}/kueue/${VERSION}/bin"

go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"
build_from_replacing_wrapper "${MODULE}" "${VERSION}" "${PACKAGE}" "${BIN_DIR}" kueue \
  "Kueue's manager: 5-20 min on 2 cores the first time"
