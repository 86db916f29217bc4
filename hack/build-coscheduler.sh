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

go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"
build_from_replacing_wrapper "${MODULE}" "${VERSION}" "${PACKAGE}" "${BIN_DIR}" kube-scheduler-plugins \
  "kube-scheduler with the Coscheduling plugin: 5-15 min on 2 cores the first time"
