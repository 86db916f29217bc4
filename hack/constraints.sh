#!/usr/bin/env bash
# `make constraints`: resolve tfop's runtime dependencies (setup.cfg's install_requires and its ui extra, since the
# image serves `tfop ui` too) in a throwaway virtualenv and write every package and version it got to
# constraints.txt, which the image build installs with (`pip install -c constraints.txt '.[ui]'`), so an image
# built next month has the versions the tests ran with.
# Run it on purpose, review the diff, run `make test`, commit.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

echo "[constraints] resolving setup.cfg's install_requires and ui extra with $(${PYTHON} --version)" >&2
"${PYTHON}" -m venv "${WORK}/venv"
"${WORK}/venv/bin/pip" install --quiet --disable-pip-version-check "${REPO}[ui]"
{
  echo "# The image's pinned dependency set: what \`make constraints\` resolved from setup.cfg's install_requires and"
  echo "# ui extra with $(${PYTHON} --version) on $(date -u +%Y-%m-%d). The Dockerfile installs tfop[ui] with -c constraints.txt."
  echo "# Regenerate with \`make constraints\`, never by hand."
  "${WORK}/venv/bin/pip" freeze --disable-pip-version-check --exclude tfop | LC_ALL=C sort -f
} >"${REPO}/constraints.txt.new"
mv "${REPO}/constraints.txt.new" "${REPO}/constraints.txt"
echo "[constraints] wrote ${REPO}/constraints.txt ($(grep -c '==' "${REPO}/constraints.txt") packages)" >&2
