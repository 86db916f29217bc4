#!/usr/bin/env bash
# Pins tfop's image by digest where it is released: the kustomize base (deploy/kustomization.yaml), its ui
# component, and the Helm chart's default values (deploy/helm/tfop/values.yaml); hack/versions.env's
# TFOP_RELEASED_REF names the image (its ref from this checkout's sources). `make release` runs it and then
# hack/release_pin.py, which fails when the pins and the checkout do not agree. A tag can be moved to other
# content; a digest names one image, so an install runs exactly the image that was built and tested.
#
# Usage: hack/pin-release-image.sh                   build tfop's image from this checkout (hack/build-images.sh
#                                                    tfop, as root) and pin the digest of its manifest
#        hack/pin-release-image.sh sha256:<64 hex>   pin that digest (the one your registry answered the push with)
#
# Pushing the OCI archive as it is keeps its manifest digest (e.g. skopeo copy oci-archive:<tar>
# docker://REGISTRY/tfop:0.1.0). The repository stays `tfop`: point it at yours with `kustomize edit set image`
# or the chart's image.repository. test_deploy checks every image the manifests render is by digest.
set -euo pipefail

LOG_NAME=pin-release-image
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO="$(cd "${HACK_DIR}/.." && pwd)"
KUSTOMIZATION="${REPO}/deploy/kustomization.yaml"
UI_COMPONENT="${REPO}/deploy/components/ui/kustomization.yaml"
VALUES="${REPO}/deploy/helm/tfop/values.yaml"

digest="${1:-}"
if [[ -z "${digest}" ]]; then
  read -r ref archive < <(bash "${HACK_DIR}/build-images.sh" tfop)
  digest="$(tar -xOf "${archive}" index.json | python3 -c 'import json, sys; print(json.load(sys.stdin)["manifests"][0]["digest"])')"
  log "${ref}: ${digest}"
else
  ref="$(bash "${HACK_DIR}/build-images.sh" --refs | grep -F "${TFOP_IMAGE_NAME}:")"
fi
[[ "${digest}" =~ ^sha256:[0-9a-f]{64}$ ]] || die "'${digest}' is not an image digest (sha256: and 64 hex digits)"

for file in "${KUSTOMIZATION}" "${UI_COMPONENT}"; do
  grep -qE '^  digest: sha256:[0-9a-f]{64}$' "${file}" || die "${file} has no digest line to replace"
done
grep -qE '^  digest: "?sha256:[0-9a-f]{64}"?$' "${VALUES}" || die "${VALUES} has no image.digest line to replace"
sed -i -E "s|^  digest: sha256:[0-9a-f]{64}$|  digest: ${digest}|" "${KUSTOMIZATION}" "${UI_COMPONENT}"
sed -i -E "s|^  digest: \"?sha256:[0-9a-f]{64}\"?$|  digest: \"${digest}\"|" "${VALUES}"
# Which image the digest is of, by the ref this checkout's sources give it: hack/release_pin.py (make release)
# fails once tfop's source has changed since.
sed -i -E "s|^TFOP_RELEASED_REF=.*$|TFOP_RELEASED_REF=${ref}|" "${HACK_DIR}/versions.env"
log "pinned ${digest} (${ref}) in deploy/kustomization.yaml, deploy/components/ui and deploy/helm/tfop/values.yaml"
