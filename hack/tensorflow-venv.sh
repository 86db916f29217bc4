#!/usr/bin/env bash
# Creates (once per TensorFlow version and lock) a virtualenv with the pinned tensorflow-cpu, in the cache root,
# and prints the path of its python. Tests run the examples' training scripts and check TF_CONFIG with it;
# TensorFlow never becomes a dependency of the operator. The package set is the TensorFlow image's own
# (hack/images/tensorflow/requirements.txt), so what passes here is what runs in the pods.
set -euo pipefail

LOG_NAME=tensorflow-venv
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wheels.sh
source "${HACK_DIR}/wheels.sh"

LOCK="${HACK_DIR}/images/tensorflow/requirements.txt"
[[ -f "${LOCK}" ]] || die "${LOCK} is missing: run make image-locks"
lock_hash="$(sha256sum "${LOCK}" | cut -c1-12)"
VENV="${CACHE_ROOT}/tensorflow/${TENSORFLOW_VERSION}-${lock_hash}"

if [[ -f "${VENV}/.complete" ]]; then
  echo "${VENV}/bin/python"
  exit 0
fi
building "the TensorFlow virtualenv ${VENV}"

start=${SECONDS}
download_wheels "${LOCK}"
log "creating ${VENV}"
rm -rf "${VENV}"
"${IMAGE_PYTHON}" -m venv "${VENV}" >&2 || die "could not create a virtualenv with ${IMAGE_PYTHON}"
install_locked "${VENV}/bin/python" "${LOCK}"
"${VENV}/bin/python" -c "import tensorflow as tf; assert tf.__version__ == '${TENSORFLOW_VERSION}', tf.__version__" \
  2>/dev/null || die "tensorflow ${TENSORFLOW_VERSION} does not import in ${VENV}"
touch "${VENV}/.complete"
log "ready in $((SECONDS - start))s"
echo "${VENV}/bin/python"
