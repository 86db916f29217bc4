"""The layering rules of DESIGN.md, checked on the source: tfop/kube is generic machinery (imports nothing else
of ours), tfop/api imports nothing of ours, and the planning modules stay pure (no machinery, no I/O)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tfop"
PURE_PLANNING = ("reconcile", "resources", "status", "draft", "lifecycle", "restarts", "exitcodes", "plan_types", "accelerators")
IO_MODULES = {"socket", "subprocess", "urllib", "urllib3", "requests", "http", "kubernetes", "threading", "time"}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the module's package
                base = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level])
                names.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                names.add(node.module)
    return names


def modules(subpackage: str) -> list[Path]:
    found = sorted((PACKAGE / subpackage).glob("*.py"))
    assert found, f"no modules in tfop/{subpackage}"
    return found


@pytest.mark.parametrize("path", modules("kube"), ids=lambda p: p.name)
def test_kube_imports_nothing_of_ours_but_kube(path: Path) -> None:
    # The package root holds only the version string (the client's User-Agent), so it is allowed.
    ours = {name for name in imports(path) if name.startswith("tfop.")}
    assert all(name.startswith("tfop.kube") for name in ours), ours


@pytest.mark.parametrize("path", modules("api"), ids=lambda p: p.name)
def test_api_imports_nothing_of_ours(path: Path) -> None:
    assert not {name for name in imports(path) if name.startswith("tfop.") and not name.startswith("tfop.api")}


@pytest.mark.parametrize("module", PURE_PLANNING)
def test_planning_is_pure(module: str) -> None:
    found = imports(PACKAGE / "controller" / f"{module}.py")
    assert not {name for name in found if name.startswith("tfop.") and
                not name.startswith(("tfop.api", "tfop.controller"))}
    assert not {name for name in found if name.split(".")[0] in IO_MODULES}


def test_the_rule_sees_a_violation(tmp_path: Path) -> None:
    """Guard against a checker that can never fail."""
    bad = PACKAGE / "kube" / "_layer_probe.py"
    try:
        bad.write_text("from tfop.controller import reconcile\nfrom ..api import constants\n")
        assert imports(bad) == {"tfop.controller", "tfop.api"}
    finally:
        bad.unlink()
