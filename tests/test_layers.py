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


def module_graph(package: str) -> dict[str, set[str]]:
    """Module-level ``import``/``from ... import`` edges between the modules of ``package`` and
    into the other two packages (not the lazy imports inside functions, nor TYPE_CHECKING
    blocks): ``{module: {module it imports}}``."""
    import ast

    tops = ("adaroll_env", "agents", "trainers")
    modules: dict[str, Path] = {}
    for top_name in tops:
        for path in (ROOT / top_name).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            modules[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path

    def resolve(dep: str) -> str | None:  # "trainers.tasks.X" may be a name, not a module
        while dep and dep not in modules:
            dep = dep.rpartition(".")[0]
        return dep or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name.split(".")[0] != package:
            continue
        deps: set[str] = set()
        for node in ast.parse(path.read_text()).body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.add(node.module)
                deps |= {f"{node.module}.{a.name}" for a in node.names}  # submodules imported
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {
            r for d in deps if d.split(".")[0] in tops and (r := resolve(d)) and r != name
        }
    return graph


@pytest.mark.parametrize("package", ["adaroll_env", "agents", "trainers"])
def test_no_import_cycle(package: str) -> None:
    """The module-level edges inside each package form no cycle."""
    graph = {m: {d for d in ds if d.startswith(package)} for m, ds in module_graph(package).items()}
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


#: the rooms of trainers and the rooms each may import at module level (docs: code layout):
#: models, tasks and engines are the ground floor; the GRPO step and allocation inside training
#: use them; a run drives a trainer; TRL, experiments and benchmarks sit on top; the CLI is the top
ROOMS: dict[str, set[str]] = {
    "models": {"models"},
    "tasks": {"tasks", "models"},
    "engines": {"engines", "models"},
    "grpo": {"grpo", "allocation", "models", "tasks", "engines"},
    "allocation": {"allocation", "grpo", "models", "tasks", "engines"},
    "run": {"run", "grpo", "allocation", "models", "tasks", "engines"},
    "trl": {"trl", "grpo", "allocation", "models", "tasks", "engines"},
    "experiments": {
        "experiments",
        "run",
        "trl",
        "grpo",
        "allocation",
        "models",
        "tasks",
        "engines",
    },
    "benchmarks": {"benchmarks", "run", "trl", "grpo", "allocation", "models", "tasks", "engines"},
}


def test_trainers_rooms_import_only_downwards() -> None:
    graph = module_graph("trainers")
    wrong = []
    for module, deps in sorted(graph.items()):
        parts = module.split(".")
        if len(parts) < 3 or parts[1] not in ROOMS:
            continue  # trainers/__init__.py, cli.py
        for dep in sorted(deps):
            d = dep.split(".")
            if d[0] != "trainers":
                continue
            if len(d) < 2 or d[1] == "cli" or (d[1] in ROOMS and d[1] not in ROOMS[parts[1]]):
                wrong.append(f"{module} -> {dep}")
    assert not wrong, wrong


def test_agents_never_reach_trainers_and_env_reaches_neither() -> None:
    for package, never in (("adaroll_env", ("agents", "trainers")), ("agents", ("trainers",))):
        bad = [f"{m} -> {d}" for m, ds in module_graph(package).items() for d in ds
               if d.split(".")[0] in never]  # fmt: skip
        assert not bad, bad


def test_old_module_paths_warn_and_are_the_new_modules() -> None:
    """Every moved path of version 4 imports (fresh interpreter), warns, and is the new module."""
    probe = (
        "import importlib, json, sys, warnings\n"
        "import agents, trainers\n"
        "table = {**agents.MOVED, **trainers.MOVED}\n"
        "out = {}\n"
        "for old, new in table.items():\n"
        "    if any(x in new for x in ('trl', 'vllm')):\n"
        "        continue\n"
        "    with warnings.catch_warnings(record=True) as w:\n"
        "        warnings.simplefilter('always')\n"
        "        mod = importlib.import_module(old)\n"
        "    out[old] = [mod is sys.modules[new], any(issubclass(x.category, DeprecationWarning)"
        " and new in str(x.message) for x in w)]\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                         check=True, timeout=600)  # fmt: skip
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(out) >= 30
    assert all(same and warned for same, warned in out.values()), out


def test_every_module_with_logic_has_its_own_test_file() -> None:
    """``pkg/room/mod.py`` defining a function or class is tested in ``tests/pkg/room/test_mod.py``
    (modules that only re-export, like kept old paths, are exempt)."""
    import ast

    missing = []
    for package in ("adaroll_env", "agents", "trainers"):
        for f in sorted((ROOT / package).rglob("*.py")):
            if f.name == "__init__.py" or f.name.startswith("_"):
                continue
            tree = ast.parse(f.read_text())
            defines = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            if not any(isinstance(n, defines) for n in tree.body):
                continue
            rel = f.relative_to(ROOT)
            if not (ROOT / "tests" / rel.parent / f"test_{f.name}").is_file():
                missing.append(str(rel))
    assert missing == [], f"modules without a test file of their own: {missing}"
