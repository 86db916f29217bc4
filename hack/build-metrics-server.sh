#!/usr/bin/env bash
# Builds metrics-server (`sigs.k8s.io/metrics-server/cmd/metrics-server`, which serves the resource metrics API
# metrics.k8s.io from each node kubelet's /metrics/resource, the source a HorizontalPodAutoscaler reads CPU from)
# through the Go module proxy and caches the binary per version, like hack/build-kueue.sh. Prints the bin directory.
# hack/localcluster/addons/metrics_server.py runs it out of cluster on loopback behind the apiserver's aggregator.
#
#   hack/build-metrics-server.sh               build (or reuse) and print the bin directory
#   hack/build-metrics-server.sh --module-dir  print the module's source directory in the Go module cache
#
# It is built from a throwaway wrapper module that requires metrics-server and restates its replaces (none in
# v0.8.0) with its own go.sum, so no checksum database lookup is needed.
set -euo pipefail

LOG_NAME=build-metrics-server
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -n "${METRICS_SERVER_VERSION:-}" ]] || die "METRICS_SERVER_VERSION is not set in ${HACK_DIR}/versions.env"

VERSION="${METRICS_SERVER_VERSION}"
MODULE=sigs.k8s.io/metrics-server
PACKAGE="${MODULE}/cmd/metrics-server"

BIN_DIR="${CACHE_ROOT}/metrics-server/${VERSION}/bin"

# The project's own build stamps its version into client-go's version package, which `--version` and the
# apiserver's /version (here: the aggregated API's) report; without it they say v0.0.0-master.
ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=${VERSION}"

go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"
build_from_replacing_wrapper "${MODULE}" "${VERSION}" "${PACKAGE}" "${BIN_DIR}" metrics-server \
  "the resource metrics API server: 5-15 min on 2 cores the first time" "${ldflags}"
