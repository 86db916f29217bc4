#!/usr/bin/env bash
# Builds the container images of the local cluster's real node without a registry or a Docker daemon, caches each
# as an OCI image layout tarball under the cache root, and prints one line per image on stdout:
#
#   <image-ref> <path-to-oci-archive.tar>
#
# ready for `ctr -n k8s.io images import --base-name <image-ref> <tar>`. Images (all by default):
#   tensorflow  Debian minbase + python3, a virtualenv with the locked tensorflow-cpu, tf-keras and tensorboard (its
#               `tensorboard` command on the PATH, for a job's TensorBoard), examples/train_*.py in /opt/train
#   tfop        Debian minbase + python3, a virtualenv with tfop[ui] (from this checkout) and its locked
#               dependencies; runs `tfop run` as 65532, like the Dockerfile, and `tfop ui` where a pod asks for it.
#               Two layers: a base with everything but tfop (cached apart, keyed by its own inputs), and tfop's
#               wheel installed over it, so an edit of tfop/ costs a wheel and a small layer, not a Debian root
#   pause       the pod sandbox: hack/images/pause, a static Go program that reaps children and exits on SIGTERM
#
# Usage: hack/build-images.sh [tensorflow|tfop|pause ...]   build what is missing, print the refs and archives
#        hack/build-images.sh --refs                         print each image's ref from its inputs, build nothing
#        hack/build-images.sh --pin                          write the computed refs into versions.env and examples/
#
# A ref's tag ends in a hash of the image's inputs (this script, the lock, the sources it copies in), so the cache
# is keyed by content: a changed input gives a new ref and a new build, never a stale cached image. The TensorFlow
# and pause refs are pinned in versions.env (manifests name them); tfop's changes with every edit of its source,
# its base's only with what the base is built from.
set -euo pipefail

LOG_NAME=build-images
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wheels.sh
source "${HACK_DIR}/wheels.sh"
REPO="$(cd "${HACK_DIR}/.." && pwd)"
IMAGES_DIR="${CACHE_ROOT}/images"
ALL_IMAGES=(tensorflow tfop pause)
# The host tools: mmdebstrap builds the root filesystems, umoci packs them as OCI images.
HOST_PACKAGES=(mmdebstrap umoci python3-venv binutils)
# Documentation, manuals and translations are of no use in a container and are a good part of a minimal root.
DPKG_EXCLUDES=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright')
BASE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

for var in TENSORFLOW_VERSION IMAGE_DEBIAN_SUITE TENSORFLOW_IMAGE PAUSE_IMAGE TFOP_IMAGE_NAME; do
  [[ -n "${!var:-}" ]] || die "${var} is not set in ${HACK_DIR}/versions.env"
done

# --- what goes into each image, and so its ref ----------------------------------------------------------------

# image_inputs NAME: the files (relative to the repository) an image is built from, one a line. This script is an
# input of tfop's image only: the others hash the part of it that makes them (image_recipe).
image_inputs() {
  (
    cd "${REPO}"
    case "$1" in
      tensorflow)
        echo hack/wheels.sh
        echo hack/images/tensorflow/requirements.txt
        ls examples/train_*.py ;;
      tfop-base)
        echo hack/wheels.sh
        echo hack/images/tfop/requirements.txt ;;
      tfop)
        echo hack/build-images.sh
        image_inputs tfop-base
        echo hack/images/tfop/build-requirements.txt
        echo setup.cfg
        echo pyproject.toml
        find tfop -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | LC_ALL=C sort ;;
      pause)
        echo hack/images/pause/go.mod
        echo hack/images/pause/main.go ;;
    esac
  )
}

# image_recipe NAME: the part of this script that makes an image: its functions as bash prints them, and the
# settings they read. Hashing that instead of the whole script, an edit of how tfop's image is made rebuilds neither
# the TensorFlow image (up to 20 minutes) nor tfop's base (ten), nor changes the pinned refs.
image_recipe() {
  local packing=(new_image finish_image write_image name_in_index)
  case "$1" in
    tensorflow) declare -f build_tensorflow debian_root "${packing[@]}" ;;
    tfop-base) declare -f tfop_base debian_root "${packing[@]}" ;;
    pause) declare -f build_pause "${packing[@]}" ;;
  esac
  declare -p DPKG_EXCLUDES BASE_PATH
}

# inputs_hash NAME: 12 hex digits of SHA-256 over the names and contents of the inputs, the recipe, and the
# versions used.
inputs_hash() {
  (
    cd "${REPO}"
    image_inputs "$1" | xargs sha256sum
    image_recipe "$1"
    echo "debian=${IMAGE_DEBIAN_SUITE} tensorflow=${TENSORFLOW_VERSION}"
  ) | sha256sum | cut -c1-12
}

# computed_ref NAME: the ref the image's inputs give today.
computed_ref() {
  case "$1" in
    tensorflow) echo "${TENSORFLOW_IMAGE%%:*}:${TENSORFLOW_VERSION}-$(inputs_hash tensorflow)" ;;
    pause) echo "${PAUSE_IMAGE%%:*}:1-$(inputs_hash pause)" ;;
    tfop)
      local version
      version="$(sed -n -E 's/^version\s*=\s*(\S+)/\1/p' "${REPO}/setup.cfg")"
      echo "${TFOP_IMAGE_NAME}:${version}-$(inputs_hash tfop)" ;;
    tfop-base) echo "${TFOP_IMAGE_NAME}/base:${IMAGE_DEBIAN_SUITE}-$(inputs_hash tfop-base)" ;;
  esac
}

# pinned_ref NAME: the ref versions.env names (tfop has none: its ref follows its source).
pinned_ref() {
  case "$1" in
    tensorflow) echo "${TENSORFLOW_IMAGE}" ;;
    pause) echo "${PAUSE_IMAGE}" ;;
    tfop) computed_ref tfop ;;
  esac
}

# pin: writes the computed TensorFlow and pause refs into versions.env, and the TensorFlow one into the examples.
pin() {
  local name var old new file
  for name in tensorflow pause; do
    var="$(echo "${name}" | tr a-z A-Z)_IMAGE"
    old="$(pinned_ref "${name}")"
    new="$(computed_ref "${name}")"
    [[ "${old}" == "${new}" ]] && continue
    log "${var}: ${old} -> ${new}"
    sed -i "s|^${var}=.*|${var}=${new}|" "${HACK_DIR}/versions.env"
    for file in "${REPO}"/examples/*.yaml; do
      grep -qF "${old}" "${file}" && sed -i "s|${old}|${new}|g" "${file}"
    done
  done
  return 0
}

# --- packing --------------------------------------------------------------------------------------------------

# debian_root DIR PACKAGES ARGS...: a minbase Debian root in DIR with PACKAGES (comma-separated); ARGS go to
# mmdebstrap (hooks). Uses this machine's apt sources when they serve the suite, so the image gets the same
# mirror and security updates as the host; otherwise mmdebstrap's default mirror.
debian_root() {
  local dir="$1" packages="$2" sources=() clean_env=() var
  shift 2
  # mmdebstrap passes its environment to the hooks; pip settings meant for this machine (a find-links directory,
  # an index) have no meaning in the chroot, where pip installs from the wheels copied in and nothing else.
  for var in $(compgen -e | grep '^PIP_' || true); do clean_env+=(-u "${var}"); done
  if grep -qsE "^Suites:.*\b${IMAGE_DEBIAN_SUITE}\b" /etc/apt/sources.list.d/debian.sources; then
    sources=(/etc/apt/sources.list.d/debian.sources)
  fi
  with_progress "the Debian root (mmdebstrap ${IMAGE_DEBIAN_SUITE})" \
    env "${clean_env[@]}" mmdebstrap --quiet --mode=root --variant=minbase --include="${packages}" "${DPKG_EXCLUDES[@]}" "$@" \
      --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"' \
      "${IMAGE_DEBIAN_SUITE}" "${dir}" "${sources[@]}" >&2 \
    || die "mmdebstrap ${IMAGE_DEBIAN_SUITE} with ${packages} failed (see its output above)"
  # runc mounts a fresh /dev in every container; device nodes in a layer would only need mknod on import.
  find "${dir}/dev" -mindepth 1 -delete
}

# new_image REF: an empty OCI image named REF, unpacked into a bundle; prints the bundle's root directory, where the
# build puts the image's files. umoci's repack of a bundle, unlike its insert, writes complete tar layers.
new_image() {
  local ref="$1" dir="${WORK}/${1##*/}"
  dir="${dir//:/_}"
  umoci init --layout "${dir}/oci" >&2
  umoci new --image "${dir}/oci:${ref##*:}" >&2
  umoci unpack --image "${dir}/oci:${ref##*:}" "${dir}/bundle" >&2 || die "umoci could not unpack the new ${ref}"
  echo "${dir}/bundle/rootfs"
}

# finish_image REF OUT UMOCI_CONFIG_ARGS...: the bundle's root as the single layer of REF, written to OUT
# (write_image).
finish_image() {
  local ref="$1" dir="${WORK}/${1##*/}"
  dir="${dir//:/_}"
  with_progress "the layer of ${ref}" \
    umoci repack --history.created_by "hack/build-images.sh" --image "${dir}/oci:${ref##*:}" "${dir}/bundle" >&2 \
    || die "umoci could not pack the root of ${ref} as a layer"
  write_image "$@"
}

# write_image REF OUT UMOCI_CONFIG_ARGS...: REF's OCI layout in the work directory, configured, written to OUT as an
# OCI layout tarball.
write_image() {
  local ref="$1" out="$2" dir="${WORK}/${1##*/}" tag="${1##*:}"
  shift 2
  dir="${dir//:/_}"
  umoci config --image "${dir}/oci:${tag}" --config.workingdir / --architecture "$(dpkg --print-architecture)" \
    --os linux "$@" >&2 || die "umoci config of ${ref} failed"
  umoci gc --layout "${dir}/oci" >&2
  name_in_index "${dir}/oci/index.json" "${ref}"
  mkdir -p "$(dirname "${out}")"
  # Atomic, and per process: a half-written archive is never taken as built, and two builds of one ref at once
  # (two make test) each write their own.
  tar -C "${dir}/oci" -cf "${out}.partial.$$" oci-layout index.json blobs
  mv "${out}.partial.$$" "${out}"
  rm -rf "${dir}"
}

# name_in_index INDEX NAME: names the image of the OCI index INDEX. umoci records only a tag there (and finds an
# image by it); the full ref is written too (as containerd's own exports do), so an import finds the name whether
# or not --base-name is given.
name_in_index() {
  "${IMAGE_PYTHON}" - "$1" "$2" <<'PY' || die "could not name $2 in $1"
import json, sys

path, ref = sys.argv[1], sys.argv[2]
with open(path) as f:
    index = json.load(f)
for manifest in index["manifests"]:
    manifest.setdefault("annotations", {}).update(
        {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref})
with open(path, "w") as f:
    json.dump(index, f)
PY
}

# --- the images -----------------------------------------------------------------------------------------------

build_tensorflow() {
  local ref="$1" out="$2" lock="${HACK_DIR}/images/tensorflow/requirements.txt" root
  download_wheels "${lock}"
  root="$(new_image "${ref}")"
  mkdir -p "${WORK}/tensorflow-in/train"
  cp "${lock}" "${WORK}/tensorflow-in/requirements.txt"
  cp "${REPO}"/examples/train_*.py "${WORK}/tensorflow-in/train/"
  # The wheels are hard-linked into the root when they can be (same file system), copied when not; the venv's
  # pip installs them with no index and checks every hash. tensorflow/include holds the C++ headers for building
  # custom ops (a fifth of the install) that a training pod never reads; and TensorFlow's shared libraries carry
  # their static symbol tables, a sixth of the install, which only a debugger reads (strip --strip-unneeded keeps
  # the dynamic symbols that loading and op registration use). Only TensorFlow's: the libraries auditwheel
  # vendors into other wheels (*.libs/) were rewritten by patchelf, and strip breaks them (numpy's OpenBLAS then
  # fails with "ELF load command address/offset not page-aligned").
  debian_root "${root}" python3,python3-venv \
    --customize-hook="mkdir -p \"\$1/tmp/in\" && cp -a '${WORK}/tensorflow-in/.' \"\$1/tmp/in/\"" \
    --customize-hook="mkdir -p \"\$1/tmp/in/wheels\" && { cp -al '${WHEEL_DIR}/.' \"\$1/tmp/in/wheels/\" 2>/dev/null || cp -a '${WHEEL_DIR}/.' \"\$1/tmp/in/wheels/\"; }" \
    --customize-hook='chroot "$1" python3 -m venv /opt/tensorflow' \
    --customize-hook='chroot "$1" /opt/tensorflow/bin/pip install --quiet --disable-pip-version-check --no-index --find-links /tmp/in/wheels --require-hashes --no-deps -r /tmp/in/requirements.txt' \
    --customize-hook='rm -rf "$1"/opt/tensorflow/lib/python3*/site-packages/tensorflow/include' \
    --customize-hook='find "$1"/opt/tensorflow/lib/python3*/site-packages/tensorflow -type f -name "*.so*" -exec strip --strip-unneeded {} +' \
    --customize-hook='chroot "$1" /opt/tensorflow/bin/tensorboard --version_tb >&2' \
    --customize-hook='mkdir -p "$1/opt/train" && cp "$1"/tmp/in/train/*.py "$1/opt/train/" && rm -rf "$1/tmp/in"'
  finish_image "${ref}" "${out}" \
    --config.env "PATH=/opt/tensorflow/bin:${BASE_PATH}" --config.env PYTHONUNBUFFERED=1 \
    --config.env TF_CPP_MIN_LOG_LEVEL=1 --config.workingdir /opt/train --config.cmd python
}

# tfop_base: prints the archive of the tfop image's base, building it when missing: the Debian root with python3
# and the virtualenv /opt/tfop holding tfop's locked dependencies (the ui extra's too, hack/lock-images.sh), all
# the image has but tfop. Its ref hashes only what it is built from, so an edit of tfop/ or setup.cfg reuses it;
# the venv loses the pip and setuptools that venv put there, since nothing installs at run time.
tfop_base() {
  local ref out lock="${HACK_DIR}/images/tfop/requirements.txt" root
  ref="$(computed_ref tfop-base)"
  out="${IMAGES_DIR}/tfop-base/${ref##*:}.tar"
  if [[ ! -f "${out}" ]]; then
    log "building the base ${ref} (once per change of its inputs)"
    download_wheels "${lock}"
    root="$(new_image "${ref}")"
    mkdir -p "${WORK}/tfop-base-in"
    cp "${lock}" "${WORK}/tfop-base-in/"
    debian_root "${root}" python3,python3-venv \
      --customize-hook="mkdir -p \"\$1/tmp/in\" && cp -a '${WORK}/tfop-base-in/.' \"\$1/tmp/in/\"" \
      --customize-hook="mkdir -p \"\$1/tmp/in/wheels\" && { cp -al '${WHEEL_DIR}/.' \"\$1/tmp/in/wheels/\" 2>/dev/null || cp -a '${WHEEL_DIR}/.' \"\$1/tmp/in/wheels/\"; }" \
      --customize-hook='chroot "$1" python3 -m venv /opt/tfop' \
      --customize-hook='chroot "$1" /opt/tfop/bin/pip install --quiet --disable-pip-version-check --no-index --find-links /tmp/in/wheels --require-hashes --no-deps -r /tmp/in/requirements.txt' \
      --customize-hook='chroot "$1" /opt/tfop/bin/pip uninstall --quiet --yes setuptools pip' \
      --customize-hook='rm -rf "$1/tmp/in"'
    finish_image "${ref}" "${out}"
  fi
  echo "${out}"
}

# tfop_wheel DIR: builds tfop's wheel from this checkout into DIR, on this machine with Debian's python3 (the
# image's), the locked setuptools and wheel and pip's build isolation off (isolation would fetch unpinned build
# tools). The virtualenv that builds it is cached per lock.
tfop_wheel() {
  local dir="$1" lock="${HACK_DIR}/images/tfop/build-requirements.txt" venv src="${WORK}/tfop-in/src"
  venv="${IMAGES_DIR}/tfop-build-$(sha256sum "${lock}" | cut -c1-12)"
  if [[ ! -x "${venv}/bin/python" ]]; then
    download_wheels "${lock}"
    rm -rf "${venv}.partial.$$"
    "${IMAGE_PYTHON}" -m venv "${venv}.partial.$$" >&2 || die "could not create a virtualenv with ${IMAGE_PYTHON}"
    install_locked "${venv}.partial.$$/bin/python" "${lock}"
    # A virtualenv's python finds its packages from pyvenv.cfg beside it, so it may be moved; another build may
    # have put the same one there first.
    mv -T "${venv}.partial.$$" "${venv}" 2>/dev/null || rm -rf "${venv}.partial.$$"
  fi
  # The project as the Dockerfile's context has it (.dockerignore): metadata and the package, nothing else.
  mkdir -p "${src}"
  cp "${REPO}/pyproject.toml" "${REPO}/setup.cfg" "${REPO}/README.md" "${src}/"
  (cd "${REPO}" && find tfop -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
    | xargs -0 cp --parents -t "${src}/")
  (cd "${src}" && PIP_FIND_LINKS="" "${venv}/bin/python" -m pip wheel --quiet --disable-pip-version-check \
    --no-index --no-deps --no-build-isolation --wheel-dir "${dir}" .) >&2 \
    || die "building tfop's wheel failed (see pip's output above)"
}

# base_root BASE: prints the root file system of the image in the archive BASE, unpacked once beside it. It is
# never written: builds mount it as an overlay's lower layer.
base_root() {
  local base="$1" root="${1%.tar}.rootfs" layout="${WORK}/base-layout"
  if [[ ! -d "${root}" ]]; then
    mkdir -p "${layout}"
    tar -C "${layout}" -xf "${base}" || die "could not unpack the archive ${base}"
    name_in_index "${layout}/index.json" base
    rm -rf "${root}.partial.$$"
    with_progress "the root of ${base##*/}" umoci raw unpack --image "${layout}:base" "${root}.partial.$$" >&2 \
      || die "umoci could not unpack ${base}"
    # Another build may have put the same one there first.
    mv -T "${root}.partial.$$" "${root}" 2>/dev/null || rm -rf "${root}.partial.$$"
    rm -rf "${layout}"
  fi
  echo "${root}"
}

# in_root ROOT CMD...: runs CMD in the image root ROOT with a clean environment: this machine's (pip settings, a
# virtualenv) has no meaning there.
in_root() {
  local root="$1"
  shift
  env -i PATH="${BASE_PATH}" HOME=/root LANG=C.UTF-8 chroot "${root}" "$@"
}

# What the tfop image's build runs to prove `tfop ui` can start: the page's modules (starlette, jinja2, anyio and
# uvicorn with them) import, and its templates and assets are in the installed package.
UI_IMAGE_CHECK='import tfop.ui.server
from jinja2 import Environment, FileSystemLoader
from tfop.ui.app import HERE
Environment(loader=FileSystemLoader(HERE / "templates")).get_template("base.html")
assert (HERE / "static" / "ui.css").is_file(), "the page assets are missing"'

# install_tfop ROOT WHEEL REF: installs tfop's WHEEL into /opt/tfop of ROOT, a root of the base, and checks it. The
# base's venv has no pip (nothing installs at run time): the pip that made the venv, Debian's wheel of it, runs from
# that wheel and leaves no pip behind. The last check imports the page with its server and loads its shipped
# templates and assets, as `tfop ui --help` alone would not (it imports lazily).
install_tfop() {
  local root="$1" wheel="$2" ref="$3"
  mkdir -p "${root}/tmp/in"
  cp "${wheel}" "${root}/tmp/in/"
  in_root "${root}" sh -c 'set -- /usr/share/python-wheels/pip-*.whl /tmp/in/tfop-*.whl
    exec /opt/tfop/bin/python "$1/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-index \
      --no-deps "$2"' \
    || die "installing tfop's wheel over the base failed (see pip's output above)"
  rm -rf "${root}/tmp/in"
  in_root "${root}" /opt/tfop/bin/tfop --help >/dev/null || die "tfop --help fails in ${ref}"
  in_root "${root}" /opt/tfop/bin/tfop ui --help >/dev/null || die "tfop ui --help fails in ${ref}"
  in_root "${root}" env PYTHONDONTWRITEBYTECODE=1 /opt/tfop/bin/python -c "${UI_IMAGE_CHECK}" \
    || die "the page's modules, templates or assets are missing from ${ref}"
}

# tfop is installed in an overlay mount over the base's root, so that every write lands in an upper directory that
# then holds exactly what the install added; that directory becomes the image's one layer over the base's (umoci
# insert). Neither the base's 350 MB are unpacked per build nor scanned for changes (umoci unpack and repack, most
# of a minute each under load).
build_tfop() {
  local ref="$1" out="$2" base lower wheel layer="${WORK}/tfop-layer" merged="${WORK}/tfop-root" dir
  base="$(tfop_base)"
  lower="$(base_root "${base}")"
  tfop_wheel "${WORK}/tfop-in/dist"
  wheel="$(echo "${WORK}"/tfop-in/dist/tfop-*.whl)"
  mkdir -p "${layer}" "${WORK}/tfop-overlay" "${merged}"
  mount -t overlay overlay -o "lowerdir=${lower},upperdir=${layer},workdir=${WORK}/tfop-overlay" "${merged}" \
    || die "could not mount an overlay over the base's root ${lower} (overlayfs is needed)"
  MOUNTED="${merged}"
  install_tfop "${merged}" "${wheel}" "${ref}"
  umount "${merged}"
  MOUNTED=""
  # A file of the base removed would be an overlay whiteout here (a character device), which a tar layer would
  # carry as a device; the install only adds.
  [[ -z "$(find "${layer}" -type c)" ]] || die "installing tfop removed files of the base: $(find "${layer}" -type c)"
  # Without the overlay's own extended attributes (trusted.overlay.*), which would otherwise go into the layer.
  mkdir -p "${layer}.staged"
  cp -a --no-preserve=xattr "${layer}/." "${layer}.staged/" || die "could not copy tfop's layer from ${layer}"
  dir="${WORK}/${ref##*/}"
  dir="${dir//:/_}"
  mkdir -p "${dir}/oci"
  tar -C "${dir}/oci" -xf "${base}" || die "could not unpack the base archive ${base}"
  name_in_index "${dir}/oci/index.json" "${ref##*:}"
  umoci insert --history.created_by "hack/build-images.sh" --image "${dir}/oci:${ref##*:}" "${layer}.staged" / >&2 \
    || die "umoci could not add tfop's layer to ${ref}"
  # A numeric user, so that a pod's runAsNonRoot can be verified; 65532 is the usual "nonroot".
  write_image "${ref}" "${out}" \
    --config.user 65532:65532 --config.entrypoint /opt/tfop/bin/tfop --config.entrypoint run \
    --config.env "PATH=/opt/tfop/bin:${BASE_PATH}" --config.env PYTHONUNBUFFERED=1 \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.exposedports 8080/tcp --config.exposedports 8081/tcp
}

build_pause() {
  local ref="$1" out="$2" root
  go_build_env
  root="$(new_image "${ref}")"
  (cd "${HACK_DIR}/images/pause" && go build -ldflags "-s -w" -o "${root}/pause" .) \
    || die "building the pause program (hack/images/pause) failed (see the Go output above)"
  finish_image "${ref}" "${out}" --config.entrypoint /pause --config.user 65535:65535
}

# --- main -----------------------------------------------------------------------------------------------------

case "${1:-}" in
  --refs)
    for name in "${ALL_IMAGES[@]}"; do echo "$(computed_ref "${name}")"; done
    exit 0 ;;
  --pin)
    pin
    exit 0 ;;
esac

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${ALL_IMAGES[@]}")
for name in "${names[@]}"; do
  [[ " ${ALL_IMAGES[*]} " == *" ${name} "* ]] || die "unknown image '${name}' (known: ${ALL_IMAGES[*]})"
  ref="$(computed_ref "${name}")"
  [[ "${ref}" == "$(pinned_ref "${name}")" ]] \
    || die "the ${name} image's inputs changed: versions.env names $(pinned_ref "${name}"), they make ${ref}; run \`make image-refs\` and commit"
done

# over_a_cached_base NAME: whether NAME is tfop's image and its base is cached. `make builds-cached` counts such an
# image as cached: its ref follows every edit of tfop/, and over a cached base it is a wheel and one small layer.
over_a_cached_base() {
  local base
  [[ "$1" == tfop ]] || return 1
  base="$(computed_ref tfop-base)"
  [[ -f "${IMAGES_DIR}/tfop-base/${base##*:}.tar" ]]
}

WORK=""
MOUNTED=""
cleanup() {
  [[ -z "${MOUNTED}" ]] || umount "${MOUNTED}"
  [[ -z "${WORK}" ]] || rm -rf "${WORK}"
}
trap cleanup EXIT

for name in "${names[@]}"; do
  ref="$(computed_ref "${name}")"
  out="${IMAGES_DIR}/${name}/${ref##*:}.tar"
  if [[ ! -f "${out}" ]]; then
    if [[ "${TFOP_CHECK_CACHED:-}" == 1 ]] && over_a_cached_base "${name}"; then
      log "not built, but cheap: ${ref}, tfop's wheel and one layer over its cached base"
      continue
    fi
    building "the ${name} image ${ref}"
    [[ "$(id -u)" -eq 0 ]] || die "building the ${name} image needs root (mmdebstrap and umoci keep file owners)"
    ensure_debian_packages "${HOST_PACKAGES[@]}"
    [[ -n "${WORK}" ]] || WORK="$(mktemp -d)"
    log "building ${ref}"
    start=${SECONDS}
    "build_${name}" "${ref}" "${out}"
    log "built ${ref} in $((SECONDS - start))s: $(du -h "${out}" | cut -f1) archive"
  fi
  echo "${ref} ${out}"
done
