"""Session settings every warehouse connection gets, and where a connection's file is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def session_settings(con: duckdb.DuckDBPyConnection, **values: str) -> Iterator[None]:
    """`SET name = value` for each setting while the block runs, each restored to what it was after. When the
    block raised, a failure to restore (the connection itself broken) never hides its error."""
    saved = {k: con.execute(f"SELECT current_setting('{k}')").fetchall()[0][0] for k in values}

    def restore() -> None:
        for k, v in saved.items():
            con.execute(f"SET {k} = " + ("'" + v.replace("'", "''") + "'" if isinstance(v, str) else str(v)))

    try:
        for k, v in values.items():
            con.execute(f"SET {k} = {v}")
        yield
    except BaseException:
        try:
            restore()
        except duckdb.Error:
            pass
        raise
    restore()
