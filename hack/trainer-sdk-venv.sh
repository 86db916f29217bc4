#!/usr/bin/env bash
# Creates (once per hack/kubeflow-sdk/trainer-requirements.txt) a virtualenv with the Kubeflow SDK (kubeflow, whose
# kubeflow.trainer reports progress by Kubeflow Trainer's status protocol), in the cache root, with Debian's
# python3, the TensorFlow image's own: the tests run its reporter on the host, and mount its site-packages into
# pods on the real nodes, so the SDK's own code posts from inside a TFJob. Prints the path of its python.
set -euo pipefail

LOG_NAME=trainer-sdk-venv
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wheels.sh
source "${HACK_DIR}/wheels.sh"

REQUIREMENTS="${HACK_DIR}/kubeflow-sdk/trainer-requirements.txt"
VENV="${CACHE_ROOT}/kubeflow-trainer-sdk/$(sha256sum "${REQUIREMENTS}" | cut -c1-12)"

if [[ -f "${VENV}/.complete" ]]; then
  echo "${VENV}/bin/python"
  exit 0
fi
building "the Kubeflow SDK's (kubeflow.trainer) virtualenv ${VENV}"

start=${SECONDS}
[[ -x "${IMAGE_PYTHON}" ]] || die "${IMAGE_PYTHON} (Debian's python3, which the images run) is missing"
log "creating ${VENV} with $(${IMAGE_PYTHON} --version)"
rm -rf "${VENV}"
"${IMAGE_PYTHON}" -m venv "${VENV}" >&2 || die "could not create a virtualenv with ${IMAGE_PYTHON}: apt-get install python3-venv"
"${VENV}/bin/pip" install --quiet --disable-pip-version-check -r "${REQUIREMENTS}" >&2 \
  || die "installing ${REQUIREMENTS} failed (see pip's output above)"
"${VENV}/bin/python" -c "from kubeflow.trainer import update_trainjob_status" \
  || die "the Kubeflow SDK's update_trainjob_status does not import in ${VENV}"
touch "${VENV}/.complete"
log "ready in $((SECONDS - start))s: $("${VENV}/bin/pip" freeze --disable-pip-version-check | grep -i -e '^kubeflow' | tr '\n' ' ')"
echo "${VENV}/bin/python"
