#!/usr/bin/env bash
# Creates (once per hack/kubeflow-sdk/requirements.txt) a virtualenv with the Kubeflow Training SDK, in the cache
# root, and prints the path of its python. The tests run the SDK there, in subprocesses: it pins the kubernetes
# client below the range tfop needs, so the two never share an environment.
set -euo pipefail

LOG_NAME=sdk-venv
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REQUIREMENTS="${HACK_DIR}/kubeflow-sdk/requirements.txt"
PYTHON="${PYTHON:-python3}"
VENV="${CACHE_ROOT}/kubeflow-sdk/$(sha256sum "${REQUIREMENTS}" | cut -c1-12)"

if [[ -f "${VENV}/.complete" ]]; then
  echo "${VENV}/bin/python"
  exit 0
fi
building "the Kubeflow SDK's virtualenv ${VENV}"

start=${SECONDS}
log "creating ${VENV} with $(${PYTHON} --version)"
rm -rf "${VENV}"
"${PYTHON}" -m venv "${VENV}" >&2 || die "could not create a virtualenv with ${PYTHON}: apt-get install python3-venv"
"${VENV}/bin/pip" install --quiet --disable-pip-version-check -r "${REQUIREMENTS}" >&2 \
  || die "installing ${REQUIREMENTS} failed (see pip's output above)"
"${VENV}/bin/python" -c "from kubeflow.training import TrainingClient" \
  || die "the Kubeflow Training SDK does not import in ${VENV}"
touch "${VENV}/.complete"
log "ready in $((SECONDS - start))s: $("${VENV}/bin/pip" freeze --disable-pip-version-check | grep -i -e kubeflow -e '^kubernetes' | tr '\n' ' ')"
echo "${VENV}/bin/python"
