"""Every wait of the cluster tests gives at least the suite's DEADLINE (test/support/waiting.py): a deadline bounds a
failing test, never a passing one's speed, and under CI's load a step of seconds took over a minute. Read from the
source: each wait_for and wait_for_count timeout, and each kubectl --timeout, is evaluated from the constants of its
module (and a helper's parameter defaults); one that cannot be is reported too. A test proving that something does
NOT happen within a time says so with `consistently`, which this does not look at."""

from __future__ import annotations

import ast
import contextlib
import re
from pathlib import Path

from support.waiting import DEADLINE, KUBECTL_INTERVAL

TEST = Path(__file__).resolve().parents[1]
ROOTS = ("integration", "e2e", "support")
WAITS = {"wait_for": 1, "wait_for_count": 2}  # the position of each helper's timeout
KUBECTL_TIMEOUT = re.compile(r"--timeout=(\d+)s")
Env = dict[str, float]


def value_of(node: ast.expr, env: Env) -> float:
    """A number written with constants, names the environment knows, + - * and max/min; KeyError or ValueError
    otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return env[f"{node.value.id}.{node.attr}"]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = value_of(node.left, env), value_of(node.right, env)
        return left + right if isinstance(node.op, ast.Add) else left - right if isinstance(node.op, ast.Sub) \
            else left * right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min", "float"):
        values = [value_of(arg, env) for arg in node.args]
        return max(values) if node.func.id == "max" else min(values)
    raise ValueError(ast.unparse(node))


def module_constants(tree: ast.Module) -> Env:
    """The numbers a module's top level names: its constants, and the fields of records made from its own classes
    (`FAR = Timings(360.0, 270.0, 0.5)`: FAR.lease, FAR.renew, FAR.retry, by the class's annotated fields)."""
    env: Env = {"DEADLINE": DEADLINE, "KUBECTL_INTERVAL": KUBECTL_INTERVAL}
    fields = {node.name: [item.target.id for item in node.body
                          if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)]
              for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        parts = [(name, value)]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in fields:
            parts = [*((f"{name}.{field}", arg) for field, arg in zip(fields[value.func.id], value.args, strict=False)),
                     *((f"{name}.{keyword.arg}", keyword.value) for keyword in value.keywords)]
        for key, expression in parts:
            with contextlib.suppress(KeyError, ValueError):
                env[key] = value_of(expression, env)
    return env


def short_waits(path: Path) -> list[str]:
    """The waits of a module below DEADLINE, or whose deadline cannot be read, as `line: expression`."""
    tree = ast.parse(path.read_text())
    found: set[tuple[int, str]] = set()
    _scope(tree, module_constants(tree), found)
    return [f"{line}: {text}" for line, text in sorted(found)]


def _scope(scope: ast.AST, env: Env, found: set[tuple[int, str]]) -> None:
    """Checks the calls of one module, function or lambda, with the numeric defaults of its parameters known; the
    functions it defines are scopes of their own, which see its names too."""
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        env = dict(env)
        arguments = scope.args
        pairs = [*zip(arguments.args[len(arguments.args) - len(arguments.defaults):], arguments.defaults,
                      strict=True), *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
        for arg, default in pairs:
            env.pop(arg.arg, None)
            if default is not None:
                with contextlib.suppress(KeyError, ValueError):
                    env[arg.arg] = value_of(default, env)
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            _scope(node, env, found)
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            _check(node, env, found)


def _check(call: ast.Call, env: Env, found: set[tuple[int, str]]) -> None:
    name = call.func.id if isinstance(call.func, ast.Name) else None
    if name in WAITS:
        position = WAITS[name]
        timeout = call.args[position] if len(call.args) > position else next(
            (keyword.value for keyword in call.keywords if keyword.arg == "timeout"), None)
        if timeout is not None:
            try:
                if value_of(timeout, env) < DEADLINE:
                    found.add((call.lineno, ast.unparse(timeout)))
            except (KeyError, ValueError):
                found.add((call.lineno, f"{ast.unparse(timeout)} (not read)"))
    for arg in call.args:
        text = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
        if (match := KUBECTL_TIMEOUT.fullmatch(text)) and float(match.group(1)) < DEADLINE:
            found.add((call.lineno, text))


def test_every_wait_of_the_cluster_tests_gives_the_suites_deadline() -> None:
    found = [f"{path.relative_to(TEST.parent)}:{wait}" for root in ROOTS
             for path in sorted((TEST / root).rglob("*.py")) for wait in short_waits(path)]
    assert found == [], f"waits below DEADLINE ({DEADLINE:g} s): {found}"


EXAMPLE = """\
class Timings:
    lease: float
    renew: float
SHORT = Timings(3.0, renew=2.0)
WAIT = 60.0
LONG = DEADLINE + 60
def helper(timeout=30, later=DEADLINE):
    wait_for(check, timeout)
    wait_for(check, later)
def test_x(cluster):
    wait_for(check, WAIT, "a")
    wait_for(check, LONG, "b")
    wait_for(check, message="c")
    wait_for_count(fetch, 3, timeout=2 * WAIT)
    wait_for(check, chosen, "d")
    cluster.kubectl("wait", "--timeout=60s", "x")
    cluster.kubectl("wait", f"--timeout={DEADLINE:.0f}s", "--timeout=600s", "y")
    def inner():
        return [wait_for(lambda: wait_for(check, WAIT), max(WAIT, DEADLINE))]
    wait_for(check, SHORT.renew + WAIT)
    wait_for(check, SHORT.lease + DEADLINE)
    consistently(check, 5, "nothing happens")
"""


def test_a_short_wait_is_found_however_its_deadline_is_written(tmp_path: Path) -> None:
    module = tmp_path / "test_example.py"
    module.write_text(EXAMPLE)
    assert short_waits(module) == ["8: timeout", "11: WAIT", "14: 2 * WAIT", "15: chosen (not read)",
                                   "16: --timeout=60s", "19: WAIT", "20: SHORT.renew + WAIT"]
