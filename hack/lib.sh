# Shared by the hack/build-*.sh scripts: where builds are cached, how they report, and the Go settings they build
# with. A script sets LOG_NAME, then sources this file.
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

CACHE_ROOT="${TFOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfop}"

log() { printf '[%s] %s\n' "${LOG_NAME}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${LOG_NAME}" "$*" >&2; exit 1; }

# The script as it was started, so that one which waited for another process's build can start over (build_lock).
SCRIPT_PATH="$(realpath -- "$0" 2>/dev/null || echo "$0")"
SCRIPT_ARGS=("$@")

# `make builds-cached` runs every build script with TFOP_CHECK_CACHED=1 to learn, without building anything,
# whether all of them are cached: a script then exits NOT_CACHED (3) at the point where it would start building, so
# the answer comes from the same checks the builds make. building WHAT marks that point; past it, the script holds
# WHAT's lock (build_lock) while it builds.
NOT_CACHED=3
not_cached_stop() {
  if [[ "${TFOP_CHECK_CACHED:-}" == 1 ]]; then
    log "not cached: $*"
    exit "${NOT_CACHED}"
  fi
}
building() {
  not_cached_stop "$@"
  build_lock "$*"
}

# build_lock WHAT: one build of WHAT at a time on this machine. make test builds while its lanes run, and a lane's
# fixture may ask for what make test is still building (or the other way round): the second caller must neither
# build it again nor fail on the first one's half-written files. So the first takes WHAT's lock (a file under the
# cache root, held until the script exits) and builds; a later one waits, saying so every HEARTBEAT_SECONDS, then
# starts its script over, whose cache checks now find WHAT built and return at once (or, if that build failed, build
# it itself). A script finishes one WHAT before it names the next, so it holds one lock at a time and never waits
# while holding one.
BUILD_LOCK_FD=""
build_lock() {
  local dir="${CACHE_ROOT}/locks" file waited=0 every="${HEARTBEAT_SECONDS:-20}"
  mkdir -p "${dir}"
  file="${dir}/${LOG_NAME}-$(printf '%s' "$1" | sha256sum | cut -c1-16).lock"
  if [[ -n "${BUILD_LOCK_FD}" ]]; then exec {BUILD_LOCK_FD}>&-; fi
  exec {BUILD_LOCK_FD}>>"${file}"
  flock -n "${BUILD_LOCK_FD}" && return 0
  log "waiting: another process is building $1 (${file})"
  until flock -w "${every}" "${BUILD_LOCK_FD}"; do
    waited=$((waited + every))
    log "still waiting for the other build of $1 (${waited}s so far)"
  done
  exec {BUILD_LOCK_FD}>&-
  log "the other build of $1 ended: starting over, to reuse what it built"
  exec bash "${SCRIPT_PATH}" "${SCRIPT_ARGS[@]}"
}

# Static, reproducible binaries from the local toolchain only (no toolchain download: none is possible here).
go_build_env() {
  command -v go >/dev/null \
    || die "go is not on PATH; ${LOG_NAME#build-} is built from source and needs Go ${GO_MIN_VERSION} or newer (see the README)"
  check_go_version
  export GOFLAGS="-mod=mod -trimpath"
  export CGO_ENABLED=0
  export GOTOOLCHAIN=local
  start_heartbeat
}

# Dies with what to do when the local Go is older than GO_MIN_VERSION (Go itself would only say so after
# downloading hundreds of modules).
check_go_version() {
  local have
  have="$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null)"
  have="${have#go}"
  have="${have%%[-+ ]*}"
  if ! version_at_least "${have}" "${GO_MIN_VERSION}"; then
    die "Go ${GO_MIN_VERSION} or newer is needed (the go.mod of a pinned component in versions.env requires it); \
found go${have:-unknown} at $(command -v go). Install a newer Go and put it first on PATH."
  fi
}

# version_at_least 1.26.2 1.26.0: true when the first dotted version is the second or newer.
version_at_least() {
  local IFS=.
  # shellcheck disable=SC2206
  local have=($1) want=($2) i
  for i in 0 1 2; do
    (( 10#${have[i]:-0} > 10#${want[i]:-0} )) && return 0
    (( 10#${have[i]:-0} < 10#${want[i]:-0} )) && return 1
  done
  return 0
}

# A cold build is silent for many minutes; this prints a line every HEARTBEAT_SECONDS (20) until the script that
# started it exits, so a first `make test` never looks hung.
start_heartbeat() {
  local parent=$$ every="${HEARTBEAT_SECONDS:-20}" name="${LOG_NAME}"
  (
    trap - EXIT
    # Not the build's lock: this loop outlives its script by up to a second.
    if [[ -n "${BUILD_LOCK_FD}" ]]; then exec {BUILD_LOCK_FD}>&-; fi
    started=${SECONDS}
    next=$((started + every))
    # Until the script exits: then this loop is handed to another parent at once (kill -0 would still find the
    # script as a zombie until whoever started it reaps it, which may be waiting for this very loop's stderr).
    while read -r _ _ _ ppid _ <"/proc/${BASHPID}/stat" && [[ "${ppid}" == "${parent}" ]]; do
      sleep 1
      if (( SECONDS >= next )); then
        elapsed=$((SECONDS - started))
        printf '[%s] still building (%dm%02ds so far; cached afterwards)\n' "${name}" $((elapsed / 60)) \
          $((elapsed % 60)) >&2
        next=$((SECONDS + every))
      fi
    done
  ) </dev/null >/dev/null &
  disown 2>/dev/null || true
}

# with_progress WHAT CMD...: runs CMD and says every HEARTBEAT_SECONDS (20) that WHAT is still building, since
# `go build` and mmdebstrap are silent for minutes and a silent terminal looks hung. Not 30: with the silent seconds
# before CMD (fetching wheels), a cold run's lines were up to 35 s apart.
with_progress() {
  local what="$1" started=${SECONDS} every="${HEARTBEAT_SECONDS:-20}" ticker rc=0
  shift
  (
    if [[ -n "${BUILD_LOCK_FD}" ]]; then exec {BUILD_LOCK_FD}>&-; fi  # a killed script's ticker must not keep it
    while sleep "${every}"; do log "still building ${what} ($((SECONDS - started))s)"; done
  ) &
  ticker=$!
  "$@" || rc=$?
  kill "${ticker}" 2>/dev/null || true
  wait "${ticker}" 2>/dev/null || true
  return "${rc}"
}

# wrapper_module DIR MODULE VERSION SIBLING_VERSION: a module requiring MODULE@VERSION whose path-replaced siblings
# are pinned to SIBLING_VERSION, and which carries MODULE's exclude directives. `go install pkg@version` refuses a
# module with either, and neither applies to a module that is only required, so the wrapper restates them.
# module_field MODULE VERSION FIELD: one field (Dir, GoMod, ...) of `go mod download -json`, downloading the module
# into the module cache if needed. A scratch module stands in: some Go versions refuse to download outside one.
module_field() {
  local scratch
  scratch="$(mktemp -d)"
  (cd "${scratch}" && go mod download -json "$1@$2") | sed -n "s/.*\"$3\": \"\(.*\)\".*/\1/p"
  rm -rf "${scratch}"
}

wrapper_module() {
  local dir="$1" module="$2" version="$3" sibling_version="$4"
  mkdir -p "${dir}"
  local modfile
  modfile="$(cd "${dir}" && go mod download -json "${module}@${version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [[ -f "${modfile}" ]] || die "could not download ${module}@${version} from the Go module proxy"
  {
    echo "module tfop.local/build"
    echo
    grep -E '^go [0-9]' "${modfile}"
    grep -E '^godebug ' "${modfile}" || true
    echo
    echo "require ${module} ${version}"
    echo
    # Lines like `k8s.io/api => ./staging/src/k8s.io/api` or `go.etcd.io/etcd/api/v3 => ../api`.
    { grep -E '^\s*(replace\s+)?[a-z0-9./-]+\s+=>\s+\.\.?/' "${modfile}" || true; } | { grep -v FORBIDDEN_DEPENDENCY || true; } \
      | sed -E 's/^\s*(replace\s+)?//' \
      | awk -v v="${sibling_version}" '{ print "replace " $1 " => " $1 " " v }'
    # `exclude ( ... )` blocks and single `exclude x v` lines, comments dropped.
    awk '/^exclude \(/ { inblock = 1; next } inblock && /^\)/ { inblock = 0; next }
         inblock { sub(/\/\/.*/, ""); if (NF == 2) print "exclude " $1 " " $2; next }
         /^exclude [^(]/ { print }' "${modfile}"
  } >"${dir}/go.mod"
}

# The scripts that build one Go command per module version (build-coscheduler.sh, build-kueue.sh,
# build-training-operator.sh) share the functions below, so they answer --module-dir, reuse their cache and publish
# a build the same way: BIN_DIR holds the binaries and counts as built only once BIN_DIR/.complete exists.

# cached_bin_dir_or_module_dir MODULE VERSION BIN_DIR [--module-dir]: with --module-dir prints MODULE@VERSION's
# source directory in the Go module cache and exits; when BIN_DIR is complete prints it and exits; else returns.
# require_go_installable MODULE VERSION: downloads the module and stops with a clear message if its go.mod has
# replace directives, which `go install pkg@version` refuses (build such a module from a wrapper module instead).
require_go_installable() {
  local modfile
  modfile="$(module_field "$1" "$2" GoMod)"
  [[ -f "${modfile}" ]] || die "could not download $1@$2 from the Go module proxy"
  if grep -qE '^\s*(replace\s+)?[^/ ]+/[^ ]*\s+=>' "${modfile}"; then
    die "$1@$2's go.mod has replace directives, which go install refuses;" \
      "build it from a wrapper module as hack/build-controlplane.sh does"
  fi
}

cached_bin_dir_or_module_dir() {
  local module="$1" version="$2" bin_dir="$3" dir
  if [[ "${4:-}" == "--module-dir" ]]; then
    dir="$(module_field "${module}" "${version}" Dir)"
    [[ -d "${dir}" ]] || die "could not download ${module}@${version} from the Go module proxy"
    echo "${dir}"
    exit 0
  fi
  if [[ -f "${bin_dir}/.complete" ]]; then
    echo "${bin_dir}"
    exit 0
  fi
  building "${module}@${version} (${bin_dir})"
}

# build_into_cache BIN_DIR BINARY WHAT NOTE CMD...: runs CMD, which writes BINARY into BIN_DIR.partial, then swaps
# that in as BIN_DIR, marks it complete and prints it. A failed build leaves no complete BIN_DIR behind.
build_into_cache() {
  local bin_dir="$1" binary="$2" what="$3" note="$4" started=${SECONDS}
  shift 4
  log "building ${what} (${note})"
  mkdir -p "${bin_dir}.partial"
  "$@" || die "building ${what} failed (see the Go output above)"
  [[ -x "${bin_dir}.partial/${binary}" ]] || die "go build reported success but wrote no ${bin_dir}.partial/${binary}"
  rm -rf "${bin_dir}"
  mv "${bin_dir}.partial" "${bin_dir}"
  touch "${bin_dir}/.complete"
  log "built in $((SECONDS - started))s into ${bin_dir}"
  echo "${bin_dir}"
}

# build_from_replacing_wrapper MODULE VERSION PACKAGE BIN_DIR BINARY NOTE [LDFLAGS]: builds PACKAGE as BIN_DIR/BINARY from a
# throwaway module that requires MODULE@VERSION and restates its replaces, which `go install pkg@version` refuses
# and which do not apply to a module that is only required. Unlike wrapper_module it keeps each replace's own
# target, and it uses MODULE's go.sum, which vouches for the same versions, so no checksum database lookup (which
# may be unreachable) is needed. LDFLAGS (default `-s -w`) lets a caller add version stamps; no single quotes in it.
build_from_replacing_wrapper() {
  local module="$1" version="$2" package="$3" bin_dir="$4" binary="$5" note="$6" ldflags="${7:--s -w}" modfile moddir
  local replaces
  REPLACING_WRAPPER_DIR="$(mktemp -d)"
  trap 'rm -rf "${REPLACING_WRAPPER_DIR}"' EXIT
  modfile="$(module_field "${module}" "${version}" GoMod)"
  [[ -f "${modfile}" ]] || die "could not download ${module}@${version} from the Go module proxy"
  # The module's replaces, one per line: `X => X vN` (inside a replace block or on a `replace` line). A replace to
  # a local path cannot be honoured outside the module's own tree: stop and say so.
  replaces="$(sed -n -E 's/^\s*(replace\s+)?([a-z0-9./-]+)\s+=>\s+(.*)$/\2 => \3/p' "${modfile}")"
  if grep -qE '=> \.\.?/' <<<"${replaces}"; then
    die "${module}@${version}'s go.mod replaces a module with a local path; pin it to a published tag here"
  fi
  {
    echo "module tfop.local/build"
    echo
    grep -E '^go [0-9]' "${modfile}"
    echo
    echo "require ${module} ${version}"
    echo
    if [[ -n "${replaces}" ]]; then sed 's/^/replace /' <<<"${replaces}"; fi
  } >"${REPLACING_WRAPPER_DIR}/go.mod"
  moddir="$(module_field "${module}" "${version}" Dir)"
  [[ -f "${moddir}/go.sum" ]] || die "${module}@${version} has no go.sum in ${moddir}"
  cp "${moddir}/go.sum" "${REPLACING_WRAPPER_DIR}/go.sum"
  build_into_cache "${bin_dir}" "${binary}" "${package}@${version}" "${note}" \
    with_progress "${package}@${version}" \
    bash -c "cd '${REPLACING_WRAPPER_DIR}' && go build -ldflags '${ldflags}' -o '${bin_dir}.partial/${binary}' '${package}'"
}

# ensure_debian_packages PKG...: installs the Debian packages that are missing, with one `apt-get update` first.
ensure_debian_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${pkg}")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  # Not building: apt's own lock below serializes the installs, and installing a package twice is harmless.
  not_cached_stop "the Debian packages ${missing[*]}"
  [[ "$(id -u)" -eq 0 ]] || die "Debian packages ${missing[*]} are missing and installing them needs root"
  command -v apt-get >/dev/null || die "Debian packages ${missing[*]} are missing and there is no apt-get here"
  log "installing Debian packages: ${missing[*]}"
  # make test runs several scripts at once, and a second apt-get fails at once on dpkg's lock: one at a time.
  mkdir -p "${CACHE_ROOT}"
  (
    flock 9
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
      || die "apt-get install ${missing[*]} failed"
  ) 9>"${CACHE_ROOT}/.apt.lock" || exit 1
}

# kubernetes_ldflags VERSION: the version stamps Kubernetes' own build sets, so `--version` and /version say VERSION.
kubernetes_ldflags() {
  local v="$1" minor pkg=k8s.io/component-base/version
  minor="$(echo "${v}" | cut -d. -f2)"
  echo "-s -w -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}" \
    "-X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z" \
    "-X k8s.io/client-go/pkg/version.gitVersion=${v} -X k8s.io/client-go/pkg/version.gitMajor=1" \
    "-X k8s.io/client-go/pkg/version.gitMinor=${minor} -X k8s.io/client-go/pkg/version.gitTreeState=clean"
}
