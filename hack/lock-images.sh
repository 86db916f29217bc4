#!/usr/bin/env bash
# Resolves the Python packages of the images built by hack/build-images.sh into lock files, every package pinned
# with its hashes, so that an image (and the TensorFlow virtualenv of the tests) is the same on every machine and
# pip refuses a file that differs from the one locked:
#   hack/images/tensorflow/requirements.txt   from hack/images/tensorflow/requirements.in (TENSORFLOW_VERSION)
#   hack/images/tfop/requirements.txt         from setup.cfg's install_requires
#   hack/images/tfop/build-requirements.txt   from hack/images/tfop/build-requirements.in
# Resolved with Debian's python3, the interpreter the images run, so markers and wheels match the image.
# Run it (`make image-locks`) after changing setup.cfg's dependencies or TENSORFLOW_VERSION, and commit the result.
set -euo pipefail

LOG_NAME=lock-images
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO="$(cd "${HACK_DIR}/.." && pwd)"
IMAGES="${HACK_DIR}/images"
PIP_TOOLS_VERSION=7.6.2
IMAGE_PYTHON=/usr/bin/python3

[[ -x "${IMAGE_PYTHON}" ]] || die "${IMAGE_PYTHON} (Debian's python3, which the images run) is missing: apt-get install python3-venv"
grep -qx "tensorflow-cpu==${TENSORFLOW_VERSION}" "${IMAGES}/tensorflow/requirements.in" \
  || die "hack/images/tensorflow/requirements.in does not pin tensorflow-cpu==${TENSORFLOW_VERSION} (versions.env)"

TOOLS="${CACHE_ROOT}/images/pip-tools-${PIP_TOOLS_VERSION}"
if [[ ! -x "${TOOLS}/bin/pip-compile" ]]; then
  log "installing pip-tools ${PIP_TOOLS_VERSION} into ${TOOLS}"
  rm -rf "${TOOLS}"
  "${IMAGE_PYTHON}" -m venv "${TOOLS}" || die "could not create a virtualenv with ${IMAGE_PYTHON} (python3-venv)"
  "${TOOLS}/bin/pip" install --quiet "pip-tools==${PIP_TOOLS_VERSION}" >&2 || die "installing pip-tools failed"
fi

# compile OUT IN...: --allow-unsafe keeps setuptools and wheel (tensorflow-cpu requires them) in the lock, since
# hash-checking mode refuses any package the lock leaves out. No header: it would name this machine's paths.
compile() {
  local out="$1"
  shift
  log "resolving ${out#"${REPO}/"}"
  (cd "${REPO}" && "${TOOLS}/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
    --no-header --no-emit-find-links --no-emit-index-url --upgrade --output-file "${out}" "$@") >&2 \
    || die "resolving ${out#"${REPO}/"} failed (see pip-compile's output above)"
}

compile "${IMAGES}/tensorflow/requirements.txt" hack/images/tensorflow/requirements.in
compile "${IMAGES}/tfop/requirements.txt" setup.cfg
compile "${IMAGES}/tfop/build-requirements.txt" hack/images/tfop/build-requirements.in
log "done; commit the changed hack/images/*/*requirements.txt"
