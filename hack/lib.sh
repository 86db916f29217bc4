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
  command -v go >/dev/null || die "go is not on PATH; ${LOG_NAME#build-} is built from source and needs Go (see README)"
  export GOFLAGS="-mod=mod -trimpath"
  export CGO_ENABLED=0
  export GOTOOLCHAIN=local
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
