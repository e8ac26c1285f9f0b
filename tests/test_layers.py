"""The arrows between the packages: trainers → agents → adaroll_env, and light imports.

Each check imports in a fresh interpreter, so what one test imported cannot hide what another
package pulls in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: modules that need an optional extra this environment may lack (importing them is skipped)
OPTIONAL = ("vllm", "trl")

PROBE = r"""
import importlib, json, pkgutil, sys
name, walk = sys.argv[1], sys.argv[2] == "walk"
pkg = importlib.import_module(name)
failed = {}
if walk:
    for info in pkgutil.walk_packages(pkg.__path__, prefix=name + "."):
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra (vllm, trl) that is not installed
            failed[info.name] = str(exc)
print(json.dumps({"modules": sorted(sys.modules), "failed": failed}))
"""


def loaded(package: str, *, walk: bool) -> tuple[set[str], dict[str, str]]:
    """Modules in ``sys.modules`` after importing ``package`` (and, with ``walk``, every one of
    its submodules) in a fresh interpreter; the submodules that failed with ImportError."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, package, "walk" if walk else "top"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return set(data["modules"]), data["failed"]


def top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize(("package", "never"), [("adaroll_env", {"agents", "trainers"}),
                                                ("agents", {"trainers"})])  # fmt: skip
def test_lower_layers_never_import_higher_ones(package: str, never: set[str]) -> None:
    modules, failed = loaded(package, walk=True)
    assert not top(modules) & never, sorted(m for m in modules if m.split(".")[0] in never)
    assert all(any(x in msg for x in OPTIONAL) for msg in failed.values()), failed


@pytest.mark.parametrize("package", ["adaroll_env", "agents"])
def test_importing_the_lower_layers_loads_no_torch(package: str) -> None:
    modules, _ = loaded(package, walk=False)
    assert "torch" not in modules and "transformers" not in modules


def test_every_trainers_module_imports() -> None:
    modules, failed = loaded("trainers", walk=True)
    assert all(any(x in msg for x in OPTIONAL) for msg in failed.values()), failed
    assert "trainers.grpo.trainer" in modules and "trainers.benchmarks.trainer" in modules


def test_no_import_cycle_among_trainers_modules() -> None:
    """Module-level ``from trainers... import`` edges (not the lazy ones inside functions) form
    no cycle."""
    import ast

    edges: dict[str, set[str]] = {}
    for path in (ROOT / "trainers").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        tree = ast.parse(path.read_text())
        deps: set[str] = set()
        for node in tree.body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("trainers"):
                    deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("trainers")}
        edges[name] = {d for d in deps if d != name}

    def resolve(dep: str) -> str | None:  # "trainers.tasks.X" may be a name, not a module
        while dep and dep not in edges:
            dep = dep.rpartition(".")[0]
        return dep or None

    graph = {m: {r for d in deps if (r := resolve(d)) and r != m} for m, deps in edges.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycle = [*stack[stack.index(d) :], d]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
