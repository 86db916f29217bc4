#!/usr/bin/env bash
# Builds the Kubeflow training operator (the Go operator `make bench` compares tfop with) from source through the
# Go module proxy and caches the binary per version, like hack/build-controlplane.sh. Prints the bin directory.
#
#   hack/build-training-operator.sh               build (or reuse) and print the bin directory
#   hack/build-training-operator.sh --module-dir  print the module's source directory in the Go module cache
#                                                 (the benchmark reads the operator's TFJob CRD from there)
#
# Its go.mod (v1.9.x) has no replace directives, so a plain `go install pkg@version` builds it; the check below
# stops with a clear message if a future version brings some, which `go install` refuses.
set -euo pipefail

LOG_NAME=build-training-operator
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${TRAINING_OPERATOR_VERSION:-v1.9.3}"
MODULE=github.com/kubeflow/training-operator
PACKAGE="${MODULE}/cmd/training-operator.v1"

BIN_DIR="${CACHE_ROOT}/training-operator/${VERSION}/bin"

go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"

require_go_installable "${MODULE}" "${VERSION}"

build_into_cache "${BIN_DIR}" training-operator.v1 "${PACKAGE}@${VERSION}" "a few minutes on 2 cores" \
  env GOBIN="${BIN_DIR}.partial" go install -ldflags "-s -w" "${PACKAGE}@${VERSION}"
