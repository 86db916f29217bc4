"""hack/ is the library the tests use (the local cluster, the fake kubelet, the bench), never the other way round:
no hack module imports a module of test/, so hack/ runs with only hack/ on the path (`make bench`, `make run`)."""

from __future__ import annotations

import ast
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


def hack_imports(path: Path, root: Path = HACK) -> set[str]:
    """The hack/ modules `path` imports, relative imports resolved, `from . import x` included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(path.relative_to(root).with_suffix("").parts[: -node.level]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            if node.module:  # `from . import x` imports x, not (in the sense of a design cycle) the package
                names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def import_cycles(root: Path) -> list[list[str]]:
    """Every cycle among the modules under `root` (a package's __init__ counts as the package)."""
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph = {name: sorted(hack_imports(path, root) & modules.keys() - {name}) for name, path in modules.items()}
    cycles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        for target in graph[name]:
            if target in trail:
                cycle = trail[trail.index(target):]
                if min(cycle) == cycle[0]:  # each cycle once, from its smallest member
                    cycles.append(cycle)
            elif target > trail[0]:  # only cycles whose smallest member is where the walk began
                visit(target, [*trail, target])

    for start in sorted(graph):
        visit(start, [start])
    return cycles


def test_hack_has_no_import_cycle() -> None:
    assert import_cycles(HACK) == []


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from .b import thing\n")
    (tmp_path / "pkg" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    assert import_cycles(tmp_path) == [["pkg.a", "pkg.b"]]


@pytest.mark.parametrize("path", sorted(HACK.rglob("*.py")), ids=lambda p: str(p.relative_to(HACK)))
def test_no_hack_module_holds_two_concepts(path: Path) -> None:
    """The 400-line rule of docs/architecture.md holds in hack/ too."""
    assert len(path.read_text().splitlines()) <= 400
