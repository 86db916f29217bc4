#!/usr/bin/env bash
# Creates (once per requirements file) a virtualenv with one of the Kubeflow SDKs, in the cache root, and prints the
# path of its python. Both pin the kubernetes client below the range tfop needs, so neither shares tfop's environment:
# the tests run them in subprocesses.
#   sdk-venv.sh [training]  the Kubeflow Training SDK (kubeflow-training: TrainingClient), with the host's python3.
#   sdk-venv.sh trainer     the Kubeflow SDK (kubeflow: kubeflow.trainer reports progress by Kubeflow Trainer's status
#                           protocol), with Debian's python3, the TensorFlow image's own: the tests run its reporter on
#                           the host and mount its site-packages into pods on the real nodes.
set -euo pipefail

LOG_NAME=sdk-venv
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-training}" in
  training)
    REQUIREMENTS="${HACK_DIR}/kubeflow-sdk/requirements.txt"
    CACHE_DIR=kubeflow-sdk
    PYTHON="${PYTHON:-python3}"
    WHAT="the Kubeflow Training SDK"
    IMPORT="from kubeflow.training import TrainingClient" ;;
  trainer)
    # shellcheck source=wheels.sh
    source "${HACK_DIR}/wheels.sh"
    REQUIREMENTS="${HACK_DIR}/kubeflow-sdk/trainer-requirements.txt"
    CACHE_DIR=kubeflow-trainer-sdk
    PYTHON="${IMAGE_PYTHON}"
    WHAT="the Kubeflow SDK's kubeflow.trainer"
    IMPORT="from kubeflow.trainer import update_trainjob_status" ;;
  *) die "usage: sdk-venv.sh [training|trainer]" ;;
esac
VENV="${CACHE_ROOT}/${CACHE_DIR}/$(sha256sum "${REQUIREMENTS}" | cut -c1-12)"

if [[ -f "${VENV}/.complete" ]]; then
  echo "${VENV}/bin/python"
  exit 0
fi
building "${WHAT}'s virtualenv ${VENV}"

start=${SECONDS}
command -v "${PYTHON}" >/dev/null || die "${PYTHON} is missing"
log "creating ${VENV} with $(${PYTHON} --version)"
rm -rf "${VENV}"
"${PYTHON}" -m venv "${VENV}" >&2 || die "could not create a virtualenv with ${PYTHON}: apt-get install python3-venv"
"${VENV}/bin/pip" install --quiet --disable-pip-version-check -r "${REQUIREMENTS}" >&2 \
  || die "installing ${REQUIREMENTS} failed (see pip's output above)"
"${VENV}/bin/python" -c "${IMPORT}" || die "${WHAT} does not import in ${VENV}"
touch "${VENV}/.complete"
log "ready in $((SECONDS - start))s: $("${VENV}/bin/pip" freeze --disable-pip-version-check | grep -i -e kubeflow -e '^kubernetes' | tr '\n' ' ')"
echo "${VENV}/bin/python"
