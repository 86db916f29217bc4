"""Whether the released manifests pin the image of this checkout: `make release` runs it after pinning, and fails
when they do not.

deploy/ names tfop's image by digest in three places (the kustomize base, its ui component, the chart's values),
and hack/versions.env's TFOP_RELEASED_REF names the image that digest was pinned for: its tag ends in the hash of
tfop's image inputs (hack/build-images.sh), so a ref other than the one this checkout computes means tfop's source
changed after the pin. When the archive of that ref is in the cache, its manifest digest must be the pinned one.

Why a release step and not a gate test: the image build is not reproducible (umoci stamps the image's creation
time, and the files pip installs carry theirs), so no later build of the same source gives the pinned digest, and
the ref follows every edit of tfop/, so a gate test would fail on every change that does not also rebuild the
image as root and commit a new digest.

Usage: python3 hack/release_pin.py             prints what does not agree and exits 1, else says what is pinned
       python3 hack/release_pin.py --registry  the same, the digest being a registry's (an image built elsewhere,
                                               e.g. by the Dockerfile): the cached archive's digest is not compared
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HACK = REPO / "hack"
# Where deploy/ pins the digest (hack/pin-release-image.sh writes each).
PINNED = ("deploy/kustomization.yaml", "deploy/components/ui/kustomization.yaml", "deploy/helm/tfop/values.yaml")
DIGEST_LINE = re.compile(r'^  digest: "?(sha256:[0-9a-f]{64})"?$', re.MULTILINE)
RELEASED_REF = "TFOP_RELEASED_REF"


def pinned_digests(repo: Path) -> dict[str, str | None]:
    """Each file's pinned digest (None where it has no digest line)."""
    found = {}
    for name in PINNED:
        match = DIGEST_LINE.search((repo / name).read_text())
        found[name] = match.group(1) if match else None
    return found


def released_ref(versions: str) -> str | None:
    match = re.search(rf"^{RELEASED_REF}=(\S+)$", versions, re.MULTILINE)
    return match.group(1) if match else None


def archive_digest(archive: Path) -> str:
    """The manifest digest of an OCI archive (what a push of it keeps)."""
    with tarfile.open(archive) as tar:
        index = tar.extractfile("index.json")
        assert index is not None, f"{archive} has no index.json"
        return str(json.load(index)["manifests"][0]["digest"])


def problems(digests: dict[str, str | None], released: str | None, checkout_ref: str,
             built_digest: str | None) -> list[str]:
    """What does not agree: the pins among themselves, the pinned ref with the checkout's, the archive's digest
    (None: the checkout's image is not in the cache, so only its source is checked) with the pins."""
    found: list[str] = [f"{name} pins no digest" for name, digest in digests.items() if digest is None]
    pinned = {digest for digest in digests.values() if digest is not None}
    if len(pinned) > 1:
        found.append("deploy/ pins different digests: " + ", ".join(f"{name} {digest}"
                                                                 for name, digest in digests.items()))
    if released is None:
        found.append(f"hack/versions.env names no {RELEASED_REF}: which image the digest is of is unknown")
    elif released != checkout_ref:
        found.append(f"the digest was pinned for {released}, but this checkout's tfop image is {checkout_ref}: "
                     "tfop's source changed since; run make release")
    if built_digest is not None and pinned and built_digest not in pinned:
        found.append(f"the image built from this checkout ({checkout_ref}) is {built_digest}, not the pinned "
                     f"{', '.join(sorted(pinned))}")
    return found


def checkout_ref() -> str:
    """tfop's image ref from this checkout's sources (build-images.sh --refs builds nothing)."""
    refs = subprocess.run(["bash", str(HACK / "build-images.sh"), "--refs"], capture_output=True, text=True,
                          check=True).stdout.split()
    versions = (HACK / "versions.env").read_text()
    name = re.search(r"^TFOP_IMAGE_NAME=(\S+)$", versions, re.MULTILINE)
    assert name is not None, "hack/versions.env names no TFOP_IMAGE_NAME"
    return next(ref for ref in refs if ref.startswith(f"{name.group(1)}:"))


def main(argv: list[str]) -> int:
    ref = checkout_ref()
    cache = Path(os.environ.get("TFOP_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                          Path.home() / ".cache") / "tfop")
    archive = cache / "images" / "tfop" / f"{ref.rsplit(':', 1)[1]}.tar"
    built = archive_digest(archive) if archive.is_file() and "--registry" not in argv else None
    digests = pinned_digests(REPO)
    found = problems(digests, released_ref((HACK / "versions.env").read_text()), ref, built)
    for problem in found:
        print(f"[release-pin] {problem}", file=sys.stderr)
    if not found:
        checked = "its archive's digest" if built else "its source only (a registry's digest, or no archive cached)"
        print(f"[release-pin] deploy/ pins {next(iter(digests.values()))}, the image {ref}: checked {checked}",
              file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
