"""Shared fixtures of the ingest tests."""

from __future__ import annotations

import pytest

from flywheel.warehouse import connect


@pytest.fixture
def wh(tmp_path):
    """A fresh DuckDB warehouse connection (the real file format ingest writes)."""
    con = connect(tmp_path / "wh" / "warehouse.duckdb")
    yield con
    con.close()
