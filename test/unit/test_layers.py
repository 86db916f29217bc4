"""The layering rules of docs/architecture.md, checked on the source: tfop/kube is generic machinery
(imports nothing else of ours), tfop/api imports nothing of ours, the controller runtime knows nothing of TFJobs,
the planning modules stay pure (no machinery, no I/O), plan/'s layers import only downward, and no import cycle
exists anywhere in tfop/."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tfop"
# The one module every layer may import: the raw-JSON object type, which imports nothing of ours.
SHARED = "tfop.objects"
IO_MODULES = {"socket", "subprocess", "urllib", "urllib3", "requests", "http", "kubernetes", "threading", "time"}
# Words that would mean the generic runtime learnt what it reconciles.
TFJOB_WORDS = ("tfjob", "TFJob", "tensorflow", "replica")

PLAN = "tfop.controller.plan"
# plan/'s layers, bottom up, by module or sub-package under plan/: a module imports its own layer and the layers
# below it, never one above. A new module of plan/ must be placed here (test_every_plan_module_has_a_layer).
PLAN_LAYERS: tuple[tuple[str, ...], ...] = (
    # What every rule reads and none decides: the operator's settings, the gang schedulers tfop knows, resource
    # quantities, a replica's slot (and how slots are told), conditions and object reads, the job's status as a
    # typed value (on json_record.py's records). At the bottom so that anything above may use them and they can never
    # depend on a rule.
    ("controller_config", "frozen", "gang_schedulers", "job_status", "json_record", "quantity", "slots", "status"),
    # Typed views of what the cache shows (pods, nodes, Jobs): facts read once per pass, before anything is
    # decided on them; they need only the bottom layer.
    ("observed",),
    # The TFJob parsed once into its frozen model: needs the settings (the operator's defaults), never a plan.
    ("job",),
    # The planner's input and output (types.py) and the plan being built (draft.py): what the layers above write
    # into. Below children/ so that a plan names its children by kind and slot without knowing their bodies.
    ("types", "draft"),
    # The bodies of the children, pure functions of the job model (and the slots they fill).
    ("children",),
    # A job's replicas: its children sorted into slots per backend, their exits counted, their clean-up. Below
    # policies/ because the rules decide on replicas, and a replica's mechanics decide nothing.
    ("replicas",),
    # One rule per module, deciding on the job, its replicas and its children.
    ("policies",),
    # Composes the rules into one plan.
    ("planner",),
)
# What only the planner composes: code outside plan/ reads its vocabulary, settings, model and bodies, and calls
# planner.plan, but a rule's internals are never reached from outside (a helper both need goes lower).
PLAN_INTERNALS = ("replicas", "policies")


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


def module_name(path: Path, package_root: Path = PACKAGE.parent) -> str:
    parts = path.relative_to(package_root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (anywhere in it, type-checking imports too): `from a.b import c`
    counts as importing module a.b.c when there is one, else a.b."""
    paths = {module_name(path, package.parent): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets: set[str] = set()
        package_parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package_parts[:len(package_parts) - node.level + 1], *([base] if base else [])])
                targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                               for alias in node.names)
        graph[name] = {target for target in targets if target in paths} - {name}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import cycle as its path (first module repeated at the end), or None: a depth-first search that meets a
    module still on its stack."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        on_stack = [start]
        while stack:
            module, pending = stack[-1]
            if not pending:
                stack.pop()
                on_stack.pop()
                done.add(module)
                continue
            target = pending.pop()
            if target in on_stack:
                return [*on_stack[on_stack.index(target):], target]
            if target not in done and target in graph:
                stack.append((target, sorted(graph[target])))
                on_stack.append(target)
    return None


def plan_layer(module: str) -> int | None:
    """The index in PLAN_LAYERS of a module of plan/ (None: not placed, or not in plan/)."""
    if not module.startswith(PLAN + "."):
        return None
    first = module[len(PLAN) + 1:].split(".")[0]
    return next((index for index, layer in enumerate(PLAN_LAYERS) if first in layer), None)


def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import of a plan/ module from a higher layer, as `importer -> imported`."""
    found = []
    for module, targets in sorted(graph.items()):
        layer = plan_layer(module)
        for target in sorted(targets):
            target_layer = plan_layer(target)
            if layer is not None and target_layer is not None and target_layer > layer:
                found.append(f"{module} -> {target}")
    return found


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


def test_every_plan_module_has_a_layer() -> None:
    unplaced = [module for module in import_graph() if module.startswith(PLAN + ".") and plan_layer(module) is None]
    assert unplaced == []


def test_plan_layers_import_only_downward() -> None:
    assert upward_imports(import_graph()) == []


def test_nothing_outside_plan_reaches_into_the_rules() -> None:
    reached = [f"{module} -> {target}" for module, targets in sorted(import_graph().items())
               if not module.startswith(PLAN) for target in sorted(targets)
               if target.startswith(tuple(f"{PLAN}.{internal}" for internal in PLAN_INTERNALS))]
    assert reached == []


def test_no_import_cycle_in_tfop() -> None:
    assert find_cycle(import_graph()) is None


def test_the_graph_sees_upward_imports_and_cycles(tmp_path: Path) -> None:
    """The checkers on a probe layout: an upward import and a cycle through a relative import are both found."""
    plan = tmp_path / "tfop" / "controller" / "plan"
    (plan / "children").mkdir(parents=True)
    (tmp_path / "tfop" / "__init__.py").write_text("")
    (plan / "children" / "__init__.py").write_text("")
    (plan / "status.py").write_text("from tfop.controller.plan.children import body\n")
    (plan / "children" / "body.py").write_text("from .. import status\nfrom tfop.controller.plan.types import POD\n")
    (plan / "types.py").write_text("POD = 'Pod'\n")
    graph = import_graph(tmp_path / "tfop")
    assert graph["tfop.controller.plan.children.body"] == {"tfop.controller.plan.status", "tfop.controller.plan.types"}
    assert upward_imports(graph) == ["tfop.controller.plan.status -> tfop.controller.plan.children.body"]
    assert find_cycle(graph) == ["tfop.controller.plan.children.body", "tfop.controller.plan.status",
                                 "tfop.controller.plan.children.body"]


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
