"""The DuckDB warehouse: one file holding clean task logs, quarantine and ingest history.

Table layout is a contract read by mining, the UI and users' own SQL:

- `task_logs`: the TASK_LOG_SCHEMA columns (`id, timestamp, task_id, domain, model, messages,
  outcome, reference, extra`) plus `log_date, source_file, source_line, ingested_at, redactions`.
  Only clean, redacted, deduplicated rows; `id` is unique (ingest enforces it with an anti-join,
  not an index, so bulk loads stay fast).
- `quarantine`: every line that could not be ingested, with where it came from and why.
- `ingest_runs`: one row per ingest call with its counts.

Timestamps are `TIMESTAMPTZ`; `connect()` pins the session time zone to UTC so `::DATE` and
printed times mean UTC everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

TASK_LOGS_DDL = """
CREATE TABLE IF NOT EXISTS task_logs (
    id           VARCHAR NOT NULL,
    timestamp    TIMESTAMPTZ NOT NULL,
    task_id      VARCHAR NOT NULL,
    domain       VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    messages     VARCHAR NOT NULL,   -- JSON text: OpenAI chat messages (redacted)
    outcome      VARCHAR NOT NULL,   -- JSON text: what production observed (redacted)
    reference    VARCHAR,            -- JSON text or NULL
    extra        VARCHAR,            -- JSON object of unknown top-level fields, or NULL
    log_date     DATE,               -- partition day: --log-date, else the record's UTC date
    source_file  VARCHAR,
    source_line  BIGINT,             -- 1-based line (JSONL) or row (Parquet) number
    ingested_at  TIMESTAMP,
    redactions   INTEGER             -- secrets / personal data replaced in this row
)
"""

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


def connect(path: str | os.PathLike[str] | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the warehouse at `path` (default `$FLYWHEEL_HOME/warehouse.duckdb`)."""
    if path is None:
        from flywheel.paths import FlywheelPaths

        path = FlywheelPaths.from_env().warehouse
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = configure(duckdb.connect(str(path), read_only=read_only))
    if not read_only:
        ensure_tables(con)
    return con


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the ingest tables if missing. Idempotent; safe on every connection."""
    for ddl in (TASK_LOGS_DDL, QUARANTINE_DDL, INGEST_RUNS_DDL):
        con.execute(ddl)


def table_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of the ingest tables (for summaries and the UI)."""
    return {
        t: int(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
        for t in ("task_logs", "quarantine", "ingest_runs")
    }
