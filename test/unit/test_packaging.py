"""What a fresh clone's tools promise: every third-party module tfop imports is declared, the image's constraints
pin every declared dependency within its range, and `make help` lists every target."""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

REPO = Path(__file__).resolve().parents[2]
# Import names that differ from their distribution's.
DISTRIBUTION_OF = {"yaml": "pyyaml", "prometheus_client": "prometheus-client"}


def install_requires() -> dict[NormalizedName, Requirement]:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    lines = [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]
    return {canonicalize_name(Requirement(line).name): Requirement(line) for line in lines}


def extra_requires(extra: str) -> set[NormalizedName]:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    lines = [line.strip() for line in config["options.extras_require"][extra].splitlines()
             if line.strip() and not line.strip().startswith("#")]
    return {canonicalize_name(Requirement(line).name) for line in lines}


def third_party_imports(paths: list[Path]) -> set[NormalizedName]:
    imported: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.partition(".")[0])
    return {canonicalize_name(DISTRIBUTION_OF.get(name, name)) for name in imported
            if name not in sys.stdlib_module_names and name != "tfop"}


def test_every_third_party_import_of_tfop_is_declared() -> None:
    # tfop/psserver and tfop/progress/keras.py are shipped into TensorFlow pods (ConfigMaps), never imported by the
    # operator; tfop/ui is `tfop ui`, whose own dependencies are the ui extra's.
    operator = [p for p in (REPO / "tfop").rglob("*.py") if "psserver" not in p.parts and "ui" not in p.parts
                and p != CALLBACK]
    assert third_party_imports(operator) <= set(install_requires())
    page = sorted((REPO / "tfop" / "ui").rglob("*.py"))
    assert third_party_imports(page) <= set(install_requires()) | extra_requires("ui")
    assert extra_requires("ui") <= extra_requires("test"), "make test installs the test extra: the ui's too"


CALLBACK = REPO / "tfop" / "progress" / "keras.py"


def test_the_shipped_callback_needs_nothing_but_the_standard_library_and_tensorflow() -> None:
    # A training image has TensorFlow and nothing of tfop's: the file must import in it as it is.
    tree = ast.parse(CALLBACK.read_text())
    relative = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert third_party_imports([CALLBACK]) == {"tensorflow"} and not relative
    assert "tfop" not in {name.partition(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                          for name in (alias.name for alias in node.names)}
    assert "tfop" not in {node.module.partition(".")[0] for node in ast.walk(tree)
                          if isinstance(node, ast.ImportFrom) and node.module}


def test_constraints_pin_every_dependency_within_its_range() -> None:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not name==version"
            pins[canonicalize_name(name)] = version
    for name in extra_requires("ui"):
        assert name in pins, f"constraints.txt does not pin {name} (the ui extra): run make constraints"
    for name, requirement in install_requires().items():
        assert name in pins, f"constraints.txt does not pin {name}: run make constraints"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement}"


def test_the_image_installs_with_the_constraints() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    # With the ui extra: the Deployments of deploy/components/ui and the chart's ui.yaml run this image's `tfop ui`.
    assert "pip install -c constraints.txt '.[ui]'" in dockerfile and "constraints.txt" in dockerfile.split("COPY")[1]
    assert "!constraints.txt" in (REPO / ".dockerignore").read_text().splitlines()


def test_make_help_lists_every_target_with_no_make_syntax_showing() -> None:
    makefile = (REPO / "Makefile").read_text()
    phony = {target for line in re.findall(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.MULTILINE)
             for target in line.replace("\\\n", " ").split()}
    shown = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout
    listed = set(re.findall(r"^  make (\S+)", shown, re.MULTILINE))
    assert phony - listed == set(), f"make help leaves out {sorted(phony - listed)}"
    assert "$$" not in shown and "$(" not in shown
