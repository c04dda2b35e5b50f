"""The package import graph of `flywheel/`, function-local imports included, has no cycles, and the
installed library imports without the repository on `sys.path`."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "flywheel"
PROGRAMS = ("flywheel.environments.code._harness", "flywheel.environments.repo._remote", "flywheel.sandbox._")
"""Files run as programs, not modules to import (prefixes): the code judge (reads its job from stdin), the repo
judge's object-reference half (appended to the judge's source), and the sandbox's trusted half (run by the system
Python under neutral names, its parts import each other top-level)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every flywheel module `path` imports, at any depth of its code (functions included)."""
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return {n for n in out if n == "flywheel" or n.startswith("flywheel.")}


def subpackage(module: str) -> str:
    """`flywheel.train.grpo` -> `train`; a top-level module is its own node (`flywheel.gpu` -> `gpu`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_graph() -> dict[str, set[str]]:
    modules = {_module_name(p) for p in LIB.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in LIB.rglob("*.py"):
        src = subpackage(_module_name(path))
        for name in _imported(path):
            while name not in modules and "." in name:  # `from pkg import func` names a function
                name = name.rpartition(".")[0]
            dst = subpackage(name)
            if dst and src and dst != src:
                graph.setdefault(src, set()).add(dst)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path `[a, b, ..., a]`, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_no_import_cycle_between_flywheel_subpackages():
    graph = package_graph()
    assert graph, "the import graph came out empty: the scan is broken"
    cycle = find_cycle(graph)
    edges = {n: sorted(d) for n, d in sorted(graph.items())}
    assert cycle is None, f"import cycle between flywheel subpackages: {' -> '.join(cycle or [])}; graph: {edges}"


def test_library_imports_without_the_repository_on_sys_path(tmp_path):
    """Only `flywheel` is installed: importing every module from elsewhere must not need `assets`/`resources`."""
    code = ("import importlib, pkgutil, flywheel\n"
            "for m in pkgutil.walk_packages(flywheel.__path__, 'flywheel.'):\n"
            f"    if not m.name.startswith({PROGRAMS!r}):\n"
            "        importlib.import_module(m.name)\n"
            "import sys\n"
            "assert not [n for n in sys.modules if n.split('.')[0] in ('assets', 'resources', 'flywheel_dagster')]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
