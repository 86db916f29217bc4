#!/usr/bin/env bash
# Builds scheduler-plugins' two programs from source through the Go module proxy and caches each binary per version,
# like hack/build-controlplane.sh, and prints the bin directory:
# - the scheduler (kube-scheduler with the Coscheduling plugin, `cmd/scheduler`), which places a gang's pods;
# - the controller (`cmd/controller`), which writes a PodGroup's status (phase, running/succeeded/failed counts).
#   Without it a PodGroup never leaves an empty phase.
#
#   hack/build-coscheduler.sh               build (or reuse) the scheduler and print its bin directory
#   hack/build-coscheduler.sh controller    build (or reuse) the controller and print its bin directory
#   hack/build-coscheduler.sh --module-dir  print the module's source directory in the Go module cache (the local
#                                           cluster installs the PodGroup CRD from its manifests/coscheduling)
#
# Each program has its own bin directory, so a cached scheduler is kept when the controller is built later.
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

case "${1:-scheduler}" in
  scheduler | --module-dir)
    PACKAGE="${MODULE}/cmd/scheduler"
    BIN_DIR="${CACHE_ROOT}/scheduler-plugins/${VERSION}/bin"
    BINARY=kube-scheduler-plugins
    NOTE="kube-scheduler with the Coscheduling plugin: 5-15 min on 2 cores the first time"
    ;;
  controller)
    PACKAGE="${MODULE}/cmd/controller"
    BIN_DIR="${CACHE_ROOT}/scheduler-plugins/${VERSION}/controller-bin"
    BINARY=scheduler-plugins-controller
    NOTE="the PodGroup and ElasticQuota controller: 3-10 min on 2 cores the first time"
    ;;
  *) die "unknown argument '$1' (expected scheduler, controller or --module-dir)" ;;
esac
[[ "${1:-}" == "--module-dir" ]] || shift $(( $# > 0 ? 1 : 0 ))

go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"
build_from_replacing_wrapper "${MODULE}" "${VERSION}" "${PACKAGE}" "${BIN_DIR}" "${BINARY}" "${NOTE}"
