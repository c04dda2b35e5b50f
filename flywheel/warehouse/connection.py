"""The one way to open the warehouse: a DuckDB connection with the flywheel's session settings and tables.

Every stage asks here (or, in Dagster, opens dagster-duckdb's connection and calls `prepare`), so no
connection skips the UTC session or the tables' migrations.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from flywheel.warehouse.session import configure
from flywheel.warehouse.tables import ensure_tables


def connect(path: str | os.PathLike[str], read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the warehouse at `path`; the caller says where it lives
    (`FlywheelPaths.warehouse`, a resource's database, a CLI flag). A writable connection has every
    persistent table, migrated."""
    if str(path) != ":memory:" and not read_only:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = configure(duckdb.connect(str(path), read_only=read_only))
    if not read_only:
        ensure_tables(con)
    return con


def scratch() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the warehouse's session settings and no tables: for SQL over Arrow tables a
    stage registers itself (e.g. RFT's decontamination of generated tasks), where nothing should persist."""
    return configure(duckdb.connect(":memory:"))


def prepare(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Session settings and tables on a connection opened elsewhere (dagster-duckdb's `DuckDBResource`)."""
    ensure_tables(configure(con))
    return con
