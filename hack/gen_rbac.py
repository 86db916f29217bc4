#!/usr/bin/env python3
"""Writes the operator's RBAC rules for a job's own children from their table (tfop/controller/plan/children/
job_children.py) into the two ways of deploying it: the kustomize base's deploy/manifests/rbac.yaml and the chart's
deploy/helm/tfop/templates/_helpers.tpl. Each file marks the rules' place with BEGIN and END lines; what is between
is replaced, everything else is left as it is.

One rule per resource of the table's kinds, with the verbs the operator's writer uses on them (list and watch for
the informer, create, patch and delete for the shared policy), in the table's order; not the PodGroup's, whose
group is the configured gang scheduler's (the chart's own conditional rule, a kustomize component each), nor a
resource a replica's children share (the Services: their rule is written by hand and grants what both need).

    python hack/gen_rbac.py [--check]

--check compares with the checked-in files instead of writing them (exit 1 when stale); test/unit/
test_job_children.py does the same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfop.controller.children import REPLICA_KINDS
from tfop.controller.plan.children.job_child import JobChildKind
from tfop.controller.plan.children.job_children import job_child_kinds

REPO = Path(__file__).resolve().parent.parent
TARGETS = (REPO / "deploy/manifests/rbac.yaml", REPO / "deploy/helm/tfop/templates/_helpers.tpl")
BEGIN = "# BEGIN a job's own children: `make rbac` writes these from their table; do not edit by hand."
END = "# END a job's own children."
VERBS = ("list", "watch", "create", "patch", "delete")
EMPTY = '""'  # the core group


def rules(table: tuple[JobChildKind, ...] | None = None) -> str:
    """The rules' lines, as both files hold them between BEGIN and END: of the table's kinds (with the Workload,
    without the PodGroup), or of `table`."""
    replicas = {(kind.resource.group, kind.resource.plural) for kind in REPLICA_KINDS}
    by_resource: dict[tuple[str, str], list[JobChildKind]] = {}
    for kind in job_child_kinds(None, own_kueue=True) if table is None else table:
        if (kind.group, kind.plural) not in replicas:
            by_resource.setdefault((kind.group, kind.plural), []).append(kind)
    lines = []
    for (group, plural), kinds in by_resource.items():
        modules = sorted({module_path(kind) for kind in kinds})
        lines += [f"# A job's own {' and '.join(kind.kind for kind in kinds)}, as {', '.join(modules)} declares it",
                  f"- apiGroups: [{group or EMPTY}]", f"  resources: [{plural}]", f"  verbs: [{', '.join(VERBS)}]"]
    return "\n".join(lines) + "\n"


def module_path(kind: JobChildKind) -> str:
    """The module that declares the entry (the one its `wanted` is in)."""
    return kind.wanted.__module__.replace(".", "/") + ".py"


def rewritten(text: str, path: Path) -> str:
    before, begin, rest = text.partition(BEGIN + "\n")
    _, end, after = rest.partition(END + "\n")
    if not begin or not end:
        raise SystemExit(f"{path}: no {BEGIN!r} ... {END!r} lines")
    return before + begin + rules() + end + after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale instead of writing it")
    args = parser.parse_args(argv)
    stale = []
    for path in TARGETS:
        text = path.read_text()
        new = rewritten(text, path)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stale: {', '.join(str(p.relative_to(REPO)) for p in stale)}; run make rbac", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
