# Shared by the hack/build-*.sh scripts: where builds are cached, how they report, and the Go settings they build
# with. A script sets LOG_NAME, then sources this file.
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

CACHE_ROOT="${TFOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfop}"

log() { printf '[%s] %s\n' "${LOG_NAME}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${LOG_NAME}" "$*" >&2; exit 1; }

# Static, reproducible binaries from the local toolchain only (no toolchain download: none is possible here).
go_build_env() {
  command -v go >/dev/null \
    || die "go is not on PATH; ${LOG_NAME#build-} is built from source and needs Go ${GO_MIN_VERSION} or newer (see README)"
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
    die "Go ${GO_MIN_VERSION} or newer is needed (Kubernetes ${KUBERNETES_VERSION} and kwok ${KWOK_VERSION} require it); \
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

# progress_while WHAT CMD...: runs CMD, printing a line every 30 s while it runs, so a long build never looks hung.
progress_while() {
  local what="$1" started=${SECONDS} next=$((SECONDS + 30)) pid rc=0
  shift
  "$@" &
  pid=$!
  while kill -0 "${pid}" 2>/dev/null; do
    sleep 2
    if (( SECONDS >= next )) && kill -0 "${pid}" 2>/dev/null; then
      log "still building ${what} ($((SECONDS - started))s)"
      next=$((SECONDS + 30))
    fi
  done
  wait "${pid}" || rc=$?
  return "${rc}"
}
