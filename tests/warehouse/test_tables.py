"""The warehouse layout other stages rely on: tables, the task_logs view, its columns and files."""

from __future__ import annotations

import duckdb
import pytest

from flywheel.logs.ingest import ingest
from flywheel.warehouse import connect
from flywheel.warehouse.tables import TASK_LOGS_ARROW, ensure_tables, table_counts, task_logs_dir

CONTRACT = ["id", "timestamp", "task_id", "domain", "model", "messages", "outcome", "reference", "extra",
            "log_date", "source_file", "source_line", "ingested_at", "redactions"]


def test_fresh_warehouse_has_the_contract_layout(flywheel_home):
    con = connect(flywheel_home.warehouse)
    assert flywheel_home.warehouse.exists()
    cols = con.execute("DESCRIBE task_logs").fetchall()
    assert [c[0] for c in cols] == CONTRACT == TASK_LOGS_ARROW.names
    types = {c[0]: c[1] for c in cols}
    assert types["timestamp"] == "TIMESTAMP WITH TIME ZONE" and types["log_date"] == "DATE"
    assert types["source_line"] == "BIGINT" and types["redactions"] == "INTEGER"
    q = [c[0] for c in con.execute("DESCRIBE quarantine").fetchall()]
    assert q[:7] == ["source_file", "source_line", "log_date", "reason", "field", "raw", "quarantined_at"]
    assert "ingested" in [c[0] for c in con.execute("DESCRIBE ingest_runs").fetchall()]
    assert table_counts(con) == {"task_logs": 0, "quarantine": 0, "ingest_runs": 0, "task_log_ids": 0}
    assert task_logs_dir(con) == flywheel_home.home / "warehouse_data" / "task_logs"
    assert con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0] == "UTC"
    ensure_tables(con)  # idempotent
    con.close()


def test_rows_land_in_day_folders_and_a_plain_duckdb_connection_reads_them(tmp_path):
    import json

    recs = [{"id": f"r{i}", "timestamp": f"2026-12-0{1 + i % 2}T08:00:00Z", "task_id": "t", "domain": "math",
             "model": "m", "messages": [], "outcome": {"passed": True}} for i in range(4)]
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    w = tmp_path / "w.duckdb"
    rep = ingest(tmp_path / "l.jsonl", w)  # a path: ingest opens and closes the warehouse itself
    assert rep.ingested == 4
    folder = tmp_path / "w_data" / "task_logs"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["2026-12-01", "2026-12-02"]
    con = duckdb.connect(str(w))  # what DuckDBResource hands out: no flywheel settings
    assert con.execute("SELECT log_date::VARCHAR, count(*) FROM task_logs GROUP BY 1 ORDER BY 1").fetchall() == [
        ("2026-12-01", 2), ("2026-12-02", 2)]
    assert con.execute("SELECT outcome->>'$.passed' FROM task_logs LIMIT 1").fetchall() == [("true",)]
    con.close()


def test_in_memory_database_cannot_hold_task_logs():
    con = duckdb.connect()
    with pytest.raises(ValueError, match="warehouse file"):
        task_logs_dir(con)


def test_task_log_ids_hash_column_is_added_and_refilled(tmp_path):
    """Ingest anti-joins on `task_log_ids.h` = hash(id): an old warehouse gets the column filled,
    and stale hashes (DuckDB's hash() changed on an upgrade) are recomputed, or re-ingest would duplicate."""
    w = tmp_path / "w.duckdb"
    con = duckdb.connect(str(w))
    con.execute("CREATE TABLE task_log_ids (id VARCHAR NOT NULL, log_date DATE, run_id VARCHAR)")
    con.execute("INSERT INTO task_log_ids VALUES ('r1', DATE '2026-12-01', 'x'), ('r2', NULL, 'x')")
    con.close()
    con = connect(w)
    assert con.execute("SELECT bool_and(h = hash(id)) FROM task_log_ids").fetchall() == [(True,)]
    con.execute("UPDATE task_log_ids SET h = 7")
    ensure_tables(con)
    assert con.execute("SELECT bool_and(h = hash(id)) FROM task_log_ids").fetchall() == [(True,)]
    con.close()


def test_a_writable_connection_has_every_persistent_table(tmp_path):
    """Tables are declared once (flywheel.warehouse.tables) and exist wherever the warehouse is opened."""
    from flywheel.warehouse.tables import PERSISTENT_DDL, TABLES

    con = connect(tmp_path / "w.duckdb")
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    declared = {ddl.split("EXISTS")[1].split("(")[0].strip() for ddl in PERSISTENT_DDL}
    assert declared == {"quarantine", "ingest_runs", "task_log_ids", "difficulty_history", "verdict_cache",
                        "task_pool_runs"}
    assert declared | {"task_logs"} <= names
    assert declared <= set(TABLES)
    assert con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0] == "UTC"
