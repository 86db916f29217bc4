"""hack/ is the library the tests use (the local cluster, the fake kubelet, the bench), never the other way round:
no hack module imports a module of test/, so hack/ runs with only hack/ on the path (`make bench`, `make run`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from unit.test_layers import imports

REPO = Path(__file__).resolve().parents[2]
HACK, TESTS = REPO / "hack", REPO / "test"
# The top-level names test/ makes importable: its packages and modules (support, unit, conftest, ...).
TEST_NAMES = {path.stem for path in TESTS.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()
              or path.is_dir()}


def test_the_test_names_are_found() -> None:
    assert {"support", "conftest"} <= TEST_NAMES


@pytest.mark.parametrize("path", sorted(HACK.rglob("*.py")), ids=lambda p: str(p.relative_to(HACK)))
def test_hack_imports_nothing_of_test(path: Path) -> None:
    assert not {name for name in imports(path, HACK) if name.split(".")[0] in TEST_NAMES}
