"""Every persistent table of the warehouse: its DDL, its migrations, and `ensure_tables` that applies them.

The warehouse is one DuckDB file; every stage gets its connection from `flywheel.warehouse.connect` and
finds its tables here, so a table is declared once and a migration runs wherever the file is opened.
Tables a stage rebuilds whole from a query (`failure_cases`, `task_pool`, ...) are written by that stage's
query; `TABLES` lists them all with their writer (docs/architecture.md).

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

- `difficulty_history`: attempts and passes per (task, model, day), across runs and base models.
- `verdict_cache`: verdicts keyed by (task, response hash, verifier, verifier version).
- `task_pool_runs`: one row per pool build (model, config, report).

Timestamps are `TIMESTAMPTZ`; `connect()` pins the session time zone to UTC so `::DATE` and
printed times mean UTC everywhere.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from flywheel.warehouse.session import database_path

TASK_LOG_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False, metadata={"doc": "record id; content hash when missing"}),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("domain", pa.string(), nullable=False, metadata={"doc": "the environment domain that serves it"}),
        pa.field("model", pa.string(), nullable=False, metadata={"doc": "name:version that served it"}),
        pa.field("messages", pa.string(), nullable=False, metadata={"doc": "JSON: OpenAI chat messages"}),
        pa.field("outcome", pa.string(), nullable=False, metadata={"doc": "JSON: what production observed"}),
        pa.field("reference", pa.string(), nullable=True, metadata={"doc": "JSON: answer / tests / goal"}),
        pa.field("extra", pa.string(), nullable=True, metadata={"doc": "JSON: unknown top-level fields, kept"}),
    ]
)
"""The task log record (the single Arrow definition; `flywheel.logs.schema` re-exports it): columns of
`raw_task_logs` and `task_logs`, before the warehouse's bookkeeping columns."""

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

DIFFICULTY_HISTORY_DDL = """
CREATE TABLE IF NOT EXISTS difficulty_history (
    task_id    VARCHAR NOT NULL,
    domain     VARCHAR,
    model      VARCHAR NOT NULL,
    log_date   DATE NOT NULL,
    attempts   BIGINT,
    passes     BIGINT,
    updated_at TIMESTAMP
)
"""
"""One row per (task_id, model, log_date). Mining replaces the rows of every (model, log_date) still
in `task_logs` and keeps all others, so re-running never duplicates and pruned days survive."""

VERDICT_CACHE_DDL = """
CREATE TABLE IF NOT EXISTS verdict_cache (
    task_id          VARCHAR NOT NULL,
    response_hash    VARCHAR NOT NULL,
    verifier         VARCHAR NOT NULL,
    verifier_version VARCHAR NOT NULL,
    reward           DOUBLE,
    passed           BOOLEAN,
    reason           VARCHAR,
    details          JSON,
    created_at       TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (task_id, response_hash, verifier, verifier_version)
)
"""
"""A verdict per (task, response hash, verifier, verifier version): re-scoring is a lookup."""

TASK_POOL_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS task_pool_runs (
    built_at TIMESTAMP, model VARCHAR, config VARCHAR, report VARCHAR
)
"""
"""One row per `build_task_pool` call: which model the pool is for, with what config (the checks read it)."""

PERSISTENT_DDL = (QUARANTINE_DDL, INGEST_RUNS_DDL, TASK_LOG_IDS_DDL, DIFFICULTY_HISTORY_DDL, VERDICT_CACHE_DDL,
                  TASK_POOL_RUNS_DDL)
"""Tables that accumulate across runs: created (and migrated) wherever the warehouse is opened for writing."""

TABLES: dict[str, str] = {
    "task_logs": "ingest (view over day-partitioned Parquet)",
    "task_log_ids": "ingest",
    "quarantine": "ingest",
    "ingest_runs": "ingest",
    "difficulty_history": "mining (failure_cases)",
    "failure_cases": "mining: rebuilt per run",
    "task_stats": "mining: rebuilt per run",
    "domain_stats": "mining: rebuilt per run",
    "failure_summary": "mining: rebuilt per run",
    "failure_signatures": "mining: rebuilt per run",
    "task_pool": "mining (task_pool): rebuilt per run",
    "task_pool_runs": "mining (task_pool)",
    "decontaminated_tasks": "mining (task_pool): rebuilt per run",
    "near_duplicates": "mining (task_pool): rebuilt per run",
    "verifiers": "verifiers: rebuilt per run",
    "verdict_cache": "verifiers, training, evaluation",
}
"""Every table and view of the warehouse and the stage that writes it."""


def task_logs_dir(con: duckdb.DuckDBPyConnection) -> Path:
    """Folder of the Parquet files behind `task_logs`: `<warehouse stem>_data/task_logs/`."""
    db = database_path(con)
    if db is None:
        raise ValueError("task_logs needs a warehouse file (its rows live in Parquet beside it), not ':memory:'")
    return db.parent / f"{db.stem}_data" / "task_logs"


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the persistent tables and the `task_logs` view if missing, and migrate older ones. Idempotent."""
    for ddl in PERSISTENT_DDL:
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
