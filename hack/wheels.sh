# Sourced by the scripts that install a locked Python package set (hack/tensorflow-venv.sh, hack/build-images.sh)
# after lib.sh. Wheels are downloaded once into the cache root, checked against the lock's hashes, and installed
# from there with no index: the TensorFlow wheel (hundreds of MB) then serves both the tests' virtualenv and the
# image, and a rebuild after a change to a training script downloads nothing.

WHEEL_DIR="${CACHE_ROOT}/wheels"
# Debian's interpreter: the images run it, and the locks in hack/images/ are resolved for it.
IMAGE_PYTHON=/usr/bin/python3

# pip_venv: prints the python of a bare virtualenv used only to run pip on this machine.
pip_venv() {
  local venv="${CACHE_ROOT}/images/pip-venv"
  if [[ ! -x "${venv}/bin/pip" ]]; then
    [[ -x "${IMAGE_PYTHON}" ]] || die "${IMAGE_PYTHON} is missing (Debian's python3 and python3-venv are needed)"
    rm -rf "${venv}"
    "${IMAGE_PYTHON}" -m venv "${venv}" >&2 || die "could not create a virtualenv with ${IMAGE_PYTHON}: apt-get install python3-venv"
  fi
  echo "${venv}/bin/python"
}

# download_wheels LOCK: every file LOCK names, into WHEEL_DIR, hashes checked. Wheels only: nothing is compiled,
# so what is installed is exactly the file that was locked.
download_wheels() {
  local lock="$1" python
  python="$(pip_venv)"
  mkdir -p "${WHEEL_DIR}"
  log "fetching the wheels of hack/${lock#"${HACK_DIR}/"} (cached in ${WHEEL_DIR})"
  PIP_FIND_LINKS="" "${python}" -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: --dest "${WHEEL_DIR}" -r "${lock}" >&2 \
    || die "downloading the wheels of ${lock} failed (see pip's output above)"
}

# install_locked PYTHON LOCK: installs LOCK into the environment of PYTHON from WHEEL_DIR alone.
install_locked() {
  local python="$1" lock="$2"
  PIP_FIND_LINKS="" "${python}" -m pip install --quiet --disable-pip-version-check --no-index \
    --find-links "${WHEEL_DIR}" --require-hashes --no-deps -r "${lock}" >&2 \
    || die "installing ${lock} with ${python} failed (see pip's output above)"
}
