#!/usr/bin/env python3
"""A tiny OCI image of Debian's static busybox, for the real node: the pod sandbox ("pause") image until the image
builds provide one, and the image of the tests that need real processes with a shell (exit codes, signals, memory
limits) and start in well under a second.

The package is fetched with `apt-get download` (no host install) and packed as an OCI image archive that
`ctr images import --base-name` takes; the archive is cached per package version. Its default command sleeps, which
is all a sandbox container has to do: containerd stops a sandbox with SIGKILL, and without a shared PID namespace
it has no children to reap.

    python3 hack/localcluster/busybox_image.py     # prints the archive's path
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

IMAGE_NAME = "tfop.local/busybox"
PACKAGE = "busybox-static"
CACHE_ROOT = Path(os.environ.get("TFOP_CACHE_DIR")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfop")


class ImageError(RuntimeError):
    """The package could not be fetched or packed; the message says which step."""


def _run(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ImageError(f"{' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def package_version() -> str:
    """The candidate version apt would install; it names the cached archive and the image tag. A machine whose
    package lists were never fetched knows no candidate: fetch them once."""
    for attempt in range(2):
        for line in _run("apt-cache", "policy", PACKAGE).splitlines():
            if line.strip().startswith("Candidate:"):
                version = line.split(":", 1)[1].strip()
                if version and version != "(none)":
                    return version
        if attempt == 0:
            _run("apt-get", "update", "-qq")
    raise ImageError(f"apt knows no {PACKAGE}, even after `apt-get update`")


def tag_for(version: str) -> str:
    """A Debian version as an image tag: `1:1.35.0-4+deb12u1+b1` -> `1.35.0-4-deb12u1-b1`."""
    upstream = version.split(":", 1)[-1]
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in upstream)[:128]


def _layer(busybox: bytes, applets: list[str]) -> bytes:
    """The root filesystem as an uncompressed tar: busybox, its applets as symlinks, the usual empty dirs."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("bin", "dev", "etc", "proc", "sys", "tmp", "var", "var/run"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(busybox), 0o755
        tar.addfile(info, io.BytesIO(busybox))
        for applet in sorted(set(applets) - {"busybox"}):
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
        for name, text in (("etc/passwd", "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n"),
                           ("etc/group", "root:x:0:\nnogroup:x:65534:\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))
    return f"sha256:{digest}"


def write_archive(path: Path, layer: bytes, tag: str) -> None:
    """An OCI image layout in one tar; index.json names the manifest by `tag` only, as umoci does."""
    compressed = gzip.compress(layer, mtime=0)
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sleep", "2147483647"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]},
    }
    with tarfile.open(path, "w") as tar:
        layer_digest = _blob(tar, compressed)
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_digest = _blob(tar, config_bytes)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                       "size": len(config_bytes)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest,
                        "size": len(compressed)}],
        }, sort_keys=True).encode()
        manifest_digest = _blob(tar, manifest)
        for name, body in (
            ("oci-layout", {"imageLayoutVersion": "1.0.0"}),
            ("index.json", {"schemaVersion": 2, "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
                "size": len(manifest), "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"org.opencontainers.image.ref.name": tag}}]}),
        ):
            data = json.dumps(body).encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def build() -> tuple[str, Path]:
    """Returns (image reference, archive path), building the archive unless it is cached."""
    version = package_version()
    tag = tag_for(version)
    archive = CACHE_ROOT / "images" / f"busybox-{tag}.tar"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as work:
            _run("apt-get", "download", f"{PACKAGE}={version}", cwd=Path(work))
            [deb] = Path(work).glob("*.deb")
            _run("dpkg-deb", "-x", str(deb), str(Path(work) / "root"))
            busybox = Path(work) / "root" / "bin" / "busybox"
            applets = _run(str(busybox), "--list").split()
            partial = archive.with_suffix(".partial")
            write_archive(partial, _layer(busybox.read_bytes(), applets), tag)
            partial.rename(archive)  # atomic: a half-written archive is never taken as built
    return f"{IMAGE_NAME}:{tag}", archive


def main() -> int:
    try:
        reference, archive = build()
    except ImageError as error:
        print(f"[busybox-image] ERROR: {error}", file=sys.stderr)
        return 1
    print(f"{reference} {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
