#!/usr/bin/env bash
# Builds what the local cluster's real node runs and prints each binary's path, one a line: kubelet (from
# k8s.io/kubernetes at KUBERNETES_VERSION), containerd, its runc shim and ctr (containerd's Go module at
# CONTAINERD_VERSION), CoreDNS (COREDNS_VERSION, with only the plugins the cluster uses). Each is cached per version
# under the cache root. It also installs the Debian packages the node needs: runc, the CNI plugins and iptables.
#
# Why wrapper modules: k8s.io/kubernetes replaces its staging modules with local paths and containerd's go.mod has
# exclude directives, and `go install pkg@version` refuses both. CoreDNS is built from a main package of our own
# that imports only the plugins we need, which is how CoreDNS documents custom builds.
set -euo pipefail

LOG_NAME=build-node
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for var in KUBERNETES_VERSION CONTAINERD_VERSION COREDNS_VERSION; do
  [[ -n "${!var:-}" ]] || die "${var} is not set in ${HACK_DIR}/versions.env"
done

KUBELET_DIR="${CACHE_ROOT}/node/kubelet-${KUBERNETES_VERSION}"
CONTAINERD_DIR="${CACHE_ROOT}/node/containerd-${CONTAINERD_VERSION}"
COREDNS_DIR="${CACHE_ROOT}/node/coredns-${COREDNS_VERSION}"
# The CoreDNS plugins compiled in, in no particular order (CoreDNS orders them itself).
COREDNS_PLUGINS=(bind ready health errors log cache loadbalance kubernetes)
# Debian's: the OCI runtime, the CNI `bridge`/`host-local` plugins, iptables for kubelet's chains, and socat,
# which relays the apiserver to pods (hack/localcluster/node.py).
DEBIAN_PACKAGES=(runc containernetworking-plugins iptables socat)

WORK=""
cleanup() { [[ -z "${WORK}" ]] || rm -rf "${WORK}"; }
trap cleanup EXIT
# The first build sets up Go (and its heartbeat, a line every 20 s while the script runs).
work_dir() { [[ -n "${WORK}" ]] || { go_build_env; WORK="$(mktemp -d)"; }; }

# finish DIR: publishes a finished build; a half-built one is never taken as built.
finish() {
  rm -rf "$1"
  mv "$1.partial" "$1"
  touch "$1/.complete"
}

build_kubelet() {
  local v="${KUBERNETES_VERSION}" out="${KUBELET_DIR}.partial"
  log "building kubelet ${v} (k8s.io/kubernetes; about 30 s once the control plane is built, 10+ min cold)"
  work_dir
  wrapper_module "${WORK}/kubelet" k8s.io/kubernetes "${v}" "v0.${v#v1.}"
  mkdir -p "${out}"
  (cd "${WORK}/kubelet" && go build -ldflags "$(kubernetes_ldflags "${v}")" -o "${out}/" k8s.io/kubernetes/cmd/kubelet) \
    || die "building kubelet from k8s.io/kubernetes ${v} failed (see the Go output above)"
  finish "${KUBELET_DIR}"
}

build_containerd() {
  local v="${CONTAINERD_VERSION}" out="${CONTAINERD_DIR}.partial" module=github.com/containerd/containerd/v2
  log "building containerd ${v}: containerd, containerd-shim-runc-v2, ctr (about 2 min cold)"
  work_dir
  wrapper_module "${WORK}/containerd" "${module}" "${v}" "${v}"
  mkdir -p "${out}"
  # no_btrfs: the btrfs snapshotter needs cgo and btrfs headers; the overlayfs one is what the node uses.
  (cd "${WORK}/containerd" && go build -tags no_btrfs -ldflags "-s -w -X ${module}/version.Version=${v}" -o "${out}/" \
      "${module}/cmd/containerd" "${module}/cmd/containerd-shim-runc-v2" "${module}/cmd/ctr") \
    || die "building ${module} ${v} failed (see the Go output above)"
  finish "${CONTAINERD_DIR}"
}

build_coredns() {
  local v="${COREDNS_VERSION}" out="${COREDNS_DIR}.partial" module=github.com/coredns/coredns plugin
  log "building CoreDNS ${v} with the plugins ${COREDNS_PLUGINS[*]} (under 2 min cold)"
  work_dir
  wrapper_module "${WORK}/coredns" "${module}" "${v}" "${v}"
  {
    echo "// A CoreDNS with only the plugins the local cluster's Corefile uses."
    echo "package main"
    echo
    echo "import ("
    echo "	\"${module}/coremain\""
    for plugin in "${COREDNS_PLUGINS[@]}"; do echo "	_ \"${module}/plugin/${plugin}\""; done
    echo ")"
    echo
    echo "func main() { coremain.Run() }"
  } >"${WORK}/coredns/main.go"
  mkdir -p "${out}"
  (cd "${WORK}/coredns" && go build -ldflags "-s -w -X ${module}/coremain.GitCommit=${v}" -o "${out}/coredns" .) \
    || die "building ${module} ${v} failed (see the Go output above)"
  finish "${COREDNS_DIR}"
}

# Arguments name the components to build (default: all), so one can be rebuilt or built ahead of the others.
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(containerd coredns kubelet)
ensure_debian_packages "${DEBIAN_PACKAGES[@]}"
start=${SECONDS}
built=""
paths=()
for component in "${wanted[@]}"; do
  case "${component}" in
    containerd)
      [[ -f "${CONTAINERD_DIR}/.complete" ]] || { building "containerd ${CONTAINERD_VERSION} (${CONTAINERD_DIR})"; build_containerd; built+=" containerd"; }
      paths+=("${CONTAINERD_DIR}/containerd" "${CONTAINERD_DIR}/containerd-shim-runc-v2" "${CONTAINERD_DIR}/ctr") ;;
    coredns)
      [[ -f "${COREDNS_DIR}/.complete" ]] || { building "coredns ${COREDNS_VERSION} (${COREDNS_DIR})"; build_coredns; built+=" coredns"; }
      paths+=("${COREDNS_DIR}/coredns") ;;
    kubelet)
      [[ -f "${KUBELET_DIR}/.complete" ]] || { building "kubelet ${KUBERNETES_VERSION} (${KUBELET_DIR})"; build_kubelet; built+=" kubelet"; }
      paths+=("${KUBELET_DIR}/kubelet") ;;
    *) die "unknown component ${component} (known: containerd coredns kubelet)" ;;
  esac
done
[[ -z "${built}" ]] || log "built${built} in $((SECONDS - start))s"
for path in "${paths[@]}"; do
  [[ -x "${path}" ]] || die "${path} is missing after the build"
  echo "${path}"
done
