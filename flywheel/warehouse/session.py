"""Session settings every warehouse connection gets, and where a connection's file is."""

from __future__ import annotations

from pathlib import Path

import duckdb


def configure(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Session settings every flywheel connection needs (UTC, bounded memory on bulk loads)."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET preserve_insertion_order = false")
    return con


def database_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file behind `con`'s main database, or None when it is in memory."""
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    row = rows[0] if rows else None
    return Path(row[0]).resolve() if row and row[0] else None
