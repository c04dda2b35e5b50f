"""The seams the redesign fixed stay fixed: one owner for the warehouse connection."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _calls_duckdb_connect(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"):
            return True
    return False


def test_only_the_warehouse_package_opens_duckdb():
    """Every stage gets its connection from `flywheel.warehouse` (session settings, tables, migrations);
    Dagster resources open dagster-duckdb's and call `flywheel.warehouse.prepare`."""
    files = [p for folder in ("flywheel", "assets", "resources") for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 100
    offenders = sorted(str(p.relative_to(ROOT)) for p in files
                       if _calls_duckdb_connect(p) and "warehouse" not in p.relative_to(ROOT).parts[1:2])
    assert not offenders, f"open the warehouse with flywheel.warehouse.connect: {offenders}"


def test_the_scan_sees_a_raw_connect(tmp_path):
    planted = tmp_path / "x.py"
    planted.write_text("import duckdb\ncon = duckdb.connect('w.duckdb')\n")
    assert _calls_duckdb_connect(planted)
