"""The layering the design fixes: the library never imports Dagster (not even through another package),
asset bodies stay thin."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_ASSET_BODY_LINES = 30
DAGSTER_PACKAGES = ("dagster", "dagster_duckdb", "dagster_k8s", "dagster_ray", "dagster_webserver")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_library_never_imports_dagster():
    files = sorted((ROOT / "flywheel").rglob("*.py"))
    assert len(files) > 50, f"found {len(files)} library files under {ROOT}: the scan is broken"
    offenders = [str(p.relative_to(ROOT)) for p in files if set(DAGSTER_PACKAGES) & _imports(p)]
    assert not offenders, f"flywheel/ must not import dagster: {offenders}"


def test_library_does_not_pull_in_dagster_transitively(tmp_path):
    """Importing every library module (a fresh interpreter, outside the repo) loads no dagster package."""
    code = ("import importlib, pkgutil, sys, flywheel\n"
            "for m in pkgutil.walk_packages(flywheel.__path__, 'flywheel.'):\n"
            "    if not m.name.startswith(('flywheel.verifiers._harness', 'flywheel.sandbox._')):  # programs\n"
            "        importlib.import_module(m.name)\n"
            f"bad = sorted(n for n in sys.modules if n.split('.')[0] in {DAGSTER_PACKAGES!r})\n"
            "assert not bad, bad[:10]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"flywheel pulled in dagster: {res.stderr[-2000:]}"


def _is_dagster_def(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in {"asset", "multi_asset", "asset_check", "sensor", "schedule", "op"}:
            return True
    return False


def test_asset_bodies_are_thin():
    fat, seen = [], 0
    for p in (ROOT / "assets").glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_dagster_def(node):
                seen += 1
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = (body[-1].end_lineno - body[0].lineno + 1) if body else 0
                if lines > MAX_ASSET_BODY_LINES:
                    fat.append(f"{p.name}:{node.name} ({lines} lines)")
    assert seen >= 10, f"found {seen} asset/check/sensor definitions under {ROOT / 'assets'}: the scan is broken"
    assert not fat, f"asset bodies over {MAX_ASSET_BODY_LINES} lines belong in flywheel/: {fat}"
