"""The layering the design fixes: the library never imports Dagster, asset bodies stay thin."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_ASSET_BODY_LINES = 40


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
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "flywheel").rglob("*.py")
                 if {"dagster", "dagster_duckdb", "dagster_k8s"} & _imports(p)]
    assert not offenders, f"flywheel/ must not import dagster: {offenders}"


def _is_dagster_def(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in {"asset", "multi_asset", "asset_check", "sensor", "schedule", "op"}:
            return True
    return False


def test_asset_bodies_are_thin():
    fat = []
    for p in (ROOT / "assets").glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_dagster_def(node):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = (body[-1].end_lineno - body[0].lineno + 1) if body else 0
                if lines > MAX_ASSET_BODY_LINES:
                    fat.append(f"{p.name}:{node.name} ({lines} lines)")
    assert not fat, f"asset bodies over {MAX_ASSET_BODY_LINES} lines belong in flywheel/: {fat}"
