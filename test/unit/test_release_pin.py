"""hack/release_pin.py, which `make release` runs after pinning: it fails when deploy/'s digests disagree, when
they were pinned for another source of tfop's image than the checkout's, or when the image built from the
checkout has another digest."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from release_pin import PINNED, archive_digest, pinned_digests, problems, released_ref

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
REF = "localhost/tfop:0.1.0-7be0e4b2f899"
OLDER = "localhost/tfop:0.1.0-0123456789ab"
SAME: dict[str, str | None] = dict.fromkeys(PINNED, A)

ROWS: dict[str, tuple[dict[str, str | None], str | None, str | None, list[str]]] = {
    "pinned for this checkout, its archive's digest": (SAME, REF, A, []),
    "pinned for this checkout, no archive cached (or a registry's digest)": (SAME, REF, None, []),
    "tfop's source changed since the pin": (SAME, OLDER, None, [
        (f"the digest was pinned for {OLDER}, but this checkout's tfop image is {REF}: tfop's source changed "
         "since; run make release")]),
    "the archive built from this checkout is another image": (SAME, REF, B, [
        f"the image built from this checkout ({REF}) is {B}, not the pinned {A}"]),
    "the chart pins another digest than the base": ({**SAME, "deploy/helm/tfop/values.yaml": B}, REF, None, [
        (f"deploy/ pins different digests: deploy/kustomization.yaml {A}, deploy/components/ui/kustomization.yaml "
         f"{A}, deploy/helm/tfop/values.yaml {B}")]),
    "a file lost its digest line, and no ref is recorded": ({**SAME, "deploy/components/ui/kustomization.yaml": None},
                                                            None, None, [
        "deploy/components/ui/kustomization.yaml pins no digest",
        "hack/versions.env names no TFOP_RELEASED_REF: which image the digest is of is unknown"]),
}


@pytest.mark.parametrize(("digests", "released", "built", "found"), list(ROWS.values()), ids=list(ROWS))
def test_what_does_not_agree(digests: dict[str, str | None], released: str | None, built: str | None,
                             found: list[str]) -> None:
    assert problems(digests, released, REF, built) == found


def test_the_pins_and_the_ref_are_read_where_pin_release_image_writes_them(tmp_path: Path) -> None:
    for name, line in zip(PINNED, (f"  digest: {A}", f"  digest: {A}", f'  digest: "{A}"'), strict=True):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"images:\n- name: tfop\n{line}\n")
    assert pinned_digests(tmp_path) == SAME
    assert released_ref(f"TFOP_IMAGE_NAME=localhost/tfop\nTFOP_RELEASED_REF={REF}\n") == REF
    assert released_ref("TFOP_IMAGE_NAME=localhost/tfop\n") is None


def test_an_archives_digest_is_its_manifests(tmp_path: Path) -> None:
    index = json.dumps({"schemaVersion": 2, "manifests": [{"digest": B, "size": 1}]}).encode()
    archive = tmp_path / "tfop.tar"
    with tarfile.open(archive, "w") as tar:
        entry = tarfile.TarInfo("index.json")
        entry.size = len(index)
        tar.addfile(entry, io.BytesIO(index))
    assert archive_digest(archive) == B


def test_the_checked_in_pins_agree_among_themselves() -> None:
    """Whatever image they are of, the three places pin one digest (the checkout's image is make release's to
    check: its build is not reproducible)."""
    digests = pinned_digests(Path(__file__).resolve().parents[2])
    assert None not in digests.values() and len(set(digests.values())) == 1, digests
