#!/usr/bin/env bash
# Resolves the Python packages of the images built by hack/build-images.sh into lock files, every package pinned
# with its hashes, so that an image (and the TensorFlow virtualenv of the tests) is the same on every machine and
# pip refuses a file that differs from the one locked:
#   hack/images/tensorflow/requirements.txt   from hack/images/tensorflow/requirements.in (TENSORFLOW_VERSION,
#                                             and the TensorBoard of its minor version),
#                                             then hack/images/tensorflow/requirements-no-deps.in, unresolved
#   hack/images/tfop/requirements.txt         from setup.cfg's install_requires and its ui extra (the image runs
#                                             `tfop ui` as well as `tfop run`)
#   hack/images/tfop/build-requirements.txt   from hack/images/tfop/build-requirements.in
# Resolved with Debian's python3, the interpreter the images run, so markers and wheels match the image.
# Run it (`make image-locks`) after changing setup.cfg's dependencies or TENSORFLOW_VERSION, and commit the result.
# Every package goes to its newest version that fits; `--keep-pins` keeps those already locked that still fit, to
# add or change one package without upgrading the others.
set -euo pipefail

LOG_NAME=lock-images
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO="$(cd "${HACK_DIR}/.." && pwd)"
IMAGES="${HACK_DIR}/images"
PIP_TOOLS_VERSION=7.6.2
IMAGE_PYTHON=/usr/bin/python3
UPGRADE=(--upgrade)
case "${1:-}" in
  "") ;;
  --keep-pins) UPGRADE=() ;;
  *) die "unknown argument '$1' (usage: hack/lock-images.sh [--keep-pins])" ;;
esac

[[ -x "${IMAGE_PYTHON}" ]] || die "${IMAGE_PYTHON} (Debian's python3, which the images run) is missing: apt-get install python3-venv"
grep -qx "tensorflow-cpu==${TENSORFLOW_VERSION}" "${IMAGES}/tensorflow/requirements.in" \
  || die "hack/images/tensorflow/requirements.in does not pin tensorflow-cpu==${TENSORFLOW_VERSION} (versions.env)"
# TensorBoard's releases follow TensorFlow's minor versions (2.21.x with 2.21.x).
grep -qE "^tensorboard==${TENSORFLOW_VERSION%.*}\.[0-9]+$" "${IMAGES}/tensorflow/requirements.in" \
  || die "hack/images/tensorflow/requirements.in does not pin a tensorboard ${TENSORFLOW_VERSION%.*}.x (TensorFlow's minor version)"

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
    --no-header --no-emit-find-links --no-emit-index-url ${UPGRADE[@]+"${UPGRADE[@]}"} --output-file "${out}" "$@") >&2 \
    || die "resolving ${out#"${REPO}/"} failed (see pip-compile's output above)"
}

# append_no_deps LOCK IN: the packages IN pins, each with the hash of its wheel, added to LOCK without resolving
# their requirements. Every requirement must already be met by LOCK, where tensorflow-cpu stands for tensorflow
# (the same module; tf-keras names the full package), so installing them without their requirements loses nothing.
append_no_deps() {
  local lock="$1" in="$2" dir
  log "adding ${in#"${REPO}/"} to ${lock#"${REPO}/"}"
  dir="$(mktemp -d)"
  "${TOOLS}/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --dest "${dir}" \
    -r "${in}" >&2 || die "downloading the wheels of ${in#"${REPO}/"} failed (see pip's output above)"
  "${TOOLS}/bin/python" - "${lock}" "${in#"${REPO}/"}" "${dir}" <<'PY' || die "${in#"${REPO}/"} does not fit ${lock#"${REPO}/"}"
import hashlib, re, sys, zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

lock_path, source, wheel_dir = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
lock = lock_path.read_text()
pinned = {canonicalize_name(name): version for name, version in re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", lock, re.M)}
pinned["tensorflow"] = pinned["tensorflow-cpu"]
entries = []
for wheel in sorted(wheel_dir.glob("*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(metadata).decode())
    for text in meta.get_all("Requires-Dist") or []:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        have = pinned.get(canonicalize_name(requirement.name))
        if have is None or not requirement.specifier.contains(have, prereleases=True):
            sys.exit(f"{meta['Name']} {meta['Version']} requires {text}; the lock has {have or 'nothing'}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    entries.append(f"{canonicalize_name(meta['Name'])}=={meta['Version']} \\\n    --hash=sha256:{digest}\n"
                   f"    # via -r {source} (its requirements are not resolved)\n")
# Before the setuptools section pip-compile ends with, so the resolved packages stay together.
marker = "\n# The following packages are considered to be unsafe"
head, _, tail = lock.partition(marker)
lock_path.write_text(head.rstrip("\n") + "\n" + "".join(entries) + (marker + tail if tail else ""))
PY
  rm -rf "${dir}"
}

compile "${IMAGES}/tensorflow/requirements.txt" hack/images/tensorflow/requirements.in
append_no_deps "${IMAGES}/tensorflow/requirements.txt" "${IMAGES}/tensorflow/requirements-no-deps.in"
compile "${IMAGES}/tfop/requirements.txt" setup.cfg --extra ui
compile "${IMAGES}/tfop/build-requirements.txt" hack/images/tfop/build-requirements.in
log "done; commit the changed hack/images/*/*requirements.txt"
