"""The DuckDB warehouse: one file holding clean task logs, quarantine and ingest history.

It is part of `flywheel.logs` because every table defined here is a log table, written by ingest.
Later stages (mining, the verdict cache) add their own tables to the same file; a module of theirs
that needs these helpers imports them from here, so the dependency runs one way, towards `logs`.

Table layout is a contract read by mining, the UI and users' own SQL:

- `task_logs`: the TASK_LOG_SCHEMA columns (`id, timestamp, task_id, domain, model, messages,
  outcome, reference, extra`) plus `log_date, source_file, source_line, ingested_at, redactions`.
  Only clean, redacted, deduplicated rows; `id` is unique. It is a VIEW over Parquet files next
  to the DuckDB file (`<warehouse>_data/task_logs/YYYY-MM-DD/part-<run>-<seq>.parquet`), one folder per
  day: writing Parquet is several times cheaper than inserting into DuckDB's compressed native
  storage, and day folders make a partition easy to find, copy or delete. Query it like any table.
- `task_log_ids`: every id in `task_logs` (native table), the key ingest anti-joins against so
  that re-ingest adds nothing.
- `quarantine`: every line that could not be ingested, with where it came from and why.
- `ingest_runs`: one row per ingest call with its counts.

Timestamps are `TIMESTAMPTZ`; `connect()` pins the session time zone to UTC so `::DATE` and
printed times mean UTC everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.logs.schema import TASK_LOG_SCHEMA

TASK_LOGS_ARROW = pa.schema(
    [
        *TASK_LOG_SCHEMA,
        pa.field("log_date", pa.date32(), nullable=False),
        pa.field("source_file", pa.string()),
        pa.field("source_line", pa.int64()),
        pa.field("ingested_at", pa.timestamp("us")),
        pa.field("redactions", pa.int32()),
    ]
)
"""Schema of every Parquet file behind the `task_logs` view."""

TASK_LOGS_COLUMNS = """
    id           VARCHAR   -- unique; content hash when the record had none
    timestamp    TIMESTAMPTZ
    task_id      VARCHAR
    domain       VARCHAR
    model        VARCHAR
    messages     VARCHAR   -- JSON text: OpenAI chat messages (redacted)
    outcome      VARCHAR   -- JSON text: what production observed (redacted)
    reference    VARCHAR   -- JSON text or NULL
    extra        VARCHAR   -- JSON object of unknown top-level fields, or NULL
    log_date     DATE      -- partition day: --log-date, else the record's UTC date
    source_file  VARCHAR
    source_line  BIGINT    -- 1-based line (JSONL) or row (Parquet) number
    ingested_at  TIMESTAMP
    redactions   INTEGER   -- secrets / personal data replaced in this row
"""
"""Columns of the `task_logs` view (documentation; the Parquet schema is TASK_LOGS_ARROW)."""

TASK_LOG_IDS_DDL = ("CREATE TABLE IF NOT EXISTS task_log_ids "
                    "(id VARCHAR NOT NULL, log_date DATE, run_id VARCHAR, h UBIGINT)")
"""`h` = DuckDB `hash(id)`: ingest anti-joins on this integer (cheap), then checks the rare hits by `id`."""

QUARANTINE_DDL = """
CREATE TABLE IF NOT EXISTS quarantine (
    source_file    VARCHAR,
    source_line    BIGINT,
    log_date       DATE,
    reason         VARCHAR,          -- what is wrong and where, for a person to act on
    field          VARCHAR,          -- offending field, NULL when the whole line is bad
    raw            VARCHAR,          -- the line as read (truncated), for inspection
    quarantined_at TIMESTAMP,
    kind           VARCHAR,          -- machine-readable reason: invalid_json, missing_field, ...
    run_id         VARCHAR
)
"""

INGEST_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS ingest_runs (
    run_id       VARCHAR,
    source       VARCHAR,
    log_date     DATE,
    started_at   TIMESTAMP,
    finished_at  TIMESTAMP,
    seconds      DOUBLE,
    files        INTEGER,
    lines_read   BIGINT,
    ingested     BIGINT,
    quarantined  BIGINT,
    duplicates   BIGINT,
    redactions   BIGINT,
    by_reason    VARCHAR              -- JSON object: kind -> count
)
"""


def configure(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Session settings every flywheel connection needs (UTC, bounded memory on bulk loads)."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET preserve_insertion_order = false")
    return con


def connect(path: str | os.PathLike[str], read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the warehouse at `path`; the caller says where it lives
    (`FlywheelPaths.warehouse`, a resource's database, a CLI flag)."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = configure(duckdb.connect(str(path), read_only=read_only))
    if not read_only:
        ensure_tables(con)
    return con


def database_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file behind `con`'s main database, or None when it is in memory."""
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    row = rows[0] if rows else None
    return Path(row[0]).resolve() if row and row[0] else None


def task_logs_dir(con: duckdb.DuckDBPyConnection) -> Path:
    """Folder of the Parquet files behind `task_logs`: `<warehouse stem>_data/task_logs/`."""
    db = database_path(con)
    if db is None:
        raise ValueError("task_logs needs a warehouse file (its rows live in Parquet beside it), not ':memory:'")
    return db.parent / f"{db.stem}_data" / "task_logs"


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the ingest tables and the `task_logs` view if missing. Idempotent."""
    for ddl in (QUARANTINE_DDL, INGEST_RUNS_DDL, TASK_LOG_IDS_DDL):
        con.execute(ddl)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'task_log_ids' AND table_schema = current_schema()").fetchall()]
    if "h" not in cols:  # a warehouse from before the hash column: add and fill it once
        con.execute("ALTER TABLE task_log_ids ADD COLUMN h UBIGINT")
        con.execute("UPDATE task_log_ids SET h = hash(id)")
    elif con.execute("SELECT count(*) FROM (SELECT h, id FROM task_log_ids LIMIT 1) "
                     "WHERE h IS DISTINCT FROM hash(id)").fetchall()[0][0]:
        con.execute("UPDATE task_log_ids SET h = hash(id)")  # DuckDB's hash() changed (an upgrade): refill
    folder = task_logs_dir(con)
    empty = folder / "_empty.parquet"  # keeps the view valid before the first ingest
    if not empty.exists():
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(TASK_LOGS_ARROW.empty_table(), empty)
    glob = str(folder / "**" / "*.parquet").replace("'", "''")
    con.execute(
        f"CREATE OR REPLACE VIEW task_logs AS SELECT * FROM read_parquet('{glob}', hive_partitioning = false)"
    )


def table_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of the ingest tables (for summaries and the UI)."""
    return {
        t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
        for t in ("task_logs", "quarantine", "ingest_runs", "task_log_ids")
    }
