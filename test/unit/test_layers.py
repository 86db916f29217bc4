"""The layering rules of docs/architecture.md, checked on the source: tfop/kube is generic machinery
(imports nothing else of ours), tfop/api imports nothing of ours, the controller runtime knows nothing of TFJobs,
and the planning modules stay pure (no machinery, no I/O)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tfop"
# The one module every layer may import: the raw-JSON object type, which imports nothing of ours.
SHARED = "tfop.objects"
IO_MODULES = {"socket", "subprocess", "urllib", "urllib3", "requests", "http", "kubernetes", "threading", "time"}
# Words that would mean the generic runtime learnt what it reconciles.
TFJOB_WORDS = ("tfjob", "TFJob", "tensorflow", "replica")


def imports(path: Path, package_root: Path = PACKAGE.parent) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the module's package
                base = ".".join(path.relative_to(package_root).with_suffix("").parts[: -node.level])
                names.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                names.add(node.module)
    return names


def modules(subpackage: str) -> list[Path]:
    found = sorted((PACKAGE / subpackage).rglob("*.py"))  # its subpackages too
    assert found, f"no modules in tfop/{subpackage}"
    return found


def foreign_to_kube(path: Path, package_root: Path = PACKAGE.parent) -> set[str]:
    """What a tfop/kube module imports of ours outside tfop/kube and the shared object type."""
    return {name for name in imports(path, package_root)
            if name.startswith("tfop.") and not name.startswith("tfop.kube") and name != SHARED}


def impure_imports(path: Path, package_root: Path = PACKAGE.parent) -> set[str]:
    """What a planner module imports that is neither the API, the planner itself, the object type nor pure
    standard library: any of it would let planning reach the apiserver, the clock or a thread."""
    found = imports(path, package_root)
    ours = {name for name in found if name.startswith("tfop.") and name != SHARED
            and not name.startswith(("tfop.api", "tfop.controller.plan"))}
    return ours | {name for name in found if name.split(".")[0] in IO_MODULES}


@pytest.mark.parametrize("path", modules("kube"), ids=lambda p: p.name)
def test_kube_imports_nothing_of_ours_but_kube(path: Path) -> None:
    assert not foreign_to_kube(path)


def test_the_runtime_knows_nothing_of_tfjobs() -> None:
    source = (PACKAGE / "kube" / "runtime.py").read_text()
    assert not foreign_to_kube(PACKAGE / "kube" / "runtime.py")
    assert [word for word in TFJOB_WORDS if word in source] == []


@pytest.mark.parametrize("path", modules("api"), ids=lambda p: p.name)
def test_api_imports_nothing_of_ours(path: Path) -> None:
    assert not {name for name in imports(path)
                if name.startswith("tfop.") and not name.startswith("tfop.api") and name != SHARED}


@pytest.mark.parametrize("path", modules("controller/plan"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_planning_is_pure(path: Path) -> None:
    """Purity by directory: whatever lands in controller/plan/ is held to it, with no list to keep."""
    assert not impure_imports(path)


@pytest.mark.parametrize("path", modules("ui"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_page_reads_no_controller(path: Path) -> None:
    """The page is a reader of its own: the API, the machinery and the process's start-up helpers, never the
    controller or its planner (nor the operator process, which would start one)."""
    assert not {name for name in imports(path) if name.startswith(("tfop.controller", "tfop.operator"))}


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_holds_two_concepts(path: Path) -> None:
    """docs/architecture.md: a module over ~400 lines is a sign it holds two."""
    assert len(path.read_text().splitlines()) <= 400


def test_the_rule_sees_a_violation(tmp_path: Path) -> None:
    """Guard against a checker that can never fail: a probe module in a copy of the layout, not in tfop/."""
    probe = tmp_path / "tfop" / "kube" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from tfop.controller import reconcile\nfrom ..api import constants\nfrom . import store\n")
    assert imports(probe, tmp_path) == {"tfop.controller", "tfop.api", "tfop.kube"}
    assert foreign_to_kube(probe, tmp_path) == {"tfop.controller", "tfop.api"}
    planner = tmp_path / "tfop" / "controller" / "plan" / "probe.py"
    planner.parent.mkdir(parents=True)
    planner.write_text("import time\nfrom tfop.kube import client\nfrom tfop.controller import apply\n"
                       "from . import types\nfrom tfop.objects import Object\n")
    assert impure_imports(planner, tmp_path) == {"time", "tfop.kube", "tfop.controller"}
