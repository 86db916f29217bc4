#!/usr/bin/env bash
# Builds kube-router (`github.com/cloudnativelabs/kube-router/v2/cmd/kube-router`) from source through the Go module
# proxy and caches the binary per version, like hack/build-kueue.sh, and prints its bin directory. The local cluster
# runs only its network policy firewall on each real node (hack/localcluster/addons/network_policy.py), which
# programs the host's iptables and ipset; those two are Debian packages installed here when missing.
#
#   hack/build-kube-router.sh               build (or reuse) and print the bin directory
#   hack/build-kube-router.sh --module-dir  print the module's source directory in the Go module cache
#
# It is built from a throwaway wrapper module that requires it (its go.mod has no replace directives in v2.10.0),
# with its own go.sum. One dependency is moved: v2.10.0 requires netlink at an untagged commit the module proxy
# refuses to serve, so the wrapper pins netlink's last release, v1.3.1, which kube-router v2.9.0 was released with.
# kube-router moved to that commit for default-route lookups in its policy-based routing, which the router does and
# the firewall, the only part run here, does not. The version stamp is what its own Makefile sets.
set -euo pipefail

LOG_NAME=build-kube-router
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="${KUBE_ROUTER_VERSION}"
MODULE=github.com/cloudnativelabs/kube-router/v2
PACKAGE="${MODULE}/cmd/kube-router"

NETLINK_VERSION=v1.3.1
BIN_DIR="${CACHE_ROOT}/kube-router/${VERSION}-netlink-${NETLINK_VERSION}/bin"

if [[ "${1:-}" != "--module-dir" ]]; then
  ensure_debian_packages iptables ipset
fi
go_build_env
cached_bin_dir_or_module_dir "${MODULE}" "${VERSION}" "${BIN_DIR}" "$@"
require_go_installable "${MODULE}" "${VERSION}"

WRAPPER_DIR="$(mktemp -d)"
trap 'rm -rf "${WRAPPER_DIR}"' EXIT
{
  echo "module tfop.local/build"
  echo
  grep -E '^go [0-9]' "$(module_field "${MODULE}" "${VERSION}" GoMod)"
  echo
  echo "require ${MODULE} ${VERSION}"
  echo
  echo "replace github.com/vishvananda/netlink => github.com/vishvananda/netlink ${NETLINK_VERSION}"
} >"${WRAPPER_DIR}/go.mod"
cp "$(module_field "${MODULE}" "${VERSION}" Dir)/go.sum" "${WRAPPER_DIR}/go.sum"
LDFLAGS="-s -w -X ${MODULE}/pkg/version.Version=${VERSION} -X ${MODULE}/pkg/version.BuildDate=1970-01-01T00:00:00Z"
build_into_cache "${BIN_DIR}" kube-router "${PACKAGE}@${VERSION}" "kube-router: 5-15 min on 2 cores the first time" \
  with_progress "${PACKAGE}@${VERSION}" \
  bash -c "cd '${WRAPPER_DIR}' && go build -ldflags '${LDFLAGS}' -o '${BIN_DIR}.partial/kube-router' '${PACKAGE}'"
